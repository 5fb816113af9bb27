// @ts-check
/**
 * The daemon's HTTP API as the page calls it, one typed function per call it makes
 * (daemon/api-types.ts is the contract). Every call carries the token as `Authorization:
 * Bearer`; a failure is an {@link ApiError} with the API's error kind. No DOM: `fetch` is
 * given (tests/unit/dashboard-api.test.ts gives its own).
 */

/**
 * @import { AgentRow, AgentsBody, ApiErrorBody, CancelBody, ElicitationAnswerBody, ElicitationsBody, LogsBody, OrphansBody, OrphansKillBody,
 *   PermissionAnswerBody, PermissionsBody, PromptStreamLine, SessionRow, SessionsBody, TerminalOutputBody } from '../daemon/api-types.js'
 */
/** @import { ContentBlock, TranscriptEntry } from '../index.js' */
/** @import { FormContent } from './elicitation-form.js' */
/** @import { AgentAction } from './rows.js' */

/** Entries per history page asked for. */
export const PAGE_LIMIT = 500;

/** A failed call: the HTTP status, and the API's error kind (`http` when the body says none). */
export class ApiError extends Error {
  /**
   * @param {number} status
   * @param {ApiErrorBody | null} body
   */
  constructor(status, body) {
    super(body?.error?.message ?? `HTTP ${status}`);
    this.status = status;
    this.kind = body?.error?.kind ?? 'http';
  }
}

/** @typedef {{ method?: string, body?: unknown, accept?: string }} RequestOptions */

/**
 * The API client of a page holding `token`.
 * @param {{ token: string, fetch?: typeof globalThis.fetch }} options
 */
export function createApiClient({ token, fetch = globalThis.fetch.bind(globalThis) }) {
  const enc = encodeURIComponent;

  /**
   * @param {string} path
   * @param {RequestOptions} [options]
   * @returns {Promise<Response>}
   */
  function request(path, { method = 'GET', body, accept = 'application/json' } = {}) {
    /** @type {Record<string, string>} */
    const headers = { Authorization: `Bearer ${token}`, Accept: accept };
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    return fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  }

  /**
   * The answer's JSON, or the failure it is.
   * @param {string} path
   * @param {RequestOptions} [options]
   * @returns {Promise<unknown>}
   */
  async function json(path, options) {
    const response = await request(path, options);
    if (!response.ok) throw await failure(response);
    return response.json();
  }

  /**
   * Every page of a paged list (`{ entries, next }`), oldest first.
   * @template T
   * @param {string} path
   * @returns {Promise<T[]>}
   */
  async function allPages(path) {
    /** @type {T[]} */
    const entries = [];
    let after = 0;
    for (;;) {
      const separator = path.includes('?') ? '&' : '?';
      const page = /** @type {{ entries: T[], next: number | null }} */ (await json(`${path}${separator}after=${after}&limit=${PAGE_LIMIT}`));
      entries.push(...page.entries);
      if (page.next === null || page.next === undefined || page.entries.length === 0) return entries;
      after = page.next;
    }
  }

  return {
    /** `GET /v1/agents`. */
    agents: () => /** @type {Promise<AgentsBody>} */ (json('/v1/agents')),
    /** `GET /v1/agents/:name`. */
    agent: (/** @type {string} */ name) => /** @type {Promise<AgentRow>} */ (json(`/v1/agents/${enc(name)}`)),
    /**
     * `POST /v1/agents/:name/start|stop|restart`; `kill` is `stop` with `{ force: true }`; a
     * restart's `reason` (kept in the event log) when one is given.
     * @param {string} name
     * @param {AgentAction} action
     * @param {{ reason?: string }} [options]
     * @returns {Promise<AgentRow>}
     */
    agentAction(name, action, options = {}) {
      if (action === 'kill') return /** @type {Promise<AgentRow>} */ (json(`/v1/agents/${enc(name)}/stop`, { method: 'POST', body: { force: true } }));
      const body = action === 'restart' && options.reason ? { reason: options.reason } : undefined;
      return /** @type {Promise<AgentRow>} */ (json(`/v1/agents/${enc(name)}/${action}`, { method: 'POST', body }));
    },
    /** `POST /v1/agents/:name/authenticate`: log in with one of the agent's methods. */
    authenticate: (/** @type {string} */ name, /** @type {string} */ methodId) => /** @type {Promise<AgentRow>} */ (json(`/v1/agents/${enc(name)}/authenticate`, { method: 'POST', body: { methodId } })),
    /** `GET /v1/agents/:name/logs?tail=`: the newest `tail` lines, oldest first. */
    logTail: (/** @type {string} */ name, /** @type {number} */ tail) => /** @type {Promise<LogsBody>} */ (json(`/v1/agents/${enc(name)}/logs?tail=${tail}`)),
    /** `GET /v1/sessions?agent=`. */
    sessions: (/** @type {string} */ agent) => /** @type {Promise<SessionsBody>} */ (json(`/v1/sessions?agent=${enc(agent)}`)),
    /** `GET /v1/sessions/:id/history`, every page. */
    history: (/** @type {string} */ sessionId) => /** @type {Promise<TranscriptEntry[]>} */ (allPages(`/v1/sessions/${enc(sessionId)}/history`)),
    /** `POST /v1/sessions/:id/mode`: the session's row once the agent took it. */
    setMode: (/** @type {string} */ sessionId, /** @type {string} */ modeId) => /** @type {Promise<SessionRow>} */ (json(`/v1/sessions/${enc(sessionId)}/mode`, { method: 'POST', body: { modeId } })),
    /** `POST /v1/sessions/:id/model`. */
    setModel: (/** @type {string} */ sessionId, /** @type {string} */ modelId) => /** @type {Promise<SessionRow>} */ (json(`/v1/sessions/${enc(sessionId)}/model`, { method: 'POST', body: { modelId } })),
    /** `POST /v1/sessions/:id/config`: a select option's value id, or a boolean option's value. */
    setConfig: (/** @type {string} */ sessionId, /** @type {string} */ configId, /** @type {string | boolean} */ value) =>
      /** @type {Promise<SessionRow>} */ (json(`/v1/sessions/${enc(sessionId)}/config`, { method: 'POST', body: { configId, value } })),
    /** `POST /v1/sessions/:id/cancel`: the running turn cancelled, the queued prompts dropped. */
    cancelSession: (/** @type {string} */ sessionId) => /** @type {Promise<CancelBody>} */ (json(`/v1/sessions/${enc(sessionId)}/cancel`, { method: 'POST' })),
    /** `POST /v1/sessions/:id/close`. */
    closeSession: (/** @type {string} */ sessionId) => /** @type {Promise<SessionRow>} */ (json(`/v1/sessions/${enc(sessionId)}/close`, { method: 'POST' })),
    /** `GET /v1/sessions/:id/terminals/:terminalId`: what a client terminal of the session shows now. */
    terminalOutput: (/** @type {string} */ sessionId, /** @type {string} */ terminalId) =>
      /** @type {Promise<TerminalOutputBody>} */ (json(`/v1/sessions/${enc(sessionId)}/terminals/${enc(terminalId)}`)),
    /** `GET /v1/permissions`. */
    permissions: () => /** @type {Promise<PermissionsBody>} */ (json('/v1/permissions')),
    /** `GET /v1/elicitations`. */
    elicitations: () => /** @type {Promise<ElicitationsBody>} */ (json('/v1/elicitations')),
    /**
     * `POST /v1/elicitations/:id`: accept (a form's values; a URL without), decline or cancel.
     * @param {string} id
     * @param {{ action: 'accept', content?: FormContent } | { action: 'decline' } | { action: 'cancel' }} answer
     */
    answerElicitation: (id, answer) => /** @type {Promise<ElicitationAnswerBody>} */ (json(`/v1/elicitations/${enc(id)}`, { method: 'POST', body: answer })),
    /** `POST /v1/permissions/:id`. */
    answerPermission: (/** @type {string} */ id, /** @type {string} */ optionId) =>
      /** @type {Promise<PermissionAnswerBody>} */ (json(`/v1/permissions/${enc(id)}`, { method: 'POST', body: { optionId } })),
    /** `GET /v1/orphans`: a listing that touches nothing. */
    orphans: () => /** @type {Promise<OrphansBody>} */ (json('/v1/orphans')),
    /** `POST /v1/orphans/kill`: the leftovers of `pids`, or every one (null). */
    killOrphans: (/** @type {number[] | null} */ pids) => /** @type {Promise<OrphansKillBody>} */ (json('/v1/orphans/kill', { method: 'POST', body: pids === null ? {} : { pids } })),
    /** `GET /v1/machines/:name.svg`: a statechart's SVG text. */
    async machineSvg(/** @type {string} */ name) {
      const response = await request(`/v1/machines/${enc(name)}.svg`, { accept: 'image/svg+xml' });
      if (!response.ok) throw await failure(response);
      return response.text();
    },
    /** Whether the daemon refuses the token (`GET /v1/health` answers 401); false when it does not answer at all. */
    async tokenRefused() {
      try {
        return (await request('/v1/health')).status === 401;
      } catch {
        return false; // the daemon is not there (yet)
      }
    },
    /**
     * A prompt with its answer streamed (`Accept: application/x-ndjson`): `onLine` hears each
     * line as it arrives; resolves when the answer ends.
     * @param {string} path
     * @param {PromptBody} body
     * @param {(line: PromptStreamLine) => void} onLine
     */
    async prompt(path, body, onLine) {
      const response = await request(path, { method: 'POST', body, accept: 'application/x-ndjson' });
      if (!response.ok) throw await failure(response);
      if (!response.body) throw new ApiError(response.status, null);
      await readLines(response.body, (value) => onLine(/** @type {PromptStreamLine} */ (value)));
    },
  };
}

/** @typedef {ReturnType<typeof createApiClient>} ApiClient */

/**
 * What a prompt sends: its text, or its content blocks (with files attached); by name
 * (`POST /v1/prompt`, with the agent and the session's name) or to a session by its id.
 * @typedef {({ text: string } | { content: ContentBlock[] }) & ({ agent: string, session: string } | {})} PromptBody
 */

/** The failure an answer that is not ok is: its API error body when it has one. */
async function failure(/** @type {Response} */ response) {
  /** @type {ApiErrorBody | null} */
  let body = null;
  try {
    body = /** @type {ApiErrorBody} */ (await response.json());
  } catch {
    // not JSON: the status says enough
  }
  return new ApiError(response.status, body);
}

/**
 * Calls `onLine` with each JSON line of a stream, as it arrives.
 * @param {ReadableStream<Uint8Array>} stream
 * @param {(value: unknown) => void} onLine
 */
async function readLines(stream, onLine) {
  const reader = stream.getReader();
  const decoder = new TextDecoder();
  const lines = new LineSplitter();
  for (;;) {
    const { value, done } = await reader.read();
    if (value) for (const line of lines.push(decoder.decode(value, { stream: true }))) onLine(line);
    if (done) break;
  }
  for (const line of [...lines.push(decoder.decode()), ...lines.end()]) onLine(line);
}

/**
 * NDJSON cut from text that arrives in pieces: whole lines parsed, blank ones skipped, the
 * unfinished rest kept for the next piece. A line that is not JSON throws.
 */
export class LineSplitter {
  buffer = '';

  /**
   * The lines the text completes.
   * @param {string} text
   * @returns {unknown[]}
   */
  push(text) {
    this.buffer += text;
    const values = [];
    let newline;
    while ((newline = this.buffer.indexOf('\n')) >= 0) {
      const line = this.buffer.slice(0, newline).trim();
      this.buffer = this.buffer.slice(newline + 1);
      if (line) values.push(JSON.parse(line));
    }
    return values;
  }

  /**
   * The last line, when the stream ended without its newline.
   * @returns {unknown[]}
   */
  end() {
    const rest = this.buffer.trim();
    this.buffer = '';
    return rest ? [JSON.parse(rest)] : [];
  }
}
