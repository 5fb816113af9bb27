/** The SQLite store's reads: sessions by filter, pages of a transcript (packed rows unpacked), of stderr and of events, and the running totals. */
import type Database from 'better-sqlite3';
import type { EventEntry, LogEntry, Page, StoredSession, TranscriptEntry, TranscriptKind } from '../../../core/store.js';
import { chunkOf, packedSlice, TRANSCRIPT_ROW_ENTRIES } from './packed-rows.js';
import type { TotalsRow } from './schema.js';

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

interface EventRow {
  seq: number;
  at: number;
  agent: string | null;
  event: string;
  data: string;
}

/** SQLite's LIMIT for a page: no limit when it is not finite. */
function pageLimit(page: Page): number {
  return Number.isFinite(page.limit) ? Math.max(0, Math.floor(page.limit)) : -1;
}

/** The store's queries, prepared once on `db`; each answers as the Store interface does. */
export function storeQueries(db: Database.Database) {
  const statements = {
    // From the row that holds the entry `after` (its entries up to `after` are skipped).
    transcriptPage: db.prepare(
      'SELECT seq, at, kind, data, count, packed, first_index FROM transcript WHERE agent = ? AND session_id = ? AND seq >= ? ORDER BY seq LIMIT ?',
    ),
    logPage: db.prepare('SELECT seq, at, agent, line FROM stderr WHERE agent = ? AND seq > ? ORDER BY seq LIMIT ?'),
    eventPage: db.prepare('SELECT seq, at, agent, event, data FROM events WHERE seq > ? ORDER BY seq LIMIT ?'),
    agentEventPage: db.prepare('SELECT seq, at, agent, event, data FROM events WHERE agent = ? AND seq > ? ORDER BY seq LIMIT ?'),
    totals: db.prepare('SELECT kind, count, bytes FROM totals'),
  };

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

  return {
    sessions(filter: { agent?: string; cwd?: string; sessionId?: string }): StoredSession[] {
      return (sessionQuery(filter).all(filter) as SessionRow[]).map(
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
      );
    },

    transcript(agent: string, sessionId: string, page: Page): TranscriptEntry[] {
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
    },

    logs(agent: string, page: Page): LogEntry[] {
      return statements.logPage.all(agent, page.after, pageLimit(page)) as LogEntry[];
    },

    events(filter: { agent?: string }, page: Page): EventEntry[] {
      const rows =
        filter.agent === undefined
          ? statements.eventPage.all(page.after, pageLimit(page))
          : statements.agentEventPage.all(filter.agent, page.after, pageLimit(page));
      return (rows as EventRow[]).map((row): EventEntry => ({ seq: row.seq, at: row.at, agent: row.agent, event: row.event, data: JSON.parse(row.data) }));
    },

    /** The running totals of every kind (kept by the triggers of schema version 4). */
    totals(): Map<TotalsRow['kind'], TotalsRow> {
      return new Map((statements.totals.all() as TotalsRow[]).map((row) => [row.kind, row]));
    },
  };
}
