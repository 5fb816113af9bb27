/**
 * The in-memory store (core/store.ts): the SQLite store's semantics in plain arrays and maps,
 * for tests and for supervisors that keep nothing across restarts.
 *
 * Payloads are kept as the JSON text SQLite would keep, so both stores answer the same (a
 * Date comes back a string, `undefined` comes back `null`) and no caller can mutate a stored
 * entry through an object it wrote or read. Every entry kind has its own `seq` counter, from
 * 1, never reused after pruning — as SQLite's AUTOINCREMENT per table.
 */
import { describeError, storeFailed } from '../../core/errors.js';
import { inSessionOrder } from './batch-order.js';
import { entryJson } from './entry-json.js';
import { retentionLimits } from './retention-limits.js';
import type { EventEntry, LogEntry, Page, Retention, RetentionRule, Store, StoreWrite, StoredSession, TranscriptKind } from '../../core/store.js';

interface StoredEntry {
  seq: number;
  at: number;
  bytes: number;
}

interface TranscriptRecord extends StoredEntry {
  agent: string;
  sessionId: string;
  kind: TranscriptKind;
  json: string;
}

interface LogRecord extends StoredEntry {
  agent: string;
  line: string;
}

interface EventRecord extends StoredEntry {
  agent: string | null;
  event: string;
  json: string;
}

/** A session, with the order it was inserted in: the last tie-break of "newest first" (SQLite's rowid). */
interface SessionRecord extends StoredSession {
  inserted: number;
}

/** A write with its payload already serialised: applying it cannot fail. */
type StagedWrite = { write: StoreWrite; json: string };

export function createMemoryStore(): Store {
  let closed = false;
  const agents = new Map<string, { spec: string; updatedAt: number }>();
  const sessions = new Map<string, SessionRecord>();
  let transcript: TranscriptRecord[] = [];
  let stderr: LogRecord[] = [];
  let events: EventRecord[] = [];
  const lastSeq = { transcript: 0, stderr: 0, events: 0 };
  let inserted = 0;

  function open(): void {
    if (closed) throw storeFailed('The memory store is closed');
  }

  function applySession(write: Extract<StoreWrite, { type: 'session' }>): void {
    const key = sessionKey(write.agent, write.sessionId);
    const session = sessions.get(key);
    if (!session) {
      sessions.set(key, {
        agent: write.agent,
        sessionId: write.sessionId,
        cwd: write.cwd ?? '',
        title: write.title ?? null,
        state: write.state ?? 'idle',
        stopReason: write.stopReason ?? null,
        createdAt: write.at,
        updatedAt: write.at,
        inserted: ++inserted,
      });
      return;
    }
    if (write.cwd !== undefined) session.cwd = write.cwd;
    if (write.title !== undefined) session.title = write.title;
    if (write.state !== undefined) session.state = write.state;
    if (write.stopReason !== undefined) session.stopReason = write.stopReason;
    session.updatedAt = write.at;
  }

  function apply({ write, json }: StagedWrite): void {
    switch (write.type) {
      case 'agent':
        agents.set(write.agent, { spec: json, updatedAt: write.at });
        return;
      case 'session':
        applySession(write);
        return;
      case 'transcript':
        transcript.push({ seq: ++lastSeq.transcript, at: write.at, agent: write.agent, sessionId: write.sessionId, kind: write.kind, json, bytes: byteLength(json) });
        return;
      case 'stderr':
        stderr.push({ seq: ++lastSeq.stderr, at: write.at, agent: write.agent, line: write.line, bytes: byteLength(write.line) });
        return;
      case 'event':
        events.push({ seq: ++lastSeq.events, at: write.at, agent: write.agent, event: write.event, json, bytes: byteLength(json) });
        return;
    }
  }

  /** Sessions newest first: by updatedAt, then createdAt, then the later inserted. */
  function newestSessionsFirst(): SessionRecord[] {
    return [...sessions.values()].sort((a, b) => b.updatedAt - a.updatedAt || b.createdAt - a.createdAt || b.inserted - a.inserted);
  }

  function dropSessions(doomed: SessionRecord[]): void {
    if (doomed.length === 0) return;
    const keys = new Set(doomed.map((session) => sessionKey(session.agent, session.sessionId)));
    for (const key of keys) sessions.delete(key);
    transcript = transcript.filter((entry) => !keys.has(sessionKey(entry.agent, entry.sessionId)));
  }

  /** Rules in turn, as the SQLite store: age, then count (newest kept), then bytes (newest kept). */
  function pruneSessions(rule: RetentionRule, now: number): void {
    const { maxAgeMs, maxCount, maxBytes } = retentionLimits(rule);
    if (maxAgeMs !== undefined) dropSessions([...sessions.values()].filter((session) => session.updatedAt < now - maxAgeMs));
    if (maxCount !== undefined) dropSessions(newestSessionsFirst().slice(maxCount));
    if (maxBytes !== undefined) {
      const bytes = new Map<string, number>();
      for (const entry of transcript) {
        const key = sessionKey(entry.agent, entry.sessionId);
        bytes.set(key, (bytes.get(key) ?? 0) + entry.bytes);
      }
      const newest = newestSessionsFirst();
      let total = 0;
      const kept = newest.findIndex((session) => (total += bytes.get(sessionKey(session.agent, session.sessionId)) ?? 0) > maxBytes);
      if (kept >= 0) dropSessions(newest.slice(kept));
    }
  }

  return {
    write(batch) {
      open();
      // Serialise every payload first: the one step that may throw, so a batch applies whole or not at all.
      let staged: StagedWrite[];
      try {
        // Numbered as the SQLite store numbers them: each session's transcript entries together (batch-order.ts).
        staged = inSessionOrder(batch).map((write) => ({ write, json: stage(write) }));
      } catch (error) {
        throw storeFailed(`Could not write to the memory store: ${describeError(error)}`, error);
      }
      for (const write of staged) apply(write);
    },

    sessions(filter) {
      open();
      return newestSessionsFirst()
        .filter(
          (session) =>
            (filter.agent === undefined || session.agent === filter.agent) &&
            (filter.cwd === undefined || session.cwd === filter.cwd) &&
            (filter.sessionId === undefined || session.sessionId === filter.sessionId),
        )
        .map(({ inserted: _inserted, ...session }) => session);
    },

    transcript(agent, sessionId, page) {
      open();
      return pageOf(transcript, page, (entry) => entry.agent === agent && entry.sessionId === sessionId).map((entry) => ({
        seq: entry.seq,
        at: entry.at,
        agent: entry.agent,
        sessionId: entry.sessionId,
        kind: entry.kind,
        data: JSON.parse(entry.json),
      }));
    },

    logs(agent, page) {
      open();
      return pageOf(stderr, page, (entry) => entry.agent === agent).map((entry): LogEntry => ({ seq: entry.seq, at: entry.at, agent: entry.agent, line: entry.line }));
    },

    events(filter, page) {
      open();
      return pageOf(events, page, (entry) => filter.agent === undefined || entry.agent === filter.agent).map(
        (entry): EventEntry => ({ seq: entry.seq, at: entry.at, agent: entry.agent, event: entry.event, data: JSON.parse(entry.json) }),
      );
    },

    // Entries first, then sessions, as the SQLite store: a session's bytes are those of the transcript left.
    prune(retention: Retention, now) {
      open();
      if (retention.transcript) transcript = pruneEntries(transcript, retention.transcript, now);
      if (retention.stderr) stderr = pruneEntries(stderr, retention.stderr, now);
      if (retention.events) events = pruneEntries(events, retention.events, now);
      if (retention.sessions) pruneSessions(retention.sessions, now);
    },

    stats() {
      open();
      return {
        sessions: sessions.size,
        transcript: { count: transcript.length, bytes: sumBytes(transcript) },
        stderr: { count: stderr.length, bytes: sumBytes(stderr) },
        events: { count: events.length, bytes: sumBytes(events) },
      };
    },

    close() {
      closed = true;
      agents.clear();
      sessions.clear();
      transcript = [];
      stderr = [];
      events = [];
    },
  };
}

/** The JSON text of a write's payload (`undefined` and functions become `null`); throws for what JSON cannot hold. */
function stage(write: StoreWrite): string {
  switch (write.type) {
    case 'agent':
      return JSON.stringify(write.spec);
    case 'transcript':
      return entryJson(write.data);
    case 'event':
      return JSON.stringify(write.data) ?? 'null';
    case 'session':
    case 'stderr':
      return '';
    default:
      throw new Error(`unknown write type ${JSON.stringify((write as { type?: unknown }).type)}`);
  }
}

function sessionKey(agent: string, sessionId: string): string {
  return `${agent}\u0000${sessionId}`;
}

function byteLength(text: string): number {
  return Buffer.byteLength(text);
}

function sumBytes(entries: readonly StoredEntry[]): number {
  return entries.reduce((total, entry) => total + entry.bytes, 0);
}

/** Entries with seq > after that match, oldest first, at most `page.limit` (no limit when it is not finite). */
function pageOf<T extends StoredEntry>(entries: readonly T[], page: Page, matches: (entry: T) => boolean): T[] {
  const max = Number.isFinite(page.limit) ? Math.max(0, Math.floor(page.limit)) : Infinity;
  const found: T[] = [];
  // Entries are in seq order: start at the first one after the cursor.
  let low = 0;
  let high = entries.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (entries[middle]!.seq > page.after) high = middle;
    else low = middle + 1;
  }
  for (let index = low; index < entries.length && found.length < max; index++) {
    const entry = entries[index]!;
    if (matches(entry)) found.push(entry);
  }
  return found;
}

/** What is left of `entries` (oldest first) under `rule`: age, then count, then bytes, the newest kept. */
function pruneEntries<T extends StoredEntry>(entries: T[], rule: RetentionRule, now: number): T[] {
  const { maxAgeMs, maxCount, maxBytes } = retentionLimits(rule);
  let kept = entries;
  if (maxAgeMs !== undefined) kept = kept.filter((entry) => entry.at >= now - maxAgeMs);
  if (maxCount !== undefined) kept = kept.slice(Math.max(0, kept.length - maxCount));
  if (maxBytes !== undefined) {
    let total = 0;
    let first = kept.length;
    while (first > 0 && total + kept[first - 1]!.bytes <= maxBytes) total += kept[--first]!.bytes;
    kept = kept.slice(first);
  }
  return kept;
}
