/**
 * The daemon's event stream on real fixture agents and real sockets: a client dropped in the
 * middle of 10,000 updates comes back with its last seq and, between its two connections,
 * has received exactly what the store kept, in order, once; `?batch=1`; a `since` the daemon
 * no longer holds or of another epoch (`resync`), and bad ones (400); a client that never
 * reads costs the daemon no more than its cap while the others and HTTP go on, and is caught
 * up once it reads again.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startDaemon, type Daemon } from '../../daemon/daemon.js';
import { EventFollower, type StreamEvent } from '../../cli/event-stream.js';
import type { ResyncMessage } from '../../daemon/api-types.js';
import { AgentError } from '../../index.js';
import { call, type Loose } from '../support/daemon-http.js';
import { eventually, fixtureSpec } from '../support/real-agents.js';

/** Small enough that the test can outrun it, large enough for the drop test's gap. */
const JOURNAL_MESSAGES = 6000;
const CAP_BYTES = 256 * 1024;

let daemon: Daemon;
let stateDir: string;

beforeAll(async () => {
  stateDir = mkdtempSync(join(tmpdir(), 'agentvisor-daemon-events-'));
  daemon = await startDaemon({
    supervisor: { agents: { fixture: fixtureSpec(), bulk: fixtureSpec() }, stateDir },
    port: 0,
    events: { journalMessages: JOURNAL_MESSAGES, clientCapBytes: CAP_BYTES },
  });
});

afterAll(async () => {
  await daemon?.close();
  rmSync(stateDir, { recursive: true, force: true });
});

/** A client of the event stream that unpacks batch frames and keeps every message and frame. */
interface StreamClient {
  socket: WebSocket;
  messages: Loose[];
  /** How many messages each frame carried (batch); 1 a frame otherwise. */
  frameSizes: number[];
  /** The seq of the last message received (hello and resync included: the stream goes on after it). */
  lastSeq(): number;
  closed: Promise<void>;
}

function openStream(query: string, to: Daemon = daemon): Promise<StreamClient> {
  const socket = new WebSocket(`ws://127.0.0.1:${to.port}/v1/events?${query}${query ? '&' : ''}token=${to.token}`, { perMessageDeflate: false });
  const messages: Loose[] = [];
  const frameSizes: number[] = [];
  let replayAfter: number | null = null;
  socket.on('message', (data) => {
    const parsed = JSON.parse(data.toString()) as Loose;
    const batch: Loose[] = Array.isArray(parsed) ? parsed : [parsed];
    frameSizes.push(batch.length);
    for (const message of batch) {
      if (message.type === 'hello' && message.replayFrom !== null) replayAfter = message.replayFrom - 1;
      messages.push(message);
    }
  });
  const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
  const client: StreamClient = {
    socket,
    messages,
    frameSizes,
    // With a replay, hello's seq is where the replay ends: the cursor is the last message replayed, not it.
    lastSeq: () => {
      const last = messages.at(-1);
      if (last?.type === 'hello' && replayAfter !== null) return replayAfter;
      return last?.seq ?? 0;
    },
    closed,
  };
  return new Promise((resolve, reject) => {
    socket.once('open', () => resolve(client));
    socket.once('unexpected-response', (_request, response) => {
      let body = '';
      response.on('data', (chunk: Buffer) => (body += chunk.toString()));
      response.on('end', () => reject(Object.assign(new Error(`upgrade refused: ${response.statusCode}`), { status: response.statusCode, body: JSON.parse(body) as unknown })));
    });
    socket.once('error', reject);
  });
}

/** Every transcript entry the store kept for the session, page after page. */
async function storedHistory(sessionId: string): Promise<Loose[]> {
  const entries: Loose[] = [];
  let after = 0;
  for (;;) {
    const page = await call(daemon, 'GET', `/v1/sessions/${sessionId}/history?after=${after}&limit=5000`);
    expect(page.status).toBe(200);
    entries.push(...page.json.entries);
    if (page.json.next === null) return entries;
    after = page.json.next;
  }
}

async function openSession(agent: string): Promise<string> {
  const opened = await call(daemon, 'POST', '/v1/sessions', { body: { agent } });
  expect(opened.status).toBe(201);
  return opened.json.sessionId as string;
}

describe('a client dropped in the middle of a stream', () => {
  it('reconnects with its last seq and, over both connections, has what the store kept: in order, once', async () => {
    const sessionId = await openSession('fixture');
    const first = await openStream(`topics=updates&sessions=${sessionId}&batch=1`);
    const epoch = first.messages[0].epoch as string;
    expect(epoch).toMatch(/^[0-9a-f-]{36}$/);
    // The echo agent sends the prompt back word by word: 10,000 updates, each a different word.
    const words = Array.from({ length: 10_000 }, (_, i) => `w${i}`);
    const prompt = call(daemon, 'POST', `/v1/sessions/${sessionId}/prompt`, { body: { text: words.join(' ') } });

    await eventually(() => first.messages.length > 3000, 'the first client to receive 3,000 updates', 60_000);
    first.socket.terminate(); // dropped, not closed: whatever was in flight is lost to it
    await first.closed;
    const since = first.lastSeq();
    expect(since).toBeGreaterThan(0);
    // Publishing goes on without it; it comes back while the agent still streams.
    await eventually(() => daemon.eventStream().lastSeq > since + 500, 'more updates to be published meanwhile', 30_000);
    const second = await openStream(`topics=updates&sessions=${sessionId}&batch=1&since=${since}&epoch=${epoch}`);
    expect(second.messages[0]).toMatchObject({ type: 'hello', epoch, replayFrom: since + 1 });
    expect(daemon.eventStream().lastSeq).toBeLessThan(since + JOURNAL_MESSAGES); // still within what the journal holds

    const answer = await prompt;
    expect(answer.status).toBe(200);
    await eventually(() => second.messages.some((message) => message.type === 'session:turn' && 'stopReason' in message.turn), 'the end of the turn', 30_000);
    second.socket.close();

    const received = [...first.messages, ...second.messages].filter((message) => message.type !== 'hello');
    expect(received.filter((message) => message.type === 'resync')).toEqual([]);
    const seqs = received.map((message) => message.seq as number);
    for (let i = 1; i < seqs.length; i++) expect(seqs[i], `message ${i}`).toBeGreaterThan(seqs[i - 1]!);

    // The store writes in batches after the event: its prompt_result may come a little later.
    let stored: Loose[] = [];
    const deadline = Date.now() + 10_000;
    do stored = await storedHistory(sessionId);
    while (!stored.some((entry) => entry.kind === 'prompt_result') && Date.now() < deadline);
    // The stream's messages in the transcript's shapes: prompt, updates, prompt_result.
    const asTranscript = received.map((message) =>
      message.type === 'session:update' ? { kind: 'update', data: message.update } : 'prompt' in message.turn ? { kind: 'prompt', data: { prompt: message.turn.prompt } } : { kind: 'prompt_result', data: message.turn },
    );
    expect(stored.filter((entry) => entry.kind === 'update')).toHaveLength(10_000);
    expect(asTranscript).toEqual(stored.map((entry) => ({ kind: entry.kind, data: entry.data })));
    const text = received.filter((message) => message.type === 'session:update').map((message) => message.update.content.text as string);
    expect(text.join('')).toBe(words.join(' '));
    // Batches: many updates a frame while 10,000 came in.
    expect(Math.max(...first.frameSizes, ...second.frameSizes)).toBeGreaterThan(1);
  }, 120_000);
});

describe('the stream protocol', () => {
  it('batch=1: every frame an array, hello first; without it, one message a frame with the same seqs', async () => {
    const sessionId = await openSession('fixture');
    const batch = await openStream(`topics=updates&sessions=${sessionId}&batch=1`);
    const single = await openStream(`topics=updates&sessions=${sessionId}`);
    expect(batch.messages[0]).toMatchObject({ type: 'hello', replayFrom: null, topics: ['updates'] });
    expect(batch.messages[0].seq).toBe(daemon.eventStream().lastSeq);
    const answer = await call(daemon, 'POST', `/v1/sessions/${sessionId}/prompt`, { body: { text: 'one two three four' } });
    expect(answer.status).toBe(200);
    const ended = (client: StreamClient) => client.messages.some((message) => message.type === 'session:turn' && 'stopReason' in message.turn);
    await eventually(() => ended(batch) && ended(single), 'the turn to end on both', 10_000);
    expect(single.frameSizes.every((size) => size === 1)).toBe(true);
    expect(batch.messages.map((message) => message.seq)).toEqual(single.messages.map((message) => message.seq));
    expect(batch.messages.slice(1).map((message) => message.type)).toEqual(['session:turn', ...Array(4).fill('session:update'), 'session:turn']);
    batch.socket.close();
    single.socket.close();
  });

  it('a since the daemon no longer holds, or of another epoch, gets resync, then the live messages', async () => {
    // A daemon of its own whose journal holds 3 messages: an agent's start publishes more.
    // (Its agent is not declared stable for 10 minutes: no state move comes by itself while the test reads seqs.)
    const small = await startDaemon({ supervisor: { agents: { fixture: fixtureSpec() }, stateDir: join(stateDir, 'small'), restart: { stableAfterMs: 600_000 } }, port: 0, events: { journalMessages: 3 } });
    try {
      const open = (query: string) => openStream(query, small);
      expect((await call(small, 'POST', '/v1/agents/fixture/start')).status).toBe(200);
      const { epoch, oldestSeq, lastSeq } = small.eventStream();
      expect(oldestSeq).toBe(lastSeq - 2);
      const expired = await open(`since=${oldestSeq - 2}&epoch=${epoch}`);
      expect(expired.messages.map((message) => message.type).slice(0, 2)).toEqual(['hello', 'resync']);
      expect(expired.messages[0]).toMatchObject({ seq: lastSeq, replayFrom: null, epoch, oldest: oldestSeq });
      expect(expired.messages[1]).toMatchObject({ reason: 'expired', seq: lastSeq, oldest: oldestSeq, lastDelivered: oldestSeq - 2 });
      const held = await open(`since=${oldestSeq - 1}&epoch=${epoch}`); // everything after it is held: replayed
      const replayed = Array.from({ length: lastSeq - oldestSeq + 1 }, (_, i) => oldestSeq + i);
      expect(held.messages.map((message) => message.seq).slice(0, replayed.length + 1)).toEqual([lastSeq, ...replayed]);
      const other = await open('since=1&epoch=00000000-0000-0000-0000-000000000000');
      expect(other.messages[1]).toMatchObject({ type: 'resync', reason: 'epoch', lastDelivered: 1 });
      const ahead = await open(`since=${lastSeq + 10}`);
      expect(ahead.messages[1]).toMatchObject({ type: 'resync', reason: 'epoch', lastDelivered: lastSeq + 10 });
      // Then live: the stop's status changes reach every one of them.
      expect((await call(small, 'POST', '/v1/agents/fixture/stop')).status).toBe(200);
      const clients = [expired, held, other, ahead];
      const seesStop = (client: StreamClient) => client.messages.some((message) => message.type === 'agent:status' && message.status === 'idle');
      await eventually(() => clients.every(seesStop), 'the stop on every client', 10_000);
      for (const client of clients) expect(client.messages.at(-1).seq).toBe(small.eventStream().lastSeq);
      for (const client of clients) client.socket.close();
    } finally {
      await small.close();
    }
  });

  it.each([
    ['since=-1', /since/],
    ['since=abc', /since/],
    ['since=1.5', /since/],
    ['epoch=abc', /epoch/],
    ['since=3&epoch=not%20an%20epoch', /epoch/],
    ['batch=2', /batch/],
  ])('refuses %s at the upgrade: 400 invalid_request', async (query, message) => {
    const refused = await openStream(query).catch((error: unknown) => error as { status: number; body: Loose });
    expect(refused).toMatchObject({ status: 400, body: { error: { kind: 'invalid_request', message: expect.stringMatching(message) } } });
  });

  it('startDaemon refuses bad event-stream bounds, naming the field, before it listens', async () => {
    for (const events of [{ clientCapBytes: 0 }, { journalMessages: 1.5 }, { journalBytes: '1' }, { jornalMessages: 5 }, 'big']) {
      const error = await startDaemon({ supervisor: { agents: {}, stateDir: false }, port: 0, events: events as never }).then(
        async (started) => {
          await started.close();
          return null;
        },
        (caught: unknown) => caught,
      );
      expect(error, JSON.stringify(events)).toBeInstanceOf(AgentError);
      expect(error).toMatchObject({ kind: 'invalid_options', message: expect.stringMatching(/Option events/) });
    }
  });
});

/**
 * A WebSocket client at the TCP level that completes the upgrade and then stops reading:
 * the kernel's buffers fill, then the daemon's. `resume()` reads again and parses the frames.
 */
class NeverReadingClient {
  private readonly socket: Socket;
  private pending = Buffer.alloc(0);
  readonly messages: Loose[] = [];
  private upgraded = false;

  private constructor(socket: Socket) {
    this.socket = socket;
  }

  /** Its address as the daemon sees it (the daemon's stats name clients so). */
  get peer(): string {
    return `${this.socket.localAddress}:${this.socket.localPort}`;
  }

  static open(query: string): Promise<NeverReadingClient> {
    return new Promise((resolve, reject) => {
      const socket = connect(daemon.port, '127.0.0.1');
      const client = new NeverReadingClient(socket);
      socket.once('error', reject);
      socket.on('connect', () => {
        socket.write(
          `GET /v1/events?${query}&token=${daemon.token} HTTP/1.1\r\nHost: 127.0.0.1:${daemon.port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
            `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\nSec-WebSocket-Version: 13\r\n\r\n`,
        );
      });
      const onData = (chunk: Buffer) => {
        client.pending = Buffer.concat([client.pending, chunk]);
        const end = client.pending.indexOf('\r\n\r\n');
        if (end < 0) return;
        const head = client.pending.subarray(0, end).toString();
        if (!head.startsWith('HTTP/1.1 101')) return reject(new Error(`upgrade refused: ${head}`));
        client.pending = client.pending.subarray(end + 4);
        client.upgraded = true;
        socket.off('data', onData);
        socket.pause(); // from here on it reads nothing
        resolve(client);
      };
      socket.on('data', onData);
    });
  }

  /** Reads again, unpacking the frames (a server's frames are not masked). */
  resume(): void {
    this.socket.on('data', (chunk: Buffer) => {
      this.pending = Buffer.concat([this.pending, chunk]);
      this.parse();
    });
    this.parse();
    this.socket.resume();
  }

  private parse(): void {
    for (;;) {
      if (!this.upgraded || this.pending.length < 2) return;
      const opcode = this.pending[0]! & 0x0f;
      let length = this.pending[1]! & 0x7f;
      let offset = 2;
      if (length === 126) {
        if (this.pending.length < 4) return;
        length = this.pending.readUInt16BE(2);
        offset = 4;
      } else if (length === 127) {
        if (this.pending.length < 10) return;
        length = Number(this.pending.readBigUInt64BE(2));
        offset = 10;
      }
      if (this.pending.length < offset + length) return;
      const payload = this.pending.subarray(offset, offset + length);
      this.pending = this.pending.subarray(offset + length);
      if (opcode === 1) {
        const parsed = JSON.parse(payload.toString()) as Loose;
        this.messages.push(...(Array.isArray(parsed) ? parsed : [parsed]));
      }
    }
  }

  close(): void {
    this.socket.destroy();
  }
}

const UPDATES = 4000;

describe('a client that never reads', () => {
  it('holds no more than its cap in the daemon; the others get everything, HTTP answers; once it reads it is caught up', async () => {
    const sessionId = await openSession('bulk');
    const stuck = await NeverReadingClient.open(`topics=updates&sessions=${sessionId}&batch=1`);
    const reader = await openStream(`topics=updates&sessions=${sessionId}&batch=1`);
    const start = daemon.eventStream().lastSeq;
    // 4,000 updates of 4 KB: ~16 MB, more than the loopback socket's buffers hold for a reader that does not read.
    const chunk = 'z'.repeat(4096);
    const prompt = call(daemon, 'POST', `/v1/sessions/${sessionId}/prompt`, { body: { text: JSON.stringify({ op: 'stream', count: UPDATES, text: chunk }) } });

    const stuckStats = () => daemon.eventStream().clients.find((client) => client.peer === stuck.peer);
    expect(stuckStats()).toBeDefined();
    await eventually(() => stuckStats()!.waiting, 'the never-reading client to be over its cap', 60_000);
    let maxHeld = 0;
    let healthChecks = 0;
    let finished = false;
    void prompt.then(() => (finished = true));
    while (!finished) {
      maxHeld = Math.max(maxHeld, stuckStats()!.heldBytes);
      const health = await call(daemon, 'GET', '/v1/health');
      expect(health.status).toBe(200);
      healthChecks++;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect((await prompt).status).toBe(200);
    expect(healthChecks).toBeGreaterThan(0);
    // The cap, and at most one frame (~256 K characters) over it.
    expect(maxHeld).toBeLessThanOrEqual(CAP_BYTES + 300 * 1024);
    await eventually(() => reader.messages.some((message) => message.type === 'session:turn' && 'stopReason' in message.turn), 'the reader to get the end of the turn', 30_000);
    const readerUpdates = reader.messages.filter((message) => message.type === 'session:update');
    expect(readerUpdates).toHaveLength(UPDATES);
    expect(stuckStats()).toMatchObject({ waiting: true }); // still: nothing was read
    expect(stuckStats()!.heldBytes).toBeLessThanOrEqual(CAP_BYTES + 300 * 1024);

    // It reads again: the daemon catches it up from the journal (it still holds its position).
    stuck.resume();
    await eventually(() => stuck.messages.some((message) => message.type === 'session:turn' && 'stopReason' in message.turn), 'the stuck client to be caught up', 60_000);
    const stuckSeqs = stuck.messages.filter((message) => message.type !== 'hello').map((message) => message.seq as number);
    expect(stuck.messages.filter((message) => message.type === 'resync')).toEqual([]);
    expect(stuckSeqs).toEqual(reader.messages.filter((message) => message.type !== 'hello').map((message) => message.seq as number));
    expect(stuckSeqs[0]).toBeGreaterThan(start);
    stuck.close();
    reader.socket.close();
  }, 120_000);
});

/**
 * A TCP proxy in front of a daemon (the one `target` names now): the test can cut every
 * connection through it, as a network would. It rewrites the Host header of what it forwards
 * (the daemon's gate wants its own address there).
 */
class CuttingProxy {
  private readonly server: Server;
  private readonly pairs = new Set<[Socket, Socket]>();
  port = 0;

  constructor(public target: Daemon) {
    this.server = createServer((inbound) => {
      const outbound = connect(this.target.port, '127.0.0.1');
      const pair: [Socket, Socket] = [inbound, outbound];
      this.pairs.add(pair);
      let first = true;
      inbound.on('data', (chunk: Buffer) => {
        outbound.write(first ? Buffer.from(chunk.toString('latin1').replace(`Host: 127.0.0.1:${this.port}`, `Host: 127.0.0.1:${this.target.port}`), 'latin1') : chunk);
        first = false;
      });
      outbound.pipe(inbound);
      const end = () => {
        this.pairs.delete(pair);
        inbound.destroy();
        outbound.destroy();
      };
      inbound.on('close', end).on('error', end);
      outbound.on('close', end).on('error', end);
    });
  }

  async listen(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as { port: number }).port;
  }

  /** Cuts every connection through it (both ends see a reset, not a close). */
  cut(): void {
    for (const [inbound, outbound] of this.pairs) {
      inbound.resetAndDestroy();
      outbound.resetAndDestroy();
    }
  }

  close(): Promise<void> {
    this.cut();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

describe("the CLI's follower (monit)", () => {
  it('after a drop, reconnects with since and has every message once, in order; another daemon is a resync', async () => {
    const proxy = new CuttingProxy(daemon);
    await proxy.listen();
    const sessionId = await openSession('fixture');
    const events: StreamEvent[] = [];
    const resyncs: ResyncMessage[] = [];
    const connections: string[] = [];
    const follower = new EventFollower({
      address: () => ({ url: `http://127.0.0.1:${proxy.port}`, token: proxy.target.token }),
      topics: ['updates'],
      onEvent: (event) => events.push(event),
      onResync: (resync) => resyncs.push(resync),
      onConnection: (state) => connections.push(state),
    });
    const reference = await openStream(`topics=updates&sessions=${sessionId}&batch=1`);
    try {
      await eventually(() => connections.includes('live'), 'the follower to be live');
      const words = Array.from({ length: 3000 }, (_, i) => `v${i}`);
      const prompt = call(daemon, 'POST', `/v1/sessions/${sessionId}/prompt`, { body: { text: words.join(' ') } });
      await eventually(() => events.length > 500, 'the follower to receive 500 updates', 30_000);
      proxy.cut();
      await eventually(() => connections.filter((state) => state === 'live').length === 2, 'the follower to reconnect', 30_000);
      expect((await prompt).status).toBe(200);
      const ended = (messages: Array<{ type: string; turn?: object }>) => messages.some((message) => message.type === 'session:turn' && message.turn !== undefined && 'stopReason' in message.turn);
      await eventually(() => ended(events) && ended(reference.messages), 'the end of the turn on both', 30_000);
      expect(connections).toEqual(['live', 'reconnecting', 'live']);
      expect(resyncs).toEqual([]);
      const mine = events.filter((event) => 'sessionId' in event && event.sessionId === sessionId).map((event) => event.seq);
      expect(mine).toEqual(reference.messages.filter((message) => message.type !== 'hello').map((message) => message.seq as number));

      // The daemon behind the address is another one now: its epoch is not ours, so resync.
      const other = await startDaemon({ supervisor: { agents: {}, stateDir: join(stateDir, 'other') }, port: 0 });
      try {
        const before = follower.lastSeq;
        proxy.target = other;
        proxy.cut();
        await eventually(() => resyncs.length === 1, 'a resync from the other daemon', 30_000);
        expect(resyncs[0]).toMatchObject({ reason: 'epoch', lastDelivered: before });
        expect(follower.lastSeq).toBe(resyncs[0]!.seq); // it goes on from the other daemon's seq
      } finally {
        follower.close();
        await other.close();
      }
    } finally {
      follower.close();
      reference.socket.close();
      await proxy.close();
    }
  }, 90_000);
});
