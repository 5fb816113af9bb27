/**
 * What the daemon accepts: every request body and query of the API as a zod schema. Unknown
 * fields are refused (a typo must not be ignored); the answer to a mismatch is `400
 * invalid_request` with the issues.
 */
import { isAbsolute } from 'node:path';
import { z } from 'zod';
import { ApiError } from './http-kit.js';
import { EVENT_TOPICS } from './api-types.js';

/** A text with no NUL (it may reach argv, paths or a database). */
const text = (max: number) => z.string().max(max).refine((value) => !value.includes('\u0000'), 'must not contain NUL');
const name = text(200).min(1);
const path = text(4096).min(1);

export const authenticateBody = z.strictObject({ methodId: name, timeoutMs: z.number().int().min(1).max(2_147_483_647).optional() });
/** `POST /v1/agents/:name/stop`: `force` sends SIGKILL to the agent's whole containment at once. */
export const stopBody = z.strictObject({ force: z.boolean().optional() });
/** `POST /v1/agents/:name/restart`: why, for the event log (`agent:restart`). */
export const restartBody = z.strictObject({ reason: z.string().max(1000).optional() });

export const openSessionBody = z.strictObject({
  agent: name,
  /** A named session: reused while open, resumed after a daemon restart. */
  name: name.optional(),
  cwd: path.optional(),
  /** Without a name: pick the agent's latest stored session in `cwd` (session/load). */
  resume: z.boolean().optional(),
});

export const sessionPromptBody = z.strictObject({ text: text(512 * 1024).min(1) });

export const promptBody = z.strictObject({
  agent: name,
  text: text(512 * 1024).min(1),
  /** The session's name (default `default`). */
  session: name.optional(),
  cwd: path.optional(),
  /** Open a fresh session under the name, even when one is open. */
  new: z.boolean().optional(),
});

export const permissionAnswerBody = z.union([z.strictObject({ optionId: name }), z.strictObject({ cancel: z.literal(true) })]);

/** `POST /v1/orphans/kill`: every leftover (no body, or no `pids`), or just these pids (at least one). */
export const killOrphansBody = z.strictObject({ pids: z.array(z.number().int().min(1).max(2 ** 31 - 1)).min(1).max(10_000).optional() });

/** `?after=&limit=` of the paged reads. */
export const pageQuery = z.strictObject({
  after: z.coerce.number().int().min(0).optional(),
  limit: z.coerce.number().int().min(1).max(5000).optional(),
});

export const logsQuery = pageQuery.extend({
  follow: z.enum(['0', '1', 'true', 'false']).optional(),
  /** Only the last N lines (then, with follow, every new one). */
  tail: z.coerce.number().int().min(0).max(100_000).optional(),
});
export const sessionsQuery = z.strictObject({ agent: name.optional(), cwd: path.optional() });
export const eventLogQuery = pageQuery.extend({ agent: name.optional() });

export const subscribeMessage = z.strictObject({
  type: z.literal('subscribe'),
  topics: z.array(z.enum(EVENT_TOPICS)).optional(),
  sessions: z.array(name).max(1000).nullable().optional(),
});

/**
 * A `cwd` of a body or a query, which must be absolute: the daemon resolves no path against
 * its own working directory (the client's is what a relative path meant). A relative one is
 * `400 invalid_options`, like a directory that does not exist (the library's refusal).
 */
export function absoluteCwd(cwd: string | undefined): string | undefined {
  if (cwd === undefined || isAbsolute(cwd)) return cwd;
  throw new ApiError(400, 'invalid_options', `Option cwd: ${JSON.stringify(cwd)} is a relative path; the daemon needs an absolute one (resolve it against your own directory)`);
}

/** Parses `value` or throws `400 invalid_request` naming each issue's path. */
export function parseWith<T>(schema: z.ZodType<T>, value: unknown, what: string): T {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issues = result.error.issues.map((issue) => ({ path: issue.path.map(String).join('.') || '(root)', message: issue.message }));
  throw new ApiError(400, 'invalid_request', `Invalid ${what}: ${issues.map((issue) => `${issue.path}: ${issue.message}`).join('; ')}`, { issues });
}

/** A URL's query as an object (a repeated key keeps its last value), with `token` left out. */
export function queryOf(url: URL): Record<string, string> {
  const query: Record<string, string> = {};
  for (const [key, value] of url.searchParams) if (key !== 'token') query[key] = value;
  return query;
}
