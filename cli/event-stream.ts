/**
 * The CLI's follower of the daemon's event stream (`GET /v1/events`, docs/http-api.md "The
 * event stream"): batch frames (`?batch=1`), the seq of the last message handled, and after a
 * drop a reconnect with `?since=<that seq>&epoch=<the daemon's>` — so the messages published
 * meanwhile are replayed, or, when the daemon cannot (its journal moved on, or it is another
 * daemon), `onResync` says to re-read the state over REST. It reconnects until closed, with a
 * backoff (250 ms doubling to 5 s); where the daemon is and its token are asked again before
 * every connection (a restarted daemon has a new port and token).
 */
import WebSocket from 'ws';
import type { EventTopic, HelloMessage, MessageStamps, PublishedMessage, ResyncMessage, ServerMessage } from '../daemon/api-types.js';

/** A published message as it arrives: with its seq and stamps. */
export type StreamEvent = MessageStamps & PublishedMessage;

/** Where the daemon answers (`http://host:port`) and its token; null: no daemon now. */
export type DaemonAddress = () => { url: string; token: string } | null;

export interface EventFollowerOptions {
  address: DaemonAddress;
  topics: readonly EventTopic[];
  /** Every `hello` (the first connection's and each reconnection's). */
  onHello?(hello: HelloMessage): void;
  /** Each published message of the topics, in seq order, each once (replayed ones included). */
  onEvent(event: StreamEvent): void;
  /** Messages were missed that the daemon cannot send: re-read the state over REST. */
  onResync(resync: ResyncMessage): void;
  /** The connection is up (`live`) or being re-established (`reconnecting`, with why). */
  onConnection?(state: 'live' | 'reconnecting', reason?: string): void;
}

const INITIAL_RETRY_MS = 250;
const MAX_RETRY_MS = 5000;

export class EventFollower {
  private socket: WebSocket | undefined;
  private closed = false;
  private retryMs = INITIAL_RETRY_MS;
  private retryTimer: NodeJS.Timeout | undefined;
  /** The daemon's epoch and the seq of the last message handled: where a reconnection resumes. */
  private epoch: string | undefined;
  private cursor = 0;

  constructor(private readonly options: EventFollowerOptions) {
    this.connect();
  }

  /** The seq of the last message handled (0 before the first `hello`). */
  get lastSeq(): number {
    return this.cursor;
  }

  /** Closes the connection; nothing is called any more. */
  close(): void {
    this.closed = true;
    clearTimeout(this.retryTimer);
    this.socket?.removeAllListeners();
    this.socket?.on('error', () => {});
    this.socket?.terminate();
    this.socket = undefined;
  }

  private connect(): void {
    if (this.closed) return;
    const address = this.options.address();
    if (!address) return this.retry('the daemon is not running');
    const url = new URL('/v1/events', address.url.replace(/^http/, 'ws'));
    url.searchParams.set('topics', this.options.topics.join(','));
    url.searchParams.set('batch', '1');
    url.searchParams.set('token', address.token);
    if (this.epoch !== undefined) {
      url.searchParams.set('since', String(this.cursor));
      url.searchParams.set('epoch', this.epoch);
    }
    const socket = new WebSocket(url, { perMessageDeflate: false });
    this.socket = socket;
    let failure: string | undefined;
    socket.on('message', (data) => this.onFrame(data.toString()));
    socket.on('unexpected-response', (_request, response) => {
      failure = `the daemon refused the event stream (${response.statusCode})`;
      response.resume();
      socket.terminate();
    });
    socket.on('error', (error) => (failure ??= error.message));
    socket.on('close', (code, reason) => {
      if (this.socket !== socket) return;
      this.socket = undefined;
      this.retry(failure ?? `closed (${code}${reason.length > 0 ? `: ${reason.toString()}` : ''})`);
    });
  }

  private retry(reason: string): void {
    if (this.closed) return;
    this.options.onConnection?.('reconnecting', reason);
    const delay = this.retryMs;
    this.retryMs = Math.min(MAX_RETRY_MS, this.retryMs * 2);
    this.retryTimer = setTimeout(() => this.connect(), delay);
  }

  private onFrame(text: string): void {
    let messages: ServerMessage[];
    try {
      const parsed = JSON.parse(text) as ServerMessage | ServerMessage[];
      messages = Array.isArray(parsed) ? parsed : [parsed];
    } catch {
      return; // not ours to judge: the next frames go on
    }
    for (const message of messages) {
      if (this.closed) return;
      if (message.type === 'hello') {
        this.epoch = message.epoch;
        // A replay resumes from where the cursor is; otherwise live messages follow hello's seq.
        if (message.replayFrom === null) this.cursor = message.seq;
        this.retryMs = INITIAL_RETRY_MS;
        this.options.onConnection?.('live');
        this.options.onHello?.(message);
      } else if (message.type === 'resync') {
        this.cursor = message.seq;
        this.options.onResync(message);
      } else {
        if (message.seq <= this.cursor) continue; // already handled (a replay never sends one twice; this is a guard)
        this.cursor = message.seq;
        this.options.onEvent(message);
      }
    }
  }
}
