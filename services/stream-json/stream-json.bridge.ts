/**
 * Claude Code's stream-json mode behind an ACP face. The bridge is an ACP agent in this
 * process — newline-delimited JSON-RPC on a pair of streams — that answers the client's
 * `initialize`, `session/new`, `session/load`, `session/prompt` and `session/cancel` by
 * writing user messages to the CLI's stdin and turning every line it prints into
 * `session/update` notifications and the prompt's answer (docs/stream-json.md). The real ACP
 * client (services/acp-client.service.ts) connects to it as to any agent, so sessions,
 * permissions, the store and the lifecycle serve both protocols unchanged, and the protocol
 * is a choice of the process actor, never a branch in a machine.
 *
 * One CLI process is one conversation: the process is started with `--session-id <id>` (or
 * `--resume <id>` after a restart, so the context survives) and the bridge serves that one
 * session. A line that is not JSON or of an unknown type is a protocol warning, never a crash.
 */
import { PassThrough, type Readable, type Writable } from 'node:stream';
import type { ContentBlock, StopReason } from '../../core/acp-types.js';
import { StreamJsonDecoder, userMessageLine, type StreamJsonEvent } from './stream-json.parser.js';

export interface StreamJsonBridgeOptions {
  /** The session this process runs (its `--session-id`, or the `--resume` id). */
  sessionId: string;
  /** The CLI runs with `--include-partial-messages`: text arrives as deltas (see StreamJsonDecoder). */
  partialMessages?: boolean;
  /** A line the bridge could not use (not JSON, an unknown type, an error outside a turn). */
  onWarning?(message: string): void;
}

/** The agent side of the bridge, as the ACP client sees an agent's stdio. */
export interface StreamJsonBridge {
  /** The client writes its JSON-RPC messages here (the agent's stdin). */
  readonly input: Writable;
  /** The client reads the bridge's answers and notifications here (the agent's stdout). */
  readonly output: Readable;
}

interface JsonRpcMessage {
  jsonrpc?: string;
  id?: string | number | null;
  method?: string;
  params?: Record<string, unknown>;
}

/** JSON-RPC and ACP error codes the bridge answers with. */
const errorCodes = { invalidParams: -32602, methodNotFound: -32601, internal: -32603, resourceNotFound: -32002 } as const;

/** The `initialize` answer: what a stream-json agent can do through the bridge. */
const initializeResult = {
  protocolVersion: 1,
  agentCapabilities: { loadSession: true, promptCapabilities: { image: false, audio: false, embeddedContext: false } },
  agentInfo: { name: 'claude-code-stream-json', title: 'Claude Code (stream-json)', version: '1' },
  authMethods: [],
};

/** Where an unmapped line is carried in its update's `_meta` (see `unknownUpdate`). */
export const unknownLineKey = 'agentvisor/unknownLine';
/** An unmapped line is kept up to this many characters. */
const maxUnknownLineChars = 10_000;

/** The CLI's interrupt request on stdin (the control protocol of `--input-format stream-json`). */
function interruptLine(requestId: string): string {
  return `${JSON.stringify({ type: 'control_request', request_id: requestId, request: { subtype: 'interrupt' } })}\n`;
}

/** A prompt's content as the one text of a user message: text blocks, and links and resources by their URI. */
export function promptText(prompt: readonly ContentBlock[]): string {
  const parts: string[] = [];
  for (const block of prompt) {
    if (block.type === 'text') parts.push(block.text);
    else if (block.type === 'resource_link') parts.push(block.uri);
    else if (block.type === 'resource') parts.push('text' in block.resource ? block.resource.text : block.resource.uri);
  }
  return parts.join('\n\n');
}

/** Calls `onLine` for every complete line of `stream` (UTF-8), and `onEnd` once it ends. */
function readLines(stream: Readable, onLine: (line: string) => void, onEnd: () => void): void {
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

/** Opens the bridge over a stream-json CLI's stdin and stdout. */
export function openStreamJsonBridge(child: { stdin: Writable; stdout: Readable }, options: StreamJsonBridgeOptions): StreamJsonBridge {
  const input = new PassThrough();
  const output = new PassThrough();
  const decoder = new StreamJsonDecoder({ partialMessages: options.partialMessages === true });
  const warn = (message: string) => options.onWarning?.(message);
  let sessionOpen = false;
  let ended = false;
  /** The prompt request in flight (the CLI answers one turn at a time), and whether it was cancelled. */
  let turn: { id: string | number; cancelled: boolean } | null = null;
  let interrupts = 0;

  const send = (message: object) => {
    if (!ended) output.write(`${JSON.stringify({ jsonrpc: '2.0', ...message })}\n`);
  };
  const respond = (id: string | number, result: unknown) => send({ id, result });
  const fail = (id: string | number, code: number, message: string, data?: unknown) => send({ id, error: { code, message, ...(data === undefined ? {} : { data }) } });
  const toChild = (line: string) => {
    if (!child.stdin.writableEnded && !child.stdin.destroyed) child.stdin.write(line);
  };
  child.stdin.on('error', () => {}); // EPIPE after the CLI died: its exit is reported by the process actor

  function fromClient(line: string): void {
    let message: JsonRpcMessage;
    try {
      message = JSON.parse(line) as JsonRpcMessage;
    } catch {
      return; // not JSON-RPC: the real client never sends this
    }
    const { id, method, params = {} } = message;
    if (typeof method !== 'string') return; // a response: the bridge sends no requests
    if (id === undefined || id === null) return notification(method, params);
    switch (method) {
      case 'initialize':
        return respond(id, initializeResult);
      case 'session/new':
        if (sessionOpen) return fail(id, errorCodes.internal, 'A stream-json agent holds one session per process: start another agent for another session');
        sessionOpen = true;
        return respond(id, { sessionId: options.sessionId });
      case 'session/load':
        if (params.sessionId !== options.sessionId) {
          return fail(id, errorCodes.resourceNotFound, `This process runs session ${options.sessionId}; ${String(params.sessionId)} is not loaded`, { sessionId: params.sessionId });
        }
        sessionOpen = true;
        return respond(id, {}); // resumed with --resume: the CLI holds the context, there is nothing to replay
      case 'session/prompt': {
        if (params.sessionId !== options.sessionId) return fail(id, errorCodes.resourceNotFound, `Unknown session ${String(params.sessionId)}`, { sessionId: params.sessionId });
        if (turn) return fail(id, errorCodes.internal, 'A turn is already running');
        const prompt = Array.isArray(params.prompt) ? (params.prompt as ContentBlock[]) : [];
        turn = { id, cancelled: false };
        return toChild(userMessageLine(promptText(prompt)));
      }
      default:
        return fail(id, errorCodes.methodNotFound, `Method not found: ${method}`);
    }
  }

  function notification(method: string, params: Record<string, unknown>): void {
    if (method === 'session/cancel' && turn && params.sessionId === options.sessionId && !turn.cancelled) {
      turn.cancelled = true;
      toChild(interruptLine(`agentvisor-interrupt-${++interrupts}`));
    }
  }

  /**
   * A line the bridge cannot map, as an update a consumer can see: ACP has no "unknown" kind,
   * so it is a `session_info_update` carrying only `_meta['agentvisor/unknownLine']`.
   */
  function unknownUpdate(line: string, reason: string): void {
    if (!sessionOpen) return;
    const update = { sessionUpdate: 'session_info_update', _meta: { [unknownLineKey]: { line: line.slice(0, maxUnknownLineChars), reason } } };
    send({ method: 'session/update', params: { sessionId: options.sessionId, update } });
  }

  function fromChild(line: string): void {
    const event: StreamJsonEvent = decoder.decode(line);
    switch (event.type) {
      case 'updates':
        if (event.isReplay) return; // a user message echoed back: the prompt is already the client's
        for (const update of event.updates) send({ method: 'session/update', params: { sessionId: options.sessionId, update } });
        return;
      case 'result': {
        const current = turn;
        if (!current) return;
        turn = null;
        if (current.cancelled) return respond(current.id, { stopReason: 'cancelled' satisfies StopReason });
        if (event.isError) {
          const text = [event.resultText, ...(event.errors ?? [])].filter(Boolean).join('; ') || event.subtype;
          return fail(current.id, errorCodes.internal, text, { subtype: event.subtype, terminalReason: event.terminalReason ?? null });
        }
        return respond(current.id, { stopReason: event.stopReason, ...(event.usage ? { _meta: { usage: event.usage, costUsd: event.costUsd ?? null } } : {}) });
      }
      case 'error':
        if (turn) {
          const current = turn;
          turn = null;
          return fail(current.id, errorCodes.internal, event.message, { code: event.code ?? null });
        }
        return warn(`stream-json error outside a turn: ${event.message}`);
      case 'unknown':
        warn(`stream-json line of an unknown type (${event.reason}): ${line.slice(0, 200)}`);
        return unknownUpdate(line, event.reason);
      case 'malformed':
        warn(`stream-json line that is not JSON (${event.reason}): ${line.slice(0, 200)}`);
        return unknownUpdate(line, event.reason);
      case 'init':
      case 'other':
        return;
    }
  }

  readLines(input, fromClient, () => {
    // The client closed its side (the stop ladder's first rung): end the CLI's stdin, as EOF does for an ACP agent.
    if (!child.stdin.writableEnded) child.stdin.end();
  });
  readLines(child.stdout, fromChild, () => {
    // The CLI's output ended: the connection ends with it (a pending prompt fails as the agent's exit).
    ended = true;
    output.end();
  });
  return { input, output };
}
