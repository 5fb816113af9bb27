/**
 * A subscriber-style view of one ACP session — `session.on('update', listener)`,
 * `await session.prompt(text)` (→ stop reason), `session.close()` — over a bare SDK
 * connection, built on the SDK's own session helper (`connection.agent.buildSession(cwd)
 * .start()`, which routes the `session/update` notifications of that session to
 * `nextUpdate()`). The raw baseline of the stream benchmark reads updates this way.
 *
 * It is the subset of agentvisor's Session API (`supervisor.newSession(...)`) that the
 * stream benchmark uses, so either can be measured with the same code.
 */
import type { ClientConnection, SessionUpdate } from '@agentclientprotocol/sdk';

export interface UpdateSession {
  /** Calls `listener` with every update of this session; returns the function that unsubscribes. */
  on(event: 'update', listener: (update: SessionUpdate) => void): () => void;
  /** Sends a text prompt; resolves with the stop reason once the turn ends and every update was delivered. */
  prompt(text: string): Promise<string>;
  close(): Promise<void>;
}

export async function openUpdateSession(connection: ClientConnection, cwd = process.cwd()): Promise<UpdateSession> {
  const session = await connection.agent.buildSession(cwd).start();
  const listeners = new Set<(update: SessionUpdate) => void>();
  return {
    on(_event, listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    async prompt(text) {
      const response = session.prompt(text);
      for (;;) {
        const message = await session.nextUpdate();
        if (message.kind === 'stop') break;
        for (const listener of listeners) listener(message.update);
      }
      return (await response).stopReason;
    },
    close: async () => session.dispose(),
  };
}
