/**
 * The SQLite store on real files: the Store contract (tests/support/store-contract.ts), then
 * what only a file has — reopening, a full disk, two connections, and the files it must refuse
 * (not SQLite, another application's, a newer schema) and leave untouched; and the running
 * totals that retention reads (schema version 4): exact after any writes and prunes, counted
 * when an older file is upgraded, and retention that leaves what the memory store leaves.
 */
import Database from 'better-sqlite3';
import fc from 'fast-check';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { LogEntry, Page, Retention, RetentionRule, Store, StoreWrite, TranscriptEntry, TranscriptKind } from '../../core/store.js';
import { entryJson } from '../../services/store/entry-json.js';
import { createMemoryStore } from '../../services/store/memory.store.js';
import { openSqliteStore, STORE_APPLICATION_ID, STORE_SCHEMA_VERSION, TRANSCRIPT_ROW_ENTRIES } from '../../services/store/sqlite.store.js';
import { describeStoreContract, writes } from '../support/store-contract.js';

const all: Page = { after: 0, limit: 1_000_000 };

let dir: string;
let file: string;
const opened: { close(): unknown }[] = [];

/** Opens a store (or a raw connection) that the test's cleanup closes. */
function track<T extends { close(): unknown }>(handle: T): T {
  opened.push(handle);
  return handle;
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'agentvisor-store-'));
  file = join(dir, 'state', 'store.db');
});

afterEach(() => {
  for (const handle of opened.splice(0)) handle.close();
  rmSync(dir, { recursive: true, force: true });
});

/**
 * The schema of version 1 as it shipped (user_version 1): files like it exist in developers'
 * state directories, their transcript one entry a row.
 */
const schemaVersion1 = `
  CREATE TABLE agents (name TEXT PRIMARY KEY, spec TEXT NOT NULL, updated_at INTEGER NOT NULL);
  CREATE TABLE sessions (
    agent TEXT NOT NULL, session_id TEXT NOT NULL, cwd TEXT NOT NULL, title TEXT, state TEXT NOT NULL, stop_reason TEXT,
    created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, PRIMARY KEY (agent, session_id)
  );
  CREATE INDEX sessions_by_cwd ON sessions (agent, cwd, updated_at);
  CREATE INDEX sessions_by_update ON sessions (updated_at);
  CREATE TABLE transcript (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, agent TEXT NOT NULL, session_id TEXT NOT NULL, at INTEGER NOT NULL,
    kind TEXT NOT NULL, data TEXT NOT NULL, bytes INTEGER NOT NULL
  );
  CREATE INDEX transcript_by_session ON transcript (agent, session_id, seq);
  CREATE TABLE stderr (seq INTEGER PRIMARY KEY AUTOINCREMENT, agent TEXT NOT NULL, at INTEGER NOT NULL, line TEXT NOT NULL, bytes INTEGER NOT NULL);
  CREATE INDEX stderr_by_agent ON stderr (agent, seq);
  CREATE TABLE events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, agent TEXT, at INTEGER NOT NULL, event TEXT NOT NULL, data TEXT NOT NULL, bytes INTEGER NOT NULL
  );
  CREATE INDEX events_by_agent ON events (agent, seq);
`;

/** Creates `path` as agentvisor 1 left it, with these transcript entries, one a row (`data` written as JSON). */
function createVersion1File(path: string, entries: { at: number; sessionId: string; kind: TranscriptKind; data: unknown }[]): void {
  mkdirSync(dirname(path), { recursive: true });
  const raw = new Database(path);
  raw.pragma('journal_mode = WAL');
  raw.exec(schemaVersion1);
  const insert = raw.prepare("INSERT INTO transcript (agent, session_id, at, kind, data, bytes) VALUES ('a', ?, ?, ?, ?, ?)");
  for (const entry of entries) {
    const json = JSON.stringify(entry.data);
    insert.run(entry.sessionId, entry.at, entry.kind, json, Buffer.byteLength(json));
  }
  raw.pragma(`application_id = ${STORE_APPLICATION_ID}`);
  raw.pragma('user_version = 1');
  raw.close();
}

/** What version 2 added to version 1, as it shipped; version 3 changed no table. */
const schemaVersion2Step = `
  ALTER TABLE transcript ADD COLUMN count INTEGER NOT NULL DEFAULT 1;
  ALTER TABLE transcript ADD COLUMN packed INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE transcript ADD COLUMN first_index INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE transcript ADD COLUMN first_at INTEGER;
  CREATE INDEX transcript_sizes ON transcript (seq, at, count, bytes, first_at, packed);
  DROP INDEX transcript_by_session;
  CREATE INDEX transcript_by_session ON transcript (agent, session_id, seq, bytes);
`;

/** A transcript row of a version 3 file: one entry (a plain row) or several (packed: `[at, kind, data]` lines, or `[at, code, text]` for a text chunk). */
interface Version3Row {
  agent: string;
  sessionId: string;
  /** Each entry's time and its line in a packed row (or its JSON, alone), with its payload's bytes. */
  entries: { at: number; line: string; bytes: number }[];
}

/** Creates `path` as agentvisor 3 left it: no running totals, no indexes on time. */
function createVersion3File(
  path: string,
  contents: { sessions: { agent: string; sessionId: string; at: number }[]; transcript: Version3Row[]; stderr: string[]; events: unknown[] },
): void {
  mkdirSync(dirname(path), { recursive: true });
  const raw = new Database(path);
  raw.pragma('journal_mode = WAL');
  raw.exec(schemaVersion1 + schemaVersion2Step);
  const session = raw.prepare("INSERT INTO sessions (agent, session_id, cwd, state, created_at, updated_at) VALUES (?, ?, '/w', 'idle', ?, ?)");
  for (const { agent, sessionId, at } of contents.sessions) session.run(agent, sessionId, at, at);
  const plain = raw.prepare("INSERT INTO transcript (agent, session_id, at, kind, data, bytes) VALUES (?, ?, ?, 'update', ?, ?)");
  const packed = raw.prepare(
    "INSERT INTO transcript (agent, session_id, at, kind, data, bytes, count, packed, first_at) VALUES (?, ?, ?, 'packed', ?, ?, ?, 1, ?)",
  );
  for (const { agent, sessionId, entries } of contents.transcript) {
    const bytes = entries.reduce((total, entry) => total + entry.bytes, 0);
    if (entries.length === 1) plain.run(agent, sessionId, entries[0]!.at, entries[0]!.line, bytes);
    else packed.run(agent, sessionId, entries.at(-1)!.at, `[${entries.map((entry) => entry.line).join(',\n')}]`, bytes, entries.length, entries[0]!.at);
  }
  const stderr = raw.prepare("INSERT INTO stderr (agent, at, line, bytes) VALUES ('a', ?, ?, ?)");
  contents.stderr.forEach((line, i) => stderr.run(i, line, Buffer.byteLength(line)));
  const event = raw.prepare("INSERT INTO events (agent, at, event, data, bytes) VALUES ('a', ?, 'status', ?, ?)");
  contents.events.forEach((data, i) => event.run(i, JSON.stringify(data), Buffer.byteLength(JSON.stringify(data))));
  raw.pragma(`application_id = ${STORE_APPLICATION_ID}`);
  raw.pragma('user_version = 3');
  raw.close();
}

interface RawTranscriptRow {
  seq: number;
  session_id: string;
  at: number;
  count: number;
  packed: number;
  first_index: number;
  first_at: number | null;
  bytes: number;
}

/** The transcript's rows as stored, oldest first (without their data). */
function transcriptRows(path: string): RawTranscriptRow[] {
  const raw = new Database(path, { readonly: true });
  try {
    return raw.prepare('SELECT seq, session_id, at, count, packed, first_index, first_at, bytes FROM transcript ORDER BY seq').all() as RawTranscriptRow[];
  } finally {
    raw.close();
  }
}

/** The running totals of schema version 4 as stored, and as a count of the rows gives them: they must be equal. */
function totalsAndRecount(raw: Database.Database) {
  type Totals = { kind: string; count: number; bytes: number };
  const totals = Object.fromEntries((raw.prepare('SELECT kind, count, bytes FROM totals ORDER BY kind').all() as Totals[]).map(({ kind, count, bytes }) => [kind, { count, bytes }]));
  const recount = raw
    .prepare(
      `SELECT
        (SELECT COUNT(*) FROM sessions) AS sessions,
        (SELECT coalesce(SUM(count), 0) FROM transcript) AS transcriptCount, (SELECT coalesce(SUM(bytes), 0) FROM transcript) AS transcriptBytes,
        (SELECT COUNT(*) FROM stderr) AS stderrCount, (SELECT coalesce(SUM(bytes), 0) FROM stderr) AS stderrBytes,
        (SELECT COUNT(*) FROM events) AS eventsCount, (SELECT coalesce(SUM(bytes), 0) FROM events) AS eventsBytes`,
    )
    .get() as Record<string, number>;
  return {
    totals: {
      kinds: totals,
      sessions: raw.prepare('SELECT agent, session_id, count, bytes FROM session_totals ORDER BY agent, session_id').all(),
    },
    recount: {
      kinds: {
        events: { count: recount['eventsCount'], bytes: recount['eventsBytes'] },
        sessions: { count: recount['sessions'], bytes: 0 },
        stderr: { count: recount['stderrCount'], bytes: recount['stderrBytes'] },
        transcript: { count: recount['transcriptCount'], bytes: recount['transcriptBytes'] },
      },
      sessions: raw.prepare('SELECT agent, session_id, SUM(count) AS count, SUM(bytes) AS bytes FROM transcript GROUP BY agent, session_id ORDER BY agent, session_id').all(),
    },
  };
}

/** Expects the file's running totals to be those of its rows. */
function expectTotalsExact(path: string): void {
  const raw = new Database(path, { readonly: true });
  try {
    const { totals, recount } = totalsAndRecount(raw);
    expect(totals).toEqual(recount);
  } finally {
    raw.close();
  }
}

/** Every entry of a session's transcript, read in pages of `limit`. */
function readAll(store: ReturnType<typeof openSqliteStore>, sessionId: string, limit: number, agent = 'a') {
  const read = [];
  let after = 0;
  for (;;) {
    const page = store.transcript(agent, sessionId, { after, limit });
    expect(page.length).toBeLessThanOrEqual(limit);
    read.push(...page);
    if (page.length < limit) return read;
    after = page.at(-1)!.seq;
  }
}

const entry = (at: number, data: unknown, kind: TranscriptKind = 'update', sessionId = 's'): StoreWrite => ({ type: 'transcript', at, agent: 'a', sessionId, kind, data });

/** A file's bytes and its directory's listing, to show a refused file was not touched. */
function snapshot(path: string) {
  return { bytes: readFileSync(path), files: readdirSync(join(path, '..')).sort() };
}

function expectRefused(path: string, message: RegExp) {
  let error: unknown;
  try {
    track(openSqliteStore(path));
  } catch (caught) {
    error = caught;
  }
  expect(error).toMatchObject({ name: 'AgentError', kind: 'store_failed' });
  expect((error as Error).message).toContain(path);
  expect((error as Error).message).toMatch(message);
}

describe('sqlite store', () => {
  describeStoreContract(() => openSqliteStore(join(mkdtempSync(join(dir, 'contract-')), 'store.db')));

  describe('on disk', () => {
    it('creates its directory (0700) and a WAL database marked as ours, at the newest schema version', () => {
      const store = track(openSqliteStore(file));
      expect(store.file).toBe(file);
      expect(statSync(join(dir, 'state')).mode & 0o777).toBe(0o700);
      const raw = track(new Database(file, { readonly: true }));
      expect(raw.pragma('journal_mode', { simple: true })).toBe('wal');
      expect(raw.pragma('application_id', { simple: true })).toBe(STORE_APPLICATION_ID);
      expect(raw.pragma('user_version', { simple: true })).toBe(STORE_SCHEMA_VERSION);
    });

    it('finds everything again after a reopen, and seq goes on from where it was', () => {
      let store = openSqliteStore(file);
      store.write([writes.session(1, { cwd: '/w', title: 'T' }), writes.transcript(2, { n: 1 }), writes.stderr(3, 'line'), writes.event(4, { e: 1 })]);
      const seq = store.transcript('a', 's', all)[0]!.seq;
      store.close();
      store = track(openSqliteStore(file));
      expect(store.sessions({})).toEqual([{ agent: 'a', sessionId: 's', cwd: '/w', title: 'T', state: 'idle', stopReason: null, createdAt: 1, updatedAt: 1 }]);
      expect(store.logs('a', all)).toEqual([{ seq: expect.any(Number), at: 3, agent: 'a', line: 'line' }]);
      expect(store.events({}, all)).toEqual([{ seq: expect.any(Number), at: 4, agent: 'a', event: 'status', data: { e: 1 } }]);
      store.write([writes.transcript(5, { n: 2 })]);
      const transcript = store.transcript('a', 's', all);
      expect(transcript.map((entry) => entry.data)).toEqual([{ n: 1 }, { n: 2 }]);
      expect(transcript[1]!.seq).toBeGreaterThan(seq);
      expect(store.stats().fileBytes).toBeGreaterThan(0);
    });

    it('rolls a batch back whole when the disk is full mid-way, and applies later batches', () => {
      const store = track(openSqliteStore(file, { maxPageCount: 1 }));
      const batch = [writes.session(1), writes.stderr(2, 'small'), writes.transcript(3, 'x'.repeat(200_000)), writes.event(4, 'lost')];
      expect(() => store.write(batch)).toThrow(expect.objectContaining({ kind: 'store_failed', message: expect.stringContaining(`Could not write to the store ${file}`) }));
      expect(() => store.write(batch)).toThrow(/database or disk is full/);
      expect(store.stats()).toMatchObject({ sessions: 0, transcript: { count: 0 }, stderr: { count: 0 }, events: { count: 0 } });
      store.write([writes.session(5), writes.stderr(6, 'fits')]);
      expect(store.logs('a', all).map((entry) => entry.line)).toEqual(['fits']);
      expect(store.sessions({}).map((session) => session.createdAt)).toEqual([5]);
    });

    it('waits out another connection’s write lock up to busyTimeoutMs, then fails and goes on', () => {
      const store = track(openSqliteStore(file, { busyTimeoutMs: 50 }));
      const other = track(new Database(file));
      other.exec('BEGIN IMMEDIATE');
      const started = Date.now();
      expect(() => store.write([writes.stderr(1, 'blocked')])).toThrow(expect.objectContaining({ kind: 'store_failed', message: expect.stringMatching(/locked|busy/) }));
      expect(Date.now() - started).toBeGreaterThanOrEqual(40);
      other.exec('COMMIT');
      store.write([writes.stderr(2, 'free')]);
      expect(store.logs('a', all).map((entry) => entry.line)).toEqual(['free']);
    });

    it('shares one file between two connections: each reads what the other wrote', () => {
      const first = track(openSqliteStore(file));
      const second = track(openSqliteStore(file));
      for (let i = 0; i < 50; i++) {
        (i % 2 ? first : second).write([writes.session(i, { state: `s${i}` }), writes.transcript(i, i)]);
      }
      for (const store of [first, second]) {
        expect(store.transcript('a', 's', all).map((entry) => entry.data)).toEqual(Array.from({ length: 50 }, (_, i) => i));
        expect(store.sessions({})).toMatchObject([{ state: 's49', createdAt: 0, updatedAt: 49 }]);
      }
    });

    it('adopts an empty existing file', () => {
      writeFileSync(join(dir, 'empty.db'), '');
      const store = track(openSqliteStore(join(dir, 'empty.db')));
      store.write([writes.stderr(1, 'ok')]);
      expect(store.stats().stderr.count).toBe(1);
    });
  });

  describe('packed transcript', () => {
    it('keeps 10,000 updates of one batch, interleaved with another session, stderr and events, complete and in order', () => {
      const store = track(openSqliteStore(file));
      const batch: StoreWrite[] = [writes.session(0)];
      for (let i = 0; i < 10_000; i++) {
        batch.push(entry(1000 + Math.floor(i / 100), { i, text: 'chunk' }));
        // Up to 6,009 only between stderr lines and events (which do not end a row), then after another session's every 10th.
        if (i % 500 === 0) batch.push(writes.stderr(1000, `line ${i}`), writes.event(1000, { i }));
        if (i >= 6000 && i % 10 === 9) batch.push(entry(1000, { other: i }, 'update', 'other'));
      }
      batch.push(entry(2000, { stopReason: 'end_turn' }, 'prompt_result'));
      store.write(batch);

      const expected = [...Array.from({ length: 10_000 }, (_, i) => ({ i, text: 'chunk' })), { stopReason: 'end_turn' }];
      for (const limit of [1_000_000, 1000, 333, 7]) {
        const read = readAll(store, 's', limit);
        expect(read.map((entry) => entry.data)).toEqual(expected);
        expect(read.map((entry) => entry.at)).toEqual([...Array.from({ length: 10_000 }, (_, i) => 1000 + Math.floor(i / 100)), 2000]);
        expect(read.at(-1)).toMatchObject({ agent: 'a', sessionId: 's', kind: 'prompt_result' });
        const seqs = read.map((entry) => entry.seq);
        expect(seqs.every((seq, i) => i === 0 || seq > seqs[i - 1]!)).toBe(true);
        expect(seqs.every((seq) => Number.isSafeInteger(seq))).toBe(true);
      }
      expect(store.transcript('a', 'other', all).map((entry) => entry.data)).toEqual(Array.from({ length: 400 }, (_, i) => ({ other: 6009 + i * 10 })));
      expect(store.logs('a', all).map((line) => line.line)).toEqual(Array.from({ length: 20 }, (_, i) => `line ${i * 500}`));
      expect(store.events({}, all).map((event) => event.data)).toEqual(Array.from({ length: 20 }, (_, i) => ({ i: i * 500 })));
      expect(store.stats().transcript.count).toBe(10_401);

      // Packed per session, whatever is between its entries (the batch's entries are numbered session by session): 's' in rows of at most 4096, 'other' in one row.
      const rows = transcriptRows(file);
      const ours = rows.filter((row) => row.session_id === 's');
      expect(ours.map((row) => row.count)).toEqual([TRANSCRIPT_ROW_ENTRIES, TRANSCRIPT_ROW_ENTRIES, 10_001 - 2 * TRANSCRIPT_ROW_ENTRIES]);
      expect(rows.filter((row) => row.session_id === 'other').map((row) => row.count)).toEqual([400]);
      expect(rows.reduce((total, row) => total + row.count, 0)).toBe(10_401);
      expect(rows).toHaveLength(4);
      expect(ours.slice(0, 2)).toMatchObject([
        { packed: 1, first_index: 0, first_at: 1000, at: 1040 },
        { packed: 1, first_index: 0, first_at: 1040, at: 1081 },
      ]);
    });

    it('merges a batch\'s writes to one session row: the last value of each field set, the others kept, created at the first write', () => {
      const store = track(openSqliteStore(file));
      store.write([
        { type: 'session', at: 100, agent: 'a', sessionId: 's', cwd: '/w', state: 'ready' },
        { type: 'session', at: 110, agent: 'a', sessionId: 's', state: 'running' },
        entry(111, 'chunk'),
        { type: 'session', at: 120, agent: 'a', sessionId: 'other', cwd: '/o', state: 'ready' },
        { type: 'session', at: 130, agent: 'a', sessionId: 's', stopReason: 'end_turn' },
        { type: 'session', at: 131, agent: 'a', sessionId: 's', state: 'completed', title: 'First' },
      ]);
      expect(store.sessions({})).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ agent: 'a', sessionId: 's', cwd: '/w', title: 'First', state: 'completed', stopReason: 'end_turn', createdAt: 100, updatedAt: 131 }),
          expect.objectContaining({ agent: 'a', sessionId: 'other', cwd: '/o', state: 'ready', createdAt: 120, updatedAt: 120 }),
        ]),
      );
      // A later batch: a field it does not set keeps the stored value; null clears one.
      store.write([
        { type: 'session', at: 200, agent: 'a', sessionId: 's', state: 'running' },
        { type: 'session', at: 210, agent: 'a', sessionId: 's', title: null },
      ]);
      expect(store.sessions({}).find((row) => row.sessionId === 's')).toMatchObject({ cwd: '/w', title: null, state: 'running', stopReason: 'end_turn', createdAt: 100, updatedAt: 210 });
    });

    it('pages with after in the middle of a packed row, at its last entry, and at seqs no entry has', () => {
      const store = track(openSqliteStore(file));
      store.write(Array.from({ length: 100 }, (_, i) => entry(i, i)));
      for (let i = 100; i < 105; i++) store.write([entry(i, i)]); // one entry a row
      const every = store.transcript('a', 's', all);
      expect(every.map((entry) => entry.data)).toEqual(Array.from({ length: 105 }, (_, i) => i));
      const seq = (i: number) => every[i]!.seq;
      const data = (page: Page) => store.transcript('a', 's', page).map((entry) => entry.data);

      expect(data({ after: seq(29), limit: 30 })).toEqual(Array.from({ length: 30 }, (_, i) => 30 + i));
      expect(data({ after: seq(49), limit: 1 })).toEqual([50]);
      expect(data({ after: seq(98), limit: 3 })).toEqual([99, 100, 101]);
      // The row of `after` gives nothing more: still `limit` entries, from the rows after it.
      expect(data({ after: seq(99), limit: 5 })).toEqual([100, 101, 102, 103, 104]);
      expect(data({ after: seq(99), limit: 4 })).toEqual([100, 101, 102, 103]);
      expect(data({ after: seq(104), limit: 5 })).toEqual([]);
      expect(data({ after: seq(10) + 0.5, limit: 2 })).toEqual([11, 12]);
      expect(data({ after: -5, limit: 2 })).toEqual([0, 1]);
      expect(data({ after: seq(99) + 1, limit: 2 })).toEqual([100, 101]);
      expect(data({ after: seq(0), limit: 0 })).toEqual([]);
      expect(data({ after: seq(0), limit: Number.POSITIVE_INFINITY })).toHaveLength(104);
      // A cursor is an entry's seq: the seq of the first entry of a row is the row's, times TRANSCRIPT_ROW_ENTRIES.
      expect(seq(1) - seq(0)).toBe(1);
      expect(seq(0) % TRANSCRIPT_ROW_ENTRIES).toBe(0);
      expect(seq(100) % TRANSCRIPT_ROW_ENTRIES).toBe(0);
    });

    it('reads back every kind and payload exactly (line breaks, quotes, non-ASCII, U+2028, null) and counts their bytes, trimmed or not', () => {
      const store = track(openSqliteStore(file));
      const payloads: unknown[] = ['a\nb\r\n', 'say "hi" \\ \u2028 \u2029 é 🎉', { nested: ['x,\n', null, 1.5, -0, 1e21] }, null, [], {}, 0, true, 'x'.repeat(10_000)];
      // And a kind no agentvisor writes, with a quote, a backslash and non-ASCII: kept as given, its bytes not counted.
      const kinds = ['prompt', 'update', 'permission', 'permission_outcome', 'prompt_result', 'k"\\é'] as TranscriptKind[];
      store.write(payloads.map((data, i) => entry(i, data, kinds[i % kinds.length])));
      const read = store.transcript('a', 's', all);
      expect(read.map(({ at, kind, data }) => ({ at, kind, data }))).toEqual(
        payloads.map((data, i) => ({ at: i, kind: kinds[i % kinds.length], data: JSON.parse(JSON.stringify(data)) })),
      );
      const bytes = payloads.reduce<number>((total, data) => total + Buffer.byteLength(JSON.stringify(data)), 0);
      expect(store.stats().transcript).toEqual({ count: payloads.length, bytes });
      expect(transcriptRows(file)).toMatchObject([{ count: payloads.length, packed: 1, bytes }]);
      // Trimmed entry by entry from the oldest, the bytes follow.
      for (let left = payloads.length - 1; left >= 0; left--) {
        store.prune({ transcript: { maxCount: left } }, 100);
        expect(store.transcript('a', 's', all).map((entry) => entry.data)).toEqual(read.slice(payloads.length - left).map((entry) => entry.data));
        expect(store.transcript('a', 's', all).map((entry) => entry.seq)).toEqual(read.slice(payloads.length - left).map((entry) => entry.seq));
        expect(store.stats().transcript).toEqual({
          count: left,
          bytes: payloads.slice(payloads.length - left).reduce<number>((total, data) => total + Buffer.byteLength(JSON.stringify(data)), 0),
        });
      }
    });

    it('writes plain text chunks compact, reads them back as the same updates, and counts and trims their bytes as their JSON', () => {
      const store = track(openSqliteStore(file));
      const chunk = (sessionUpdate: string, text: string) => ({ sessionUpdate, content: { type: 'text', text } });
      const payloads: { kind: TranscriptKind; data: unknown }[] = [
        { kind: 'update', data: chunk('agent_message_chunk', 'plain') },
        { kind: 'update', data: chunk('agent_thought_chunk', 'é "quoted" \\ \n 🎉 \u2028') },
        { kind: 'update', data: chunk('user_message_chunk', '') },
        // Not plain chunks: an extra field, an image, a kind that is not an update — written whole.
        { kind: 'update', data: { ...chunk('agent_message_chunk', 'x'), _meta: { id: 1 } } },
        { kind: 'update', data: { sessionUpdate: 'agent_message_chunk', content: { type: 'image', data: 'AA==', mimeType: 'image/png' } } },
        { kind: 'prompt', data: chunk('agent_message_chunk', 'a prompt') },
        { kind: 'update', data: chunk('agent_message_chunk', ',\n],[1,0,"x"]') },
        { kind: 'update', data: chunk('agent_message_chunk', 'z'.repeat(5000)) },
      ];
      store.write(payloads.map(({ kind, data }, i) => entry(i * 10, data, kind)));
      const read = store.transcript('a', 's', all);
      expect(read.map(({ at, kind, data }) => ({ at, kind, data }))).toEqual(payloads.map(({ kind, data }, i) => ({ at: i * 10, kind, data })));
      const sizes = payloads.map(({ data }) => Buffer.byteLength(JSON.stringify(data)));
      const sum = (values: number[]) => values.reduce((total, value) => total + value, 0);
      expect(store.stats().transcript).toEqual({ count: payloads.length, bytes: sum(sizes) });
      expect(transcriptRows(file)).toMatchObject([{ count: payloads.length, packed: 1, bytes: sum(sizes) }]);
      // Compact on disk: the plain chunks' lines hold their text, not the update around it.
      const raw = new Database(file, { readonly: true });
      const data = (raw.prepare('SELECT data FROM transcript').get() as { data: string }).data;
      raw.close();
      expect(data.split('\n')[0]).toBe('[[0,0,"plain"],');
      expect(data.match(/"sessionUpdate"/g)).toHaveLength(3);

      // By bytes, entry by entry from the oldest; then by age.
      for (let left = payloads.length - 1; left >= 2; left--) {
        store.prune({ transcript: { maxBytes: sum(sizes.slice(payloads.length - left)) } }, 0);
        expect(store.transcript('a', 's', all).map((entry) => entry.data)).toEqual(read.slice(payloads.length - left).map((entry) => entry.data));
        expect(store.stats().transcript).toEqual({ count: left, bytes: sum(sizes.slice(payloads.length - left)) });
      }
      store.prune({ transcript: { maxAgeMs: 5 } }, 75);
      expect(store.transcript('a', 's', all).map((entry) => entry.at)).toEqual([70]);
      expect(store.stats().transcript).toEqual({ count: 1, bytes: sizes[7] });
    });

    it('starts a new row when time goes back, when a row is full of text, and keeps a single entry a plain row', () => {
      const store = track(openSqliteStore(file));
      const big = 'x'.repeat(700_000);
      store.write([entry(10, 1), entry(20, 2), entry(15, 3), entry(15, 4), entry(16, big), entry(17, big), entry(18, 'after')]);
      store.write([entry(30, 'alone')]);
      expect(store.transcript('a', 's', all).map((entry) => [entry.at, entry.data])).toEqual([
        [10, 1],
        [20, 2],
        [15, 3],
        [15, 4],
        [16, big],
        [17, big],
        [18, 'after'],
        [30, 'alone'],
      ]);
      expect(transcriptRows(file).map(({ count, packed, at, first_at }) => ({ count, packed, at, first_at }))).toEqual([
        { count: 2, packed: 1, at: 20, first_at: 10 },
        { count: 3, packed: 1, at: 16, first_at: 15 },
        { count: 2, packed: 1, at: 18, first_at: 17 },
        { count: 1, packed: 0, at: 30, first_at: null },
      ]);
    });

    it('reads a version 1 file: its rows as single entries, in order with the packed rows written after the upgrade', () => {
      createVersion1File(file, [
        { at: 1, sessionId: 's', kind: 'prompt', data: { prompt: [{ type: 'text', text: 'hi' }] } },
        { at: 2, sessionId: 's', kind: 'update', data: { n: 1 } },
        { at: 2, sessionId: 'other', kind: 'update', data: { other: 1 } },
        { at: 3, sessionId: 's', kind: 'update', data: { n: 2 } },
        { at: 4, sessionId: 's', kind: 'prompt_result', data: { stopReason: 'end_turn' } },
      ]);
      const store = track(openSqliteStore(file));
      expect(store.stats().transcript.count).toBe(5);
      expectTotalsExact(file);
      store.write([entry(5, { prompt: 'again' }, 'prompt'), ...Array.from({ length: 20 }, (_, i) => entry(6, { n: 3 + i }))]);
      store.write([entry(7, { stopReason: 'end_turn' }, 'prompt_result')]);

      const expected = [
        { at: 1, kind: 'prompt', data: { prompt: [{ type: 'text', text: 'hi' }] } },
        { at: 2, kind: 'update', data: { n: 1 } },
        { at: 3, kind: 'update', data: { n: 2 } },
        { at: 4, kind: 'prompt_result', data: { stopReason: 'end_turn' } },
        { at: 5, kind: 'prompt', data: { prompt: 'again' } },
        ...Array.from({ length: 20 }, (_, i) => ({ at: 6, kind: 'update', data: { n: 3 + i } })),
        { at: 7, kind: 'prompt_result', data: { stopReason: 'end_turn' } },
      ];
      for (const limit of [1000, 3, 1]) expect(readAll(store, 's', limit).map(({ at, kind, data }) => ({ at, kind, data }))).toEqual(expected);
      const read = store.transcript('a', 's', all);
      expect(read.slice(0, 4).map((entry) => entry.seq)).toEqual([1, 2, 4, 5].map((rowSeq) => rowSeq * TRANSCRIPT_ROW_ENTRIES));
      expect(read.every((entry, i) => i === 0 || entry.seq > read[i - 1]!.seq)).toBe(true);
      expect(store.transcript('a', 's', { after: read[3]!.seq, limit: 2 }).map((entry) => entry.data)).toEqual([{ prompt: 'again' }, { n: 3 }]);
      expect(store.transcript('a', 'other', all).map((entry) => entry.data)).toEqual([{ other: 1 }]);
      expect(store.stats().transcript.count).toBe(5 + 22);
      expect(transcriptRows(file).map(({ seq, count, packed }) => ({ seq, count, packed }))).toEqual([
        { seq: 1, count: 1, packed: 0 },
        { seq: 2, count: 1, packed: 0 },
        { seq: 3, count: 1, packed: 0 },
        { seq: 4, count: 1, packed: 0 },
        { seq: 5, count: 1, packed: 0 },
        { seq: 6, count: 21, packed: 1 },
        { seq: 7, count: 1, packed: 0 },
      ]);
      // Retention across both: the newest 10 entries of all sessions.
      store.prune({ transcript: { maxCount: 10 } }, 100);
      expect(store.transcript('a', 's', all).map((entry) => entry.data)).toEqual([...Array.from({ length: 9 }, (_, i) => ({ n: 14 + i })), { stopReason: 'end_turn' }]);
      expect(store.transcript('a', 'other', all)).toEqual([]);
      expectTotalsExact(file);
      const raw = track(new Database(file, { readonly: true }));
      expect(raw.pragma('user_version', { simple: true })).toBe(STORE_SCHEMA_VERSION);
    });

    describe('retention, per entry', () => {
      /** Three packed rows of 10 entries (sessions s, t, s: a batch each), at 100 + i, each payload 5 bytes (`"eNN"`). */
      function writeRows(store: ReturnType<typeof openSqliteStore>) {
        for (let row = 0; row < 3; row++) {
          const batch: StoreWrite[] = [];
          for (let i = row * 10; i < row * 10 + 10; i++) batch.push(entry(100 + i, `e${String(i).padStart(2, '0')}`, 'update', row === 1 ? 't' : 's'));
          store.write(batch);
        }
        return [...store.transcript('a', 's', all), ...store.transcript('a', 't', all)].sort((a, b) => a.seq - b.seq);
      }
      const left = (store: ReturnType<typeof openSqliteStore>) =>
        [...store.transcript('a', 's', all), ...store.transcript('a', 't', all)].sort((a, b) => a.seq - b.seq);

      it('by count: whole rows, then the oldest entries of the row that straddles the limit, each entry keeping its seq', () => {
        const store = track(openSqliteStore(file));
        const written = writeRows(store);
        store.prune({ transcript: { maxCount: 15 } }, 1000);
        expect(left(store)).toEqual(written.slice(15));
        expect(transcriptRows(file).map(({ count, first_index, first_at, at, bytes }) => ({ count, first_index, first_at, at, bytes }))).toEqual([
          { count: 5, first_index: 5, first_at: 115, at: 119, bytes: 25 },
          { count: 10, first_index: 0, first_at: 120, at: 129, bytes: 50 },
        ]);
        expect(store.stats().transcript).toEqual({ count: 15, bytes: 75 });
        store.prune({ transcript: { maxCount: 11 } }, 1000);
        expect(left(store)).toEqual(written.slice(19));
        store.prune({ transcript: { maxCount: 10 } }, 1000);
        expect(left(store)).toEqual(written.slice(20));
        expect(transcriptRows(file)).toHaveLength(1);
        // Paging still starts where the cursor says, in a trimmed row.
        store.prune({ transcript: { maxCount: 8 } }, 1000);
        expect(store.transcript('a', 's', { after: written[21]!.seq, limit: 3 })).toEqual(written.slice(22, 25));
        expect(store.transcript('a', 's', { after: written[23]!.seq, limit: 3 })).toEqual(written.slice(24, 27));
      });

      it('by age: rows whose newest entry is too old, and the older entries of a row that holds both', () => {
        const store = track(openSqliteStore(file));
        const written = writeRows(store);
        store.prune({ transcript: { maxAgeMs: 100 } }, 213); // keeps at >= 113
        expect(left(store)).toEqual(written.slice(13));
        expect(transcriptRows(file)[0]).toMatchObject({ count: 7, first_index: 3, first_at: 113, at: 119 });
        store.prune({ transcript: { maxAgeMs: 100 } }, 220);
        expect(left(store)).toEqual(written.slice(20));
        store.prune({ transcript: { maxAgeMs: 0 } }, 129);
        expect(left(store)).toEqual(written.slice(29));
        expect(store.stats().transcript).toEqual({ count: 1, bytes: 5 });
      });

      it('by bytes: the newest entries that fit, the straddling row trimmed to them', () => {
        const store = track(openSqliteStore(file));
        const written = writeRows(store);
        expect(store.stats().transcript.bytes).toBe(150);
        store.prune({ transcript: { maxBytes: 64 } }, 1000); // 12 entries of 5 bytes
        expect(left(store)).toEqual(written.slice(18));
        expect(store.stats().transcript).toEqual({ count: 12, bytes: 60 });
        store.prune({ transcript: { maxBytes: 50 } }, 1000);
        expect(left(store)).toEqual(written.slice(20));
        store.prune({ transcript: { maxBytes: 49 } }, 1000);
        expect(left(store)).toEqual(written.slice(21));
        store.prune({ transcript: { maxBytes: 4 } }, 1000);
        expect(left(store)).toEqual([]);
        expect(transcriptRows(file)).toEqual([]);
      });

      it('sessions by bytes count the bytes of their packed entries', () => {
        const store = track(openSqliteStore(file));
        writeRows(store);
        store.write([writes.session(1, { sessionId: 's' }), writes.session(2, { sessionId: 't' })]);
        store.prune({ sessions: { maxBytes: 99 } }, 1000); // t: 50 bytes, s: 100 bytes
        expect(store.sessions({}).map((session) => session.sessionId)).toEqual(['t']);
        expect(store.stats().transcript).toEqual({ count: 10, bytes: 50 });
      });
    });
  });

  describe('running totals and bounded retention', () => {
    it('migrates a version 3 file: totals counted from the rows there, kept by later writes and prunes', () => {
      /** An entry of a packed row: `[at, "update", json]`, or compact `[at, 0, text]` for an agent_message_chunk. */
      const line = (at: number, data: unknown) => {
        const json = JSON.stringify(data);
        return { at, line: `[${at},"update",${json}]`, bytes: Buffer.byteLength(json) };
      };
      const compact = (at: number, text: string) => ({
        at,
        line: `[${at},0,${JSON.stringify(text)}]`,
        bytes: Buffer.byteLength(JSON.stringify({ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text } })),
      });
      const plain = (at: number, data: unknown) => ({ at, line: JSON.stringify(data), bytes: Buffer.byteLength(JSON.stringify(data)) });
      const transcript: Version3Row[] = [
        { agent: 'a', sessionId: 's', entries: Array.from({ length: 10 }, (_, i) => line(100 + i, `e${i}`)) },
        { agent: 'a', sessionId: 't', entries: [plain(110, { n: 'é' })] },
        { agent: 'b', sessionId: 's', entries: [compact(111, 'héllo'), compact(112, ''), line(113, null)] },
        { agent: 'a', sessionId: 's', entries: [plain(114, 'last')] },
        { agent: 'a', sessionId: 'orphan', entries: [plain(115, 'no session')] },
      ];
      createVersion3File(file, {
        sessions: [
          { agent: 'a', sessionId: 's', at: 1000 },
          { agent: 'a', sessionId: 't', at: 1100 },
          { agent: 'b', sessionId: 's', at: 1200 },
        ],
        transcript,
        stderr: ['one', 'twö', 'three'],
        events: [{ status: 'ready' }, null],
      });
      const sum = (rows: Version3Row[]) => rows.reduce((total, row) => total + row.entries.reduce((bytes, entry) => bytes + entry.bytes, 0), 0);
      const bytesOf = (agent: string, sessionId: string) => sum(transcript.filter((row) => row.agent === agent && row.sessionId === sessionId));

      const store = track(openSqliteStore(file));
      const raw = track(new Database(file, { readonly: true }));
      expect(raw.pragma('user_version', { simple: true })).toBe(STORE_SCHEMA_VERSION);
      const { totals, recount } = totalsAndRecount(raw);
      expect(totals).toEqual(recount);
      expect(totals).toEqual({
        kinds: {
          events: { count: 2, bytes: Buffer.byteLength('{"status":"ready"}') + 4 },
          sessions: { count: 3, bytes: 0 },
          stderr: { count: 3, bytes: 3 + 4 + 5 },
          transcript: { count: 16, bytes: sum(transcript) },
        },
        sessions: [
          { agent: 'a', session_id: 'orphan', count: 1, bytes: bytesOf('a', 'orphan') },
          { agent: 'a', session_id: 's', count: 11, bytes: bytesOf('a', 's') },
          { agent: 'a', session_id: 't', count: 1, bytes: bytesOf('a', 't') },
          { agent: 'b', session_id: 's', count: 3, bytes: bytesOf('b', 's') },
        ],
      });
      expect(store.stats()).toMatchObject({ sessions: 3, transcript: { count: 16, bytes: sum(transcript) }, stderr: { count: 3, bytes: 12 }, events: { count: 2 } });
      expect(store.transcript('b', 's', all).map((entry) => entry.data)).toEqual([
        { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'héllo' } },
        { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: '' } },
        null,
      ]);

      // The old rows and new ones, counted alike by later writes and every rule.
      store.write([entry(120, 'new', 'update', 't'), entry(121, 'newer', 'update', 't'), writes.stderr(122, 'four'), writes.session(1300, { sessionId: 't' })]);
      expectTotalsExact(file);
      store.prune({ transcript: { maxCount: 12 } }, 200); // the first row's 6 oldest entries go
      expect(store.transcript('a', 's', all).map((entry) => entry.data)).toEqual(['e6', 'e7', 'e8', 'e9', 'last']);
      expectTotalsExact(file);
      store.prune({ transcript: { maxAgeMs: 88 }, stderr: { maxCount: 2 }, events: { maxBytes: 4 } }, 200); // at >= 112
      expect(store.transcript('b', 's', all).map((entry) => entry.at)).toEqual([112, 113]);
      expect(store.logs('a', all).map((line) => line.line)).toEqual(['three', 'four']);
      expect(store.events({}, all).map((event) => event.data)).toEqual([null]);
      expectTotalsExact(file);
      store.prune({ sessions: { maxBytes: Buffer.byteLength('"new""newer"') } }, 2000); // t only, the newest (its entry at 110 is gone)
      expect(store.sessions({}).map((session) => `${session.agent}/${session.sessionId}`)).toEqual(['a/t']);
      expectTotalsExact(file);
      expect(store.stats()).toMatchObject({ sessions: 1, transcript: { count: 3 } }); // t's 2, and the orphan's
    });

    it('sessions by count: the oldest go, in the order sessions() gives (updatedAt, then createdAt, then the later written)', () => {
      const store = track(openSqliteStore(file));
      // Created at 10, 5, 5 (in that order of writing), all updated at 20: newest first s1, s3, s2.
      store.write([writes.session(10, { sessionId: 's1' }), writes.session(5, { sessionId: 's2' }), writes.session(5, { sessionId: 's3' })]);
      store.write(['s1', 's2', 's3'].map((sessionId) => writes.session(20, { sessionId })));
      expect(store.sessions({}).map((session) => session.sessionId)).toEqual(['s1', 's3', 's2']);
      store.prune({ sessions: { maxCount: 2 } }, 100);
      expect(store.sessions({}).map((session) => session.sessionId)).toEqual(['s1', 's3']);
      store.prune({ sessions: { maxCount: 1 } }, 100);
      expect(store.sessions({}).map((session) => session.sessionId)).toEqual(['s1']);
      expect(store.stats().sessions).toBe(1);
      expectTotalsExact(file);
    });

    const agents = ['a', 'b'];
    const sessionIds = ['s', 't', 'u'];
    const chunk = (text: string) => ({ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text } });

    /** What a store holds (seqs aside: each store has its own), to compare the SQLite store with the memory store. */
    async function contents(store: Store) {
      const transcript: unknown[] = [];
      for (const agent of agents) {
        for (const sessionId of sessionIds) {
          transcript.push((await store.transcript(agent, sessionId, all)).map(({ at, kind, data }) => [agent, sessionId, at, kind, data]));
        }
      }
      const logs: unknown[] = [];
      for (const agent of agents) logs.push((await store.logs(agent, all)).map(({ at, line }) => [agent, at, line]));
      const events = (await store.events({}, all)).map(({ at, agent, data }) => [at, agent, data]);
      const { sessions, transcript: transcriptStats, stderr, events: eventStats } = await store.stats();
      return { transcript, logs, events, sessions: await store.sessions({}), stats: { sessions, transcript: transcriptStats, stderr, events: eventStats } };
    }

    /** Each kind's entries' bytes (sessions: their transcripts'), newest first, as the memory store holds them. */
    async function newestSizes(store: Store): Promise<Record<keyof Retention, number[]>> {
      const transcript: TranscriptEntry[] = [];
      for (const agent of agents) for (const sessionId of sessionIds) transcript.push(...(await store.transcript(agent, sessionId, all)));
      transcript.sort((a, b) => b.seq - a.seq);
      const logs: LogEntry[] = [];
      for (const agent of agents) logs.push(...(await store.logs(agent, all)));
      logs.sort((a, b) => b.seq - a.seq);
      const bytesOf = (agent: string, sessionId: string) =>
        transcript.filter((entry) => entry.agent === agent && entry.sessionId === sessionId).reduce((total, entry) => total + Buffer.byteLength(entryJson(entry.data)), 0);
      return {
        transcript: transcript.map((entry) => Buffer.byteLength(entryJson(entry.data))),
        stderr: logs.map((entry) => Buffer.byteLength(entry.line)),
        events: (await store.events({}, all)).reverse().map((entry) => Buffer.byteLength(entryJson(entry.data))),
        sessions: (await store.sessions({})).map((session) => bytesOf(session.agent, session.sessionId)),
      };
    }

    /** One write: its time is the clock's, give or take a few ms (a clock may step back). */
    const skew = fc.integer({ min: -3, max: 3 });
    const writeArb: fc.Arbitrary<(now: number) => StoreWrite> = fc.oneof(
      {
        weight: 6,
        arbitrary: fc
          .record({ agent: fc.constantFrom(...agents), sessionId: fc.constantFrom(...sessionIds), skew, text: fc.string({ maxLength: 12 }), asChunk: fc.boolean() })
          .map(({ agent, sessionId, skew, text, asChunk }) => (now: number): StoreWrite => ({ type: 'transcript', at: now + skew, agent, sessionId, kind: 'update', data: asChunk ? chunk(text) : text })),
      },
      {
        weight: 2,
        arbitrary: fc.record({ agent: fc.constantFrom(...agents), skew, line: fc.string({ minLength: 1, maxLength: 12 }) }).map(({ agent, skew, line }) => (now: number) => writes.stderr(now + skew, line, agent)),
      },
      {
        weight: 2,
        arbitrary: fc
          .record({ agent: fc.constantFrom<string | null>(...agents, null), skew, data: fc.string({ maxLength: 12 }) })
          .map(({ agent, skew, data }) => (now: number) => writes.event(now + skew, data, agent)),
      },
      {
        weight: 1,
        arbitrary: fc
          .record({ agent: fc.constantFrom(...agents), sessionId: fc.constantFrom(...sessionIds), skew, state: fc.constantFrom('idle', 'running') })
          .map(({ agent, sessionId, skew, state }) => (now: number) => writes.session(now + skew, { agent, sessionId, state })),
      },
    );

    /**
     * A count or byte limit: a number, or at the edge of the newest `newest` entries (sessions) — what they count or weigh,
     * give or take one — so that prunes often land exactly on a row's or an entry's boundary.
     */
    type Limit = { absolute: number } | { newest: number; off: number };
    const limitArb = (max: number): fc.Arbitrary<Limit> =>
      fc.oneof(fc.record({ absolute: fc.integer({ min: 0, max }) }), fc.record({ newest: fc.nat(30), off: fc.constantFrom(-1, 0, 1) }));
    interface RuleSpec {
      maxCount?: Limit;
      maxAgeMs?: number;
      maxBytes?: Limit;
    }
    // Mostly one limit at a time: a limit at the edge of the newest entries is measured before the others apply.
    const ruleArb: fc.Arbitrary<RuleSpec> = fc.oneof(
      { weight: 1, arbitrary: fc.record({ maxCount: limitArb(40), maxAgeMs: fc.integer({ min: 0, max: 60 }), maxBytes: limitArb(600) }, { requiredKeys: [] }) },
      { weight: 1, arbitrary: fc.record({ maxCount: limitArb(40) }) },
      { weight: 1, arbitrary: fc.record({ maxAgeMs: fc.integer({ min: 0, max: 30 }) }) },
      { weight: 2, arbitrary: fc.record({ maxBytes: limitArb(600) }) },
    );
    const retentionArb = fc.record({ sessions: ruleArb, transcript: ruleArb, stderr: ruleArb, events: ruleArb }, { requiredKeys: [] });

    /** The retention a spec stands for, given the entries held now. */
    function retentionOf(spec: Partial<Record<keyof Retention, RuleSpec>>, sizes: Record<keyof Retention, number[]>): Retention {
      const retention: Retention = {};
      for (const [kind, rule] of Object.entries(spec) as [keyof Retention, RuleSpec][]) {
        const resolve = (value: Limit, measure: (newest: number[]) => number) =>
          'absolute' in value ? value.absolute : measure(sizes[kind].slice(0, value.newest)) + value.off;
        const resolved: RetentionRule = {};
        if (rule.maxCount) resolved.maxCount = resolve(rule.maxCount, (newest) => newest.length);
        if (rule.maxAgeMs !== undefined) resolved.maxAgeMs = rule.maxAgeMs;
        if (rule.maxBytes) resolved.maxBytes = resolve(rule.maxBytes, (newest) => newest.reduce((total, size) => total + size, 0));
        retention[kind] = resolved;
      }
      return retention;
    }

    type Op = { type: 'write'; writes: ((now: number) => StoreWrite)[]; advance: number } | { type: 'prune'; retention: Partial<Record<keyof Retention, RuleSpec>>; advance: number };
    const opArb: fc.Arbitrary<Op> = fc.oneof(
      { weight: 3, arbitrary: fc.record({ type: fc.constant('write' as const), writes: fc.array(writeArb, { minLength: 1, maxLength: 25 }), advance: fc.integer({ min: 0, max: 10 }) }) },
      { weight: 2, arbitrary: fc.record({ type: fc.constant('prune' as const), retention: retentionArb, advance: fc.integer({ min: 0, max: 10 }) }) },
    );

    it('keeps the totals equal to a recount, and leaves exactly what the memory store leaves, after any interleaving of writes and prunes by two connections', async () => {
      let run = 0;
      await fc.assert(
        fc.asyncProperty(fc.array(fc.tuple(opArb, fc.boolean()), { minLength: 1, maxLength: 25 }), async (ops) => {
          const path = join(dir, `differential-${run++}.db`);
          const connections = [openSqliteStore(path), openSqliteStore(path)];
          const raw = new Database(path, { readonly: true });
          const memory = createMemoryStore();
          try {
            let now = 1000;
            for (const [op, second] of ops) {
              const sqlite = connections[second ? 1 : 0]!;
              now += op.advance;
              if (op.type === 'write') {
                const batch = op.writes.map((write) => write(now));
                sqlite.write(batch);
                await memory.write(batch);
              } else {
                const retention = retentionOf(op.retention, await newestSizes(memory));
                sqlite.prune(retention, now);
                await memory.prune(retention, now);
              }
              const { totals, recount } = totalsAndRecount(raw);
              expect(totals).toEqual(recount);
              // Read through the other connection: what one wrote, the other counts the same.
              expect(await contents(connections[second ? 0 : 1]!)).toEqual(await contents(memory));
            }
          } finally {
            raw.close();
            for (const connection of connections) connection.close();
          }
        }),
        { seed: 20240611, numRuns: 60 },
      );
    });
  });

  describe('refuses, untouched', () => {
    it('a file that is not SQLite', () => {
      const path = join(dir, 'random.db');
      writeFileSync(path, randomBytes(16_384));
      const before = snapshot(path);
      expectRefused(path, /not a SQLite database, or it is corrupt/);
      expect(snapshot(path)).toEqual(before);
    });

    it('another application’s SQLite database, with tables and no application_id', () => {
      const path = join(dir, 'notes.db');
      const foreign = new Database(path);
      foreign.exec("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT); INSERT INTO notes (text) VALUES ('mine')");
      foreign.close();
      const before = snapshot(path);
      expectRefused(path, /a SQLite database that agentvisor did not create/);
      expect(snapshot(path)).toEqual(before);
    });

    it('another application’s SQLite database, by its application_id', () => {
      const path = join(dir, 'other.db');
      const foreign = new Database(path);
      foreign.pragma('application_id = 1234');
      foreign.close();
      const before = snapshot(path);
      expectRefused(path, /another application's SQLite database \(application_id 0x000004d2\)/);
      expect(snapshot(path)).toEqual(before);
    });

    it('a store with a newer schema version, naming both versions', () => {
      openSqliteStore(file).close();
      const newer = new Database(file);
      newer.pragma(`user_version = ${STORE_SCHEMA_VERSION + 7}`);
      newer.close();
      const before = snapshot(file);
      expectRefused(file, new RegExp(`schema version is ${STORE_SCHEMA_VERSION + 7}, newer than version ${STORE_SCHEMA_VERSION}`));
      expect(snapshot(file)).toEqual(before);
      expect(existsSync(`${file}-wal`)).toBe(false);
    });

    it('a path it cannot create', () => {
      writeFileSync(join(dir, 'plain'), 'a file, not a directory');
      expectRefused(join(dir, 'plain', 'store.db'), /Could not open the store/);
    });
  });
});
