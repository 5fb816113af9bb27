/**
 * The event stream's journal: every message the daemon published, in order, under one
 * increasing `seq` over all topics, kept bounded by count and by size. A client that
 * reconnects with `?since=N` is replayed what followed N from here, and a client that read
 * too slowly is caught up from here; when the journal no longer holds what a client needs,
 * the client is told to resync (daemon/event-feed.ts). The store keeps its own seqs per kind
 * (transcript, stderr, events), written in batches after the fact, so they cannot serve as
 * the stream's cursor.
 *
 * Messages are kept as they are sent. What was published together (a tick's updates, or
 * ~256 K characters of them) is sealed into a segment: written once, UTF-8, as `[m1,m2,…]` —
 * a batch frame as it stands — into 64 KiB chunks of memory outside the JS heap (a larger
 * segment gets a buffer of its own). A client that wants a whole segment is sent a view of it;
 * another gets views of the messages it wants. What the journal knows of each message (where
 * its bytes are, its topic, its session, its segment) is kept in typed arrays, so the garbage
 * collector sees a handful of objects however many messages are held, not one or more per
 * message.
 */
import { EVENT_TOPICS, type EventTopic } from './api-types.js';

/** How much the journal holds: whichever bound is passed first evicts the oldest messages. */
export interface JournalLimits {
  /** Messages kept at most. */
  maxMessages: number;
  /** Bytes of JSON kept at most. */
  maxBytes: number;
}

/** 100,000 messages or 64 MiB of JSON: minutes of 50 agents streaming, at a bounded cost. */
export const DEFAULT_JOURNAL_LIMITS: JournalLimits = { maxMessages: 100_000, maxBytes: 64 * 1024 * 1024 };

/** A tick's messages are sealed into more than one segment past this many characters. */
export const SEGMENT_CHARS = 256 * 1024;
/** Segments are written into chunks of this size; a larger one gets a buffer of its own. */
const CHUNK_BYTES = 64 * 1024;
/** The message arrays start this large and double up to maxMessages. */
const INITIAL_CAPACITY = 1024;

const OPEN = 0x5b; // [
const COMMA = 0x2c;
const CLOSE = 0x5d; // ]

/** A topic's index in {@link EVENT_TOPICS}, as the journal keeps it. */
export const topicIndex: Readonly<Record<EventTopic, number>> = Object.fromEntries(EVENT_TOPICS.map((topic, index) => [topic, index])) as Record<EventTopic, number>;

export class FeedJournal {
  // Per message, in a ring of `capacity` slots from `head` (the oldest held): where its bytes
  // are (chunk serial, start, end — the `,` or `]` after it not included), its topic, its
  // session, and the first and last seq of its segment.
  private capacity = 0;
  private chunkOf = new Uint32Array(0);
  private startOf = new Uint32Array(0);
  private endOf = new Uint32Array(0);
  private topicOf = new Uint8Array(0);
  private sessionOf: Array<string | undefined> = [];
  private segmentFirst = new Float64Array(0);
  private segmentLast = new Float64Array(0);
  private head = 0;
  private count = 0;
  private bytes = 0;
  private last = 0;
  /** Chunks by serial: `chunks[i]` has serial `firstChunk + i`; the last is the one being filled. */
  private chunks: Buffer[] = [];
  private firstChunk = 0;
  private chunkUsed = CHUNK_BYTES;
  /** Published, not sealed yet. */
  private pendingTexts: string[] = [];
  private pendingTopics: number[] = [];
  private pendingSessions: Array<string | undefined> = [];
  private pendingChars = 0;

  constructor(
    readonly limits: JournalLimits = DEFAULT_JOURNAL_LIMITS,
    private readonly segmentChars = SEGMENT_CHARS,
  ) {
    if (!(Number.isInteger(limits.maxMessages) && limits.maxMessages >= 1)) throw new RangeError(`maxMessages must be a whole number ≥ 1 (got ${limits.maxMessages})`);
    if (!(Number.isFinite(limits.maxBytes) && limits.maxBytes >= 1)) throw new RangeError(`maxBytes must be ≥ 1 (got ${limits.maxBytes})`);
  }

  /** The seq of the last message published, sealed or not (0 before the first). */
  get lastSeq(): number {
    return this.last;
  }

  /** The seq of the last message sealed into a segment. */
  get sealedSeq(): number {
    return this.last - this.pendingTexts.length;
  }

  /** The seq of the oldest message held; `sealedSeq + 1` when none is. */
  get oldestSeq(): number {
    return this.sealedSeq - this.count + 1;
  }

  /** Messages held (sealed). */
  get size(): number {
    return this.count;
  }

  /** Bytes of JSON held (each message and the separator after it). */
  get heldBytes(): number {
    return this.bytes;
  }

  /** Whether everything after `seq` (up to `sealedSeq`) is still held, so a client there can be caught up. */
  holdsAfter(seq: number): boolean {
    return seq >= this.oldestSeq - 1 && seq <= this.sealedSeq;
  }

  /** Whether message `seq` is held. */
  holds(seq: number): boolean {
    return seq >= this.oldestSeq && seq <= this.sealedSeq;
  }

  /**
   * Adds the next message (`seq` must be `lastSeq + 1`; `text` its JSON). It is held once
   * sealed: by `seal()`, or at once when the unsealed ones pass the segment size.
   */
  append(seq: number, topic: EventTopic, sessionId: string | undefined, text: string): void {
    if (seq !== this.last + 1) throw new RangeError(`journal: seq ${seq} after ${this.last}`);
    this.pendingTexts.push(text);
    this.pendingTopics.push(topicIndex[topic]);
    this.pendingSessions.push(sessionId);
    this.pendingChars += text.length;
    this.last = seq;
    if (this.pendingChars >= this.segmentChars) this.seal();
  }

  /** Seals what was published since the last seal into a segment, then evicts beyond the bounds. */
  seal(): void {
    const texts = this.pendingTexts;
    const n = texts.length;
    if (n === 0) return;
    const first = this.sealedSeq + 1;
    const lastInSegment = first + n - 1;
    let size = n + 1; // the brackets and the commas
    for (let i = 0; i < n; i++) size += Buffer.byteLength(texts[i]!);
    const [chunk, serial, at] = this.room(size);
    chunk[at] = OPEN;
    let offset = at + 1;
    for (let i = 0; i < n; i++) {
      const start = offset;
      offset += chunk.write(texts[i]!, offset);
      chunk[offset] = i === n - 1 ? CLOSE : COMMA;
      this.push(serial, start, offset, this.pendingTopics[i]!, this.pendingSessions[i], first, lastInSegment);
      offset++;
    }
    this.pendingTexts = [];
    this.pendingTopics = [];
    this.pendingSessions = [];
    this.pendingChars = 0;
    // By size, the newest segment is kept whole, even alone over the bound.
    while (this.bytes > this.limits.maxBytes && this.oldestSeq < first) this.evictOldest();
  }

  /** The first and the last seq of the segment `seq` was sealed in (held or not in part). */
  segmentOf(seq: number): { first: number; last: number } {
    const slot = this.slot(seq);
    return { first: this.segmentFirst[slot]!, last: this.segmentLast[slot]! };
  }

  /** The whole segment that starts at `first` and ends at `last`, as the batch frame it is (a view: no copy). */
  segmentFrame(first: number, last: number): Buffer {
    const from = this.slot(first);
    const to = this.slot(last);
    return this.chunkAt(this.chunkOf[from]!).subarray(this.startOf[from]! - 1, this.endOf[to]! + 1);
  }

  /** Message `seq` alone (a view: no copy). */
  message(seq: number): Buffer {
    const slot = this.slot(seq);
    return this.chunkAt(this.chunkOf[slot]!).subarray(this.startOf[slot]!, this.endOf[slot]!);
  }

  /** The topic of message `seq`, as its index in EVENT_TOPICS. */
  topic(seq: number): number {
    return this.topicOf[this.slot(seq)]!;
  }

  /** The session of message `seq` (undefined: every client of its topic). */
  session(seq: number): string | undefined {
    return this.sessionOf[this.slot(seq)];
  }

  /** The ring slot of a held `seq`. */
  private slot(seq: number): number {
    if (!this.holds(seq)) throw new RangeError(`journal: seq ${seq} is not held (${this.oldestSeq}..${this.sealedSeq})`);
    return (this.head + (seq - this.oldestSeq)) % this.capacity;
  }

  private chunkAt(serial: number): Buffer {
    return this.chunks[serial - this.firstChunk]!;
  }

  /** Where `size` bytes go: the chunk being filled, a new one, or a buffer of their own. */
  private room(size: number): [Buffer, number, number] {
    if (this.chunkUsed + size <= CHUNK_BYTES) {
      const at = this.chunkUsed;
      this.chunkUsed += size;
      return [this.chunks.at(-1)!, this.firstChunk + this.chunks.length - 1, at];
    }
    // Not from Buffer's shared pool: a chunk is kept for minutes, and must not keep a pool alive.
    const chunk = Buffer.allocUnsafeSlow(Math.max(size, CHUNK_BYTES));
    this.chunks.push(chunk);
    this.chunkUsed = size > CHUNK_BYTES ? CHUNK_BYTES : size; // a buffer of its own takes no more
    return [chunk, this.firstChunk + this.chunks.length - 1, 0];
  }

  private push(chunk: number, start: number, end: number, topic: number, sessionId: string | undefined, segmentFirst: number, segmentLast: number): void {
    if (this.count === this.limits.maxMessages) this.evictOldest();
    if (this.count === this.capacity) this.grow();
    const slot = (this.head + this.count) % this.capacity;
    this.chunkOf[slot] = chunk;
    this.startOf[slot] = start;
    this.endOf[slot] = end;
    this.topicOf[slot] = topic;
    this.sessionOf[slot] = sessionId;
    this.segmentFirst[slot] = segmentFirst;
    this.segmentLast[slot] = segmentLast;
    this.count++;
    this.bytes += end - start + 1;
  }

  private evictOldest(): void {
    const slot = this.head;
    this.bytes -= this.endOf[slot]! - this.startOf[slot]! + 1;
    this.sessionOf[slot] = undefined;
    this.head = (this.head + 1) % this.capacity;
    this.count--;
    // The chunks before the oldest held message's are no longer needed (the one being filled always is).
    const oldestChunk = this.count > 0 ? this.chunkOf[this.head]! : this.firstChunk + this.chunks.length - 1;
    if (oldestChunk > this.firstChunk) {
      this.chunks.splice(0, oldestChunk - this.firstChunk);
      this.firstChunk = oldestChunk;
    }
  }

  /** Doubles the message arrays (up to maxMessages), the held ones first, in order. */
  private grow(): void {
    const capacity = Math.min(this.limits.maxMessages, Math.max(INITIAL_CAPACITY, this.capacity * 2));
    const order = <A extends Uint32Array | Uint8Array | Float64Array>(from: A, into: A): A => {
      for (let i = 0; i < this.count; i++) into[i] = from[(this.head + i) % this.capacity]!;
      return into;
    };
    this.chunkOf = order(this.chunkOf, new Uint32Array(capacity));
    this.startOf = order(this.startOf, new Uint32Array(capacity));
    this.endOf = order(this.endOf, new Uint32Array(capacity));
    this.topicOf = order(this.topicOf, new Uint8Array(capacity));
    this.segmentFirst = order(this.segmentFirst, new Float64Array(capacity));
    this.segmentLast = order(this.segmentLast, new Float64Array(capacity));
    const sessions = new Array<string | undefined>(capacity).fill(undefined);
    for (let i = 0; i < this.count; i++) sessions[i] = this.sessionOf[(this.head + i) % this.capacity];
    this.sessionOf = sessions;
    this.head = 0;
    this.capacity = capacity;
  }
}
