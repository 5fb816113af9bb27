/**
 * daemon-ws-status: "a status change reaches a WebSocket client ≤ 50 ms p99 while 50 agents
 * stream". A daemon runs in this process (`startDaemon`, port 0, the SQLite store in a
 * temporary state directory — as `agentvisor serve` would run it) with `streamingAgents`
 * fixture agents and one more, `toggle`. Two client processes talk to it over its API:
 *
 * - lib/prompt-load-client.mjs keeps a turn running on every streaming agent through
 *   `POST /v1/prompt` (NDJSON): the fixture's `{"op":"slow"}` command, one chunk of
 *   `chunkText` every `chunkIntervalMs` (the daemon stores each update in SQLite and streams
 *   it back as a line), a new turn as soon as one ends. 40 ms (~24 chunks/s an agent, ~1,200
 *   updates/s for 50) is the pace of a model streaming its answer, each chunk a few tokens;
 *   the fixture's 1 ms floor or bench/agents/stream-agent.mjs (no pacing at all) would measure
 *   a machine whose two cores the 50 agents themselves saturate;
 * - lib/ws-status-client.mjs holds a WebSocket on `/v1/events?topics=status` and toggles
 *   `toggle`: `POST /v1/agents/toggle/stop`, then `/start`, `cycles` times. Every cycle is four
 *   `agent:status` messages (connected → stopping → idle → starting → connected). Latency of
 *   one = the client's process.hrtime at the `message` event − the message's `t` (the
 *   daemon's process.hrtime when it serialized the message).
 *
 * `t` and the client's clock are both CLOCK_MONOTONIC (libuv's uv_hrtime), one clock for every
 * process of a host — unless they ran in different time namespaces. The benchmark checks it:
 * before and after the rounds it asks the client for its clock between two readings of its
 * own (each reply must fall between them), and no latency may be negative.
 *
 * What `t` covers: the daemon stamps it in EventFeed.serialize, right before the socket
 * write, so latency = the write, loopback, and the client waking up and parsing. What comes
 * before — the daemon noticing the exit or the handshake's answer and running its machines
 * while its event loop is busy with updates — is outside it. So the benchmark reports
 * `requestToStatus` too: from the client sending `POST .../stop` (or `/start`) to the client
 * receiving `stopping` (or `starting`), both on the client's clock, which does include the
 * daemon's queueing (the request waits in the daemon's event loop), and the daemon's event-loop
 * lag (how late a 2 ms timer runs) and CPU share per side.
 *
 * Sides, rotated (A B C, C B A, …), `cyclesPerRound` cycles each per round, after a warm-up of
 * `warmupCycles` per side:
 * - idle (the baseline): the same daemon, agents, sessions and client, no turn running;
 * - streaming (the headline): every streaming agent in a turn for the whole round (started
 *   before the first toggle, cancelled after the last status arrived);
 * - bare-ws (details): a bare node:http + `ws` server in this process that answers the same
 *   two POSTs by pushing the same messages (a row of the same size, `t` stamped the same
 *   way) to a second client process of the same script: the transport's floor.
 * The idle daemon is the baseline because the goal is about the load: the ratio streaming /
 * idle is what 50 streaming agents cost a status message, everything else equal. The bare
 * server shows how much of the idle figure is the daemon at all.
 *
 * Goal (`met`): the streaming side's p99 over all its messages ≤ goalP99Ms (absolute; the
 * ratio is information), the clocks agree, every cycle's four statuses arrived, every
 * streaming agent streamed in every streaming round, the store reported no error, and no
 * process is left behind. The headline numbers are p99s (all of a side's messages pooled),
 * not medians of rounds.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHistogram, type RecordableHistogram } from 'node:perf_hooks';
import { WebSocketServer, type WebSocket } from 'ws';
import { fixtureAgentScript, type AgentSpec } from './lib/agentvisor.js';
import { callJson, clientScripts, daemonModule, forkClient, type AgentRow, type Daemon, type Endpoint, type IpcChild } from './lib/daemon.js';
import { leftoverAgents, ownCpuMs, readPidFile } from './lib/processes.js';
import { finish, leakCheck } from './lib/report.js';
import { defaultContext, type BenchContext, type BenchResult } from './lib/results.js';
import { now, quantile, quantiles, rotate, round, type Phase, type Quantiles } from './lib/stats.js';

export interface DaemonWsStatusSize {
  /** Agents with a turn running on the streaming side (the toggled agent comes on top). */
  streamingAgents: number;
  rounds: number;
  /** Stop + start cycles of the toggled agent per side per round (4 status messages each). */
  cyclesPerRound: number;
  /** Cycles of the unmeasured warm-up round of each side (0: no warm-up). */
  warmupCycles: number;
  /** The streaming agents' pace: one chunk every this many ms (the fixture's `slow` op). */
  chunkIntervalMs: number;
  /** Chunks of one turn; the load client starts the next as soon as one ends. */
  chunksPerTurn: number;
  chunkText: string;
}

/** BENCH_DAEMON_WS_INTERVAL_MS overrides the pace (e.g. 10 for the stress run in docs/performance.md). */
const envInterval = Number(process.env['BENCH_DAEMON_WS_INTERVAL_MS'] ?? '');
const chunkIntervalMs = Number.isFinite(envInterval) && envInterval > 0 ? envInterval : 40;
export const defaultSize: DaemonWsStatusSize = { streamingAgents: 50, rounds: 5, cyclesPerRound: 16, warmupCycles: 3, chunkIntervalMs, chunksPerTurn: 1000, chunkText: 'lorem ipsum dolor sit ' };
export const smokeSize: DaemonWsStatusSize = { streamingAgents: 3, rounds: 1, cyclesPerRound: 3, warmupCycles: 0, chunkIntervalMs, chunksPerTurn: 100, chunkText: 'lorem ipsum dolor sit ' };
/** The goal: the p99 latency of a status message while the agents stream, in ms. */
export const goalP99Ms = 50;

const toggleAgent = 'toggle';
const sideNames = ['idle', 'streaming', 'bare-ws'] as const;
type SideName = (typeof sideNames)[number];

/** One `agent:status` message as the client saw it. */
interface StatusRecord {
  agent: string;
  status: string;
  previous: string;
  tNs: string;
  receivedNs: string;
  latencyNs: number;
  bytes: number;
}

/** One toggle request as the client sent it. */
interface ToggleRequest {
  action: 'stop' | 'start';
  sentNs: string;
  answeredNs: string;
  status: string;
}

/** What the load client reports for one streaming round. */
interface LoadReport {
  updates: number;
  turns: number;
  ms: number;
  errors: string[];
  errorCount: number;
  perAgent: number[];
}

/** One side's round. */
interface Round {
  records: StatusRecord[];
  requests: ToggleRequest[];
  wallMs: number;
  /** CPU of this process (the daemon, or the bare server) over the round. */
  cpuMs: number;
  load?: LoadReport;
}

export async function daemonWsStatusBench(size: DaemonWsStatusSize = defaultSize, ctx: BenchContext = defaultContext()): Promise<BenchResult> {
  const dir = mkdtempSync(join(tmpdir(), 'agentvisor-bench-daemon-ws-'));
  const stateDir = join(dir, 'state');
  const pidFile = join(dir, 'pids.txt');
  const spec: AgentSpec = { command: process.execPath, args: [fixtureAgentScript, '--pid-file', pidFile], displayName: 'Fixture' };
  const streamers = Array.from({ length: size.streamingAgents }, (_, i) => `stream-${i}`);
  const agents: Record<string, AgentSpec> = Object.fromEntries([...streamers, toggleAgent].map((name) => [name, spec]));
  const turnText = JSON.stringify({ op: 'slow', count: size.chunksPerTurn, intervalMs: size.chunkIntervalMs, text: size.chunkText });

  const clients: IpcChild[] = [];
  let daemon: Daemon | undefined;
  let bare: BareServer | undefined;
  let storeErrors = 0;
  const clock: ClockCheck[] = [];
  const loops: Record<SideName, RecordableHistogram> = { idle: createHistogram(), streaming: createHistogram(), 'bare-ws': createHistogram() };
  let helloBytes = 0;
  let rounds: Record<string, Round[]>;
  let spawned: number[] = [];
  try {
    daemon = await daemonModule.startDaemon({ supervisor: { agents, stateDir, maxAgents: streamers.length + 1 }, port: 0 });
    daemon.supervisor.on('store:error', () => void storeErrors++);
    const endpoint: Endpoint = { port: daemon.port, token: daemon.token };
    ctx.log(`  daemon-ws-status: daemon on port ${daemon.port}, starting ${streamers.length + 1} agents`);
    await Promise.all(Object.keys(agents).map((name) => callJson(endpoint, 'POST', `/v1/agents/${name}/start`)));

    const status = forkClient(clientScripts[0]!);
    clients.push(status);
    helloBytes = (await status.request<{ helloBytes: number }>({ type: 'connect', url: `ws://127.0.0.1:${daemon.port}/v1/events?topics=status&token=${daemon.token}` })).helloBytes;
    const load = forkClient(clientScripts[1]!);
    clients.push(load);
    await load.request({ type: 'configure', port: daemon.port, token: daemon.token, agents: streamers, text: turnText });
    // Opens every streaming agent's session (named `default`), so every side finds them open.
    await load.request({ type: 'once', text: JSON.stringify({ op: 'slow', count: 3, intervalMs: 1, text: size.chunkText }) }, 120_000);

    const toggleRow = await callJson<AgentRow>(endpoint, 'GET', `/v1/agents/${toggleAgent}`);
    bare = await bareStatusServer(toggleRow);
    const bareClient = forkClient(clientScripts[0]!);
    clients.push(bareClient);
    await bareClient.request({ type: 'connect', url: `ws://127.0.0.1:${bare.port}/v1/events?topics=status&token=${daemon.token}` });

    for (let i = 0; i < 5; i++) clock.push(await checkClock(status));

    const side = (name: SideName, client: IpcChild, port: number) => async (phase: Phase): Promise<Round> => {
      const cycles = phase === 'warmup' ? size.warmupCycles : size.cyclesPerRound;
      if (name === 'streaming') await load.request({ type: 'start' }, 120_000);
      await client.request({ type: 'flush' });
      const cpu = ownCpuMs();
      const start = now();
      const stopLagMonitor = phase === 'measured' ? monitorLag(loops[name]) : () => {};
      const { requests } = await client.request<{ requests: ToggleRequest[] }>({ type: 'toggle', port, token: daemon!.token, agent: toggleAgent, cycles }, 60_000 + cycles * 10_000);
      stopLagMonitor();
      const wallMs = now() - start;
      const cpuMs = ownCpuMs() - cpu;
      const { records } = await client.request<{ records: StatusRecord[] }>({ type: 'flush' });
      const result: Round = { records, requests, wallMs, cpuMs };
      if (name === 'streaming') result.load = await load.request<LoadReport>({ type: 'stop' }, 120_000);
      return result;
    };
    rounds = await rotate<Round>({
      warmup: size.warmupCycles > 0 ? 1 : 0,
      rounds: size.rounds,
      sides: { idle: side('idle', status, daemon.port), streaming: side('streaming', status, daemon.port), 'bare-ws': side('bare-ws', bareClient, bare.port) },
      onRound: (i, round) =>
        ctx.log(
          `  daemon-ws-status round ${i}/${size.rounds} (${size.cyclesPerRound} cycles): ` +
            Object.entries(round)
              .map(([name, r]) => `${name} p99 ${fmtMs(quantile(latenciesMs(r.records), 0.99))} ms${r.load ? ` (${Math.round((r.load.updates / r.load.ms) * 1000)} updates/s)` : ''}`)
              .join(', '),
        ),
    });
    for (let i = 0; i < 5; i++) clock.push(await checkClock(status));
  } finally {
    for (const client of clients) await client.close().catch(() => {});
    await bare?.close().catch(() => {});
    try {
      await daemon?.close();
    } finally {
      spawned = readPidFile(pidFile);
      rmSync(dir, { recursive: true, force: true });
    }
  }
  const leaks = await leakCheck(spawned);
  const clientPids = clients.map((client) => client.pid);
  const strayClients = leftoverAgents(clientScripts, clientPids);

  const summary = Object.fromEntries(sideNames.map((name) => [name, summarize(rounds[name]!)])) as Record<SideName, SideSummary>;
  for (const name of sideNames) summary[name].eventLoopDelayMs = histogramMs(loops[name]);
  const idle = summary.idle;
  const streaming = summary.streaming;
  const loadRounds = rounds['streaming']!.map((r) => r.load!);
  const expectedPerSide = 4 * size.cyclesPerRound * size.rounds;
  const minClockMarginNs = Math.min(...clock.map((c) => c.marginNs));
  const checks = {
    streamingP99: streaming.latencyMs.p99 <= goalP99Ms,
    /** The client's clock fell between two readings of ours every time, and no latency was negative. */
    clocksAgree: clock.every((c) => c.ok) && sideNames.every((name) => summary[name].negative === 0),
    everyStatusArrived: sideNames.every((name) => summary[name].latencyMs.n === expectedPerSide && summary[name].otherAgents === 0),
    everyAgentStreamed: loadRounds.every((load) => load.errorCount === 0 && load.perAgent.every((updates) => updates > 0)),
    storeOk: storeErrors === 0,
    allGone: leaks.leftover.length === 0 && strayClients.length === 0,
  };
  const updatesPerS = loadRounds.map((load) => (load.updates / load.ms) * 1000);
  return finish(ctx, {
    benchmark: 'daemon-ws-status',
    baseline: round(idle.latencyMs.p99, 3),
    agentvisor: round(streaming.latencyMs.p99, 3),
    unit: 'ms p99',
    ratio: round(streaming.latencyMs.p99 / idle.latencyMs.p99, 4),
    goal: `streaming p99 ≤ ${goalP99Ms} ms (ratio to the idle daemon: information); clocks agree; all statuses; all gone`,
    met: Object.values(checks).every(Boolean),
    details: {
      size,
      checks,
      expectedMessagesPerSide: expectedPerSide,
      sides: summary,
      load: {
        text: turnText,
        updatesPerS: { min: Math.round(Math.min(...updatesPerS)), median: Math.round(quantile(updatesPerS, 0.5)), max: Math.round(Math.max(...updatesPerS)) },
        updates: loadRounds.reduce((sum, load) => sum + load.updates, 0),
        turns: loadRounds.reduce((sum, load) => sum + load.turns, 0),
        errors: loadRounds.flatMap((load) => load.errors).slice(0, 5),
      },
      clock: { checks: clock.length, allWithin: clock.every((c) => c.ok), minMarginUs: round(minClockMarginNs / 1000, 1), maxRoundTripUs: round(Math.max(...clock.map((c) => c.roundTripNs)) / 1000, 1) },
      helloBytes,
      storeErrors,
      processes: { spawned: spawned.length + clientPids.length, agents: spawned.length, clients: clientPids.length, leftover: leaks.leftover.length + strayClients.length },
    },
  });
}

interface SideSummary {
  latencyMs: Quantiles;
  /** By status: the p99 of each of the four messages of a cycle. */
  p99ByStatusMs: Record<string, number>;
  /** `POST stop` sent → `stopping` received; `POST start` sent → `starting` received (client clock). */
  requestToStatusMs: { stop: Quantiles; start: Quantiles };
  negative: number;
  /** Status messages of other agents (a streaming agent that failed): should be none. */
  otherAgents: number;
  messageBytes: number;
  /** This process's CPU over the side's rounds, % of one core. */
  cpuPct: number;
  cycleMs: number;
  /** The daemon process's event-loop lag over the side's measured rounds (how late a 2 ms timer ran). */
  eventLoopDelayMs?: { p50: number; p99: number; max: number };
}

const latenciesMs = (records: readonly StatusRecord[]) => records.filter((r) => r.agent === toggleAgent).map((r) => r.latencyNs / 1e6);

function summarize(sideRounds: readonly Round[]): SideSummary {
  const records = sideRounds.flatMap((r) => r.records);
  const own = records.filter((r) => r.agent === toggleAgent);
  const byStatus: Record<string, number[]> = {};
  for (const record of own) (byStatus[record.status] ??= []).push(record.latencyNs / 1e6);
  const requestTo = { stop: [] as number[], start: [] as number[] };
  for (const r of sideRounds) {
    const received = r.records.filter((record) => record.agent === toggleAgent).map((record) => ({ status: record.status, at: BigInt(record.receivedNs) }));
    for (const request of r.requests) {
      const sent = BigInt(request.sentNs);
      const first = request.action === 'stop' ? 'stopping' : 'starting';
      const match = received.find((record) => record.status === first && record.at >= sent);
      if (match) requestTo[request.action].push(Number(match.at - sent) / 1e6);
    }
  }
  const wallMs = sideRounds.reduce((sum, r) => sum + r.wallMs, 0);
  const cycles = sideRounds.reduce((sum, r) => sum + r.requests.length / 2, 0);
  return {
    latencyMs: quantiles(latenciesMs(records)),
    p99ByStatusMs: Object.fromEntries(Object.entries(byStatus).map(([name, values]) => [name, round(quantile(values, 0.99), 3)])),
    requestToStatusMs: { stop: quantiles(requestTo.stop), start: quantiles(requestTo.start) },
    negative: own.filter((r) => r.latencyNs < 0).length,
    otherAgents: records.length - own.length,
    messageBytes: Math.round(quantile(own.map((r) => r.bytes), 0.5)),
    cpuPct: round((sideRounds.reduce((sum, r) => sum + r.cpuMs, 0) / wallMs) * 100, 1),
    cycleMs: round(wallMs / cycles, 1),
  };
}

/** The lag monitor's timer interval. */
const lagIntervalMs = 2;

/**
 * Records this process's event-loop lag into `histogram` until the returned function is
 * called: a timer every lagIntervalMs, and how much later than that each tick ran (in ns,
 * ≥ 1). perf_hooks.monitorEventLoopDelay measures the same, but its histograms cannot be
 * merged across rounds and its first interval after a re-enable spans the disabled time.
 */
function monitorLag(histogram: RecordableHistogram): () => void {
  let last = now();
  const timer = setInterval(() => {
    const at = now();
    histogram.record(Math.max(1, Math.round((at - last - lagIntervalMs) * 1e6)));
    last = at;
  }, lagIntervalMs);
  return () => clearInterval(timer);
}

/** The event loop's lag (how late the monitor's ticks ran) while a side's measured rounds ran. */
function histogramMs(histogram: RecordableHistogram): { p50: number; p99: number; max: number } {
  const ms = (ns: number) => round(ns / 1e6, 2);
  return { p50: ms(histogram.percentile(50)), p99: ms(histogram.percentile(99)), max: ms(histogram.max) };
}

const fmtMs = (ms: number) => (Number.isFinite(ms) ? ms.toFixed(2) : String(ms));

interface ClockCheck {
  ok: boolean;
  /** How far the client's reading sat inside our two (the smaller side). */
  marginNs: number;
  roundTripNs: number;
}

/** Our clock, the client's, ours again: the client's reading must fall between ours. */
async function checkClock(client: IpcChild): Promise<ClockCheck> {
  const before = process.hrtime.bigint();
  const { ns } = await client.request<{ ns: string }>({ type: 'clock' });
  const after = process.hrtime.bigint();
  const theirs = BigInt(ns);
  const ok = before <= theirs && theirs <= after;
  const margin = theirs - before < after - theirs ? theirs - before : after - theirs;
  return { ok, marginNs: Number(margin), roundTripNs: Number(after - before) };
}

interface BareServer {
  port: number;
  close(): Promise<void>;
}

/**
 * The bare-ws side: node:http + `ws`, no daemon. `POST /v1/agents/:name/stop` pushes
 * `stopping` then `idle`, `/start` pushes `starting` then `connected` (each with `row`, the
 * daemon's row of that agent, and `at` and `t` stamped as EventFeed does), then answers the
 * row; `/v1/events` is the WebSocket (a `hello` first). No token check, no routing.
 */
async function bareStatusServer(row: AgentRow): Promise<BareServer> {
  const server: Server = createServer();
  const sockets = new WebSocketServer({ noServer: true });
  const clients = new Set<WebSocket>();
  const publish = (status: string, previous: string) => {
    const text = JSON.stringify({ type: 'agent:status', agent: row.name, status, previous, row: { ...row, status }, at: Date.now(), t: process.hrtime.bigint().toString() });
    for (const client of clients) client.send(text);
  };
  server.on('request', (request, response) => {
    request.resume();
    const action = /^\/v1\/agents\/[^/]+\/(stop|start)$/.exec(request.url ?? '')?.[1];
    const answer = (status: string) => {
      const body = JSON.stringify({ ...row, status });
      response.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(body) });
      response.end(body);
    };
    if (action === 'stop') {
      publish('stopping', 'connected');
      setImmediate(() => {
        publish('idle', 'stopping');
        answer('idle');
      });
    } else if (action === 'start') {
      publish('starting', 'idle');
      setImmediate(() => {
        publish('connected', 'starting');
        answer('connected');
      });
    } else {
      response.writeHead(404).end();
    }
  });
  server.on('upgrade', (request, socket, head) => {
    sockets.handleUpgrade(request, socket, head, (webSocket) => {
      clients.add(webSocket);
      webSocket.on('close', () => clients.delete(webSocket));
      webSocket.send(JSON.stringify({ type: 'hello', version: 'bare', agents: [row], permissions: [], topics: ['status'], at: Date.now(), t: process.hrtime.bigint().toString() }));
    });
  });
  await new Promise<void>((resolve) => server.listen({ host: '127.0.0.1', port: 0 }, resolve));
  return {
    port: (server.address() as { port: number }).port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const client of clients) client.terminate();
        sockets.close();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
