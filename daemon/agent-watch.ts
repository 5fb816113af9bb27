/**
 * The daemon's view of its agents beyond what `list()` says: when each connected, how often
 * it restarted, and every move of its machine (also within a status: `connected.settling` →
 * `connected.stable`), read from the agent actors' snapshots.
 */
import type { AgentStatusEvent, AgentSummary, Supervisor } from '../index.js';
import type { AgentRow } from './api-types.js';

export interface AgentWatchListener {
  status(event: AgentStatusEvent, row: AgentRow): void;
  state(agent: string, state: string, status: string): void;
}

interface Subscribable {
  subscribe(observer: { next(): void; error(): void }): { unsubscribe(): void };
}

export class AgentWatch {
  private readonly connectedAt = new Map<string, number>();
  private readonly connections = new Map<string, number>();
  private readonly lastPid = new Map<string, number>();
  private readonly lastState = new Map<string, string>();
  private readonly watched = new Map<string, { unsubscribe(): void }>();
  private readonly notAgents = new Set<string>();
  private readonly offs: Array<() => void> = [];

  constructor(
    private readonly supervisor: Supervisor,
    private readonly listener: AgentWatchListener,
    /** How many sessions the daemon holds open, by agent. */
    private readonly openSessions: () => ReadonlyMap<string, number>,
    private readonly now: () => number = Date.now,
  ) {
    this.offs.push(
      supervisor.on('agent:status', (event) => {
        if (event.status === 'connected') {
          // A restart is a new process; connected again over the same one (after authenticate) is not.
          const pid = this.supervisor.describe(event.agent).pid;
          if (pid === null || pid !== this.lastPid.get(event.agent)) {
            this.connectedAt.set(event.agent, this.now());
            this.connections.set(event.agent, (this.connections.get(event.agent) ?? 0) + 1);
          }
          if (pid !== null) this.lastPid.set(event.agent, pid);
        }
        // Left connected: the row says null (row() reads connectedAt only while connected).
        this.listener.status(event, this.row(event.agent));
      }),
    );
    // Agent actors are children of the supervisor actor; one registered later appears in a later snapshot.
    const supervisorSubscription = supervisor.actor.subscribe({ next: () => this.watchChildren(), error: () => {} });
    this.offs.push(() => supervisorSubscription.unsubscribe());
    this.watchChildren();
  }

  /** One agent's row. Throws `unknown_agent`. */
  row(agent: string): AgentRow {
    return this.toRow(this.supervisor.describe(agent), this.openSessions());
  }

  rows(): AgentRow[] {
    const open = this.openSessions();
    return this.supervisor.list().map((summary) => this.toRow(summary, open));
  }

  /**
   * The row of a summary, its fields named one by one: on Node 20 an object spread followed by
   * more properties takes a slow path (~5 µs an object), which `ls` of 100 agents would pay.
   */
  private toRow(summary: AgentSummary, open: ReadonlyMap<string, number>): AgentRow {
    const { name } = summary;
    return {
      name,
      displayName: summary.displayName,
      status: summary.status,
      state: summary.state,
      pid: summary.pid,
      attempt: summary.attempt,
      lastError: summary.lastError,
      containment: summary.containment,
      since: summary.since,
      lastExit: summary.lastExit,
      restart: summary.restart,
      credential: summary.credential,
      agentInfo: summary.agentInfo,
      agentCapabilities: summary.agentCapabilities,
      authMethods: summary.authMethods,
      connectedAt: summary.status === 'connected' ? (this.connectedAt.get(name) ?? null) : null,
      restarts: Math.max(0, (this.connections.get(name) ?? 0) - 1),
      sessions: open.get(name) ?? 0,
    };
  }

  close(): void {
    for (const off of this.offs.splice(0)) off();
    for (const subscription of this.watched.values()) subscription.unsubscribe();
    this.watched.clear();
  }

  private watchChildren(): void {
    const children = this.supervisor.actor.getSnapshot().children as Record<string, Subscribable | undefined>;
    for (const name of Object.keys(children)) {
      const child = children[name];
      if (!child || this.watched.has(name) || this.notAgents.has(name)) continue;
      let state: string;
      try {
        state = this.supervisor.describe(name).state;
      } catch {
        this.notAgents.add(name); // a child of the supervisor that is not an agent
        continue;
      }
      this.lastState.set(name, state);
      this.watched.set(
        name,
        child.subscribe({
          next: () => {
            const { state, status } = this.supervisor.describe(name);
            if (this.lastState.get(name) === state) return;
            this.lastState.set(name, state);
            this.listener.state(name, state, status);
          },
          error: () => {},
        }),
      );
    }
  }
}
