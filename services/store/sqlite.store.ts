/**
 * The SQLite store (core/store.ts): one database file, shared safely by several processes
 * (WAL, a busy timeout), with versioned migrations. A file that is not ours — not SQLite,
 * corrupt, another application's, or written by a newer agentvisor — is refused untouched
 * with a `store_failed` error naming it.
 *
 * Every entry kind has its own AUTOINCREMENT `seq`: it increases with every row of that
 * kind across the whole file, and is never reused, even after pruning. Stderr lines and
 * events are one row each, their `seq` the row's. Transcript entries are packed (schema
 * version 2; text chunks compact since version 3): the consecutive entries of one session in one batch share a row, up to
 * {@link TRANSCRIPT_ROW_ENTRIES} of them, and an entry's `seq` is
 * `rowSeq * TRANSCRIPT_ROW_ENTRIES + its index in the row` — see "How the transcript is
 * stored" in docs/store.md.
 *
 * Retention and stats() read running totals (schema version 4: tables `totals` and
 * `session_totals`, kept exact by triggers), so that they cost what there is to remove, not
 * what the file holds — see "How retention is enforced" in docs/store.md.
 */
import Database from 'better-sqlite3';
import { mkdirSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { AgentError, describeError, storeFailed } from '../../core/errors.js';
import { isPlainTextChunk, type PlainTextChunk } from '../../core/text-chunk.js';
import { entryJson } from './entry-json.js';
import type {
  EventEntry,
  LogEntry,
  Page,
  Retention,
  RetentionRule,
  Store,
  StoreStats,
  StoreWrite,
  StoredSession,
  TranscriptEntry,
  TranscriptKind,
} from '../../core/store.js';

export interface SqliteStoreOptions {
  /** How long a write waits for another connection's lock before failing, in ms. Default 5000. */
  busyTimeoutMs?: number;
  /** A size limit for the database, in pages, e.g. to bound it or to test a full disk. */
  maxPageCount?: number;
}

/** The SQLite store: a {@link Store} that answers synchronously, and the file it keeps. */
export interface SqliteStore extends Store {
  /** The database file, as an absolute path. */
  readonly file: string;
  write(batch: readonly StoreWrite[]): void;
  sessions(filter: { agent?: string; cwd?: string; sessionId?: string }): StoredSession[];
  transcript(agent: string, sessionId: string, page: Page): TranscriptEntry[];
  logs(agent: string, page: Page): LogEntry[];
  events(filter: { agent?: string }, page: Page): EventEntry[];
  prune(retention: Retention, now: number): void;
  stats(): StoreStats & { fileBytes: number };
  close(): void;
}

/** `PRAGMA application_id` of an agentvisor store: "AGVS". */
export const STORE_APPLICATION_ID = 0x41475653;

/**
 * The triggers of schema version 4 that keep an entry table's row count and bytes in
 * `totals` (stderr and events: the same three, by table name).
 */
function entryTotalsTriggers(table: 'stderr' | 'events'): string {
  return `
  CREATE TRIGGER ${table}_counted AFTER INSERT ON ${table} BEGIN
    UPDATE totals SET count = count + 1, bytes = bytes + NEW.bytes WHERE kind = '${table}';
  END;
  CREATE TRIGGER ${table}_uncounted AFTER DELETE ON ${table} BEGIN
    UPDATE totals SET count = count - 1, bytes = bytes - OLD.bytes WHERE kind = '${table}';
  END;
  CREATE TRIGGER ${table}_recounted AFTER UPDATE OF bytes ON ${table} BEGIN
    UPDATE totals SET bytes = bytes - OLD.bytes + NEW.bytes WHERE kind = '${table}';
  END;`;
}

/** The schema, one step per version: step i takes `user_version` from i to i + 1. Append only. */
const migrations: readonly string[] = [
  `
  CREATE TABLE agents (
    name TEXT PRIMARY KEY,
    spec TEXT NOT NULL,
    updated_at INTEGER NOT NULL
  );
  CREATE TABLE sessions (
    agent TEXT NOT NULL,
    session_id TEXT NOT NULL,
    cwd TEXT NOT NULL,
    title TEXT,
    state TEXT NOT NULL,
    stop_reason TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (agent, session_id)
  );
  CREATE INDEX sessions_by_cwd ON sessions (agent, cwd, updated_at);
  CREATE INDEX sessions_by_update ON sessions (updated_at);
  -- No foreign key to sessions: a transcript entry may arrive before its session row.
  CREATE TABLE transcript (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    agent TEXT NOT NULL,
    session_id TEXT NOT NULL,
    at INTEGER NOT NULL,
    kind TEXT NOT NULL,
    data TEXT NOT NULL,
    bytes INTEGER NOT NULL
  );
  CREATE INDEX transcript_by_session ON transcript (agent, session_id, seq);
  CREATE TABLE stderr (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    agent TEXT NOT NULL,
    at INTEGER NOT NULL,
    line TEXT NOT NULL,
    bytes INTEGER NOT NULL
  );
  CREATE INDEX stderr_by_agent ON stderr (agent, seq);
  CREATE TABLE events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    agent TEXT,
    at INTEGER NOT NULL,
    event TEXT NOT NULL,
    data TEXT NOT NULL,
    bytes INTEGER NOT NULL
  );
  CREATE INDEX events_by_agent ON events (agent, seq);
  `,
  // Version 2: packed transcript rows. A row of version 1 (packed = 0) is one entry, as
  // before; a packed row holds `count` consecutive entries of one session, its `data` a JSON
  // array of [at, kind, data] triples, one a line (see packedLine), `at` the newest entry's
  // time, `first_at` the oldest's, `bytes` the payload bytes of all its entries, and
  // `first_index` the index (within the row as written) of its first entry: pruning removes
  // a row's oldest entries and an entry keeps its seq. The covering indexes let counts, sizes
  // and retention read these columns without reading past the (large) `data` of every row.
  `
  ALTER TABLE transcript ADD COLUMN count INTEGER NOT NULL DEFAULT 1;
  ALTER TABLE transcript ADD COLUMN packed INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE transcript ADD COLUMN first_index INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE transcript ADD COLUMN first_at INTEGER;
  CREATE INDEX transcript_sizes ON transcript (seq, at, count, bytes, first_at, packed);
  DROP INDEX transcript_by_session;
  CREATE INDEX transcript_by_session ON transcript (agent, session_id, seq, bytes);
  `,
  // Version 3: a packed row may hold compact text chunks, `[at, code, text]` lines (see
  // packedLine). No table changes: the version keeps an agentvisor that cannot read them from
  // opening the file.
  '',
  // Version 4: running totals, so that retention and stats() cost what there is to remove or
  // read, not what the file holds. `totals` has one row per kind: sessions (count), transcript
  // (entries and their bytes), stderr and events (rows and their bytes); `session_totals` the
  // transcript entries and bytes of each (agent, session_id) that has any. Triggers keep them
  // exact in every transaction that changes a row, whoever writes it; they start from a count
  // of the rows already there. The indexes on time make retention by age a range scan: `at`
  // for whole transcript rows, stderr and events, `first_at` for packed rows that hold both
  // older and newer entries.
  `
  CREATE TABLE totals (
    kind TEXT PRIMARY KEY,
    count INTEGER NOT NULL,
    bytes INTEGER NOT NULL
  ) WITHOUT ROWID;
  INSERT INTO totals (kind, count, bytes)
    SELECT 'sessions', COUNT(*), 0 FROM sessions
    UNION ALL SELECT 'transcript', coalesce(SUM(count), 0), coalesce(SUM(bytes), 0) FROM transcript
    UNION ALL SELECT 'stderr', COUNT(*), coalesce(SUM(bytes), 0) FROM stderr
    UNION ALL SELECT 'events', COUNT(*), coalesce(SUM(bytes), 0) FROM events;
  CREATE TABLE session_totals (
    agent TEXT NOT NULL,
    session_id TEXT NOT NULL,
    count INTEGER NOT NULL,
    bytes INTEGER NOT NULL,
    PRIMARY KEY (agent, session_id)
  ) WITHOUT ROWID;
  INSERT INTO session_totals (agent, session_id, count, bytes)
    SELECT agent, session_id, SUM(count), SUM(bytes) FROM transcript GROUP BY agent, session_id;

  CREATE TRIGGER sessions_counted AFTER INSERT ON sessions BEGIN
    UPDATE totals SET count = count + 1 WHERE kind = 'sessions';
  END;
  CREATE TRIGGER sessions_uncounted AFTER DELETE ON sessions BEGIN
    UPDATE totals SET count = count - 1 WHERE kind = 'sessions';
  END;

  CREATE TRIGGER transcript_counted AFTER INSERT ON transcript BEGIN
    UPDATE totals SET count = count + NEW.count, bytes = bytes + NEW.bytes WHERE kind = 'transcript';
    INSERT INTO session_totals (agent, session_id, count, bytes) VALUES (NEW.agent, NEW.session_id, NEW.count, NEW.bytes)
      ON CONFLICT (agent, session_id) DO UPDATE SET count = count + excluded.count, bytes = bytes + excluded.bytes;
  END;
  CREATE TRIGGER transcript_uncounted AFTER DELETE ON transcript BEGIN
    UPDATE totals SET count = count - OLD.count, bytes = bytes - OLD.bytes WHERE kind = 'transcript';
    UPDATE session_totals SET count = count - OLD.count, bytes = bytes - OLD.bytes WHERE agent = OLD.agent AND session_id = OLD.session_id;
    DELETE FROM session_totals WHERE agent = OLD.agent AND session_id = OLD.session_id AND count = 0;
  END;
  CREATE TRIGGER transcript_recounted AFTER UPDATE OF agent, session_id, count, bytes ON transcript BEGIN
    UPDATE totals SET count = count - OLD.count + NEW.count, bytes = bytes - OLD.bytes + NEW.bytes WHERE kind = 'transcript';
    UPDATE session_totals SET count = count - OLD.count, bytes = bytes - OLD.bytes WHERE agent = OLD.agent AND session_id = OLD.session_id;
    DELETE FROM session_totals WHERE agent = OLD.agent AND session_id = OLD.session_id AND count = 0;
    INSERT INTO session_totals (agent, session_id, count, bytes) VALUES (NEW.agent, NEW.session_id, NEW.count, NEW.bytes)
      ON CONFLICT (agent, session_id) DO UPDATE SET count = count + excluded.count, bytes = bytes + excluded.bytes;
  END;

  ${entryTotalsTriggers('stderr')}
  ${entryTotalsTriggers('events')}

  CREATE INDEX transcript_by_at ON transcript (at);
  CREATE INDEX transcript_by_first_at ON transcript (first_at) WHERE packed = 1;
  CREATE INDEX stderr_by_at ON stderr (at);
  CREATE INDEX events_by_at ON events (at);
  `,
];

/** The most entries a transcript row holds; an entry's seq is `rowSeq * TRANSCRIPT_ROW_ENTRIES + index`. */
export const TRANSCRIPT_ROW_ENTRIES = 4096;

/** A packed row's `data` stops growing at about this many characters (a larger entry gets a row of its own). */
const maxPackedChars = 1 << 20;

/** The newest schema version this code knows. */
export const STORE_SCHEMA_VERSION = migrations.length;

/** Sessions newest first: the order of `sessions()` and of session retention. */
const newestSessionsFirst = 'updated_at DESC, created_at DESC, rowid DESC';

interface SessionRow {
  agent: string;
  session_id: string;
  cwd: string;
  title: string | null;
  state: string;
  stop_reason: string | null;
  created_at: number;
  updated_at: number;
}

/** A transcript row: one entry (`packed` = 0), or `count` of them packed. */
interface TranscriptRow {
  seq: number;
  at: number;
  kind: TranscriptKind;
  data: string;
  count: number;
  packed: number;
  first_index: number;
}

/** A packed row, as retention reads it. */
interface PackedRow {
  seq: number;
  data: string;
  count: number;
  bytes: number;
}

/** A transcript row's sizes, as retention walks the rows from the oldest. */
interface SizedRow {
  seq: number;
  count: number;
  bytes: number;
}

/** A row of `totals`: a kind's entries (rows for stderr and events, sessions for sessions) and their payload bytes. */
interface TotalsRow {
  kind: 'sessions' | 'transcript' | 'stderr' | 'events';
  count: number;
  bytes: number;
}

interface EventRow {
  seq: number;
  at: number;
  agent: string | null;
  event: string;
  data: string;
}

interface SessionKey {
  agent: string;
  session_id: string;
}

/**
 * Opens (creating if needed) the store at `file` and brings its schema up to date.
 * Throws `store_failed` for a file it must not use; the file is then left as it was.
 */
export function openSqliteStore(file: string, options: SqliteStoreOptions = {}): SqliteStore {
  const path = resolve(file);
  let db: Database.Database;
  try {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    db = new Database(path, { timeout: options.busyTimeoutMs ?? 5000 });
  } catch (error) {
    throw storeFailed(`Could not open the store ${path}: ${describeError(error)}`, error);
  }
  try {
    prepareDatabase(db, path, options);
    return sqliteStore(db, path);
  } catch (error) {
    db.close();
    if (error instanceof AgentError) throw error;
    throw storeFailed(openFailure(path, error), error);
  }
}

/** The open failure's message: a file that is not SQLite is named as such. */
function openFailure(path: string, error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  if (code === 'SQLITE_NOTADB' || code === 'SQLITE_CORRUPT') {
    return `Could not open the store ${path}: it is not a SQLite database, or it is corrupt (${describeError(error)})`;
  }
  return `Could not open the store ${path}: ${describeError(error)}`;
}

/** Checks the file is ours (before changing anything), migrates it, sets the connection up. */
function prepareDatabase(db: Database.Database, path: string, options: SqliteStoreOptions): void {
  // The first read of the header: where a file that is not SQLite fails.
  const version = checkOwnership(db, path);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('wal_autocheckpoint = 16384'); // 64 MiB of WAL between checkpoints: fewer rewrites of a stream's tail pages
  db.pragma('foreign_keys = ON');
  if (version < STORE_SCHEMA_VERSION) {
    // IMMEDIATE, checking again under the lock: two processes opening an old or new file at once migrate it once.
    db.transaction(() => {
      const current = checkOwnership(db, path);
      for (const step of migrations.slice(current)) db.exec(step);
      db.pragma(`application_id = ${STORE_APPLICATION_ID}`);
      db.pragma(`user_version = ${STORE_SCHEMA_VERSION}`);
    }).immediate();
  }
  if (options.maxPageCount !== undefined) db.pragma(`max_page_count = ${Math.floor(options.maxPageCount)}`);
}

/** The file's schema version, or a refusal for a foreign or newer database. Reads only. */
function checkOwnership(db: Database.Database, path: string): number {
  const applicationId = db.pragma('application_id', { simple: true }) as number;
  const version = db.pragma('user_version', { simple: true }) as number;
  if (applicationId !== STORE_APPLICATION_ID) {
    const tables = (db.prepare("SELECT COUNT(*) AS n FROM sqlite_schema WHERE name NOT LIKE 'sqlite_%'").get() as { n: number }).n;
    if (applicationId !== 0) {
      throw storeFailed(`Could not open the store ${path}: it is another application's SQLite database (application_id 0x${hex(applicationId)})`);
    }
    if (version !== 0 || tables > 0) throw storeFailed(`Could not open the store ${path}: it is a SQLite database that agentvisor did not create`);
  }
  if (version > STORE_SCHEMA_VERSION) {
    throw storeFailed(
      `Could not open the store ${path}: its schema version is ${version}, newer than version ${STORE_SCHEMA_VERSION}, the newest this agentvisor supports; upgrade agentvisor or use another file`,
    );
  }
  return version;
}

function hex(value: number): string {
  return (value >>> 0).toString(16).padStart(8, '0');
}

/** The JSON text a store keeps for a payload (`undefined` and functions become `null`). */
function toJson(data: unknown): string {
  return JSON.stringify(data) ?? 'null';
}

/** SQLite's LIMIT for a page: no limit when it is not finite. */
function pageLimit(page: Page): number {
  return Number.isFinite(page.limit) ? Math.max(0, Math.floor(page.limit)) : -1;
}

/** A retention limit, when set to a finite number. */
function limit(value: number | undefined): number | undefined {
  return value !== undefined && Number.isFinite(value) ? value : undefined;
}

function sqliteStore(db: Database.Database, path: string): SqliteStore {
  const statements = {
    agent: db.prepare(
      'INSERT INTO agents (name, spec, updated_at) VALUES (?, ?, ?) ON CONFLICT (name) DO UPDATE SET spec = excluded.spec, updated_at = excluded.updated_at',
    ),
    // The has_* flags tell a field the write leaves out (keep) from one it sets, to null maybe.
    session: db.prepare(`
      INSERT INTO sessions (agent, session_id, cwd, title, state, stop_reason, created_at, updated_at)
      VALUES (@agent, @sessionId, coalesce(@cwd, ''), @title, coalesce(@state, 'idle'), @stopReason, @at, @at)
      ON CONFLICT (agent, session_id) DO UPDATE SET
        cwd = CASE WHEN @hasCwd THEN excluded.cwd ELSE cwd END,
        title = CASE WHEN @hasTitle THEN excluded.title ELSE title END,
        state = CASE WHEN @hasState THEN excluded.state ELSE state END,
        stop_reason = CASE WHEN @hasStopReason THEN excluded.stop_reason ELSE stop_reason END,
        updated_at = excluded.updated_at`),
    transcript: db.prepare('INSERT INTO transcript (agent, session_id, at, kind, data, bytes) VALUES (?, ?, ?, ?, ?, ?)'),
    transcriptPacked: db.prepare(
      "INSERT INTO transcript (agent, session_id, at, kind, data, bytes, count, packed, first_at) VALUES (?, ?, ?, 'packed', ?, ?, ?, 1, ?)",
    ),
    stderr: db.prepare('INSERT INTO stderr (agent, at, line, bytes) VALUES (?, ?, ?, ?)'),
    event: db.prepare('INSERT INTO events (agent, at, event, data, bytes) VALUES (?, ?, ?, ?, ?)'),
    // From the row that holds the entry `after` (its entries up to `after` are skipped).
    transcriptPage: db.prepare(
      'SELECT seq, at, kind, data, count, packed, first_index FROM transcript WHERE agent = ? AND session_id = ? AND seq >= ? ORDER BY seq LIMIT ?',
    ),
    logPage: db.prepare('SELECT seq, at, agent, line FROM stderr WHERE agent = ? AND seq > ? ORDER BY seq LIMIT ?'),
    eventPage: db.prepare('SELECT seq, at, agent, event, data FROM events WHERE seq > ? ORDER BY seq LIMIT ?'),
    agentEventPage: db.prepare('SELECT seq, at, agent, event, data FROM events WHERE agent = ? AND seq > ? ORDER BY seq LIMIT ?'),
    totals: db.prepare('SELECT kind, count, bytes FROM totals'),
    total: db.prepare('SELECT kind, count, bytes FROM totals WHERE kind = ?'),
    sessionsOlderThan: db.prepare('SELECT agent, session_id FROM sessions INDEXED BY sessions_by_update WHERE updated_at < ?'),
    // The `?` oldest sessions: newestSessionsFirst reversed (a total order, so they are exactly those beyond the newest `count - ?`).
    oldestSessions: db.prepare('SELECT agent, session_id FROM sessions ORDER BY updated_at, created_at, rowid LIMIT ?'),
    // Sessions newest first, each with the running total of its and newer sessions' transcript bytes (session_totals: one lookup a session).
    sessionsBeyondBytes: db.prepare(`
      SELECT agent, session_id FROM (
        SELECT s.agent, s.session_id, SUM(coalesce(t.bytes, 0)) OVER (ORDER BY s.updated_at DESC, s.created_at DESC, s.rowid DESC ROWS UNBOUNDED PRECEDING) AS total
        FROM sessions s LEFT JOIN session_totals t ON t.agent = s.agent AND t.session_id = s.session_id
      ) WHERE total > ?`),
    deleteSessionTranscript: db.prepare('DELETE FROM transcript WHERE agent = ? AND session_id = ?'),
    deleteSession: db.prepare('DELETE FROM sessions WHERE agent = ? AND session_id = ?'),
  };
  const entryPrune = { stderr: entryPruneStatements(db, 'stderr'), events: entryPruneStatements(db, 'events') };
  const transcriptPrune = transcriptPruneStatements(db);

  /** `sessions()` queries, one per combination of filters, prepared on first use. */
  const sessionQueries = new Map<string, Database.Statement>();
  function sessionQuery(filter: { agent?: string; cwd?: string; sessionId?: string }): Database.Statement {
    const columns = (['agent', 'cwd', 'sessionId'] as const).filter((key) => filter[key] !== undefined);
    const key = columns.join(',');
    let statement = sessionQueries.get(key);
    if (!statement) {
      const where = columns.map((column) => `${column === 'sessionId' ? 'session_id' : column} = @${column}`).join(' AND ');
      statement = db.prepare(`SELECT * FROM sessions${where ? ` WHERE ${where}` : ''} ORDER BY ${newestSessionsFirst}`);
      sessionQueries.set(key, statement);
    }
    return statement;
  }

  function apply(write: StoreWrite): void {
    switch (write.type) {
      case 'agent':
        statements.agent.run(write.agent, JSON.stringify(write.spec), write.at);
        return;
      case 'session':
        statements.session.run({
          agent: write.agent,
          sessionId: write.sessionId,
          at: write.at,
          cwd: write.cwd ?? null,
          title: write.title ?? null,
          state: write.state ?? null,
          stopReason: write.stopReason ?? null,
          hasCwd: write.cwd === undefined ? 0 : 1,
          hasTitle: write.title === undefined ? 0 : 1,
          hasState: write.state === undefined ? 0 : 1,
          hasStopReason: write.stopReason === undefined ? 0 : 1,
        });
        return;
      case 'transcript':
        throw new Error('transcript writes are packed by writeBatch');
      case 'stderr':
        statements.stderr.run(write.agent, write.at, write.line, Buffer.byteLength(write.line));
        return;
      case 'event': {
        const data = toJson(write.data);
        statements.event.run(write.agent, write.at, write.event, data, Buffer.byteLength(data));
        return;
      }
      default:
        throw new Error(`unknown write type ${JSON.stringify((write as { type?: unknown }).type)}`);
    }
  }

  /**
   * The transcript row being filled: the run of consecutive transcript writes of one session
   * in this batch (other kinds of write in between do not end it: they go to other tables).
   * Its first entry goes in a plain row if no second one comes.
   */
  let run: {
    agent: string;
    sessionId: string;
    count: number;
    lastAt: number;
    /** The run's first write: a run of one is a plain row of its JSON. */
    first: Extract<StoreWrite, { type: 'transcript' }>;
    /** The packed row's text so far (no closing bracket). */
    text: string;
    /** The characters of `text` that are payload (the rest are brackets, times, kinds, codes, separators). */
    payloadChars: number;
    /** What the entries' stored bytes differ by from their payload characters, beyond non-ASCII text: compact chunks' wrappers, minus non-ASCII kinds' extra bytes. */
    extraBytes: number;
    /** Whether the entries so far can go in a packed row (a finite time, a string kind). */
    packable: boolean;
  } | null = null;

  /** One entry's line in a packed row, and what it adds to the row's byte count (see `run`). */
  let lineText = '';
  let linePayloadChars = 0;
  let lineExtraBytes = 0;
  function makeLine(write: Extract<StoreWrite, { type: 'transcript' }>): void {
    if (write.kind === 'update' && isPlainTextChunk(write.data)) {
      const code = chunkCodes.get(write.data.sessionUpdate)!;
      const textJson = JSON.stringify(write.data.content.text);
      lineText = `[${write.at},${code},${textJson}]`;
      linePayloadChars = textJson.length;
      lineExtraBytes = chunkWrapperChars[code]!;
      return;
    }
    const json = entryJson(write.data);
    lineText = packedLine(write.at, write.kind, json);
    linePayloadChars = json.length;
    lineExtraBytes = -kindExtraBytes(write.kind);
  }

  function addTranscript(write: Extract<StoreWrite, { type: 'transcript' }>): void {
    const { at } = write;
    const packable = Number.isFinite(at) && typeof write.kind === 'string';
    if (packable) makeLine(write);
    const current = run;
    if (
      current !== null &&
      packable &&
      current.packable &&
      current.agent === write.agent &&
      current.sessionId === write.sessionId &&
      current.count < TRANSCRIPT_ROW_ENTRIES &&
      // A row's entries are in time order: retention by age drops a row's oldest entries.
      at >= current.lastAt &&
      current.text.length + lineText.length < maxPackedChars
    ) {
      current.text += `,\n${lineText}`;
      current.payloadChars += linePayloadChars;
      current.extraBytes += lineExtraBytes;
      current.count++;
      current.lastAt = at;
      return;
    }
    flushTranscript();
    run = { agent: write.agent, sessionId: write.sessionId, count: 1, lastAt: at, first: write, packable, text: '', payloadChars: 0, extraBytes: 0 };
    if (packable) {
      run.text = `[${lineText}`;
      run.payloadChars = linePayloadChars;
      run.extraBytes = lineExtraBytes;
    }
  }

  /** Inserts the row being filled: a plain row for one entry, a packed row for more. */
  function flushTranscript(): void {
    const current = run;
    if (current === null) return;
    run = null;
    if (current.count === 1) {
      const { first } = current;
      const json = entryJson(first.data);
      statements.transcript.run(first.agent, first.sessionId, first.at, first.kind, json, Buffer.byteLength(json));
      return;
    }
    const text = `${current.text}]`;
    const bytes = Buffer.byteLength(text) - (text.length - current.payloadChars) + current.extraBytes;
    statements.transcriptPacked.run(current.agent, current.sessionId, current.lastAt, text, bytes, current.count, current.first.at);
  }

  const writeBatch = db.transaction((batch: readonly StoreWrite[]) => {
    run = null;
    for (const write of batch) {
      if (write.type === 'transcript') addTranscript(write);
      else apply(write);
    }
    flushTranscript();
  });

  function dropSessions(keys: SessionKey[]): void {
    for (const { agent, session_id } of keys) {
      statements.deleteSessionTranscript.run(agent, session_id);
      statements.deleteSession.run(agent, session_id);
    }
  }

  /** A kind's running totals (kept by the triggers of schema version 4). */
  function total(kind: TotalsRow['kind']): TotalsRow {
    return (statements.total.get(kind) as TotalsRow | undefined) ?? { kind, count: 0, bytes: 0 };
  }

  /**
   * Transcript retention, per entry as for the other kinds: whole rows go by SQL, and the one
   * row that straddles a limit loses its oldest entries (see trimRow). The work is what there
   * is to remove: the age rules are range scans of indexes on time; the count and byte rules
   * read the totals, do nothing within the limit, and otherwise walk the oldest rows only as
   * far as the excess reaches.
   */
  function pruneTranscript(rule: RetentionRule, now: number): void {
    const maxAgeMs = limit(rule.maxAgeMs);
    const maxCount = limit(rule.maxCount);
    const maxBytes = limit(rule.maxBytes);
    if (maxAgeMs !== undefined) {
      const cutoff = now - maxAgeMs;
      // Rows whose newest entry is too old, then the oldest entries of rows that hold both.
      transcriptPrune.byAge.run(cutoff);
      for (const row of transcriptPrune.olderEntries.all(cutoff) as PackedRow[]) {
        const lines = packedLines(row.data);
        let dropped = 0;
        while (dropped < lines.length && Number(splitLine(lines[dropped]!).at) < cutoff) dropped++;
        trimRow(row, lines, dropped);
      }
    }
    if (maxCount !== undefined) {
      // The `excess` oldest entries go: whole rows from the oldest, then as many of the next row's oldest entries as are left.
      let excess = total('transcript').count - Math.max(0, Math.floor(maxCount));
      if (excess > 0) {
        let through: number | undefined;
        let straddling: SizedRow | undefined;
        for (const row of oldestRows<SizedRow>(transcriptPrune.oldest)) {
          if (row.count > excess) {
            straddling = row;
            break;
          }
          through = row.seq;
          excess -= row.count;
          if (excess === 0) break;
        }
        if (through !== undefined) transcriptPrune.deleteThrough.run(through);
        if (straddling) {
          const packed = transcriptPrune.packedRow.get(straddling.seq) as PackedRow | undefined;
          if (packed) trimRow(packed, packedLines(packed.data), excess);
          else transcriptPrune.deleteRow.run(straddling.seq);
        }
      }
    }
    if (maxBytes !== undefined) {
      // `left`: the bytes of the row at hand and every newer one. Rows go from the oldest while the newer ones alone exceed
      // the limit; the row that straddles it keeps its newest entries that fit in what the newer rows leave, up to the first that does not.
      let left = total('transcript').bytes;
      if (left > maxBytes) {
        let through: number | undefined;
        let straddling: SizedRow | undefined;
        for (const row of oldestRows<SizedRow>(transcriptPrune.oldest)) {
          if (left - row.bytes <= maxBytes) {
            straddling = row;
            break;
          }
          through = row.seq;
          left -= row.bytes;
        }
        if (through !== undefined) transcriptPrune.deleteThrough.run(through);
        if (straddling) {
          const room = maxBytes - (left - straddling.bytes);
          const packed = transcriptPrune.packedRow.get(straddling.seq) as PackedRow | undefined;
          let kept = 0;
          if (packed) {
            const lines = packedLines(packed.data);
            let size = 0;
            for (let index = lines.length - 1; index >= 0; index--) {
              size += splitLine(lines[index]!).payloadBytes;
              if (size > room) break;
              kept++;
            }
            if (kept > 0) trimRow(packed, lines, lines.length - kept);
          }
          if (kept === 0) transcriptPrune.deleteRow.run(straddling.seq);
        }
      }
    }
  }

  /** Drops the `dropped` oldest entries of a packed row (`lines` its entries), the row itself when that is all of them. */
  function trimRow(row: PackedRow, lines: string[], dropped: number): void {
    if (dropped <= 0) return;
    if (dropped >= lines.length) {
      transcriptPrune.deleteRow.run(row.seq);
      return;
    }
    let droppedBytes = 0;
    for (const line of lines.slice(0, dropped)) droppedBytes += splitLine(line).payloadBytes;
    const kept = lines.slice(dropped);
    transcriptPrune.trim.run(`[${kept.join(',\n')}]`, row.count - dropped, dropped, row.bytes - droppedBytes, Number(splitLine(kept[0]!).at), row.seq);
  }

  // Rules apply in turn (age, then count, then bytes), to entries first, then to sessions,
  // so a session's bytes are those of the transcript that is left.
  const pruneAll = db.transaction((retention: Retention, now: number) => {
    if (retention.transcript) pruneTranscript(retention.transcript, now);
    for (const kind of ['stderr', 'events'] as const) {
      const rule: RetentionRule | undefined = retention[kind];
      if (!rule) continue;
      const prune = entryPrune[kind];
      const maxAgeMs = limit(rule.maxAgeMs);
      const maxCount = limit(rule.maxCount);
      const maxBytes = limit(rule.maxBytes);
      if (maxAgeMs !== undefined) prune.byAge.run(now - maxAgeMs);
      if (maxCount !== undefined) {
        // The `excess` oldest rows.
        const excess = total(kind).count - Math.max(0, Math.floor(maxCount));
        if (excess > 0) prune.oldestRows.run(excess - 1);
      }
      if (maxBytes !== undefined) {
        // The oldest rows while they and the newer ones exceed the limit (`left`: the row at hand's bytes and every newer one's).
        let left = total(kind).bytes;
        let through: number | undefined;
        if (left > maxBytes) {
          for (const row of oldestRows<{ seq: number; bytes: number }>(prune.oldest)) {
            if (left <= maxBytes) break;
            through = row.seq;
            left -= row.bytes;
          }
        }
        if (through !== undefined) prune.deleteThrough.run(through);
      }
    }
    const rule = retention.sessions;
    if (!rule) return;
    const maxAgeMs = limit(rule.maxAgeMs);
    const maxCount = limit(rule.maxCount);
    const maxBytes = limit(rule.maxBytes);
    if (maxAgeMs !== undefined) dropSessions(statements.sessionsOlderThan.all(now - maxAgeMs) as SessionKey[]);
    if (maxCount !== undefined) {
      const excess = total('sessions').count - Math.max(0, Math.floor(maxCount));
      if (excess > 0) dropSessions(statements.oldestSessions.all(excess) as SessionKey[]);
    }
    // The sessions' transcripts are part of the transcript: within its total, every running total is within the limit.
    if (maxBytes !== undefined && total('transcript').bytes > maxBytes) dropSessions(statements.sessionsBeyondBytes.all(maxBytes) as SessionKey[]);
  });

  /** Runs `action` on the open database; any failure becomes `store_failed`, worded by `what`. */
  function guarded<T>(what: string, action: () => T): T {
    if (!db.open) throw storeFailed(`The store ${path} is closed`);
    try {
      return action();
    } catch (error) {
      throw storeFailed(`Could not ${what} the store ${path}: ${describeError(error)}`, error);
    }
  }

  return {
    file: path,

    write(batch) {
      // IMMEDIATE takes the write lock up front, waiting out other connections (busy timeout).
      guarded('write to', () => writeBatch.immediate(batch));
    },

    sessions(filter) {
      return guarded('read', () =>
        (sessionQuery(filter).all(filter) as SessionRow[]).map(
          (row): StoredSession => ({
            agent: row.agent,
            sessionId: row.session_id,
            cwd: row.cwd,
            title: row.title,
            state: row.state,
            stopReason: row.stop_reason,
            createdAt: row.created_at,
            updatedAt: row.updated_at,
          }),
        ),
      );
    },

    transcript(agent, sessionId, page) {
      return guarded('read', () => {
        const max = pageLimit(page);
        const entries: TranscriptEntry[] = [];
        if (max === 0) return entries;
        const after = Math.floor(page.after);
        // Every row holds at least one entry, and only the first (the row of `after`) may give none: max + 1 rows suffice.
        const rows = statements.transcriptPage.iterate(agent, sessionId, Math.floor(after / TRANSCRIPT_ROW_ENTRIES), max < 0 ? -1 : max + 1) as IterableIterator<TranscriptRow>;
        for (const row of rows) {
          const first = row.seq * TRANSCRIPT_ROW_ENTRIES + row.first_index;
          if (row.packed === 0) {
            if (first > after) entries.push({ seq: first, at: row.at, agent, sessionId, kind: row.kind, data: JSON.parse(row.data) });
          } else {
            const from = Math.max(0, after - first + 1);
            const to = max < 0 ? row.count : Math.min(row.count, from + max - entries.length);
            if (from < to) {
              const triples = JSON.parse(packedSlice(row.data, row.count, from, to)) as [number, TranscriptKind | number, unknown][];
              for (let index = 0; index < triples.length; index++) {
                const [at, kind, data] = triples[index]!;
                if (typeof kind === 'number') entries.push({ seq: first + from + index, at, agent, sessionId, kind: 'update', data: chunkOf(kind, data) });
                else entries.push({ seq: first + from + index, at, agent, sessionId, kind, data });
              }
            }
          }
          if (max >= 0 && entries.length >= max) break;
        }
        return entries;
      });
    },

    logs(agent, page) {
      return guarded('read', () => statements.logPage.all(agent, page.after, pageLimit(page)) as LogEntry[]);
    },

    events(filter, page) {
      return guarded('read', () => {
        const rows =
          filter.agent === undefined
            ? statements.eventPage.all(page.after, pageLimit(page))
            : statements.agentEventPage.all(filter.agent, page.after, pageLimit(page));
        return (rows as EventRow[]).map((row): EventEntry => ({ seq: row.seq, at: row.at, agent: row.agent, event: row.event, data: JSON.parse(row.data) }));
      });
    },

    prune(retention, now) {
      guarded('prune', () => pruneAll.immediate(retention, now));
    },

    stats() {
      return guarded('read', () => {
        const totals = new Map((statements.totals.all() as TotalsRow[]).map((row) => [row.kind, row]));
        const of = (kind: TotalsRow['kind']) => ({ count: totals.get(kind)?.count ?? 0, bytes: totals.get(kind)?.bytes ?? 0 });
        return {
          sessions: of('sessions').count,
          transcript: of('transcript'),
          stderr: of('stderr'),
          events: of('events'),
          fileBytes: fileSize(path) + fileSize(`${path}-wal`),
        };
      });
    },

    close() {
      if (db.open) db.close();
    },
  };
}

/**
 * Transcript retention: whole rows by age (of their newest entry), through a row, a row; the
 * packed rows that hold entries older than a time; the rows oldest first, from after a seq;
 * and the update that trims a packed row.
 */
function transcriptPruneStatements(db: Database.Database) {
  return {
    // Through the indexes on time (a range: the rows to remove), never the rows' data.
    byAge: db.prepare('DELETE FROM transcript WHERE seq IN (SELECT seq FROM transcript INDEXED BY transcript_by_at WHERE at < ?)'),
    olderEntries: db.prepare(
      'SELECT seq, data, count, bytes FROM transcript WHERE seq IN (SELECT seq FROM transcript INDEXED BY transcript_by_first_at WHERE packed = 1 AND first_at < ?)',
    ),
    // Through the covering index (transcript_sizes): reading a packed row's later columns means reading past its data.
    oldest: db.prepare('SELECT seq, count, bytes FROM transcript INDEXED BY transcript_sizes WHERE seq > ? ORDER BY seq LIMIT ?'),
    deleteThrough: db.prepare('DELETE FROM transcript WHERE seq <= ?'),
    deleteRow: db.prepare('DELETE FROM transcript WHERE seq = ?'),
    packedRow: db.prepare('SELECT seq, data, count, bytes FROM transcript WHERE seq = ? AND packed = 1'),
    trim: db.prepare('UPDATE transcript SET data = ?, count = ?, first_index = first_index + ?, bytes = ?, first_at = ? WHERE seq = ?'),
  };
}

/** Rows by `oldest` (`seq > ?` in seq order, `LIMIT ?`), a small chunk at a time, then larger ones: the caller stops when it has seen enough. */
function* oldestRows<T extends { seq: number }>(oldest: Database.Statement): Generator<T> {
  let after = Number.MIN_SAFE_INTEGER;
  for (let chunk = 16; ; chunk = Math.min(chunk * 4, 4096)) {
    const rows = oldest.all(after, chunk) as T[];
    yield* rows;
    if (rows.length < chunk) return;
    after = rows[rows.length - 1]!.seq;
  }
}

/**
 * A packed row's data is a JSON array of `[at, kind, data]` triples, one a line: `[` then
 * the triples joined by `,\n`, then `]`. JSON.stringify never writes a raw line feed, so an
 * entry is found by counting line feeds, and read without parsing the others. A plain text
 * chunk (core/text-chunk.ts), the bulk of a stream, is written compact, `[at, code, text]`:
 * kind `update`, `code` its sessionUpdate's index in {@link chunkKinds}, `text` its content's
 * text — about a quarter of the characters of the whole update, and told apart from a triple
 * by the number where a triple has its kind's string.
 */
function packedLine(at: number, kind: string, json: string): string {
  return `[${at},${kindJsons.get(kind) ?? JSON.stringify(kind)},${json}]`;
}

const kindJsons = new Map<string, string>(
  (['update', 'prompt', 'prompt_result', 'permission', 'permission_outcome', 'elicitation', 'elicitation_outcome'] satisfies TranscriptKind[]).map((kind) => [kind, JSON.stringify(kind)]),
);

/** The bytes a kind's JSON has beyond its characters: 0 for the kinds of core/store.ts. */
function kindExtraBytes(kind: string): number {
  if (kindJsons.has(kind)) return 0;
  const json = JSON.stringify(kind);
  return Buffer.byteLength(json) - json.length;
}

/** Entries `from` (inclusive) to `to` (exclusive) of a packed row's `count`, as a JSON array of triples. */
function packedSlice(data: string, count: number, from: number, to: number): string {
  if (from === 0 && to === count) return data;
  let start = 1;
  for (let index = 0; index < from; index++) start = data.indexOf('\n', start) + 1;
  let end = data.length - 1;
  if (to < count) {
    end = start;
    for (let index = from; index < to; index++) end = data.indexOf('\n', end) + 1;
    end -= 2; // the line feed and the comma before it
  }
  return `[${data.slice(start, end)}]`;
}

/** A packed row's entries, one JSON triple each. */
function packedLines(data: string): string[] {
  return data.slice(1, -1).split(',\n');
}

/** A line's time as written, and its payload's bytes (a compact chunk's as the whole update's JSON). */
function splitLine(line: string): { at: string; payloadBytes: number } {
  const comma = line.indexOf(',');
  const at = line.slice(1, comma);
  if (line[comma + 1] !== '"') {
    const next = line.indexOf(',', comma + 1);
    return { at, payloadBytes: chunkWrapperChars[Number(line.slice(comma + 1, next))]! + Buffer.byteLength(line.slice(next + 1, -1)) };
  }
  // The kind: a JSON string from comma + 1, its closing quote the first one not escaped.
  let index = comma + 2;
  while (line[index] !== '"') index += line[index] === '\\' ? 2 : 1;
  return { at, payloadBytes: Buffer.byteLength(line.slice(index + 2, -1)) };
}

/** The sessionUpdate of a compact chunk by its code. The order is part of the file format: append only. */
const chunkKinds: readonly PlainTextChunk['sessionUpdate'][] = ['agent_message_chunk', 'agent_thought_chunk', 'user_message_chunk'];
const chunkCodes = new Map(chunkKinds.map((kind, code) => [kind, code]));
/** What a chunk's update JSON has beyond its text's JSON (all ASCII), by code. */
const chunkWrapperChars = chunkKinds.map((kind) => entryJson({ sessionUpdate: kind, content: { type: 'text', text: '' } }).length - 2);

/** The update a compact chunk line stands for. */
function chunkOf(code: number, text: unknown): PlainTextChunk {
  const sessionUpdate = chunkKinds[code];
  if (sessionUpdate === undefined || typeof text !== 'string') throw new Error(`a transcript row holds a compact chunk of unknown code ${code}`);
  return { sessionUpdate, content: { type: 'text', text } };
}

/** Deletes from an entry table: by age (a range of its index on `at`), the oldest `? + 1` rows, the rows through a seq; and walks the oldest. */
function entryPruneStatements(db: Database.Database, table: 'stderr' | 'events') {
  return {
    byAge: db.prepare(`DELETE FROM ${table} WHERE seq IN (SELECT seq FROM ${table} INDEXED BY ${table}_by_at WHERE at < ?)`),
    oldestRows: db.prepare(`DELETE FROM ${table} WHERE seq <= (SELECT seq FROM ${table} ORDER BY seq LIMIT 1 OFFSET ?)`),
    oldest: db.prepare(`SELECT seq, bytes FROM ${table} WHERE seq > ? ORDER BY seq LIMIT ?`),
    deleteThrough: db.prepare(`DELETE FROM ${table} WHERE seq <= ?`),
  };
}

function fileSize(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}
