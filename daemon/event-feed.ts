/**
 * The WebSocket event stream (`GET /v1/events`, docs/http-api.md "The event stream"): every
 * message the daemon publishes gets the next `seq` (one sequence over all topics) and goes
 * into the journal (daemon/feed-journal.ts); clients get the messages of their topics and
 * sessions in seq order, with nothing lost:
 *
 * - **Batched per tick.** Every message is serialized once, at publish. Updates, logs and
 *   state moves published within one turn of the event loop are written at the end of it
 *   (`setImmediate`, after the poll phase that read the agents' output): one frame per client
 *   (`?batch=1`: a JSON array), or one frame per message for the clients that did not ask for
 *   batches; a status change, an error or a permission request goes out at once (with what
 *   was published before it). Clients with the same filter share one frame, encoded once.
 * - **Resumable.** A client that comes back with `?since=N` (and `&epoch=`) is replayed what
 *   followed N from the journal, then goes live: it is at a position, and is always sent what
 *   follows its position, so nothing published during the replay is missed or sent twice.
 * - **A slow client is bounded.** Once the bytes the daemon holds for a client (its socket's
 *   `bufferedAmount`) reach its cap, nothing more is written to it; a ping queued behind its
 *   data says when the socket has drained, and it is caught up from the journal. When the
 *   journal no longer holds its position it is sent `resync` instead (re-read over REST).
 */
import { randomUUID } from 'node:crypto';
import type { WebSocket } from 'ws';
import { EVENT_TOPICS, type EventTopic, type HelloMessage, type PublishedMessage, type ResyncReason, type ServerMessage, type SubscribeMessage } from './api-types.js';
import { subscribeMessage } from './api-schemas.js';
import { DEFAULT_JOURNAL_LIMITS, FeedJournal, topicIndex, type JournalLimits } from './feed-journal.js';

/** What the daemon may hold for one client before it stops writing to it: 4 MiB. */
export const DEFAULT_CLIENT_CAP_BYTES = 4 * 1024 * 1024;
/**
 * Topics whose messages wait for the end of the tick, to go out together: the many. The
 * others (status changes, errors, permissions, session status, orphans, restore) are few and
 * someone may be waiting for them: they go out at once.
 */
const BULK_TOPICS: ReadonlySet<EventTopic> = new Set<EventTopic>(['updates', 'logs', 'state', 'terminals']);

const OPEN = Buffer.from('[');
const COMMA = Buffer.from(',');
const CLOSE = Buffer.from(']');

/** What `publish` takes: a message without the stamps the feed adds. */
export type Payload = PublishedMessage;
/** `hello` as the daemon builds it; the feed adds seq, epoch, replay point and stamps. */
export type HelloPayload = Omit<HelloMessage, 'type' | 'seq' | 'at' | 't' | 'epoch' | 'replayFrom' | 'oldest'>;

export interface EventFeedOptions {
  /** The journal's bounds (default {@link DEFAULT_JOURNAL_LIMITS}). */
  journal?: Partial<JournalLimits>;
  /** Bytes held for one client before the daemon stops writing to it (default {@link DEFAULT_CLIENT_CAP_BYTES}). */
  clientCapBytes?: number;
  /** The daemon's clock, epoch ms (tests). */
  now?: () => number;
  /** This daemon's epoch (default: a random UUID). */
  epoch?: string;
}

/** What a client asked for at the upgrade (`?topics=&sessions=&batch=&since=&epoch=`). */
export interface StreamRequest {
  topics: EventTopic[];
  /** Session ids whose updates it wants; null: all. */
  sessions: string[] | null;
  /** Every frame a JSON array of messages. */
  batch: boolean;
  /** Replay what followed this seq (absent: live only). */
  since?: number;
  /** The epoch `since` is of (absent: this daemon's is assumed). */
  epoch?: string;
}

/** One client as the feed reports it (`EventFeed.stats()`). */
export interface FeedClientStats {
  /** Its address and port, as the daemon sees it (`127.0.0.1:54321`). */
  peer: string;
  topics: EventTopic[];
  batch: boolean;
  /** The seq of the last message handled for it (delivered, or not of its filter). */
  position: number;
  /** Over its cap: nothing is written to it until its socket drains. */
  waiting: boolean;
  /** What the daemon holds for it now: its socket's `bufferedAmount`. */
  heldBytes: number;
}

export interface FeedStats {
  epoch: string;
  lastSeq: number;
  oldestSeq: number;
  journalMessages: number;
  journalBytes: number;
  limits: JournalLimits & { clientCapBytes: number };
  clients: FeedClientStats[];
}

interface Client {
  socket: WebSocket;
  peer: string;
  topics: Set<EventTopic>;
  /** Its topics as bits of their indexes in EVENT_TOPICS. */
  topicBits: number;
  sessions: Set<string> | null;
  batch: boolean;
  /** Topics, sessions and framing as one string: clients with the same key share frames. */
  key: string;
  position: number;
  waiting: boolean;
  gone: boolean;
}

/** One frame to write, and the seq of the last message in it. */
interface Frame {
  data: Buffer;
  lastSeq: number;
}

/** Parses `?topics=a,b` (all when absent); unknown topics are an error message. */
export function parseTopics(value: string | null): { topics: EventTopic[] } | { error: string } {
  if (value === null || value === '') return { topics: [...EVENT_TOPICS] };
  const topics = value.split(',').map((topic) => topic.trim());
  const unknown = topics.filter((topic) => !(EVENT_TOPICS as readonly string[]).includes(topic));
  if (unknown.length > 0) return { error: `Unknown topics: ${unknown.join(', ')} (known: ${EVENT_TOPICS.join(', ')})` };
  return { topics: topics as EventTopic[] };
}

const epochPattern = /^[A-Za-z0-9-]{1,100}$/;

/**
 * The upgrade's query (`token` aside): topics, sessions, `batch` (`1`/`true`/`0`/`false`),
 * `since` (a whole number ≥ 0) and `epoch` (with `since` only). Anything else is an error
 * message for `400 invalid_request`.
 */
export function parseStreamRequest(query: URLSearchParams): StreamRequest | { error: string } {
  const topics = parseTopics(query.get('topics'));
  if ('error' in topics) return topics;
  const sessionsValue = query.get('sessions');
  const sessions = sessionsValue ? sessionsValue.split(',').filter(Boolean) : null;
  const batchValue = query.get('batch');
  if (batchValue !== null && !['0', '1', 'true', 'false'].includes(batchValue)) return { error: `Invalid query: batch: expected 1, true, 0 or false (got ${JSON.stringify(batchValue)})` };
  const request: StreamRequest = { topics: topics.topics, sessions, batch: batchValue === '1' || batchValue === 'true' };
  const sinceValue = query.get('since');
  if (sinceValue !== null) {
    const since = /^\d{1,16}$/.test(sinceValue) ? Number(sinceValue) : Number.NaN;
    if (!Number.isSafeInteger(since)) return { error: `Invalid query: since: expected the seq of the last message received, a whole number ≥ 0 (got ${JSON.stringify(sinceValue)})` };
    request.since = since;
  }
  const epochValue = query.get('epoch');
  if (epochValue !== null) {
    if (sinceValue === null) return { error: 'Invalid query: epoch: only with since (the epoch that seq is of)' };
    if (!epochPattern.test(epochValue)) return { error: `Invalid query: epoch: expected the hello's epoch (letters, digits and -, at most 100; got ${JSON.stringify(epochValue)})` };
    request.epoch = epochValue;
  }
  return request;
}

export class EventFeed {
  /** This daemon's epoch: a client's seq from another daemon (an earlier start) is not ours. */
  readonly epoch: string;
  private readonly clients = new Set<Client>();
  private readonly journal: FeedJournal;
  private readonly capBytes: number;
  private readonly now: () => number;
  /** The seq up to which every live client has been sent its messages. */
  private flushed = 0;
  private flushTimer: NodeJS.Immediate | undefined;
  /** Messages were published since the last flush (under `stamps`). */
  private batchOpen = false;
  /** `,"at":…,"t":"…"` of the batch being published: stamped once per batch, not per message. */
  private stamps = '';
  private closed = false;

  constructor(options: EventFeedOptions = {}) {
    this.epoch = options.epoch ?? randomUUID();
    this.journal = new FeedJournal({ ...DEFAULT_JOURNAL_LIMITS, ...options.journal });
    this.capBytes = options.clientCapBytes ?? DEFAULT_CLIENT_CAP_BYTES;
    if (!(this.capBytes > 0)) throw new RangeError(`clientCapBytes must be > 0 (got ${this.capBytes})`);
    this.now = options.now ?? Date.now;
  }

  get size(): number {
    return this.clients.size;
  }

  /** The seq of the last message published. */
  get lastSeq(): number {
    return this.journal.lastSeq;
  }

  /**
   * Takes a new client: `hello` first (built by `hello(topics)`), then — with `since` — what
   * followed it from the journal, or `resync` when the journal cannot tell; then live.
   */
  attach(socket: WebSocket, request: StreamRequest, hello: (topics: EventTopic[]) => HelloPayload, peer = ''): void {
    // Whatever this tick published goes out first, so that the client starts at the last published seq.
    this.flush();
    const client: Client = {
      socket,
      peer,
      topics: new Set(request.topics),
      topicBits: bitsOf(request.topics),
      sessions: request.sessions ? new Set(request.sessions) : null,
      batch: request.batch,
      key: '',
      position: this.flushed,
      waiting: false,
      gone: false,
    };
    client.key = keyOf(client);
    this.clients.add(client);
    const leave = () => {
      client.gone = true;
      this.clients.delete(client);
    };
    socket.on('close', leave);
    socket.on('error', leave);
    socket.on('message', (data, isBinary) => this.onMessage(client, isBinary ? null : data.toString()));

    const since = request.since;
    const resync: ResyncReason | null =
      since === undefined ? null : (request.epoch !== undefined && request.epoch !== this.epoch) || since > this.flushed ? 'epoch' : this.journal.holdsAfter(since) ? null : 'expired';
    const replay = since !== undefined && resync === null;
    const stamps = this.freshStamps();
    const helloText = `{"type":"hello","seq":${this.flushed}${stamps},"epoch":${JSON.stringify(this.epoch)},"replayFrom":${replay ? since + 1 : null},"oldest":${this.journal.oldestSeq},${JSON.stringify(hello(request.topics)).slice(1)}`;
    this.write(client, Buffer.from(client.batch ? `[${helloText}]` : helloText));
    if (resync !== null) this.sendResync(client, resync, since!);
    else if (replay) {
      client.position = since;
      this.catchUp(client);
    }
  }

  /**
   * Publishes a message of `topic` (of session `sessionId`, for the clients' `sessions`
   * filter): it gets the next seq, is serialized once, kept in the journal, and sent to the
   * clients of that topic — at the end of the tick for the bulk topics (updates, logs, state
   * moves), at once for the others (a status change, an error, a permission request), after
   * what the tick published before it.
   */
  publish(topic: EventTopic, payload: Payload, sessionId?: string): void {
    if (this.closed) return;
    const urgent = !BULK_TOPICS.has(topic);
    // What came before goes first, under its own stamps; this one is stamped as it is published.
    if (urgent && this.batchOpen) this.flush();
    if (!this.batchOpen) {
      this.batchOpen = true;
      this.stamps = this.freshStamps();
      if (!urgent) this.flushTimer = setImmediate(() => this.flush());
    }
    const seq = this.journal.lastSeq + 1;
    // The payload's own JSON after seq and the stamps: no object is copied (a spread is V8's slow path).
    const text = `{"seq":${seq}${this.stamps},${JSON.stringify(payload).slice(1)}`;
    this.journal.append(seq, topic, sessionId, text);
    if (urgent) this.flush();
  }

  /** Closes every client's socket (1001 going away); nothing more is published. */
  close(): void {
    this.flush();
    this.closed = true;
    for (const client of this.clients) {
      client.gone = true;
      client.socket.close(1001, 'The daemon is shutting down');
    }
    this.clients.clear();
  }

  /** The journal and every client, for tests and diagnostics. */
  stats(): FeedStats {
    return {
      epoch: this.epoch,
      lastSeq: this.journal.lastSeq,
      oldestSeq: this.journal.oldestSeq,
      journalMessages: this.journal.size,
      journalBytes: this.journal.heldBytes,
      limits: { ...this.journal.limits, clientCapBytes: this.capBytes },
      clients: [...this.clients].map((client) => ({ peer: client.peer, topics: [...client.topics], batch: client.batch, position: client.position, waiting: client.waiting, heldBytes: client.socket.bufferedAmount })),
    };
  }

  /**
   * Sends what this tick published so far to every live client now, one shared frame per
   * filter (the end of the tick does it anyway; the daemon calls it before a REST answer).
   */
  flush(): void {
    if (this.flushTimer !== undefined) {
      clearImmediate(this.flushTimer);
      this.flushTimer = undefined;
    }
    this.batchOpen = false;
    this.journal.seal();
    const from = this.flushed + 1;
    const to = this.journal.sealedSeq;
    if (from > to) return;
    // The tick published more than the journal holds: its first messages are gone already.
    const lost = !this.journal.holdsAfter(this.flushed);
    this.flushed = to;
    const shared = new Map<string, Frame[]>();
    for (const client of this.clients) {
      if (client.waiting || client.position !== from - 1) continue; // behind: caught up once it drains
      if (lost) {
        this.sendResync(client, 'overflow', client.position);
        continue;
      }
      let frames = shared.get(client.key);
      if (frames === undefined) {
        frames = this.frames(client, from, to);
        shared.set(client.key, frames);
      }
      if (this.writeFrames(client, frames)) client.position = to;
    }
  }

  /**
   * Writes what follows the client's position up to what the live clients have been sent,
   * in frames, until it is there (then it is live again) or over its cap (then it waits for
   * its socket to drain). A position the journal no longer holds: `resync`.
   */
  private catchUp(client: Client): void {
    while (!client.gone && !client.waiting && client.position < this.flushed) {
      if (!this.journal.holdsAfter(client.position)) {
        this.sendResync(client, 'overflow', client.position);
        return;
      }
      // A segment at a time: the frames of a long replay are not all built before the first is written.
      const to = Math.min(this.flushed, this.journal.segmentOf(client.position + 1).last);
      if (this.writeFrames(client, this.frames(client, client.position + 1, to))) client.position = to;
    }
  }

  /**
   * Writes the frames while the client is under its cap; returns false when it went over
   * (its position is then the last frame written, and a ping will say when it drained).
   */
  private writeFrames(client: Client, frames: readonly Frame[]): boolean {
    for (const frame of frames) {
      if (client.gone) return false;
      if (client.socket.bufferedAmount >= this.capBytes) {
        this.wait(client);
        return false;
      }
      this.write(client, frame.data);
      client.position = frame.lastSeq;
    }
    return true;
  }

  /**
   * The messages from..to of the client's filter, as its frames: with `batch`, a segment's
   * own buffer when the client wants all of it, else an array of the ones it wants; without,
   * a view of each message.
   */
  private frames(client: Client, from: number, to: number): Frame[] {
    const journal = this.journal;
    const frames: Frame[] = [];
    for (let seq = from; seq <= to; ) {
      const segment = journal.segmentOf(seq);
      const last = Math.min(to, segment.last);
      if (client.batch && seq === segment.first && last === segment.last && this.wantsAll(client, seq, last)) {
        frames.push({ data: journal.segmentFrame(seq, last), lastSeq: last });
        seq = last + 1;
        continue;
      }
      const parts: Buffer[] = [];
      let lastSeq = 0;
      for (; seq <= last; seq++) {
        if (!this.wants(client, seq)) continue;
        lastSeq = seq;
        if (!client.batch) frames.push({ data: journal.message(seq), lastSeq });
        else parts.push(parts.length === 0 ? OPEN : COMMA, journal.message(seq));
      }
      if (parts.length > 0) {
        parts.push(CLOSE);
        frames.push({ data: Buffer.concat(parts), lastSeq });
      }
    }
    return frames;
  }

  /** Whether the client wants message `seq`: its topic, and its session when it has one. */
  private wants(client: Client, seq: number): boolean {
    if (((client.topicBits >>> this.journal.topic(seq)) & 1) === 0) return false;
    const sessionId = this.journal.session(seq);
    return sessionId === undefined || client.sessions === null || client.sessions.has(sessionId);
  }

  /** Whether the client wants every message from..to. */
  private wantsAll(client: Client, from: number, to: number): boolean {
    for (let seq = from; seq <= to; seq++) if (!this.wants(client, seq)) return false;
    return true;
  }

  /** Over its cap: nothing more is written until the socket has sent what it holds. */
  private wait(client: Client): void {
    client.waiting = true;
    try {
      // Queued behind everything buffered: its callback runs once all of that is written out.
      client.socket.ping((error?: Error) => {
        if (error || client.gone) return;
        client.waiting = false;
        this.catchUp(client);
      });
    } catch {
      // not open any more: its close event removes it
    }
  }

  /** Tells the client its position cannot be continued from; it goes on live from the last published seq. */
  private sendResync(client: Client, reason: ResyncReason, lastDelivered: number): void {
    const resync: ServerMessage = { type: 'resync', seq: this.flushed, at: this.now(), t: process.hrtime.bigint().toString(), reason, oldest: this.journal.oldestSeq, lastDelivered };
    const text = JSON.stringify(resync);
    this.write(client, Buffer.from(client.batch ? `[${text}]` : text));
    client.position = this.flushed;
  }

  private write(client: Client, data: Buffer): void {
    // A text frame from bytes already encoded (shared by the clients of one filter).
    client.socket.send(data, { binary: false });
  }

  private freshStamps(): string {
    return `,"at":${this.now()},"t":"${process.hrtime.bigint()}"`;
  }

  private onMessage(client: Client, text: string | null): void {
    let parsed: SubscribeMessage | null = null;
    try {
      const result = subscribeMessage.safeParse(text === null ? null : JSON.parse(text));
      if (result.success) parsed = result.data;
    } catch {
      // not JSON: answered below
    }
    if (!parsed) {
      // A client that speaks nonsense is closed with a policy-violation code; the daemon goes on.
      client.socket.close(1008, 'Expected {"type":"subscribe","topics"?:[...],"sessions"?:[...]|null}');
      return;
    }
    if (parsed.topics) {
      client.topics = new Set(parsed.topics);
      client.topicBits = bitsOf(parsed.topics);
    }
    if (parsed.sessions !== undefined) client.sessions = parsed.sessions === null ? null : new Set(parsed.sessions);
    client.key = keyOf(client);
  }
}

function bitsOf(topics: Iterable<EventTopic>): number {
  let bits = 0;
  for (const topic of topics) bits |= 1 << topicIndex[topic];
  return bits;
}

function keyOf(client: Client): string {
  return `${client.batch ? 'b' : 's'}|${[...client.topics].sort().join(',')}|${client.sessions === null ? '*' : [...client.sessions].sort().join(',')}`;
}
