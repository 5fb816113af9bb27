/** The daemon's options and handle (daemon/daemon.ts is the entry). */
import type { AgentStatus, OrphanSweepResult, Supervisor, SupervisorOptions } from '../index.js';
import type { FeedStats } from './event-feed.js';

/** The default port of `agentvisor serve`. */
export const DEFAULT_PORT = 7433;

/**
 * What the daemon's start does with what a crashed supervisor left in its state directory
 * (docs/containment.md, "Records and the orphan sweep"): `'kill'` sweeps it before the first
 * agent starts (the library's `sweepOnStart`), `'report'` only lists it (a dry run: logged,
 * and kept for `GET /v1/orphans`; nothing killed), `'ignore'` does neither.
 */
export const ORPHAN_POLICIES = ['kill', 'report', 'ignore'] as const;
export type OrphanPolicy = (typeof ORPHAN_POLICIES)[number];

/**
 * The default: `'kill'`. A leftover's supervisor is gone, so nothing can talk to it any more
 * (its stdio led to the dead process): it only holds CPU, memory, files and ports. The sweep
 * kills only what a record names, by pid AND start time, of an owner that is gone, so it
 * never touches another live supervisor's agents nor a reused pid; and a daemon restarted
 * unattended (systemd's Restart=on-failure) must not pile up its predecessors' agents until a
 * person looks. `'report'` is for an operator who wants to look first.
 */
export const DEFAULT_ORPHAN_POLICY: OrphanPolicy = 'kill';

export interface DaemonOptions {
  /** The supervisor's options (agents, store, restart, ...); `stateDir` is where the daemon files go too. */
  supervisor: SupervisorOptions;
  /** Where to listen: loopback by default. Another address is allowed, and warned about. */
  host?: string;
  /** 0 picks a free port. Default {@link DEFAULT_PORT}. */
  port?: number;
  /** Write `daemon.json` and `daemon.token` into the state directory (default true). */
  writeFiles?: boolean;
  /**
   * What the start does with a crashed supervisor's leftovers: {@link OrphanPolicy}, default
   * {@link DEFAULT_ORPHAN_POLICY}. It decides the supervisor's `sweepOnStart`, so the two are
   * not given together; without it, `supervisor.sweepOnStart: false` means `'ignore'`.
   */
  orphans?: OrphanPolicy;
  /**
   * Start again what the last daemon on this state directory ran — the agents a caller
   * started and did not stop, and the named sessions open on them — once the orphan policy
   * has run (default true; docs/cli.md, "Restore"). With false nothing is restored, and the
   * list kept is what this daemon runs from now on.
   */
  restore?: boolean;
  /** Where the daemon writes its log lines (what the restore did); default: stderr. */
  log?: (line: string) => void;
  /**
   * The event stream's bounds (docs/http-api.md, "The event stream"): the journal a client
   * resumes from with `?since=` — `journalMessages` (default 100,000) and `journalBytes` of
   * JSON (default 64 MiB), whichever is reached first — and `clientCapBytes`, what the daemon
   * holds for one client before it stops writing to it (default 4 MiB).
   */
  events?: { journalMessages?: number; journalBytes?: number; clientCapBytes?: number };
}

/** What the daemon's start did with a crashed supervisor's leftovers (`GET /v1/orphans` keeps it). */
export interface StartupOrphanReport {
  policy: OrphanPolicy;
  /** When the start-up sweep (`'kill'`) or listing (`'report'`) was done (epoch ms); null under `'ignore'`. */
  at: number | null;
  /** What it found and killed (`'kill'`), or the dry run's listing, nothing killed (`'report'`); null under `'ignore'`. */
  result: OrphanSweepResult | null;
}

/**
 * The agent statuses that count as running for the restore: a caller started the agent (a
 * start, a prompt, a restart) and did not stop it, and its process did not end as an
 * outcome. `disconnected` and the parked `needsAuth` and `rateLimited` count: the agent is
 * wanted, and failed or waits — a new daemon is a new chance (a command installed, a login
 * done since). Not counted: `idle` (never started, or stopped by a caller), `stopping` (a
 * caller's stop under way; the daemon's own shutdown is not recorded), `exited` (its process
 * ended and its restart policy says not to start it again).
 */
export const RESTORED_STATUSES: ReadonlySet<AgentStatus> = new Set<AgentStatus>(['starting', 'connected', 'disconnected', 'reconnecting', 'restarting', 'needsAuth', 'rateLimited']);

/** How one agent or named session of the last daemon fared at this daemon's start. */
export type RestoreOutcome =
  /** Under way. */
  | 'pending'
  /** Started again (connected), or reopened. */
  | 'restored'
  /** Tried, and failed: `error` says why. */
  | 'failed'
  /** Not tried: the agent is no longer registered (the config changed), or its agent was not restored. */
  | 'skipped';

export interface RestoredAgent {
  agent: string;
  outcome: RestoreOutcome;
  error: { kind: string; message: string } | null;
}

export interface RestoredSession {
  agent: string;
  name: string;
  sessionId: string;
  cwd: string;
  outcome: RestoreOutcome;
  error: { kind: string; message: string } | null;
}

/** What the daemon's start restored of what the last daemon ran (`GET /v1/health`'s `restore`). */
export interface RestoreReport {
  /** `'off'`: `restore: false`; `'restoring'`: under way (not every agent has settled yet); `'done'`. */
  state: 'off' | 'restoring' | 'done';
  /** When it began and ended (epoch ms); null when off, or not ended. */
  startedAt: number | null;
  finishedAt: number | null;
  agents: RestoredAgent[];
  sessions: RestoredSession[];
}

export interface Daemon {
  readonly url: string;
  readonly host: string;
  readonly port: number;
  readonly token: string;
  readonly stateDir: string | null;
  readonly supervisor: Supervisor;
  /** The dashboard's address, token included. */
  readonly dashboardUrl: string;
  /** What its start did with a crashed supervisor's leftovers: done by the time `startDaemon()` resolves. */
  readonly orphans: StartupOrphanReport;
  /** What its start restores of what the last daemon ran: now (it runs in the background: `state` says whether it is done). */
  readonly restore: RestoreReport;
  /** Resolves with the restore's report once every agent and session of it has settled (never rejects). */
  readonly restored: Promise<RestoreReport>;
  /** The event stream now: its epoch, the journal's seqs and size, and each client's position and what is held for it. */
  eventStream(): FeedStats;
  /** Resolves once the daemon has stopped (close(), or `POST /v1/shutdown`). */
  readonly closed: Promise<void>;
  /** Stops accepting requests, ends every stream, shuts the supervisor down, removes the daemon files. Idempotent. */
  close(): Promise<void>;
}
