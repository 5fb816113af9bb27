/**
 * pm2's `resurrect` habit, for the daemon: it keeps what it runs — the agents a caller started
 * and did not stop ({@link RESTORED_STATUSES}), and the named sessions open on them — in its
 * state file as it changes (daemon/daemon-state-file.ts), and its next start on the same state
 * directory (after the orphan policy has run) starts those agents again and reopens those
 * sessions through the library. It runs in the background: `startDaemon()` does not wait for
 * an agent's handshake; the report says whether it is done (`GET /v1/health`'s `restore`).
 * A failure is logged and reported (`restore:failed`), never fatal. The daemon decides nothing
 * about agents here: it asks the supervisor, as a caller would.
 */
import type { AgentStatus, Supervisor } from '../index.js';
import type { DaemonStateFile, OpenNamedSession, RunningState } from './daemon-state-file.js';
import { RESTORED_STATUSES, type RestoredAgent, type RestoredSession, type RestoreReport } from './daemon-types.js';
import type { SessionDesk } from './session-desk.js';

export interface RestoreDeps {
  supervisor: Supervisor;
  desk: SessionDesk;
  file: DaemonStateFile;
  /** false: restore nothing (what this daemon runs is still recorded). */
  enabled: boolean;
  log(line: string): void;
  /** An agent or a named session could not be restored (or was skipped), as it happens. */
  failed(item: { agent: string; session: { name: string; sessionId: string } | null; outcome: 'failed' | 'skipped'; error: { kind: string; message: string } }): void;
  /** Every agent and session of it has settled. */
  done(report: RestoreReport): void;
}

const sessionKey = (session: { agent: string; name: string }) => `${session.agent}\u0000${session.name}`;

export class Restore {
  private readonly statuses = new Map<string, AgentStatus>();
  private readonly pendingAgents = new Set<string>();
  private readonly pendingSessions = new Map<string, OpenNamedSession>();
  private readonly offs: Array<() => void>;
  private current: RestoreReport = { state: 'restoring', startedAt: null, finishedAt: null, agents: [], sessions: [] };
  private finish!: (report: RestoreReport) => void;
  readonly done = new Promise<RestoreReport>((resolve) => (this.finish = resolve));

  constructor(private readonly deps: RestoreDeps) {
    this.offs = [
      deps.supervisor.on('agent:status', ({ agent, status }) => {
        this.statuses.set(agent, status);
        this.record();
      }),
      deps.supervisor.on('session:status', () => this.record()),
    ];
  }

  /** The report now (a copy). */
  report(): RestoreReport {
    return { ...this.current, agents: this.current.agents.map((agent) => ({ ...agent })), sessions: this.current.sessions.map((session) => ({ ...session })) };
  }

  /**
   * Reads what the last daemon ran and starts restoring it: every agent's start is sent
   * before this returns (so a client that finds the daemon sees them starting, never idle),
   * each named session is reopened once its agent is connected. Resolves nothing: `done` does.
   */
  begin(now = Date.now()): void {
    const saved = this.deps.file.savedRunning();
    if (!this.deps.enabled) {
      this.current = { state: 'off', startedAt: null, finishedAt: null, agents: [], sessions: [] };
      this.record(); // what runs now is nothing: the list kept is this daemon's from here on
      this.finish(this.report());
      return;
    }
    const registered = new Set(this.deps.supervisor.list().map((agent) => agent.name));
    this.current = { state: 'restoring', startedAt: now, finishedAt: null, agents: [], sessions: [] };
    for (const agent of saved.agents) {
      if (registered.has(agent)) {
        this.current.agents.push({ agent, outcome: 'pending', error: null });
        this.pendingAgents.add(agent);
        continue;
      }
      const error = { kind: 'unknown_agent', message: `Agent "${agent}" is not registered any more (the config changed?): not started` };
      this.current.agents.push({ agent, outcome: 'skipped', error });
      this.deps.log(`restore: ${error.message}`);
      this.deps.failed({ agent, session: null, outcome: 'skipped', error });
    }
    for (const session of saved.sessions) {
      if (this.pendingAgents.has(session.agent)) {
        this.current.sessions.push({ ...session, outcome: 'pending', error: null });
        this.pendingSessions.set(sessionKey(session), session);
        continue;
      }
      const error = { kind: 'unknown_agent', message: `Session "${session.name}" of agent "${session.agent}" (${session.sessionId}) is not reopened: its agent is not restored` };
      this.current.sessions.push({ ...session, outcome: 'skipped', error });
      this.deps.log(`restore: ${error.message}`);
      this.deps.failed({ agent: session.agent, session: { name: session.name, sessionId: session.sessionId }, outcome: 'skipped', error });
    }
    if (this.pendingAgents.size > 0) {
      const sessions = saved.sessions.filter((session) => this.pendingAgents.has(session.agent));
      this.deps.log(
        `restore: starting again what the last daemon ran: ${plural(this.pendingAgents.size, 'agent')} (${[...this.pendingAgents].join(', ')})` +
          (sessions.length > 0 ? `, ${plural(sessions.length, 'named session')} (${sessions.map((session) => `${session.agent} -s ${session.name}`).join(', ')})` : ''),
      );
    }
    const restorations = [...this.pendingAgents].map((agent) => this.restoreAgent(agent, saved.sessions.filter((session) => session.agent === agent)));
    this.record(); // skipped ones dropped, pending ones kept: a daemon killed now restores them next time
    void Promise.all(restorations).then(() => this.end());
  }

  /** Stops recording (the daemon is closing: its shutdown's stops are not a caller's) and listening. */
  close(): void {
    this.deps.file.freeze();
    for (const off of this.offs.splice(0)) off();
  }

  private async restoreAgent(agent: string, sessions: OpenNamedSession[]): Promise<void> {
    const entry = this.current.agents.find((candidate) => candidate.agent === agent)!;
    try {
      const handle = await this.deps.supervisor.ensureAgent(agent);
      entry.outcome = 'restored';
      this.deps.log(`restore: agent ${agent} started again (pid ${handle.pid})`);
    } catch (error) {
      entry.outcome = 'failed';
      entry.error = errorOf(error);
      this.deps.log(`restore: agent ${agent} could not be started again (${entry.error.kind}: ${entry.error.message})`);
      this.deps.failed({ agent, session: null, outcome: 'failed', error: entry.error });
      for (const session of sessions) {
        this.settleSession(session, 'skipped', { kind: entry.error.kind, message: `Session "${session.name}" of agent "${agent}" (${session.sessionId}) is not reopened: its agent could not be started again` });
      }
      return;
    } finally {
      this.pendingAgents.delete(agent);
      this.record();
    }
    await Promise.all(sessions.map((session) => this.restoreSession(session)));
  }

  private async restoreSession(session: OpenNamedSession): Promise<void> {
    try {
      await this.deps.desk.reopenNamed(session);
      this.settleSession(session, 'restored', null);
    } catch (error) {
      const { kind, message } = errorOf(error);
      this.settleSession(session, 'failed', { kind, message: `Session "${session.name}" of agent "${session.agent}" (${session.sessionId}) could not be reopened: ${message}` });
    }
  }

  private settleSession(session: OpenNamedSession, outcome: 'restored' | 'failed' | 'skipped', error: RestoredSession['error']): void {
    const entry = this.current.sessions.find((candidate) => sessionKey(candidate) === sessionKey(session))!;
    entry.outcome = outcome;
    entry.error = error;
    this.pendingSessions.delete(sessionKey(session));
    this.record();
    if (outcome === 'restored') {
      this.deps.log(`restore: session "${session.name}" of agent ${session.agent} reopened (${session.sessionId})`);
      return;
    }
    this.deps.log(`restore: ${error!.message} (${error!.kind})`);
    this.deps.failed({ agent: session.agent, session: { name: session.name, sessionId: session.sessionId }, outcome, error: error! });
  }

  private end(): void {
    this.current.state = 'done';
    this.current.finishedAt = Date.now();
    const restored = (entries: Array<RestoredAgent | RestoredSession>) => entries.filter((entry) => entry.outcome === 'restored').length;
    if (this.current.agents.length + this.current.sessions.length > 0) {
      this.deps.log(
        `restore: done: ${restored(this.current.agents)} of ${plural(this.current.agents.length, 'agent')} and ${restored(this.current.sessions)} of ${plural(this.current.sessions.length, 'named session')} restored`,
      );
    }
    const report = this.report();
    this.deps.done(report);
    this.finish(report);
  }

  /** Writes what runs now — and what is still being restored — to the state file (when it changed). */
  record(): void {
    const agents = new Set(this.pendingAgents);
    for (const [agent, status] of this.statuses) if (RESTORED_STATUSES.has(status)) agents.add(agent);
    const sessions = new Map<string, OpenNamedSession>(this.pendingSessions);
    for (const session of this.deps.desk.openNamedSessions()) if (agents.has(session.agent)) sessions.set(sessionKey(session), session);
    const running: RunningState = { agents: [...agents], sessions: [...sessions.values()] };
    this.deps.file.recordRunning(running);
  }
}

function errorOf(error: unknown): { kind: string; message: string } {
  const kind = (error as { kind?: unknown } | null)?.kind;
  return { kind: typeof kind === 'string' ? kind : 'internal', message: error instanceof Error ? error.message : String(error) };
}

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}
