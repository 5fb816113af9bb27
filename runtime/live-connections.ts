/**
 * The live ACP connections of connected agents, keyed by agent name. Machine context holds
 * only JSON, so the objects a caller needs for direct ACP calls live here, owned by the
 * process actor that opened them: it adds its entry on `initialize` and removes it when it
 * is released.
 */
import type { ConnectionPublisher, LiveConnection } from '../actors/agent-process.actor.js';
import type { ClientConnection } from '../core/acp-types.js';

export type { LiveConnection };

export class LiveConnections implements ConnectionPublisher {
  private readonly byAgent = new Map<string, LiveConnection>();
  /** Each agent's latest `initialize` answer, kept after its connection is gone (its auth methods, with their types). */
  private readonly handshakes = new Map<string, LiveConnection['initialize']>();

  /** The `initialize` answer of the agent's latest connection, live or not. */
  lastHandshake(agent: string): LiveConnection['initialize'] | undefined {
    return this.handshakes.get(agent);
  }

  get(agent: string): LiveConnection | undefined {
    return this.byAgent.get(agent);
  }

  /** The agent's connection while its stream is open. */
  usable(agent: string): ClientConnection | undefined {
    const connection = this.byAgent.get(agent)?.connection;
    return connection && !connection.signal.aborted ? connection : undefined;
  }

  add(live: LiveConnection): void {
    this.byAgent.set(live.agent, live);
    this.handshakes.set(live.agent, live.initialize);
  }

  /** Removes the entry only if it is still this connection (a newer one may have replaced it). */
  remove(agent: string, connection: ClientConnection): void {
    if (this.byAgent.get(agent)?.connection === connection) this.byAgent.delete(agent);
  }
}
