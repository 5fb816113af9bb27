/**
 * The event stream's journal: every message the daemon published, in order, under one
 * increasing `seq` over all topics, kept bounded by count and by size. A client that
 * reconnects with `?since=N` is replayed what followed N from here, and a client that read
 * too slowly is caught up from here; when the journal no longer holds what a client needs,
 * the client is told to resync (daemon/event-feed.ts). The store keeps its own seqs per kind
 * (transcript, stderr, events), written in batches after the fact, so they cannot serve as
 * the stream's cursor.
 *
 * Messages are kept as they are sent, in segments: what one tick published (or ~256 K
 * characters of it) sealed into one buffer that is a batch frame as it stands —
 * `[m1,m2,…]`, UTF-8 — with where each message starts. A client that wants all of it is sent
 * the buffer itself; another gets views of the messages it wants. Nothing is serialized or
 * encoded twice, and the garbage collector sees a few objects per tick, not per message (the
 * bytes live outside the JS heap).
 */
import { EVENT_TOPICS, type EventTopic } from './api-types.js';

/** How much the journal holds: whichever bound is passed first evicts the oldest segments. */
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

const OPEN = 0x5b; // [
const COMMA = 0x2c;
const CLOSE = 0x5d; // ]

/** A topic's index in {@link EVENT_TOPICS} (what a segment keeps per message). */
export const topicIndex: Readonly<Record<EventTopic, number>> = Object.fromEntries(EVENT_TOPICS.map((topic, index) => [topic, index])) as Record<EventTopic, number>;

/** Consecutive messages sealed together. */
export class Segment {
  constructor(
    readonly firstSeq: number,
    /** `[m1,m2,…]`: the JSON array of the messages, UTF-8 — a batch frame as it is sent. */
    readonly frame: Buffer,
    /** Where message i starts in `frame`; `starts[count]` is the frame's length. */
    readonly starts: Uint32Array,
    /** Each message's topic, as its index in EVENT_TOPICS. */
    readonly topics: Uint8Array,
    /** Each message's session (for a client's `sessions` filter); undefined: every client of the topic. */
    readonly sessions: ReadonlyArray<string | undefined>,
  ) {}

  get count(): number {
    return this.topics.length;
  }

  get lastSeq(): number {
    return this.firstSeq + this.topics.length - 1;
  }

  /** Message i alone (a view of the frame: no copy), without the `,` or `]` after it. */
  message(index: number): Buffer {
    return this.frame.subarray(this.starts[index]!, this.starts[index + 1]! - 1);
  }
}

export class FeedJournal {
  /** Segments from `head` on, oldest first (the array is compacted now and then). */
  private segments: Segment[] = [];
  private head = 0;
  private messages = 0;
  private bytes = 0;
  private last = 0;
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
    return this.head < this.segments.length ? this.segments[this.head]!.firstSeq : this.sealedSeq + 1;
  }

  /** Messages held in segments. */
  get size(): number {
    return this.messages;
  }

  /** Bytes of JSON held in segments. */
  get heldBytes(): number {
    return this.bytes;
  }

  /** Whether everything after `seq` (up to `sealedSeq`) is still held, so a client there can be caught up. */
  holdsAfter(seq: number): boolean {
    return seq >= this.oldestSeq - 1 && seq <= this.sealedSeq;
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
    const count = texts.length;
    if (count === 0) return;
    const starts = new Uint32Array(count + 1);
    let size = count + 1; // the brackets and the commas
    for (let i = 0; i < count; i++) size += Buffer.byteLength(texts[i]!);
    // Not from the shared pool: a segment is kept for minutes, and must not keep a pool alive.
    const frame = Buffer.allocUnsafeSlow(size);
    frame[0] = OPEN;
    let offset = 1;
    for (let i = 0; i < count; i++) {
      starts[i] = offset;
      offset += frame.write(texts[i]!, offset);
      frame[offset++] = i === count - 1 ? CLOSE : COMMA;
    }
    starts[count] = offset;
    const segment = new Segment(this.sealedSeq + 1, frame, starts, Uint8Array.from(this.pendingTopics), this.pendingSessions);
    this.pendingTexts = [];
    this.pendingTopics = [];
    this.pendingSessions = [];
    this.pendingChars = 0;
    this.segments.push(segment);
    this.messages += count;
    this.bytes += frame.length;
    // The newest segment is always kept, even alone over a bound.
    while (this.segments.length - this.head > 1 && (this.messages > this.limits.maxMessages || this.bytes > this.limits.maxBytes)) this.evictOldest();
  }

  /** The segment that holds `seq` (sealed), undefined when none does. */
  segmentOf(seq: number): Segment | undefined {
    if (seq < this.oldestSeq || seq > this.sealedSeq) return undefined;
    // Binary search over the held segments' first seqs.
    let low = this.head;
    let high = this.segments.length - 1;
    while (low < high) {
      const middle = (low + high + 1) >>> 1;
      if (this.segments[middle]!.firstSeq <= seq) low = middle;
      else high = middle - 1;
    }
    return this.segments[low];
  }

  private evictOldest(): void {
    const segment = this.segments[this.head]!;
    this.segments[this.head] = undefined as unknown as Segment;
    this.head++;
    this.messages -= segment.count;
    this.bytes -= segment.frame.length;
    if (this.head > 1024 && this.head * 2 > this.segments.length) {
      this.segments = this.segments.slice(this.head);
      this.head = 0;
    }
  }
}
