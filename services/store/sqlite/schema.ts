/**
 * The SQLite store's schema: the migrations, one a version, and the check that a file is
 * ours (its application_id and schema version) before any of them runs.
 */
import type Database from 'better-sqlite3';
import { storeFailed } from '../../../core/errors.js';

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
  // array of [at, kind, data] triples, one a line (see packedLine in packed-rows.ts), `at`
  // the newest entry's time, `first_at` the oldest's, `bytes` the payload bytes of all its entries, and
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
  // packedLine in packed-rows.ts). No table changes: the version keeps an agentvisor that
  // cannot read them from opening the file.
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

/** The newest schema version this code knows. */
export const STORE_SCHEMA_VERSION = migrations.length;

/** A row of `totals` (schema version 4): a kind's entries (rows for stderr and events, sessions for sessions) and their payload bytes. */
export interface TotalsRow {
  kind: 'sessions' | 'transcript' | 'stderr' | 'events';
  count: number;
  bytes: number;
}

/** Checks the file is ours (before changing anything), migrates it, sets the connection up. */
export function prepareDatabase(db: Database.Database, path: string, options: { maxPageCount?: number }): void {
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
