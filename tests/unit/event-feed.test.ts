/**
 * The event feed (daemon/event-feed.ts) against a fake socket at its edge — the test holds
 * what the socket has buffered and says when it drained: seqs, batching per tick, replay
 * from `since` while publishing goes on, resync, the slow client's cap, and the upgrade's
 * query.
 */
import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import type { WebSocket } from 'ws';
import type { ServerMessage } from '../../daemon/api-types.js';
import { EventFeed, parseStreamRequest, type StreamRequest } from '../../daemon/event-feed.js';

type Message = ServerMessage & Record<string, unknown>;

/**
 * A socket that never writes anything out by itself: every frame stays in `bufferedAmount`
 * until the test calls `drain()`, which also runs the pings queued behind the frames.
 */
class FakeSocket extends EventEmitter {
  bufferedAmount = 0;
  /** Every frame sent, as sent (bytes). */
  frames: Buffer[] = [];
  closedWith: number | undefined;
  private pings: Array<(error?: Error) => void> = [];
  send(data: Buffer, options: { binary: boolean }) {
    expect(options.binary).toBe(false);
    this.frames.push(data);
    this.bufferedAmount += data.length;
  }
  ping(callback: (error?: Error) => void) {
    this.pings.push(callback);
  }
  close(code: number) {
    this.closedWith = code;
  }
  /** The socket wrote out everything it held. */
  drain() {
    this.bufferedAmount = 0;
    const pings = this.pings;
    this.pings = [];
    for (const ping of pings) ping();
  }
  /** Every message received, frames unpacked. */
  messages(): Message[] {
    return this.frames.flatMap((frame) => {
      const parsed = JSON.parse(frame.toString('utf8')) as Message | Message[];
      return Array.isArray(parsed) ? parsed : [parsed];
    });
  }
  /** The seqs of the published messages received (hello and resync left out). */
  seqs(): number[] {
    return this.messages()
      .filter((message) => message.type !== 'hello' && message.type !== 'resync')
      .map((message) => message.seq);
  }
}

const hello = () => ({ version: '0', agents: [], permissions: [], elicitations: [], topics: [] });
const request = (extra: Partial<StreamRequest> = {}): StreamRequest => ({ topics: ['status', 'updates', 'logs'], sessions: null, batch: false, ...extra });
const attach = (feed: EventFeed, extra: Partial<StreamRequest> = {}) => {
  const socket = new FakeSocket();
  feed.attach(socket as unknown as WebSocket, request(extra), hello);
  return socket;
};
const update = (feed: EventFeed, sessionId = 's', n = 0) => feed.publish('updates', { type: 'session:update', agent: 'a', sessionId, update: { n } }, sessionId);
const log = (feed: EventFeed, line = 'x') => feed.publish('logs', { type: 'log', agent: 'a', line });
/** The end of the tick: what was published goes out. */
const tick = () => new Promise<void>((resolve) => setImmediate(resolve));
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe('the event feed', () => {
  it('gives every published message the next seq over all topics, and each client its topics and sessions', async () => {
    const feed = new EventFeed({ now: () => 7, epoch: 'e1' });
    const all = attach(feed);
    const mine = attach(feed, { topics: ['updates'], sessions: ['mine'] });
    update(feed, 'other');
    log(feed);
    update(feed, 'mine');
    feed.publish('status', { type: 'agent:status', agent: 'a', status: 'connected', previous: 'starting', row: {} as never });
    await tick();
    expect(all.messages()[0]).toMatchObject({ type: 'hello', seq: 0, epoch: 'e1', replayFrom: null, oldest: 1, at: 7, version: '0' });
    expect(all.seqs()).toEqual([1, 2, 3, 4]);
    expect(all.messages().slice(1).map((message) => message.type)).toEqual(['session:update', 'log', 'session:update', 'agent:status']);
    expect(mine.seqs()).toEqual([3]);
    expect(mine.messages()[1]).toMatchObject({ type: 'session:update', sessionId: 'mine', seq: 3, at: 7, update: { n: 0 } });
    expect(feed.lastSeq).toBe(4);
  });

  it('sends what one tick published at its end: one array frame to a batch client, one frame a message otherwise', async () => {
    const feed = new EventFeed({ epoch: 'e1' });
    const batch = attach(feed, { batch: true });
    const single = attach(feed);
    for (let n = 0; n < 5; n++) update(feed, 's', n);
    expect(batch.frames).toHaveLength(1); // hello only: nothing before the end of the tick
    await tick();
    expect(batch.frames).toHaveLength(2);
    const frame = JSON.parse(batch.frames[1]!.toString()) as Message[];
    expect(frame.map((message) => message.seq)).toEqual([1, 2, 3, 4, 5]);
    expect(JSON.parse(batch.frames[0]!.toString())).toMatchObject([{ type: 'hello' }]); // every frame an array
    // One tick, one stamp: the messages of a batch share `at` and `t`.
    expect(new Set(frame.map((message) => `${message.at}/${message.t}`)).size).toBe(1);
    expect(single.frames).toHaveLength(6);
    expect(single.seqs()).toEqual([1, 2, 3, 4, 5]);
    update(feed, 's', 5);
    await tick();
    expect(batch.seqs()).toEqual([1, 2, 3, 4, 5, 6]);
    expect(batch.frames).toHaveLength(3);
  });

  it('sends a status change at once, after what the tick published before it', () => {
    let clock = 1;
    const feed = new EventFeed({ now: () => clock });
    const batch = attach(feed, { batch: true });
    update(feed, 's', 0);
    update(feed, 's', 1);
    clock = 2;
    feed.publish('status', { type: 'agent:status', agent: 'a', status: 'connected', previous: 'starting', row: {} as never });
    // No tick has passed: the two updates went first (their frame, their stamp), then the status.
    expect(batch.frames.slice(1).map((frame) => (JSON.parse(frame.toString()) as Message[]).map((message) => [message.seq, message.at]))).toEqual([
      [
        [1, 1],
        [2, 1],
      ],
      [[3, 2]],
    ]);
  });

  it('encodes a frame once for every client of the same filter', async () => {
    const feed = new EventFeed();
    const [a, b, c] = [attach(feed, { batch: true }), attach(feed, { batch: true }), attach(feed, { batch: true, topics: ['logs'] })];
    update(feed);
    log(feed);
    await tick();
    expect(a.frames[1]).toBe(b.frames[1]); // the same bytes, not an equal copy
    expect(c.frames[1]).not.toBe(a.frames[1]);
    expect(c.seqs()).toEqual([2]);
  });

  it('replays what followed `since`, then goes on live, with no gap and no duplicate', async () => {
    const feed = new EventFeed({ epoch: 'e1' });
    for (let n = 0; n < 10; n++) update(feed, 's', n);
    await tick();
    update(feed, 's', 10); // published in the tick the client comes in: not lost, not sent twice
    const socket = attach(feed, { since: 4, epoch: 'e1', batch: true });
    expect(socket.messages()[0]).toMatchObject({ type: 'hello', seq: 11, replayFrom: 5, oldest: 1 });
    update(feed, 's', 11);
    await tick();
    expect(socket.seqs()).toEqual(range(5, 12));
    // Nothing to replay: since the last seq.
    const upToDate = attach(feed, { since: 12 });
    update(feed);
    await tick();
    expect(upToDate.messages()[0]).toMatchObject({ replayFrom: 13 });
    expect(upToDate.seqs()).toEqual([13]);
  });

  it('a replay longer than the cap goes on as the socket drains, while publishing goes on', async () => {
    const feed = new EventFeed({ clientCapBytes: 2000 });
    for (let n = 0; n < 300; n++) update(feed, 's', n);
    await tick();
    const socket = attach(feed, { since: 0 });
    const [first] = feed.stats().clients.filter((client) => client.waiting);
    expect(first).toBeDefined();
    expect(first!.heldBytes).toBeLessThan(2000 + 200); // the cap and at most one frame over
    let published = 300;
    for (let round = 0; round < 200 && (feed.stats().clients.some((client) => client.waiting) || round === 0); round++) {
      for (let n = 0; n < 3; n++) update(feed, 's', published++);
      await tick();
      socket.drain();
    }
    update(feed, 's', published++);
    await tick();
    expect(socket.seqs()).toEqual(range(1, published));
    expect(socket.messages().filter((message) => message.type === 'resync')).toEqual([]);
  });

  it('a `since` the journal no longer holds, or of another epoch, gets resync and then the live messages', async () => {
    const feed = new EventFeed({ epoch: 'e1', journal: { maxMessages: 5 } });
    // A tick at a time: the journal evicts what a tick published as a whole.
    for (let n = 0; n < 8; n++) {
      update(feed, 's', n);
      await tick();
    }
    const expired = attach(feed, { since: 2, epoch: 'e1' });
    const otherEpoch = attach(feed, { since: 7, epoch: 'e0' });
    const ahead = attach(feed, { since: 9 }); // beyond anything this daemon published: an earlier daemon's
    const held = attach(feed, { since: 3 }); // 4.. are held
    expect(expired.messages().slice(0, 2)).toMatchObject([
      { type: 'hello', seq: 8, replayFrom: null, oldest: 4 },
      { type: 'resync', seq: 8, reason: 'expired', oldest: 4, lastDelivered: 2 },
    ]);
    expect(otherEpoch.messages()[1]).toMatchObject({ type: 'resync', reason: 'epoch', lastDelivered: 7 });
    expect(ahead.messages()[1]).toMatchObject({ type: 'resync', reason: 'epoch', lastDelivered: 9 });
    expect(held.seqs()).toEqual([4, 5, 6, 7, 8]);
    update(feed);
    await tick();
    for (const socket of [expired, otherEpoch, ahead]) expect(socket.seqs()).toEqual([9]);
  });

  it('stops writing to a client over its cap; once drained it is caught up from the journal; the others never wait', async () => {
    const feed = new EventFeed({ clientCapBytes: 1000 });
    const slow = attach(feed);
    const fast = attach(feed, { batch: true });
    for (let round = 0; round < 50; round++) {
      for (let n = 0; n < 4; n++) update(feed, 's', round * 4 + n);
      await tick();
      fast.drain();
      const stats = feed.stats().clients[0]!;
      expect(stats.heldBytes).toBeLessThan(1000 + 200);
    }
    expect(fast.seqs()).toEqual(range(1, 200));
    expect(feed.stats().clients[0]).toMatchObject({ waiting: true });
    const framesBefore = slow.frames.length;
    slow.drain(); // caught up from where it stood, up to the cap again
    expect(slow.frames.length).toBeGreaterThan(framesBefore);
    for (let i = 0; i < 100 && feed.stats().clients[0]!.waiting; i++) slow.drain();
    update(feed, 's', 200);
    await tick();
    expect(slow.seqs()).toEqual(range(1, 201));
    expect(feed.stats().clients[0]).toMatchObject({ waiting: false, position: 201 });
  });

  it('a client that fell behind what the journal holds gets resync with its last seq, then the live messages', async () => {
    const feed = new EventFeed({ clientCapBytes: 500, journal: { maxMessages: 20 } });
    const slow = attach(feed);
    for (let n = 0; n < 100; n++) {
      update(feed, 's', n);
      await tick();
    }
    const delivered = slow.seqs();
    expect(delivered).toEqual(range(1, delivered.length));
    expect(delivered.length).toBeLessThan(20);
    slow.drain();
    const resync = slow.messages().find((message) => message.type === 'resync');
    expect(resync).toMatchObject({ reason: 'overflow', seq: 100, oldest: 81, lastDelivered: delivered.at(-1) });
    update(feed);
    await tick();
    expect(slow.seqs()).toEqual([...delivered, 101]);
  });

  it('a tick that publishes more than the journal holds sends its clients resync, not a silent gap', async () => {
    const feed = new EventFeed({ journal: { maxBytes: 300_000 } });
    const socket = attach(feed, { batch: true });
    // 400 K characters in one tick: sealed as two segments (at ~256 K), and the first two messages no longer fit.
    for (let n = 0; n < 4; n++) log(feed, 'x'.repeat(100_000));
    await tick();
    expect(socket.messages().slice(1)).toMatchObject([{ type: 'resync', reason: 'overflow', seq: 4, oldest: 3, lastDelivered: 0 }]);
    update(feed);
    await tick();
    expect(socket.seqs()).toEqual([5]);
  });

  it('a client that never reads holds no more than its cap, however much is published', async () => {
    const feed = new EventFeed({ clientCapBytes: 64 * 1024 });
    const stuck = attach(feed, { batch: true });
    const reader = attach(feed, { batch: true });
    for (let round = 0; round < 100; round++) {
      for (let n = 0; n < 100; n++) update(feed, 's', n);
      await tick();
      reader.drain();
    }
    expect(reader.seqs()).toHaveLength(10_000);
    const [stuckStats] = feed.stats().clients;
    expect(stuckStats).toMatchObject({ waiting: true });
    expect(stuckStats!.heldBytes).toBeLessThan(64 * 1024 + 256 * 1024);
    expect(stuck.bufferedAmount).toBe(stuckStats!.heldBytes);
    expect(stuck.seqs().length).toBeLessThan(2000);
  });

  it('takes a new subscription, closes a client that speaks nonsense, and forgets a closed one', async () => {
    const feed = new EventFeed();
    const socket = attach(feed, { topics: ['updates'], sessions: ['mine'] });
    update(feed, 'other');
    update(feed, 'mine');
    log(feed);
    await tick();
    expect(socket.seqs()).toEqual([2]);
    socket.emit('message', Buffer.from(JSON.stringify({ type: 'subscribe', topics: ['logs'], sessions: null })), false);
    log(feed);
    update(feed, 'mine');
    await tick();
    expect(socket.seqs()).toEqual([2, 4]);
    socket.emit('message', Buffer.from('{"type":"subscribe","topics":["nope"]}'), false);
    expect(socket.closedWith).toBe(1008);
    socket.emit('close');
    expect(feed.size).toBe(0);
  });

  it('close() sends what is pending, closes every client (1001) and publishes nothing more', async () => {
    const feed = new EventFeed();
    const socket = attach(feed);
    update(feed);
    feed.close();
    expect(socket.seqs()).toEqual([1]);
    expect(socket.closedWith).toBe(1001);
    update(feed);
    await tick();
    expect(feed.lastSeq).toBe(1);
  });
});

describe("the upgrade's query", () => {
  const parse = (query: string) => parseStreamRequest(new URLSearchParams(query));

  it('reads topics, sessions, batch, since and epoch', () => {
    expect(parse('')).toEqual({ topics: expect.arrayContaining(['status', 'updates']), sessions: null, batch: false });
    expect(parse('topics=status,logs&sessions=a,b&batch=1&since=42&epoch=0f1e-2d')).toEqual({ topics: ['status', 'logs'], sessions: ['a', 'b'], batch: true, since: 42, epoch: '0f1e-2d' });
    expect(parse('batch=true&since=0')).toMatchObject({ batch: true, since: 0 });
    expect(parse('batch=0')).toMatchObject({ batch: false });
  });

  it.each([
    ['since=-1', /since/],
    ['since=1.5', /since/],
    ['since=abc', /since/],
    ['since=', /since/],
    ['since=99999999999999999', /since/],
    ['epoch=abc', /epoch: only with since/],
    ['since=1&epoch=a b', /epoch/],
    [`since=1&epoch=${'a'.repeat(101)}`, /epoch/],
    ['batch=yes', /batch/],
    ['topics=status,nonsense', /nonsense/],
  ])('%s is an error', (query, message) => {
    const parsed = parse(query);
    expect(parsed).toEqual({ error: expect.stringMatching(message) });
  });
});
