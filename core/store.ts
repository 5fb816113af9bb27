/**
 * The store: what a supervisor keeps beyond memory (docs/store.md). Types only: the SQLite
 * and in-memory implementations live in services/store/, the batching writer and the
 * journal that feeds it in runtime/.
 *
 * A store is written in batches (one per event-loop tick, applied in one transaction) and
 * read in pages. Every method may answer at once or with a promise, so an embedding app can
 * put its own database behind the interface.
 */

import type { FailureClass } from './failure-class.js';

/** A value now or later: stores may be synchronous (SQLite, memory) or not. */
export type Awaitable<T> = T | Promise<T>;

/** An agent's spec as stored: environment variable names only, never their values (they may hold secrets). */
export interface StoredAgentSpec {
  command: string;
  args: string[];
  cwd: string | null;
  displayName: string | null;
  envNames: string[];
}

/** One write. A batch of them is applied in order, all or nothing. */
export type StoreWrite =
  /** An agent registered (again): inserted, or its spec replaced. */
  | { type: 'agent'; at: number; agent: string; spec: StoredAgentSpec }
  /**
   * A session opened, or changed: inserted on first sight (`createdAt` = `at`), then each
   * write replaces the fields it carries and sets `updatedAt` = `at`.
   */
  | {
      type: 'session';
      at: number;
      agent: string;
      sessionId: string;
      cwd?: string;
      title?: string | null;
      state?: string;
      stopReason?: string | null;
    }
  /** One entry of a session's transcript (see {@link TranscriptEntry}). */
  | { type: 'transcript'; at: number; agent: string; sessionId: string; kind: TranscriptKind; data: unknown }
  /** One line an agent wrote to stderr. */
  | { type: 'stderr'; at: number; agent: string; line: string }
  /** One entry of the event log: a lifecycle transition or an error. */
  | { type: 'event'; at: number; agent: string | null; event: string; data: unknown };

/**
 * What a transcript holds, in order: `update` (a `session/update` as the agent sent it),
 * `prompt` (the content blocks sent), `prompt_result` (the turn's stop reason, or its
 * error), `permission` (a request: tool call and options) and `permission_outcome` (its
 * answer, and who gave it), `elicitation` (a session's elicitation request: mode, message,
 * schema or url) and `elicitation_outcome` (its answer).
 */
export type TranscriptKind = 'update' | 'prompt' | 'prompt_result' | 'permission' | 'permission_outcome' | 'elicitation' | 'elicitation_outcome';

/** A session as stored. */
export interface StoredSession {
  agent: string;
  sessionId: string;
  cwd: string;
  title: string | null;
  /** The session's last status (a `SessionStatus`), `stopped` once closed. */
  state: string;
  /** The stop reason of its last finished turn. */
  stopReason: string | null;
  createdAt: number;
  updatedAt: number;
}

/** Paging: entries with `seq` greater than `after`, at most `limit` of them, oldest first. */
export interface Page {
  after: number;
  limit: number;
}

export interface TranscriptEntry {
  /** Increases with every entry of the store (a cursor for `after`), not only of this session. */
  seq: number;
  at: number;
  agent: string;
  sessionId: string;
  kind: TranscriptKind;
  data: unknown;
}

export interface LogEntry {
  seq: number;
  at: number;
  agent: string;
  line: string;
}

export interface EventEntry {
  seq: number;
  at: number;
  agent: string | null;
  event: string;
  /** For `error`: a {@link StoredFailure}; for `agent:status`: `{ status, previous }`. */
  data: unknown;
}

/**
 * An agent's failure as the event log keeps it (an `error` entry's `data`): what the `error`
 * event and `list()[i].lastError` carry, with its class and its last stderr lines, so it can
 * be read back after the host restarted. Never an env value: nothing here comes from the
 * spec's environment. Entries written by an agentvisor before this shape have only `kind`,
 * `message`, `detail`, `exitCode` and `signal`.
 */
export interface StoredFailure {
  kind: string;
  message: string;
  /** Technical detail: the spawn error, the JSON-RPC error, how the process ended. */
  detail: string | null;
  exitCode: number | null;
  signal: string | null;
  /** Why it failed (docs/failures.md); null for a failure the classifier did not see. */
  class: FailureClass | null;
  /** Whether the supervisor retried it by itself (now, after a backoff, or at `retryAt`). */
  retryable: boolean;
  /** When a usage or rate limit resets (epoch ms), when the agent said so. */
  retryAt: number | null;
  /**
   * The last lines the agent wrote to stderr before it failed, oldest first: the failure's own
   * tail (at most `stderrLines`, each at most 1000 characters).
   */
  stderr: string[];
  /** With kind `not_installed`: the command that was not found, and how to install it. */
  command?: string;
  installHint?: string;
}

/** Limits for one kind of entry; each is optional, and all that are set apply. */
export interface RetentionRule {
  /** Keep at most this many entries (the newest). */
  maxCount?: number;
  /** Drop entries older than this. */
  maxAgeMs?: number;
  /** Keep at most this many bytes of entries (their stored JSON or text), the newest. */
  maxBytes?: number;
}

/**
 * Retention per kind. `sessions` applies to whole sessions (by `updatedAt`), and dropping a
 * session drops its transcript; the others apply to their entries across all sessions and
 * agents.
 */
export interface Retention {
  sessions?: RetentionRule;
  transcript?: RetentionRule;
  stderr?: RetentionRule;
  events?: RetentionRule;
}

/** What a store keeps, by kind: how many entries and how many bytes of payload. */
export interface StoreStats {
  sessions: number;
  transcript: { count: number; bytes: number };
  stderr: { count: number; bytes: number };
  events: { count: number; bytes: number };
  /** The size of the database file(s), for a store that has them. */
  fileBytes?: number;
}

/**
 * The interface a store implements. Writes arrive in batches, in order; a batch must be
 * applied atomically (all or nothing), and a failure is thrown (or rejected), never
 * swallowed: the supervisor reports it as a `store:error` event and goes on.
 */
export interface Store {
  /** Applies one batch, in order, atomically. */
  write(batch: readonly StoreWrite[]): Awaitable<void>;
  /** Sessions, newest `updatedAt` first, of one agent and/or one cwd when given. */
  sessions(filter: { agent?: string; cwd?: string; sessionId?: string }): Awaitable<StoredSession[]>;
  /** A page of one session's transcript. */
  transcript(agent: string, sessionId: string, page: Page): Awaitable<TranscriptEntry[]>;
  /** A page of an agent's stderr lines. */
  logs(agent: string, page: Page): Awaitable<LogEntry[]>;
  /** A page of the event log, of one agent when given. */
  events(filter: { agent?: string }, page: Page): Awaitable<EventEntry[]>;
  /** Enforces `retention` as of `now` (ms since the epoch). */
  prune(retention: Retention, now: number): Awaitable<void>;
  /** Counts and sizes, for reports and retention checks. */
  stats(): Awaitable<StoreStats>;
  /** Flushes and closes; no call follows. */
  close(): Awaitable<void>;
}
