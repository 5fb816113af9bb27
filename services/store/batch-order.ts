/**
 * The order in which a store numbers a batch's transcript entries: session by session, each
 * session's entries in the order written, the sessions in the order of their first entry in
 * the batch. Both stores number a batch this way, so they agree on every seq (and on what
 * retention by count keeps).
 *
 * Why not strictly the order written: a batch holds up to a few milliseconds of writes
 * (runtime/store-writer.ts), and sessions streaming at once interleave in it entry by entry.
 * The SQLite store packs a session's consecutive entries into one row (packed-rows.ts);
 * interleaved, 16 sessions' tiny turns went into rows of one or two entries — a row insert
 * and its triggers per entry, the store's largest cost per turn. Grouped, it is a row per
 * session per batch. A transcript is read per session, where the order is the order written.
 */
import type { StoreWrite } from '../../core/store.js';
import { BySession } from './by-session.js';

/** The batch with its transcript writes grouped by session (other writes first, in order); the batch itself when there is nothing to move. */
export function inSessionOrder(batch: readonly StoreWrite[]): readonly StoreWrite[] {
  let first: { agent: string; sessionId: string } | null = null;
  let mixed = false;
  for (const write of batch) {
    if (write.type !== 'transcript') continue;
    if (first === null) first = write;
    else if (write.sessionId !== first.sessionId || write.agent !== first.agent) {
      mixed = true;
      break;
    }
  }
  if (!mixed) return batch;
  const others: StoreWrite[] = [];
  const groups = new BySession<StoreWrite[]>();
  for (const write of batch) {
    if (write.type !== 'transcript') {
      others.push(write);
      continue;
    }
    const group = groups.get(write.agent, write.sessionId);
    if (group) group.push(write);
    else groups.add(write.agent, write.sessionId, [write]);
  }
  for (const group of groups.inOrder) for (const write of group) others.push(write);
  return others;
}
