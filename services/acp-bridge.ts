/**
 * The agent side of an in-process ACP bridge (docs/stream-json.md, docs/pty.md): newline-
 * delimited JSON-RPC on a pair of streams that the real ACP client connects to as to an
 * agent's stdio. A bridge says how it starts, cancels and ends a turn of its one session
 * ({@link openSessionBridge}); this module routes the client's requests, and does the framing,
 * the answers' shape, the prompt's text and the end of the stream, once for all bridges.
 * Hand-written rather than the SDK's agent app: the SDK stays in
 * services/acp-client.service.ts, and a bridge serves only the few methods listed here.
 */
import { PassThrough, type Readable } from 'node:stream';
import type { ContentBlock } from '../core/acp-types.js';
import { acpErrorCodes } from '../core/rpc-error.js';

type RequestId = string | number;

interface BridgeHandlers {
  /** A request of the client's: answer it with `respond` or `fail`, now or later. */
  request(id: RequestId, method: string, params: Record<string, unknown>): void;
  /** A notification of the client's (session/cancel). */
  notification(method: string, params: Record<string, unknown>): void;
  /** The client closed its side (the stop ladder's first rung). */
  clientClosed?(): void;
}

/** The bridge's end of the connection. */
export interface BridgeEndpoint {
  /** The client writes its JSON-RPC messages here (the agent's stdin). */
  readonly input: PassThrough;
  /** The client reads the answers and notifications here (the agent's stdout). */
  readonly output: PassThrough;
  respond(id: RequestId, result: unknown): void;
  fail(id: RequestId, code: number, message: string, data?: unknown): void;
  notify(method: string, params: unknown): void;
  /** The agent is gone: the client's stream ends (what is still pending fails as the agent's exit). Nothing is sent after. */
  end(): void;
}

/**
 * The one ACP session a bridged process holds: its CLI runs one conversation, so
 * `session/new` is answered once (another session needs another agent), and a prompt for
 * any other session id is not found.
 */
export class SingleSession {
  private opened = false;

  constructor(
    readonly sessionId: string,
    /** How the protocol is named in the refusal: `pty`, `stream-json`. */
    private readonly protocol: string,
  ) {}

  get isOpen(): boolean {
    return this.opened;
  }

  /** Marks the session open (session/new, or a session/load of this id). */
  open(): void {
    this.opened = true;
  }

  /** Answers `session/new`: the session's id the first time, a refusal after. */
  answerNew(client: BridgeEndpoint, id: RequestId): void {
    if (this.opened) return client.fail(id, acpErrorCodes.internalError, `A ${this.protocol} agent holds one session per process: start another agent for another session`);
    this.opened = true;
    client.respond(id, { sessionId: this.sessionId });
  }

  /** Refuses a request for another session id (true when it did). */
  refusesOther(client: BridgeEndpoint, id: RequestId, params: Record<string, unknown>): boolean {
    if (params.sessionId === this.sessionId) return false;
    client.fail(id, acpErrorCodes.resourceNotFound, `Unknown session ${String(params.sessionId)}`, { sessionId: params.sessionId });
    return true;
  }
}

/** The prompt request a one-session bridge is answering: its CLI runs one turn at a time. */
export interface BridgeTurn {
  readonly id: RequestId;
  /** The client sent session/cancel for it (the bridge is told once). */
  cancelled: boolean;
}

/** How a one-session bridge serves the client; {@link openSessionBridge} routes the client's messages to it. */
export interface SessionBridgeRoutes {
  /** How the agent is named in the `initialize` answer. */
  agentInfo: { name: string; title: string };
  /** The one session: `session/new` opens it, prompts for another id are refused, cancels ignored. */
  session: SingleSession;
  /** Answers `session/load` (absent: the method is not found, and `initialize` says `loadSession: false`). */
  load?(id: RequestId, params: Record<string, unknown>): void;
  /** Starts the turn with the prompt's text (the turn is the bridge's `turn` now); a prompt while one runs is refused. */
  prompt(text: string): void;
  /** The client cancelled the running turn (marked cancelled already). */
  cancel(turn: BridgeTurn): void;
  /** The client closed its side (the stop ladder's first rung). */
  clientClosed?(): void;
}

/** A one-session bridge's end of the connection, and the turn it is answering. */
export interface SessionBridge {
  readonly client: BridgeEndpoint;
  /** The running turn, if any. */
  readonly turn: BridgeTurn | null;
  /** Takes the running turn to answer it (null when none runs): a new prompt may start after. */
  endTurn(): BridgeTurn | null;
}

/**
 * Opens an endpoint that routes the client's requests for a bridge of one session:
 * `initialize`, `session/new`, `session/load` (when the bridge has it), `session/prompt` (one
 * turn at a time, for its session only) and `session/cancel`; any other method is not found.
 */
export function openSessionBridge(routes: SessionBridgeRoutes): SessionBridge {
  const { session } = routes;
  /** What the agent can do through a bridge: text prompts, and loading its session when the bridge can. */
  const initializeResult = {
    protocolVersion: 1,
    agentCapabilities: { loadSession: routes.load !== undefined, promptCapabilities: { image: false, audio: false, embeddedContext: false } },
    agentInfo: { ...routes.agentInfo, version: '1' },
    authMethods: [],
  };
  let turn: BridgeTurn | null = null;
  const client = openBridgeEndpoint({
    request(id, method, params) {
      switch (method) {
        case 'initialize':
          return client.respond(id, initializeResult);
        case 'session/new':
          return session.answerNew(client, id);
        case 'session/load':
          if (!routes.load) break;
          return routes.load(id, params);
        case 'session/prompt':
          if (session.refusesOther(client, id, params)) return;
          if (turn) return client.fail(id, acpErrorCodes.internalError, 'A turn is already running');
          turn = { id, cancelled: false };
          return routes.prompt(promptText(promptOf(params)));
      }
      client.fail(id, acpErrorCodes.methodNotFound, `Method not found: ${method}`);
    },
    notification(method, params) {
      if (method !== 'session/cancel' || !turn || turn.cancelled || params.sessionId !== session.sessionId) return;
      turn.cancelled = true;
      routes.cancel(turn);
    },
    clientClosed: () => routes.clientClosed?.(),
  });
  return {
    client,
    get turn() {
      return turn;
    },
    endTurn() {
      const current = turn;
      turn = null;
      return current;
    },
  };
}

/** Opens an endpoint whose client messages go to `handlers` (the framing; {@link openSessionBridge} routes them). */
function openBridgeEndpoint(handlers: BridgeHandlers): BridgeEndpoint {
  const input = new PassThrough();
  const output = new PassThrough();
  let ended = false;
  const send = (message: object) => {
    if (!ended) output.write(`${JSON.stringify({ jsonrpc: '2.0', ...message })}\n`);
  };
  readLines(
    input,
    (line) => {
      let message: { id?: RequestId | null; method?: unknown; params?: Record<string, unknown> };
      try {
        message = JSON.parse(line) as typeof message;
      } catch {
        return; // not JSON-RPC: the real client never sends this
      }
      const { id, method, params = {} } = message;
      if (typeof method !== 'string') return; // a response: bridges send no requests
      if (id === undefined || id === null) handlers.notification(method, params);
      else handlers.request(id, method, params);
    },
    () => handlers.clientClosed?.(),
  );
  return {
    input,
    output,
    respond: (id, result) => send({ id, result }),
    fail: (id, code, message, data) => send({ id, error: { code, message, ...(data === undefined ? {} : { data }) } }),
    notify: (method, params) => send({ method, params }),
    end() {
      ended = true;
      output.end();
    },
  };
}

/** Calls `onLine` for every non-empty line of `stream` (UTF-8), and `onEnd` once it ends or fails. */
export function readLines(stream: Readable, onLine: (line: string) => void, onEnd: () => void): void {
  let buffered = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    buffered += chunk;
    let newline = buffered.indexOf('\n');
    while (newline !== -1) {
      const line = buffered.slice(0, newline);
      buffered = buffered.slice(newline + 1);
      if (line.trim() !== '') onLine(line);
      newline = buffered.indexOf('\n');
    }
  });
  stream.once('end', () => {
    if (buffered.trim() !== '') onLine(buffered);
    buffered = '';
    onEnd();
  });
  stream.once('error', onEnd);
}

/** A prompt's content as the one text a CLI is given: text blocks, and links and resources by their URI. */
export function promptText(prompt: readonly ContentBlock[]): string {
  const parts: string[] = [];
  for (const block of prompt) {
    if (block.type === 'text') parts.push(block.text);
    else if (block.type === 'resource_link') parts.push(block.uri);
    else if (block.type === 'resource') parts.push('text' in block.resource ? block.resource.text : block.resource.uri);
  }
  return parts.join('\n\n');
}

/** The prompt blocks of a session/prompt request's params. */
function promptOf(params: Record<string, unknown>): ContentBlock[] {
  return Array.isArray(params.prompt) ? (params.prompt as ContentBlock[]) : [];
}
