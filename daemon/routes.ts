/**
 * The `/v1` routes (docs/http-api.md): each validates its input, calls the supervisor (or
 * the daemon's session and permission desks) and shapes the answer. They decide nothing
 * about agents: the supervisor's machines do.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Supervisor } from '../index.js';
import { describeAgent, rowsWithUsage, rowWithUsage, unwrittenSession } from './agent-describe.js';
import type { AgentWatch } from './agent-watch.js';
import type { RestoreReport, StartupOrphanReport } from './daemon-types.js';
import type {
  AgentSessionDeleteBody,
  AgentSessionsBody,
  CancelBody,
  ElicitationAnswerBody,
  ElicitationsBody,
  HealthBody,
  OrphansBody,
  OrphansKillBody,
  PromptResultBody,
  PromptStreamLine,
  SessionRow,
  TerminalOutputBody,
} from './api-types.js';
import {
  absoluteCwd,
  agentSessionsQuery,
  authenticateBody,
  elicitationAnswerBody,
  restartBody,
  resumeAgentSessionBody,
  setConfigBody,
  setModeBody,
  setModelBody,
  stopBody,
  eventLogQuery,
  killOrphansBody,
  logsQuery,
  openSessionBody,
  pageQuery,
  parseWith,
  permissionAnswerBody,
  promptBody,
  queryOf,
  sessionPromptBody,
  sessionsQuery,
} from './api-schemas.js';
import { doctorReport, type DoctorInput } from './doctor.js';
import type { ElicitationDesk } from './elicitation-desk.js';
import { ApiError, readJsonBody, sendJson, startNdjson, statusOfKind, wantsNdjson, type NdjsonStream } from './http-kit.js';
import { machineSvg } from './package-assets.js';
import type { PermissionDesk } from './permission-desk.js';
import type { HeldSession, PromptContent, SessionDesk } from './session-desk.js';
import { refuseUnsupportedContent, sessionInputsOf } from './session-inputs.js';

/** What the routes work with. */
export interface RouteContext {
  supervisor: Supervisor;
  agents: AgentWatch;
  sessions: SessionDesk;
  permissions: PermissionDesk;
  elicitations: ElicitationDesk;
  doctor: DoctorInput;
  version: string;
  startedAt: number;
  /** Streams still open (follows, prompts): ended when the daemon closes. */
  streams: Set<NdjsonStream>;
  /** Asks the daemon to close (after the answer is sent). */
  requestShutdown(): void;
  /** What the daemon's start did with a crashed supervisor's leftovers. */
  startupOrphans(): StartupOrphanReport;
  /** What the daemon's start restored of what the last daemon ran (under way, or done). */
  restore(): RestoreReport;
}

interface Call {
  request: IncomingMessage;
  response: ServerResponse;
  url: URL;
  params: string[];
  context: RouteContext;
}

type Handler = (call: Call) => Promise<unknown> | unknown;

/** A route's answer that the handler has written itself (a stream, an SVG). */
const written = Symbol('written');

const routes: Array<{ method: 'GET' | 'POST'; path: RegExp; handler: Handler }> = [];
const route = (method: 'GET' | 'POST', path: string, handler: Handler) => {
  // `:name` (lower case) matches one path segment (percent-decoded by the router).
  const pattern = new RegExp(`^${path.replace(/:[a-z]+/g, '([^/]+)')}$`);
  routes.push({ method, path: pattern, handler });
};

route('GET', '/v1/health', ({ context }): HealthBody => ({ ok: true, version: context.version, pid: process.pid, startedAt: context.startedAt, agents: context.supervisor.list().length, restore: context.restore() }));

route('GET', '/v1/agents', async ({ context }) => ({ agents: await rowsWithUsage(context.supervisor, context.agents) }));
route('GET', '/v1/agents/:name', ({ context, params }) => rowWithUsage(context.supervisor, context.agents, params[0]!));
route('GET', '/v1/agents/:name/describe', ({ context, params }) => describeAgent(context.supervisor, context.agents, context.sessions, params[0]!));
route('POST', '/v1/agents/:name/start', async ({ context, params, request }) => {
  await noBody(request);
  await context.supervisor.ensureAgent(params[0]!);
  return context.agents.row(params[0]!);
});
route('POST', '/v1/agents/:name/stop', async ({ context, params, request }) => {
  const { force } = parseWith(stopBody, (await readJsonBody(request)) ?? {}, 'body');
  await context.supervisor.stop(params[0]!, force ? { force: true } : {});
  return context.agents.row(params[0]!);
});
route('POST', '/v1/agents/:name/restart', async ({ context, params, request }) => {
  const { reason } = parseWith(restartBody, (await readJsonBody(request)) ?? {}, 'body');
  await context.supervisor.restart(params[0]!, reason === undefined ? {} : { reason });
  return context.agents.row(params[0]!);
});
route('POST', '/v1/agents/:name/authenticate', async ({ context, params, request }) => {
  const { methodId, timeoutMs } = parseWith(authenticateBody, await readJsonBody(request), 'body');
  await context.supervisor.authenticate(params[0]!, methodId, timeoutMs === undefined ? {} : { timeoutMs });
  return context.agents.row(params[0]!);
});
route('GET', '/v1/agents/:name/logs', async ({ context, params, url, response }) => {
  const name = params[0]!;
  const query = parseWith(logsQuery, queryOf(url), 'query');
  context.agents.row(name); // unknown_agent before a stream starts
  const range = { ...(query.after === undefined ? {} : { after: query.after }) };
  if (query.follow === '1' || query.follow === 'true') {
    const stream = track(context, startNdjson(response));
    // What is stored first (its last `tail` lines), then every new line after the last stored one.
    let after = query.after;
    const tail = await lastEntries(context.supervisor.logs(name, range), query.tail, (entry) => (after = entry.seq));
    for (const entry of tail) stream.write(entry);
    for await (const entry of context.supervisor.logs(name, { ...(after === undefined ? {} : { after }), follow: true, signal: stream.signal })) stream.write(entry);
    stream.end();
    return written;
  }
  const entries = query.tail !== undefined ? await lastEntries(context.supervisor.logs(name, range), query.tail) : await firstEntries(context.supervisor.logs(name, { ...range, limit: query.limit ?? 1000 }));
  return { entries, next: query.tail === undefined && entries.length === (query.limit ?? 1000) ? (entries.at(-1)?.seq ?? null) : null };
});

// The agent's own sessions (session/list, resume or load, session/delete): docs/http-api.md, "The agent's own sessions".
route('GET', '/v1/agents/:name/sessions', async ({ context, params, url }): Promise<AgentSessionsBody> => {
  const query = parseWith(agentSessionsQuery, queryOf(url), 'query');
  const cwd = absoluteCwd(query.cwd);
  const page = await context.supervisor.listAgentSessions(params[0]!, { ...(cwd === undefined ? {} : { cwd }), ...(query.cursor === undefined ? {} : { cursor: query.cursor }) });
  return { sessions: page.sessions, nextCursor: page.nextCursor };
});
route('POST', '/v1/agents/:name/sessions/:sid/resume', async ({ context, params, request, response }) => {
  const body = parseWith(resumeAgentSessionBody, (await readJsonBody(request)) ?? {}, 'body');
  context.agents.row(params[0]!); // unknown_agent before anything is looked up
  const opened = await context.sessions.adopt(params[0]!, params[1]!, absoluteCwd(body.cwd), body.name ?? null);
  sendJson(response, opened.opened === 'existing' ? 200 : 201, await sessionRow(context, opened.held.session.id));
  return written;
});
route('POST', '/v1/agents/:name/sessions/:sid/delete', async ({ context, params, request }): Promise<AgentSessionDeleteBody> => {
  await noBody(request);
  await context.sessions.deleteOnAgent(params[0]!, params[1]!);
  return { agent: params[0]!, sessionId: params[1]!, deleted: true };
});

route('GET', '/v1/sessions', async ({ context, url }) => {
  const filter = parseWith(sessionsQuery, queryOf(url), 'query');
  absoluteCwd(filter.cwd);
  const { open, ...where } = filter;
  if (open === '1' || open === 'true') return { sessions: await openSessionRows(context, where) };
  const stored = await context.supervisor.sessions(where);
  return { sessions: stored.map((session) => context.sessions.row(session)) };
});
route('POST', '/v1/sessions', async ({ context, request, response }) => {
  const body = parseWith(openSessionBody, await readJsonBody(request), 'body');
  const cwd = absoluteCwd(body.cwd);
  const inputs = await sessionInputsOf(context.supervisor, body.agent, body);
  const opened =
    body.name !== undefined ? await context.sessions.openNamed(body.agent, body.name, cwd, false, inputs) : await context.sessions.openUnnamed(body.agent, cwd, body.resume ?? false, inputs);
  sendJson(response, opened.opened === 'existing' ? 200 : 201, await sessionRow(context, opened.held.session.id));
  return written;
});
route('GET', '/v1/sessions/:id', ({ context, params }) => sessionRow(context, params[0]!));
route('GET', '/v1/sessions/:id/history', async ({ context, params, url }) => {
  const query = parseWith(pageQuery, queryOf(url), 'query');
  const limit = query.limit ?? 500;
  const entries = await firstEntries(context.supervisor.history(params[0]!, { ...(query.after === undefined ? {} : { after: query.after }), limit }));
  return { entries, next: entries.length === limit ? (entries.at(-1)?.seq ?? null) : null };
});
route('POST', '/v1/sessions/:id/prompt', async (call) => {
  const body = parseWith(sessionPromptBody, await readJsonBody(call.request), 'body');
  const held = await call.context.sessions.byId(call.params[0]!);
  if (body.content) await refuseUnsupportedContent(call.context.supervisor, held.session.agent, body.content);
  return runPrompt(call, held, promptOf(body), { type: 'session', sessionId: held.session.id, name: held.name, opened: 'existing' });
});
// The session's controls (docs/acp.md, "Controls"): the updated row once the agent answered.
route('POST', '/v1/sessions/:id/mode', async ({ context, params, request }) => {
  const { modeId } = parseWith(setModeBody, await readJsonBody(request), 'body');
  const held = await context.sessions.byId(params[0]!);
  await held.session.setMode(modeId);
  return sessionRow(context, held.session.id);
});
route('POST', '/v1/sessions/:id/config', async ({ context, params, request }) => {
  const { configId, value } = parseWith(setConfigBody, await readJsonBody(request), 'body');
  const held = await context.sessions.byId(params[0]!);
  await held.session.setConfigOption(configId, value);
  return sessionRow(context, held.session.id);
});
route('POST', '/v1/sessions/:id/model', async ({ context, params, request }) => {
  const { modelId } = parseWith(setModelBody, await readJsonBody(request), 'body');
  const held = await context.sessions.byId(params[0]!);
  await held.session.setModel(modelId);
  return sessionRow(context, held.session.id);
});
route('GET', '/v1/sessions/:id/terminals/:terminal', async ({ context, params }): Promise<TerminalOutputBody> => {
  await sessionRow(context, params[0]!); // session_not_found before terminal_not_found
  return context.sessions.terminalOutput(params[0]!, params[1]!);
});
route('POST', '/v1/sessions/:id/cancel', async ({ context, params, request }): Promise<CancelBody> => {
  await noBody(request);
  await sessionRow(context, params[0]!); // session_not_found
  return { sessionId: params[0]!, ...context.sessions.cancel(params[0]!) };
});
route('POST', '/v1/sessions/:id/close', async ({ context, params, request }) => {
  await noBody(request);
  await sessionRow(context, params[0]!);
  await context.sessions.close(params[0]!);
  return sessionRow(context, params[0]!);
});
route('POST', '/v1/prompt', async (call) => {
  const body = parseWith(promptBody, await readJsonBody(call.request), 'body');
  const name = body.session ?? 'default';
  const cwd = absoluteCwd(body.cwd);
  const inputs = await sessionInputsOf(call.context.supervisor, body.agent, body);
  // Before the session is opened: a prompt refused for its content opens nothing.
  if (body.content) await refuseUnsupportedContent(call.context.supervisor, body.agent, body.content);
  const opened = await call.context.sessions.openNamed(body.agent, name, cwd, body.new ?? false, inputs);
  const first: PromptStreamLine = { type: 'session', sessionId: opened.held.session.id, name, opened: opened.opened, ...(opened.notice ? { notice: opened.notice } : {}) };
  return runPrompt(call, opened.held, promptOf(body), first);
});

route('GET', '/v1/permissions', ({ context }) => ({ permissions: context.permissions.list() }));
route('POST', '/v1/permissions/:id', async ({ context, params, request }) => {
  const answer = parseWith(permissionAnswerBody, await readJsonBody(request), 'body');
  return { id: params[0]!, outcome: await context.permissions.answer(params[0]!, answer) };
});

route('GET', '/v1/elicitations', ({ context }): ElicitationsBody => ({ elicitations: context.elicitations.list() }));
route('POST', '/v1/elicitations/:id', async ({ context, params, request }): Promise<ElicitationAnswerBody> => {
  const reply = parseWith(elicitationAnswerBody, await readJsonBody(request), 'body');
  const answer = await context.elicitations.answer(params[0]!, reply);
  return { id: params[0]!, action: answer.action };
});

route('GET', '/v1/events/log', async ({ context, url }) => {
  const query = parseWith(eventLogQuery, queryOf(url), 'query');
  const limit = query.limit ?? 1000;
  const entries = await firstEntries(context.supervisor.eventLog({ ...(query.agent === undefined ? {} : { agent: query.agent }), ...(query.after === undefined ? {} : { after: query.after }), limit }));
  return { entries, next: entries.length === limit ? (entries.at(-1)?.seq ?? null) : null };
});
route('GET', '/v1/doctor', ({ context }) => doctorReport(context.supervisor, context.doctor, context.version));
route('GET', '/v1/orphans', async ({ context }): Promise<OrphansBody> => {
  const listed = await context.supervisor.sweepOrphans({ dryRun: true });
  return { ...listed, dryRun: true, startup: context.startupOrphans() };
});
route('POST', '/v1/orphans/kill', async ({ context, request }): Promise<OrphansKillBody> => {
  const { pids } = parseWith(killOrphansBody, (await readJsonBody(request)) ?? {}, 'body');
  return context.supervisor.sweepOrphans(pids === undefined ? {} : { only: pids });
});
route('GET', '/v1/machines/:file', ({ params, response }) => {
  const svg = /^([A-Za-z]+)\.svg$/.exec(params[0]!)?.[1];
  const body = svg === undefined ? null : machineSvg(svg);
  if (body === null) throw new ApiError(404, 'not_found', `No statechart "${params[0]}" (agent.svg, supervisor.svg, session.svg, ptyActivity.svg)`);
  response.writeHead(200, { 'Content-Type': 'image/svg+xml; charset=utf-8', 'Cache-Control': 'no-store', 'X-Content-Type-Options': 'nosniff', 'Content-Security-Policy': "default-src 'none'; style-src 'unsafe-inline'" });
  response.end(body);
  return written;
});
route('POST', '/v1/shutdown', async ({ context, request, response }) => {
  await noBody(request);
  sendJson(response, 202, { ok: true });
  response.once('finish', () => context.requestShutdown());
  return written;
});

/**
 * Routes one `/v1` request; resolves once answered. Unknown paths are `404 not_found`, a
 * known path with another method `405 method_not_allowed`.
 */
export async function dispatch(call: Omit<Call, 'params'>): Promise<void> {
  const method = call.request.method ?? 'GET';
  let pathMatched = false;
  for (const candidate of routes) {
    const match = candidate.path.exec(call.url.pathname);
    if (!match) continue;
    pathMatched = true;
    if (candidate.method !== method) continue;
    const params = match.slice(1).map(decodeSegment);
    const result = await candidate.handler({ ...call, params });
    if (result !== written) sendJson(call.response, 200, result);
    return;
  }
  if (pathMatched) throw new ApiError(405, 'method_not_allowed', `${method} is not allowed on ${call.url.pathname}`);
  throw new ApiError(404, 'not_found', `No route ${method} ${call.url.pathname}`);
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new ApiError(400, 'invalid_request', `A path segment is not valid percent-encoding: ${segment}`);
  }
}

/** Routes that take no body refuse one, so a client's mistaken payload is not silently ignored. */
async function noBody(request: IncomingMessage): Promise<void> {
  const body = await readJsonBody(request);
  if (body !== undefined && !(typeof body === 'object' && body !== null && Object.keys(body).length === 0)) {
    throw new ApiError(400, 'invalid_request', 'This route takes no body');
  }
}

/** What a prompt body sends: its `text`, or its `content` blocks (the schema lets exactly one through). */
function promptOf(body: { text?: string | undefined; content?: PromptContent | undefined }): PromptContent {
  return body.content ?? body.text!;
}

/** Runs a prompt: streamed line by line when asked (`Accept: application/x-ndjson`), else one JSON answer at the end. */
async function runPrompt({ context, request, response }: Call, held: HeldSession, prompt: PromptContent, first: PromptStreamLine): Promise<unknown> {
  if (wantsNdjson(request)) {
    const stream = track(context, startNdjson(response));
    stream.write(first);
    await context.sessions.prompt(held, prompt, (line) => stream.write(line));
    stream.end();
    return written;
  }
  let last: PromptStreamLine | undefined;
  await context.sessions.prompt(held, prompt, (line) => {
    if (line.type === 'done' || line.type === 'error') last = line;
  });
  if (last?.type === 'error') throw new ApiError(statusOfKind(last.error.kind), last.error.kind, last.error.message, last.error);
  const done = last as Extract<PromptStreamLine, { type: 'done' }>;
  return { sessionId: done.sessionId, stopReason: done.stopReason, text: done.text } satisfies PromptResultBody;
}

/** A session's row: from the store, or from the live session when the store has not caught up. */
/**
 * `GET /v1/sessions?open=1`: the sessions open in the daemon now, newest first — their stored
 * rows read one by one, so `ls`, `status` and `monit` cost the same on a store of a million
 * sessions as on an empty one.
 */
async function openSessionRows(context: RouteContext, where: { agent?: string; cwd?: string }): Promise<SessionRow[]> {
  const open = context.supervisor.openSessions(where.agent).filter((session) => session.status !== 'stopped' && (where.cwd === undefined || session.cwd === where.cwd));
  const rows = await Promise.all(
    open.map(async (session) => {
      const [stored] = await context.supervisor.sessions({ sessionId: session.id, agent: session.agent });
      return context.sessions.row(stored ?? unwrittenSession(session));
    }),
  );
  return rows.sort((a, b) => b.updatedAt - a.updatedAt);
}

async function sessionRow(context: RouteContext, sessionId: string): Promise<SessionRow> {
  // One stored row by its id (an indexed read), not a scan of every stored session.
  const [stored] = await context.supervisor.sessions({ sessionId });
  if (stored) return context.sessions.row(stored);
  const live = context.supervisor.openSessions().find((session) => session.id === sessionId);
  if (!live) throw new ApiError(404, 'session_not_found', `No session has the id "${sessionId}"`);
  return context.sessions.row(unwrittenSession(live));
}

function track(context: RouteContext, stream: NdjsonStream): NdjsonStream {
  context.streams.add(stream);
  stream.signal.addEventListener('abort', () => context.streams.delete(stream), { once: true });
  return stream;
}

async function firstEntries<T>(entries: AsyncIterable<T>): Promise<T[]> {
  const collected: T[] = [];
  for await (const entry of entries) collected.push(entry);
  return collected;
}

/** The last `count` entries (all when count is undefined); `seen` hears every entry read. */
async function lastEntries<T>(entries: AsyncIterable<T>, count: number | undefined, seen?: (entry: T) => void): Promise<T[]> {
  const collected: T[] = [];
  for await (const entry of entries) {
    seen?.(entry);
    collected.push(entry);
    if (count !== undefined && collected.length > count) collected.shift();
  }
  return collected;
}
