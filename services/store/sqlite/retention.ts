/**
 * The SQLite store's retention: rules applied in one transaction, by age, count and bytes, to
 * the transcript (whole rows, and the oldest entries of the packed row that straddles a
 * limit), to stderr and events, then to whole sessions; the running totals say how much there
 * is to remove.
 */
import type Database from 'better-sqlite3';
import type { Retention, RetentionRule } from '../../../core/store.js';
import { retentionLimits } from '../retention-limits.js';
import { packedLines, splitLine } from './packed-rows.js';
import type { TotalsRow } from './schema.js';

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

interface SessionKey {
  agent: string;
  session_id: string;
}

/** The transaction that applies a retention at a time `now` (run it `.immediate()` to take the write lock up front). */
export function storePruner(db: Database.Database): Database.Transaction<(retention: Retention, now: number) => void> {
  const statements = {
    total: db.prepare('SELECT kind, count, bytes FROM totals WHERE kind = ?'),
    sessionsOlderThan: db.prepare('SELECT agent, session_id FROM sessions INDEXED BY sessions_by_update WHERE updated_at < ?'),
    // The `?` oldest sessions: `sessions()`'s order (newest first) reversed (a total order, so they are exactly those beyond the newest `count - ?`).
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
    const { maxAgeMs, maxCount, maxBytes } = retentionLimits(rule);
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
      let excess = total('transcript').count - maxCount;
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
      const { maxAgeMs, maxCount, maxBytes } = retentionLimits(rule);
      if (maxAgeMs !== undefined) prune.byAge.run(now - maxAgeMs);
      if (maxCount !== undefined) {
        // The `excess` oldest rows.
        const excess = total(kind).count - maxCount;
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
    const { maxAgeMs, maxCount, maxBytes } = retentionLimits(rule);
    if (maxAgeMs !== undefined) dropSessions(statements.sessionsOlderThan.all(now - maxAgeMs) as SessionKey[]);
    if (maxCount !== undefined) {
      const excess = total('sessions').count - maxCount;
      if (excess > 0) dropSessions(statements.oldestSessions.all(excess) as SessionKey[]);
    }
    // The sessions' transcripts are part of the transcript: within its total, every running total is within the limit.
    if (maxBytes !== undefined && total('transcript').bytes > maxBytes) dropSessions(statements.sessionsBeyondBytes.all(maxBytes) as SessionKey[]);
  });
  return pruneAll;
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

/** Deletes from an entry table: by age (a range of its index on `at`), the oldest `? + 1` rows, the rows through a seq; and walks the oldest. */
function entryPruneStatements(db: Database.Database, table: 'stderr' | 'events') {
  return {
    byAge: db.prepare(`DELETE FROM ${table} WHERE seq IN (SELECT seq FROM ${table} INDEXED BY ${table}_by_at WHERE at < ?)`),
    oldestRows: db.prepare(`DELETE FROM ${table} WHERE seq <= (SELECT seq FROM ${table} ORDER BY seq LIMIT 1 OFFSET ?)`),
    oldest: db.prepare(`SELECT seq, bytes FROM ${table} WHERE seq > ? ORDER BY seq LIMIT ?`),
    deleteThrough: db.prepare(`DELETE FROM ${table} WHERE seq <= ?`),
  };
}
