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

/** An ACP `_meta`: an object of anything. */
const meta = z.record(z.string(), z.unknown()).optional();
/** ACP's annotations of a content block. */
const annotations = z
  .strictObject({
    audience: z.array(z.enum(['assistant', 'user'])).max(2).optional(),
    lastModified: z.string().max(100).optional(),
    priority: z.number().min(0).max(1).optional(),
    _meta: meta,
  })
  .optional();
/** Standard base64 (the padding included): what ACP carries binary data as. */
const base64 = z
  .string()
  .min(1)
  .refine((value) => value.length % 4 === 0 && /^[A-Za-z0-9+/]*={0,2}$/.test(value), 'must be base64 (A-Z, a-z, 0-9, +, /, padded with =)');
const mimeType = text(255).regex(/^[\w.+-]+\/[\w.+-]+(\s*;.*)?$/, 'must be a MIME type (type/subtype)');
const uri = text(8192).min(1);

/**
 * One ACP content block of a prompt (docs/acp.md, "Rich prompts"): `text`, `image` and `audio`
 * (base64 `data` with its `mimeType`), `resource_link`, and an embedded `resource` (a text or a
 * base64 blob). Strict: a field ACP does not define is refused.
 */
export const contentBlock = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('text'), text: z.string().max(512 * 1024), annotations, _meta: meta }),
  z.strictObject({ type: z.literal('image'), data: base64, mimeType, uri: uri.optional(), annotations, _meta: meta }),
  z.strictObject({ type: z.literal('audio'), data: base64, mimeType, annotations, _meta: meta }),
  z.strictObject({
    type: z.literal('resource_link'),
    uri,
    name: text(1000).min(1),
    title: text(1000).optional(),
    description: text(10_000).optional(),
    mimeType: mimeType.optional(),
    size: z.number().int().min(0).optional(),
    annotations,
    _meta: meta,
  }),
  z.strictObject({
    type: z.literal('resource'),
    resource: z.union([
      z.strictObject({ uri, text: z.string(), mimeType: mimeType.optional(), _meta: meta }),
      z.strictObject({ uri, blob: base64, mimeType: mimeType.optional(), _meta: meta }),
    ]),
    annotations,
    _meta: meta,
  }),
]);

/** What a prompt sends: `text` (one text block) or `content` (blocks), exactly one of them. */
const promptInput = {
  text: text(512 * 1024).min(1).optional(),
  content: z.array(contentBlock).min(1).max(1000).optional(),
};
const exactlyOnePrompt = (body: { text?: string | undefined; content?: unknown[] | undefined }, context: z.RefinementCtx) => {
  if ((body.text === undefined) === (body.content === undefined)) {
    context.addIssue({ code: 'custom', path: body.text === undefined ? [] : ['content'], message: 'give exactly one of text and content' });
  }
};

const headers = z.array(z.strictObject({ name: text(1000).min(1), value: text(16_384), _meta: meta })).max(100).optional();
/**
 * An MCP server for the session (ACP's `McpServer`): `stdio` (no `type`: `command`, `args`,
 * `env`), `http` or `sse` (`url`, `headers`). The agent must advertise `mcpCapabilities.http` /
 * `.sse` for the latter two.
 */
export const mcpServer = z.union([
  z.strictObject({
    name: text(200).min(1),
    command: path,
    args: z.array(text(32_768)).max(1000).optional(),
    env: z.array(z.strictObject({ name: text(1000).min(1), value: text(32_768), _meta: meta })).max(1000).optional(),
    _meta: meta,
  }),
  z.strictObject({ type: z.literal('http'), name: text(200).min(1), url: text(8192).url(), headers, _meta: meta }),
  z.strictObject({ type: z.literal('sse'), name: text(200).min(1), url: text(8192).url(), headers, _meta: meta }),
]);

/** The permission policies a session opened by the daemon may take (docs/permissions.md). */
export const SESSION_PERMISSIONS = ['ask', 'allow', 'deny', 'allow-reads'] as const;

/** What a session is opened with (`POST /v1/sessions`, `POST /v1/prompt`). */
const sessionInputs = {
  /** MCP servers the agent connects the session to. */
  mcpServers: z.array(mcpServer).max(100).optional(),
  /** More directories the session may use (absolute): the library's `additionalRoots`. */
  additionalDirectories: z.array(path).max(100).optional(),
  /** The session's permission policy (default: the daemon's, `ask`). */
  permissions: z.enum(SESSION_PERMISSIONS).optional(),
};

export const openSessionBody = z.strictObject({
  agent: name,
  /** A named session: reused while open, resumed after a daemon restart. */
  name: name.optional(),
  cwd: path.optional(),
  /** Without a name: pick the agent's latest stored session in `cwd` (session/load). */
  resume: z.boolean().optional(),
  ...sessionInputs,
});

export const sessionPromptBody = z.strictObject(promptInput).superRefine(exactlyOnePrompt);

export const promptBody = z
  .strictObject({
    agent: name,
    ...promptInput,
    /** The session's name (default `default`). */
    session: name.optional(),
    cwd: path.optional(),
    /** Open a fresh session under the name, even when one is open. */
    new: z.boolean().optional(),
    ...sessionInputs,
  })
  .superRefine(exactlyOnePrompt);

/** `POST /v1/sessions/:id/mode`. */
export const setModeBody = z.strictObject({ modeId: name });
/** `POST /v1/sessions/:id/config`: a select option's value id, or a boolean option's value. */
export const setConfigBody = z.strictObject({ configId: name, value: z.union([name, z.boolean()]) });
/** `POST /v1/sessions/:id/model`. */
export const setModelBody = z.strictObject({ modelId: name });

/** `GET /v1/agents/:name/sessions?cwd=&cursor=`. */
export const agentSessionsQuery = z.strictObject({ cwd: path.optional(), cursor: text(4096).min(1).optional() });
/** `POST /v1/agents/:name/sessions/:sessionId/resume`: where it works (needed when the store does not keep it), and a name to hold it under. */
export const resumeAgentSessionBody = z.strictObject({ cwd: path.optional(), name: name.optional() });

/** `POST /v1/elicitations/:id`: accept (a form's values; a URL is accepted without), decline or cancel. */
export const elicitationAnswerBody = z.discriminatedUnion('action', [
  z.strictObject({
    action: z.literal('accept'),
    content: z.record(text(1000), z.union([text(100_000), z.number(), z.boolean(), z.array(text(100_000)).max(1000)])).optional(),
  }),
  z.strictObject({ action: z.literal('decline') }),
  z.strictObject({ action: z.literal('cancel') }),
]);

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
export const sessionsQuery = z.strictObject({
  agent: name.optional(),
  cwd: path.optional(),
  /** Only the sessions open in the daemon now (what `ls`, `status` and `monit` show): read without a scan of the store. */
  open: z.enum(['0', '1', 'true', 'false']).optional(),
});
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

/**
 * The `additionalDirectories` of a body, which must be absolute (as a `cwd`): a relative one
 * is `400 invalid_options`. Whether each exists is the library's check.
 */
export function absoluteDirectories(directories: string[] | undefined): string[] | undefined {
  const relative = directories?.find((directory) => !isAbsolute(directory));
  if (relative === undefined) return directories;
  throw new ApiError(400, 'invalid_options', `Option additionalDirectories: ${JSON.stringify(relative)} is a relative path; the daemon needs absolute ones`);
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
