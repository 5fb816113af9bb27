/**
 * echo-agent — a tiny, credential-free Agent Client Protocol (ACP) agent.
 *
 * It speaks newline-delimited JSON-RPC on its own stdin/stdout and echoes every
 * prompt back as `agent_message_chunk` session updates, word by word, then ends
 * the turn with `end_turn`. `session/cancel` stops a turn early (`cancelled`).
 * It exits with code 0 when its stdin closes; nothing but protocol is written to
 * stdout (diagnostics, if any, go to stderr).
 *
 * Run it:
 *   npm run build && node dist/examples/echo-agent.js
 *   npx tsx examples/echo-agent.ts
 *
 * The module also exports the small building blocks it is made of (turn
 * tracking, word streaming, stdio wiring) so that the scriptable test agent in
 * tests/fixtures/fixture-agent.ts can reuse them.
 */
import { randomUUID } from 'node:crypto';
import { realpathSync } from 'node:fs';
import { Readable, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import {
  agent,
  methods,
  ndJsonStream,
  PROTOCOL_VERSION,
  RequestError,
  type AgentApp,
  type AgentConnection,
  type AgentContext,
  type ContentBlock,
  type Implementation,
  type StopReason,
} from '@agentclientprotocol/sdk';

export const ECHO_AGENT_INFO: Implementation = { name: 'echo-agent', version: '0.1.0' };

/** Concatenates the text blocks of a prompt (other block kinds are ignored). */
export function promptText(prompt: readonly ContentBlock[]): string {
  let text = '';
  for (const block of prompt) {
    if (block.type === 'text') text += block.text;
  }
  return text;
}

/**
 * Splits text into words, each keeping the whitespace that follows it (leading
 * whitespace sticks to the first word), so `splitWords(t).join('') === t`.
 */
export function splitWords(text: string): string[] {
  return text.match(/\s*\S+\s*|\s+/g) ?? [];
}

/** Resolves after `ms` milliseconds, or early (with `false`) when `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve(false);
    const onAbort = (): void => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Resolves when `signal` aborts (never, if it never does). */
export function aborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    signal.addEventListener('abort', () => resolve(), { once: true });
  });
}

/** Sends one `agent_message_chunk` text update. */
export function sendAgentText(client: AgentContext, sessionId: string, text: string): Promise<void> {
  return client.notify(methods.client.session.update, {
    sessionId,
    update: { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text } },
  });
}

/**
 * Sends `chunks` through `send` one by one, `intervalMs` apart (0 still yields
 * to the event loop between chunks so a `session/cancel` can land). Returns
 * `cancelled` if `signal` aborts before every chunk went out, else `end_turn`.
 */
export async function streamChunks(
  send: (text: string) => Promise<void>,
  chunks: Iterable<string>,
  signal: AbortSignal,
  intervalMs = 0,
): Promise<StopReason> {
  let first = true;
  for (const chunk of chunks) {
    if (!first && !(await sleep(intervalMs, signal))) return 'cancelled';
    first = false;
    if (signal.aborted) return 'cancelled';
    await send(chunk);
  }
  return signal.aborted ? 'cancelled' : 'end_turn';
}

/** One in-flight prompt turn; `signal` aborts on `session/cancel` or request cancellation. */
export interface Turn {
  readonly signal: AbortSignal;
  end(): void;
}

/** Tracks the active prompt turn of each session so `session/cancel` can stop it. */
export class TurnTracker {
  private readonly active = new Map<string, AbortController>();

  /** Starts a turn (cancelling any turn still running in the same session). */
  begin(sessionId: string, requestSignal?: AbortSignal): Turn {
    this.cancel(sessionId);
    const controller = new AbortController();
    this.active.set(sessionId, controller);
    const onRequestAbort = (): void => controller.abort();
    if (requestSignal?.aborted) controller.abort();
    else requestSignal?.addEventListener('abort', onRequestAbort, { once: true });
    return {
      signal: controller.signal,
      end: () => {
        requestSignal?.removeEventListener('abort', onRequestAbort);
        if (this.active.get(sessionId) === controller) this.active.delete(sessionId);
      },
    };
  }

  /** Cancels the session's active turn; returns whether there was one. */
  cancel(sessionId: string): boolean {
    const controller = this.active.get(sessionId);
    if (!controller) return false;
    this.active.delete(sessionId);
    controller.abort();
    return true;
  }
}

export interface ServeStdioOptions {
  /** Exit the process with code 0 once stdin closes (default true). */
  exitOnClose?: boolean;
}

/**
 * Connects an agent app to this process's stdin/stdout using newline-delimited
 * JSON-RPC. Writes nothing else to stdout.
 */
export function serveStdio(app: AgentApp, options: ServeStdioOptions = {}): AgentConnection {
  // A client that goes away mid-write must not crash us with EPIPE.
  process.stdout.on('error', () => process.exit(0));
  const output = Writable.toWeb(process.stdout) as WritableStream<Uint8Array>;
  const input = Readable.toWeb(process.stdin) as ReadableStream<Uint8Array>;
  const connection = app.connect(ndJsonStream(output, input));
  if (options.exitOnClose ?? true) {
    void connection.closed.then(() => process.exit(0));
  }
  return connection;
}

/** True when the module with this `import.meta.url` is the process entry point. */
export function isMainModule(importMetaUrl: string): boolean {
  const entry = process.argv[1];
  if (!entry) return false;
  try {
    return realpathSync(fileURLToPath(importMetaUrl)) === realpathSync(entry);
  } catch {
    return false;
  }
}

export interface EchoAgentOptions {
  /** Delay between streamed words, in milliseconds (default 0). */
  wordDelayMs?: number;
}

/** Builds the echo agent app (not yet connected). */
export function createEchoAgent(options: EchoAgentOptions = {}): AgentApp {
  const sessions = new Set<string>();
  const turns = new TurnTracker();
  let counter = 0;

  return agent({ name: ECHO_AGENT_INFO.name })
    .onRequest(methods.agent.initialize, () => ({
      protocolVersion: PROTOCOL_VERSION,
      agentInfo: ECHO_AGENT_INFO,
      agentCapabilities: { loadSession: false },
      authMethods: [],
    }))
    .onRequest(methods.agent.session.new, () => {
      const sessionId = `echo-${++counter}-${randomUUID().slice(0, 8)}`;
      sessions.add(sessionId);
      return { sessionId };
    })
    .onRequest(methods.agent.session.prompt, async ({ params, client, signal }) => {
      if (!sessions.has(params.sessionId)) throw RequestError.sessionNotFound(params.sessionId);
      const turn = turns.begin(params.sessionId, signal);
      try {
        const words = splitWords(promptText(params.prompt));
        const send = (text: string): Promise<void> => sendAgentText(client, params.sessionId, text);
        const stopReason = await streamChunks(send, words, turn.signal, options.wordDelayMs ?? 0);
        return { stopReason };
      } finally {
        turn.end();
      }
    })
    .onNotification(methods.agent.session.cancel, ({ params }) => {
      turns.cancel(params.sessionId);
    });
}

if (isMainModule(import.meta.url)) {
  serveStdio(createEchoAgent());
}
