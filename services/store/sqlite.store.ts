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
 *
 * This file opens the database and composes the parts in sqlite/: the schema and its
 * migrations, the packed transcript rows, the writer, the queries and retention.
 */
import Database from 'better-sqlite3';
import { mkdirSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { AgentError, describeError, storeFailed } from '../../core/errors.js';
import type { EventEntry, LogEntry, Page, Retention, Store, StoreStats, StoreWrite, StoredSession, TranscriptEntry } from '../../core/store.js';
import { storeQueries } from './sqlite/queries.js';
import { storePruner } from './sqlite/retention.js';
import { prepareDatabase, type TotalsRow } from './sqlite/schema.js';
import { batchWriter } from './sqlite/writer.js';

export { TRANSCRIPT_ROW_ENTRIES } from './sqlite/packed-rows.js';
export { STORE_APPLICATION_ID, STORE_SCHEMA_VERSION } from './sqlite/schema.js';

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

/** The store over an open, prepared database: its writes, reads and retention, each guarded. */
function sqliteStore(db: Database.Database, path: string): SqliteStore {
  const writeBatch = batchWriter(db);
  const queries = storeQueries(db);
  const pruneAll = storePruner(db);

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
      return guarded('read', () => queries.sessions(filter));
    },

    transcript(agent, sessionId, page) {
      return guarded('read', () => queries.transcript(agent, sessionId, page));
    },

    logs(agent, page) {
      return guarded('read', () => queries.logs(agent, page));
    },

    events(filter, page) {
      return guarded('read', () => queries.events(filter, page));
    },

    prune(retention, now) {
      guarded('prune', () => pruneAll.immediate(retention, now));
    },

    stats() {
      return guarded('read', () => {
        const totals = queries.totals();
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

function fileSize(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}
