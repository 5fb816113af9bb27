/**
 * The WebSocket event stream (`GET /v1/events`): each client's topics and sessions, and
 * delivery that never lets a slow reader hold up the others. Status changes, errors and
 * permissions always go out; updates, logs, state moves and terminal output are dropped for
 * a client whose socket buffer is full, and it is told how many (`dropped`) once it has caught up.
 */
import type { WebSocket } from 'ws';
import { EVENT_TOPICS, type EventTopic, type ServerMessage, type SubscribeMessage } from './api-types.js';
import { subscribeMessage } from './api-schemas.js';

/** A client's socket buffer above this: droppable messages are dropped. */
const HIGH_WATER_BYTES = 1024 * 1024;
const droppable: ReadonlySet<EventTopic> = new Set(['updates', 'logs', 'state', 'terminals']);

type Payload = DistributiveOmit<ServerMessage, 'at' | 't'>;
type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

interface Client {
  socket: WebSocket;
  topics: Set<EventTopic>;
  /** Session ids whose updates it wants; null: all. */
  sessions: Set<string> | null;
  dropped: number;
}

/** Parses `?topics=a,b` (all when absent); unknown topics are an error message. */
export function parseTopics(value: string | null): { topics: EventTopic[] } | { error: string } {
  if (value === null || value === '') return { topics: [...EVENT_TOPICS] };
  const topics = value.split(',').map((topic) => topic.trim());
  const unknown = topics.filter((topic) => !(EVENT_TOPICS as readonly string[]).includes(topic));
  if (unknown.length > 0) return { error: `Unknown topics: ${unknown.join(', ')} (known: ${EVENT_TOPICS.join(', ')})` };
  return { topics: topics as EventTopic[] };
}

export class EventFeed {
  private readonly clients = new Set<Client>();

  constructor(private readonly now: () => number = Date.now) {}

  get size(): number {
    return this.clients.size;
  }

  /** Takes a new client: sends `hello` (built by `hello(topics)`), then its topics' events. */
  attach(socket: WebSocket, topics: EventTopic[], sessions: string[] | null, hello: (topics: EventTopic[]) => Payload): void {
    const client: Client = { socket, topics: new Set(topics), sessions: sessions ? new Set(sessions) : null, dropped: 0 };
    this.clients.add(client);
    socket.on('close', () => this.clients.delete(client));
    socket.on('error', () => this.clients.delete(client));
    socket.on('message', (data, isBinary) => this.onMessage(client, isBinary ? null : data.toString()));
    this.send(client, hello(topics));
  }

  /** Sends a message of `topic` to every client that subscribed to it (and to its session). */
  publish(topic: EventTopic, payload: Payload, sessionId?: string): void {
    if (this.clients.size === 0) return;
    let text: string | undefined;
    for (const client of this.clients) {
      if (!client.topics.has(topic)) continue;
      if (sessionId !== undefined && client.sessions !== null && !client.sessions.has(sessionId)) continue;
      if (droppable.has(topic) && client.socket.bufferedAmount > HIGH_WATER_BYTES) {
        client.dropped += 1;
        continue;
      }
      text ??= this.serialize(payload);
      this.flushDropped(client);
      client.socket.send(text);
    }
  }

  /** Closes every client's socket (1001 going away). */
  close(): void {
    for (const client of this.clients) client.socket.close(1001, 'The daemon is shutting down');
    this.clients.clear();
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
    if (parsed.topics) client.topics = new Set(parsed.topics);
    if (parsed.sessions !== undefined) client.sessions = parsed.sessions === null ? null : new Set(parsed.sessions);
  }

  private send(client: Client, payload: Payload): void {
    client.socket.send(this.serialize(payload));
  }

  private flushDropped(client: Client): void {
    if (client.dropped === 0) return;
    const count = client.dropped;
    client.dropped = 0;
    this.send(client, { type: 'dropped', count });
  }

  private serialize(payload: Payload): string {
    // The stamps first: a spread followed by more properties is V8's slow path (docs/performance.md).
    return JSON.stringify({ at: this.now(), t: process.hrtime.bigint().toString(), ...payload });
  }
}
