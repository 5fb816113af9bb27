/**
 * How to launch one agent: plain data. The schema is the one definition: the type is derived
 * from it, and every spec (and agent name) is checked against it at the public edge.
 */
import { z } from 'zod';
import { invalidOptions } from './errors.js';
import { describeSchemaIssue, noNul } from './schema.js';
import { workspaceSpecSchema } from './workspace-spec.js';

/** An agent's name: any non-empty string up to 200 characters without control characters. */
export const agentNameSchema = z
  .string()
  .min(1, 'must not be empty')
  .max(200, 'must be at most 200 characters')
  // eslint-disable-next-line no-control-regex
  .refine((name) => !/[\u0000-\u001f\u007f]/.test(name), 'must not contain control characters');

/**
 * An agent spec.
 *
 * @example
 * const codex: AgentSpec = { command: 'codex-acp', displayName: 'Codex', env: { RUST_LOG: 'warn' } };
 */
export const agentSpecSchema = z.strictObject({
  /** Program to run (looked up on PATH unless it contains a slash). */
  command: noNul(z.string().trim().min(1, 'must be a non-empty string')),
  args: z.array(noNul(z.string())).optional(),
  /** Variables merged over the parent's environment. Never copied into machine context. */
  env: z.record(noNul(z.string().min(1).refine((name) => !name.includes('='), 'must not contain "="')), noNul(z.string())).optional(),
  /** Working directory of the process; the parent's by default. */
  cwd: noNul(z.string().min(1)).optional(),
  /** Name used in messages ("Could not connect to {displayName}"); the agent's key by default. */
  displayName: z.string().optional(),
  /** How to install `command`, carried by a `not_installed` error (presets set it). */
  installHint: z.string().optional(),
  /**
   * The agent's own workspace (docs/workspaces.md): a git worktree on a new branch, or a
   * directory, made before the agent is spawned and used as its cwd. Exclusive with `cwd`.
   */
  workspace: workspaceSpecSchema.optional(),
}).superRefine((spec, context) => {
  if (spec.cwd !== undefined && spec.workspace !== undefined) {
    context.addIssue({ code: 'custom', path: ['workspace'], message: 'cannot be given with cwd: the workspace is the agent\'s cwd' });
  }
});

export type AgentSpec = z.infer<typeof agentSpecSchema>;

/** Throws `AgentError` kind `invalid_options` (naming the field) unless `name` and `spec` are usable. */
export function validateAgentSpec(name: unknown, spec: unknown): AgentSpec {
  const validName = agentNameSchema.safeParse(name);
  if (!validName.success) throw invalidOptions(`An agent name ${describeSchemaIssue(validName.error)}`);
  const valid = agentSpecSchema.safeParse(spec);
  if (!valid.success) throw invalidOptions(`Invalid spec for agent "${validName.data}": ${describeSchemaIssue(valid.error, 'spec')}`, validName.data);
  return valid.data;
}
