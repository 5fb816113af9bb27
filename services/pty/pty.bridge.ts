/**
 * Any interactive CLI in a pseudo-terminal behind an ACP face, as the stream-json bridge does
 * for Claude Code: an ACP agent inside this process (newline-delimited JSON-RPC on a pair of
 * streams) that the real ACP client connects to. A prompt is typed into the terminal (its
 * text, then Enter); what the terminal prints meanwhile streams as `agent_message_chunk`
 * updates (escape sequences removed: the rendered screen is the PtyScreen's); the turn ends
 * `end_turn` when the CLI waits for input again — the activity machine's `needsInput`, told
 * to the bridge with `idle()` — and fails like any agent's when the process exits. One
 * session per process (docs/pty.md).
 */
import { PassThrough, type Readable, type Writable } from 'node:stream';
import type { ContentBlock } from '../../core/acp-types.js';
import { promptText } from '../stream-json/stream-json.bridge.js';

export interface PtyBridgeOptions {
  /** The id of the one session this process serves. */
  sessionId: string;
  /** Types into the terminal. */
  write(input: string): void;
}

export interface PtyBridge {
  /** The client writes its JSON-RPC messages here (the agent's stdin). */
  readonly input: Writable;
  /** The client reads the bridge's answers and notifications here (the agent's stdout). */
  readonly output: Readable;
  /** What the terminal printed (raw, escape sequences and all). */
  feed(data: string): void;
  /** The CLI waits for input again: the running turn ends. */
  idle(): void;
  /** The process is gone: the connection ends (a running turn fails as the agent's exit). */
  end(): void;
}

// CSI and OSC sequences, and the two-character escapes; carriage returns (the terminal's line ends are \r\n).
// eslint-disable-next-line no-control-regex
const escapeSequences = /\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]|\r/g;

/** Terminal output as plain text: escape sequences and carriage returns removed. */
export function plainText(data: string): string {
  return data.replace(escapeSequences, '');
}

interface JsonRpcMessage {
  id?: string | number | null;
  method?: string;
  params?: Record<string, unknown>;
}

const initializeResult = {
  protocolVersion: 1,
  agentCapabilities: { loadSession: false, promptCapabilities: { image: false, audio: false, embeddedContext: false } },
  agentInfo: { name: 'pty', title: 'Interactive CLI (pseudo-terminal)', version: '1' },
  authMethods: [],
};

/** Opens the bridge; `feed`, `idle` and `end` come from the PTY and its activity machine. */
export function openPtyBridge(options: PtyBridgeOptions): PtyBridge {
  const input = new PassThrough();
  const output = new PassThrough();
  let ended = false;
  let sessionOpen = false;
  let turn: { id: string | number; cancelled: boolean } | null = null;

  const send = (message: object) => {
    if (!ended) output.write(`${JSON.stringify({ jsonrpc: '2.0', ...message })}\n`);
  };
  const respond = (id: string | number, result: unknown) => send({ id, result });
  const fail = (id: string | number, code: number, message: string) => send({ id, error: { code, message } });

  function fromClient(line: string): void {
    let message: JsonRpcMessage;
    try {
      message = JSON.parse(line) as JsonRpcMessage;
    } catch {
      return;
    }
    const { id, method, params = {} } = message;
    if (typeof method !== 'string') return;
    if (id === undefined || id === null) {
      // session/cancel: Ctrl-C, as a person at the terminal would; the turn ends cancelled at once.
      if (method === 'session/cancel' && turn && params.sessionId === options.sessionId) {
        turn.cancelled = true;
        options.write('\x03');
        const current = turn;
        turn = null;
        respond(current.id, { stopReason: 'cancelled' });
      }
      return;
    }
    switch (method) {
      case 'initialize':
        return respond(id, initializeResult);
      case 'session/new':
        if (sessionOpen) return fail(id, -32603, 'A pty agent holds one session per process: start another agent for another session');
        sessionOpen = true;
        return respond(id, { sessionId: options.sessionId });
      case 'session/prompt': {
        if (params.sessionId !== options.sessionId) return fail(id, -32002, `Unknown session ${String(params.sessionId)}`);
        if (turn) return fail(id, -32603, 'A turn is already running');
        turn = { id, cancelled: false };
        options.write(`${promptText(Array.isArray(params.prompt) ? (params.prompt as ContentBlock[]) : [])}\r`);
        return;
      }
      default:
        return fail(id, -32601, `Method not found: ${method}`);
    }
  }

  let buffered = '';
  input.setEncoding('utf8');
  input.on('data', (chunk: string) => {
    buffered += chunk;
    let newline = buffered.indexOf('\n');
    while (newline !== -1) {
      const line = buffered.slice(0, newline);
      buffered = buffered.slice(newline + 1);
      if (line.trim() !== '') fromClient(line);
      newline = buffered.indexOf('\n');
    }
  });

  return {
    input,
    output,
    feed(data) {
      if (!turn || !sessionOpen) return;
      const text = plainText(data);
      if (text !== '') send({ method: 'session/update', params: { sessionId: options.sessionId, update: { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text } } } });
    },
    idle() {
      if (!turn) return;
      const current = turn;
      turn = null;
      respond(current.id, { stopReason: 'end_turn' });
    },
    end() {
      ended = true;
      output.end();
    },
  };
}
