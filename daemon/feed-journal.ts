/**
 * The event stream's journal: every message the daemon published, in order, under one
 * increasing `seq` over all topics, kept in a ring bounded by count and by size. A client
 * that reconnects with `?since=N` is replayed what followed N from here, and a client that
 * read too slowly is caught up from here; when the ring no longer holds what a client needs,
 * the client is told to resync (daemon/event-feed.ts). The store keeps its own seqs per kind
 * (transcript, stderr, events), written in batches after the fact, so they cannot serve as
 * the stream's cursor.
 */
import type { EventTopic } from './api-types.js';

/** How much the ring holds: whichever bound is reached first evicts the oldest messages. */
export interface JournalLimits {
  /** Messages kept at most. */
  maxMessages: number;
  /** Characters of serialized JSON kept at most (≈ bytes: the messages are mostly ASCII). */
  maxBytes: number;
}

/** 100,000 messages or 64 MiB of JSON: minutes of 50 agents streaming, a bounded cost. */
export const DEFAULT_JOURNAL_LIMITS: JournalLimits = { maxMessages: 100_000, maxBytes: 64 * 1024 * 1024 };

/** One published message as it was sent. */
export interface JournalEntry {
  readonly seq: number;
  readonly topic: EventTopic;
  /** The session it concerns, for a client's `sessions` filter; undefined: every client of the topic. */
  readonly sessionId: string | undefined;
  /** The message's JSON, `seq` and stamps included: sent as it is, never serialized again. */
  readonly text: string;
}

export class FeedJournal {
  /** The ring: `count` entries from `start`, wrapping at `slots.length` (grown up to maxMessages). */
  private slots: Array<JournalEntry | undefined> = [];
  private start = 0;
  private count = 0;
  private bytes = 0;
  private last = 0;

  constructor(readonly limits: JournalLimits = DEFAULT_JOURNAL_LIMITS) {
    if (!(Number.isInteger(limits.maxMessages) && limits.maxMessages >= 1)) throw new RangeError(`maxMessages must be a whole number ≥ 1 (got ${limits.maxMessages})`);
    if (!(Number.isFinite(limits.maxBytes) && limits.maxBytes >= 1)) throw new RangeError(`maxBytes must be ≥ 1 (got ${limits.maxBytes})`);
  }

  /** The seq of the last message published (0 before the first). */
  get lastSeq(): number {
    return this.last;
  }

  /** The seq of the oldest message held; `lastSeq + 1` when none is. */
  get oldestSeq(): number {
    return this.last - this.count + 1;
  }

  /** Messages held now. */
  get size(): number {
    return this.count;
  }

  /** Characters of JSON held now. */
  get heldBytes(): number {
    return this.bytes;
  }

  /** Whether everything after `seq` is still held (`seq` up to `lastSeq`), so a client there can be caught up. */
  holdsAfter(seq: number): boolean {
    return seq >= this.oldestSeq - 1 && seq <= this.last;
  }

  /** Appends the next message (`seq` must be `lastSeq + 1`), then evicts the oldest beyond the bounds. */
  append(entry: JournalEntry): void {
    if (entry.seq !== this.last + 1) throw new RangeError(`journal: seq ${entry.seq} after ${this.last}`);
    if (this.count === this.limits.maxMessages) this.evictOldest();
    if (this.count === this.slots.length) {
      // The array is full but below maxMessages (or empty): it grows, in order.
      if (this.start !== 0) this.unroll();
      this.slots.push(entry);
    } else {
      this.slots[(this.start + this.count) % this.slots.length] = entry;
    }
    this.count++;
    this.bytes += entry.text.length;
    this.last = entry.seq;
    // A single message over the byte bound is still kept: the newest one is always there.
    while (this.bytes > this.limits.maxBytes && this.count > 1) this.evictOldest();
  }

  /** The entry of `seq`, undefined when it is not held. */
  at(seq: number): JournalEntry | undefined {
    const offset = seq - this.oldestSeq;
    if (offset < 0 || offset >= this.count) return undefined;
    return this.slots[(this.start + offset) % this.slots.length];
  }

  private evictOldest(): void {
    const entry = this.slots[this.start]!;
    this.slots[this.start] = undefined;
    this.start = (this.start + 1) % this.slots.length;
    this.count--;
    this.bytes -= entry.text.length;
  }

  /** Puts the held entries at the array's start, in order (before it grows). */
  private unroll(): void {
    const ordered: Array<JournalEntry | undefined> = [];
    for (let i = 0; i < this.count; i++) ordered.push(this.slots[(this.start + i) % this.slots.length]);
    this.slots = ordered;
    this.start = 0;
  }
}
