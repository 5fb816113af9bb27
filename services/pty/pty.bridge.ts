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
import type { Readable, Writable } from 'node:stream';
import { openSessionBridge, SingleSession } from '../acp-bridge.js';

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

/** Opens the bridge; `feed`, `idle` and `end` come from the PTY and its activity machine. */
export function openPtyBridge(options: PtyBridgeOptions): PtyBridge {
  const session = new SingleSession(options.sessionId, 'pty');
  const bridge = openSessionBridge({
    agentInfo: { name: 'pty', title: 'Interactive CLI (pseudo-terminal)' },
    session,
    prompt: (text) => options.write(`${text}\r`),
    // Ctrl-C, as a person at the terminal would; the turn ends cancelled at once.
    cancel(turn) {
      options.write('\x03');
      bridge.endTurn();
      client.respond(turn.id, { stopReason: 'cancelled' });
    },
  });
  const { client } = bridge;

  return {
    input: client.input,
    output: client.output,
    feed(data) {
      if (!bridge.turn || !session.isOpen) return;
      const text = plainText(data);
      if (text !== '') client.notify('session/update', { sessionId: options.sessionId, update: { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text } } });
    },
    idle() {
      const current = bridge.endTurn();
      if (current) client.respond(current.id, { stopReason: 'end_turn' });
    },
    end: () => client.end(),
  };
}
