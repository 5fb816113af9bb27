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
import type { Readable, Writable } from 'node:stream';
import type { StopReason } from '../../core/acp-types.js';
import { acpErrorCodes } from '../../core/rpc-error.js';
import { openSessionBridge, readLines, SingleSession } from '../acp-bridge.js';
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

/** Where an unmapped line is carried in its update's `_meta` (see `unknownUpdate`). */
export const unknownLineKey = 'agentvisor/unknownLine';
/** An unmapped line is kept up to this many characters. */
const maxUnknownLineChars = 10_000;

/** The CLI's interrupt request on stdin (the control protocol of `--input-format stream-json`). */
function interruptLine(requestId: string): string {
  return `${JSON.stringify({ type: 'control_request', request_id: requestId, request: { subtype: 'interrupt' } })}\n`;
}

/** Opens the bridge over a stream-json CLI's stdin and stdout. */
export function openStreamJsonBridge(child: { stdin: Writable; stdout: Readable }, options: StreamJsonBridgeOptions): StreamJsonBridge {
  const decoder = new StreamJsonDecoder({ partialMessages: options.partialMessages === true });
  const warn = (message: string) => options.onWarning?.(message);
  const session = new SingleSession(options.sessionId, 'stream-json');
  let interrupts = 0;

  const toChild = (line: string) => {
    if (!child.stdin.writableEnded && !child.stdin.destroyed) child.stdin.write(line);
  };
  child.stdin.on('error', () => {}); // EPIPE after the CLI died: its exit is reported by the process actor

  const bridge = openSessionBridge({
    agentInfo: { name: 'claude-code-stream-json', title: 'Claude Code (stream-json)' },
    session,
    load(id, params) {
      if (params.sessionId !== options.sessionId) {
        return client.fail(id, acpErrorCodes.resourceNotFound, `This process runs session ${options.sessionId}; ${String(params.sessionId)} is not loaded`, {
          sessionId: params.sessionId,
        });
      }
      session.open();
      client.respond(id, {}); // resumed with --resume: the CLI holds the context, there is nothing to replay
    },
    prompt: (text) => toChild(userMessageLine(text)),
    cancel: () => toChild(interruptLine(`agentvisor-interrupt-${++interrupts}`)),
    // The client closed its side (the stop ladder's first rung): end the CLI's stdin, as EOF does for an ACP agent.
    clientClosed() {
      if (!child.stdin.writableEnded) child.stdin.end();
    },
  });
  const { client } = bridge;

  /**
   * A line the bridge cannot map, as an update a consumer can see: ACP has no "unknown" kind,
   * so it is a `session_info_update` carrying only `_meta['agentvisor/unknownLine']`.
   */
  function unknownUpdate(line: string, reason: string): void {
    if (!session.isOpen) return;
    const update = { sessionUpdate: 'session_info_update', _meta: { [unknownLineKey]: { line: line.slice(0, maxUnknownLineChars), reason } } };
    client.notify('session/update', { sessionId: options.sessionId, update });
  }

  function fromChild(line: string): void {
    const event: StreamJsonEvent = decoder.decode(line);
    switch (event.type) {
      case 'updates':
        if (event.isReplay) return; // a user message echoed back: the prompt is already the client's
        for (const update of event.updates) client.notify('session/update', { sessionId: options.sessionId, update });
        return;
      case 'result': {
        const current = bridge.endTurn();
        if (!current) return;
        if (current.cancelled) return client.respond(current.id, { stopReason: 'cancelled' satisfies StopReason });
        if (event.isError) {
          const text = [event.resultText, ...(event.errors ?? [])].filter(Boolean).join('; ') || event.subtype;
          return client.fail(current.id, acpErrorCodes.internalError, text, { subtype: event.subtype, terminalReason: event.terminalReason ?? null });
        }
        return client.respond(current.id, { stopReason: event.stopReason, ...(event.usage ? { _meta: { usage: event.usage, costUsd: event.costUsd ?? null } } : {}) });
      }
      case 'error': {
        const current = bridge.endTurn();
        if (current) return client.fail(current.id, acpErrorCodes.internalError, event.message, { code: event.code ?? null });
        return warn(`stream-json error outside a turn: ${event.message}`);
      }
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

  // The CLI's output ended: the connection ends with it (a pending prompt fails as the agent's exit).
  readLines(child.stdout, fromChild, () => client.end());
  return { input: client.input, output: client.output };
}
