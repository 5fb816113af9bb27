/**
 * The SQLite store's writes: one transaction a batch, agents upserted, a session's writes in
 * the batch merged into one upsert, stderr lines and events a row each, and a session's
 * transcript entries of the batch (grouped, batch-order.ts) packed into one row
 * (services/store/sqlite/packed-rows.ts).
 */
import type Database from 'better-sqlite3';
import { isPlainTextChunk } from '../../../core/text-chunk.js';
import type { StoreWrite } from '../../../core/store.js';
import { inSessionOrder } from '../batch-order.js';
import { BySession } from '../by-session.js';
import { entryJson } from '../entry-json.js';
import { chunkCodes, chunkWrapperChars, kindExtraBytes, maxPackedChars, packedLine, TRANSCRIPT_ROW_ENTRIES } from './packed-rows.js';

/** The JSON text a store keeps for a payload (`undefined` and functions become `null`). */
function toJson(data: unknown): string {
  return JSON.stringify(data) ?? 'null';
}

/** The transaction that writes a batch (run it `.immediate()` to take the write lock up front). */
export function batchWriter(db: Database.Database): Database.Transaction<(batch: readonly StoreWrite[]) => void> {
  const statements = {
    agent: db.prepare(
      'INSERT INTO agents (name, spec, updated_at) VALUES (?, ?, ?) ON CONFLICT (name) DO UPDATE SET spec = excluded.spec, updated_at = excluded.updated_at',
    ),
    // The has_* flags tell a field the write leaves out (keep) from one it sets, to null maybe.
    session: db.prepare(`
      INSERT INTO sessions (agent, session_id, cwd, title, state, stop_reason, created_at, updated_at)
      VALUES (@agent, @sessionId, coalesce(@cwd, ''), @title, coalesce(@state, 'idle'), @stopReason, @createdAt, @at)
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
  };

  function apply(write: StoreWrite): void {
    switch (write.type) {
      case 'agent':
        statements.agent.run(write.agent, JSON.stringify(write.spec), write.at);
        return;
      case 'session':
        throw new Error('session writes are merged by writeBatch');
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
   * A batch's writes to one session row, merged: a turn writes its session three times (its
   * status twice, its stop reason), and a batch holds many turns. Each field is the last
   * value the batch set (a field no write set is kept as it is); the row's `created_at`, if
   * the batch creates it, is the first write's time — what applying them one by one leaves.
   */
  type SessionWrite = Extract<StoreWrite, { type: 'session' }>;
  const sessionRows = new BySession<{ createdAt: number; merged: SessionWrite }>();
  function addSession(write: SessionWrite): void {
    const row = sessionRows.get(write.agent, write.sessionId);
    if (row === undefined) {
      sessionRows.add(write.agent, write.sessionId, { createdAt: write.at, merged: { ...write } });
      return;
    }
    const merged = row.merged;
    merged.at = write.at;
    if (write.cwd !== undefined) merged.cwd = write.cwd;
    if (write.title !== undefined) merged.title = write.title;
    if (write.state !== undefined) merged.state = write.state;
    if (write.stopReason !== undefined) merged.stopReason = write.stopReason;
  }
  /** Upserts the merged rows, in the order of their first write (the order sessions() breaks ties by). */
  function flushSessions(): void {
    for (const { createdAt, merged: write } of sessionRows.inOrder) {
      statements.session.run({
        agent: write.agent,
        sessionId: write.sessionId,
        createdAt,
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
    }
    sessionRows.clear();
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
    sessionRows.clear();
    // Each session's entries together: one packed row per session of the batch (batch-order.ts).
    for (const write of inSessionOrder(batch)) {
      if (write.type === 'transcript') addTranscript(write);
      else if (write.type === 'session') addSession(write);
      else apply(write);
    }
    flushTranscript();
    flushSessions();
  });
  return writeBatch;
}
