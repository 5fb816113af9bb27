/** Small helpers shared by the schemas that check what callers pass in (zod). */
import type { z } from 'zod';

/** A string that holds no NUL byte (the OS would refuse it, or cut it short). */
export const noNul = <T extends z.ZodType<string>>(schema: T) => schema.refine((value) => !value.includes('\u0000'), 'must not contain a NUL byte');

/** The first problem of a failed parse, naming its field: `spec.args.1 must not contain a NUL byte`. */
export function describeSchemaIssue(error: z.ZodError, root?: string): string {
  const first = error.issues[0];
  if (!first) return 'is invalid';
  // A union says only "Invalid input": the branch that explains itself (a custom message) says more.
  const branches = first.code === 'invalid_union' ? first.errors.flat() : [];
  const explained = branches.find((branch) => branch.code === 'custom');
  const issue = explained ? { ...explained, path: [...first.path, ...explained.path] } : first;
  const path = [root, ...issue.path.map(String)].filter((part) => part !== undefined && part !== '').join('.');
  const more = error.issues.length > 1 ? ` (and ${error.issues.length - 1} more)` : '';
  return `${path ? `${path}: ` : ''}${issue.message}${more}`;
}
