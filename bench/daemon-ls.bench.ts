/**
 * daemon-ls: "`ls` for 100 agents answers ≤ 20 ms p99 over loopback". A daemon runs in this
 * process (`startDaemon`, port 0, the SQLite store in a temporary state directory) with
 * `agents` echo agents, all started and connected (real processes, idle). Then `GET
 * /v1/agents`, one request at a time, from an HTTP client in this same process: node:http
 * with a keep-alive agent of one socket (one loopback connection reused, as a dashboard's
 * fetches would be), the token and the Host header as the CLI sends them. One sample = the
 * full round trip, from the request call until the whole body is in (not parsed: both sides'
 * bodies are parsed and checked after the clock stops).
 *
 * Baseline (raw): a bare node:http server on loopback in this process that answers the same
 * request with `JSON.stringify` of the body the daemon answered (captured once before the
 * rounds; the same bytes), through a keep-alive client of its own — what serving that JSON
 * costs with no daemon: no gate, no router, no rows built from the supervisor. Sides rotated
 * (A B, B A, …), `requestsPerRound` requests each per round, after `warmupRequests` per side.
 * Both sides share the one event loop with their client, and with the idle agents' pipes.
 *
 * Goal (`met`): the daemon's p99 over all its requests ≤ goalP99Ms (absolute; the ratio
 * daemon / bare p99 is information); every answer lists every agent, connected; nothing left
 * behind. The headline numbers are p99s (every request of a side pooled).
 *
 * The whole command (details.cli, no goal): `node dist/cli/main.js ls --state-dir <dir>`,
 * spawned `cliRuns` times one after the other against the same daemon (it finds it through
 * daemon.json and daemon.token in the state directory), timed from spawn to exit, with
 * `node dist/cli/main.js --version` timed the same way as the floor (node + the CLI's
 * modules, no request). Skipped, and said so, when dist/cli/main.js is missing or has no `ls`.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Agent, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { echoAgentScript, type AgentSpec } from './lib/agentvisor.js';
import { callDaemon, cliEntry, daemonModule, keepAliveAgent, type AgentsBody, type Daemon, type Endpoint } from './lib/daemon.js';
import { ownCpuMs } from './lib/processes.js';
import { finish, leakCheck } from './lib/report.js';
import { defaultContext, type BenchContext, type BenchResult } from './lib/results.js';
import { now, quantile, quantiles, rotate, round, type Phase } from './lib/stats.js';

export interface DaemonLsSize {
  agents: number;
  rounds: number;
  requestsPerRound: number;
  /** Unmeasured requests per side first (0: none). */
  warmupRequests: number;
  /** Spawns of `agentvisor ls` (and of `--version`) after the rounds (0: none). */
  cliRuns: number;
}

export const defaultSize: DaemonLsSize = { agents: 100, rounds: 10, requestsPerRound: 50, warmupRequests: 50, cliRuns: 10 };
export const smokeSize: DaemonLsSize = { agents: 5, rounds: 1, requestsPerRound: 5, warmupRequests: 0, cliRuns: 1 };
/** The goal: the p99 round trip of `GET /v1/agents`, in ms. */
export const goalP99Ms = 20;

/** One side's round: each request's round trip (ms), the body size, this process's CPU. */
interface Round {
  ms: number[];
  bytes: number;
  cpuMs: number;
  wallMs: number;
  /** Every answer was a 200 that lists every agent as connected. */
  complete: boolean;
}

export async function daemonLsBench(size: DaemonLsSize = defaultSize, ctx: BenchContext = defaultContext()): Promise<BenchResult> {
  const dir = mkdtempSync(join(tmpdir(), 'agentvisor-bench-daemon-ls-'));
  const stateDir = join(dir, 'state');
  const echo: AgentSpec = { command: process.execPath, args: [echoAgentScript], displayName: 'Echo' };
  const names = Array.from({ length: size.agents }, (_, i) => `echo-${i}`);
  const pids: number[] = [];
  let daemon: Daemon | undefined;
  let bare: { endpoint: Endpoint; server: Server } | undefined;
  const clientAgents: Agent[] = [];
  let rounds: Record<string, Round[]>;
  let bodyBytes = 0;
  let cli: Record<string, unknown>;
  try {
    daemon = await daemonModule.startDaemon({ supervisor: { agents: Object.fromEntries(names.map((name) => [name, echo])), stateDir, maxAgents: size.agents }, port: 0 });
    ctx.log(`  daemon-ls: daemon on port ${daemon.port}, starting ${size.agents} agents`);
    // Started as fan-out starts them (not timed): every ensureAgent in flight together.
    const handles = await Promise.all(names.map((name) => daemon!.supervisor.ensureAgent(name)));
    pids.push(...handles.map((handle) => handle.pid));
    const endpoint: Endpoint = { port: daemon.port, token: daemon.token };

    const captured = await callDaemon(endpoint, 'GET', '/v1/agents');
    if (captured.status !== 200) throw new Error(`GET /v1/agents: ${captured.status} ${captured.text.slice(0, 300)}`);
    const body = JSON.parse(captured.text) as AgentsBody;
    bodyBytes = Buffer.byteLength(captured.text);
    bare = await bareJsonServer(body, daemon.token);

    const side = (target: Endpoint) => {
      const agent = keepAliveAgent();
      clientAgents.push(agent);
      return async (phase: Phase): Promise<Round> => {
        const count = phase === 'warmup' ? size.warmupRequests : size.requestsPerRound;
        const ms: number[] = [];
        const texts: string[] = [];
        let ok = true;
        const cpu = ownCpuMs();
        const start = now();
        for (let i = 0; i < count; i++) {
          const t0 = now();
          const answer = await callDaemon(target, 'GET', '/v1/agents', { agent });
          ms.push(now() - t0);
          ok &&= answer.status === 200;
          texts.push(answer.text);
        }
        const wallMs = now() - start;
        const cpuMs = ownCpuMs() - cpu;
        const complete = ok && texts.every((text) => isComplete(JSON.parse(text) as AgentsBody, names));
        return { ms, bytes: texts.length > 0 ? Buffer.byteLength(texts[0]!) : 0, cpuMs, wallMs, complete };
      };
    };
    rounds = await rotate<Round>({
      warmup: size.warmupRequests > 0 ? 1 : 0,
      rounds: size.rounds,
      sides: { bare: side(bare.endpoint), daemon: side(endpoint) },
      onRound: (i, r) =>
        ctx.log(`  daemon-ls round ${i}/${size.rounds} (${size.requestsPerRound} requests): bare p99 ${quantile(r['bare']!.ms, 0.99).toFixed(2)} ms, daemon p99 ${quantile(r['daemon']!.ms, 0.99).toFixed(2)} ms`),
    });
    cli = await measureCli(stateDir, size);
    if ('skipped' in cli) ctx.log(`  daemon-ls: agentvisor ls not measured: ${String(cli['skipped'])}`);
  } finally {
    for (const agent of clientAgents) agent.destroy();
    if (bare) await closeServer(bare.server);
    try {
      await daemon?.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  const leaks = await leakCheck(pids);
  const all = (name: string) => rounds[name]!.flatMap((r) => r.ms);
  const summary = (name: string) => {
    const sideRounds = rounds[name]!;
    const wallMs = sideRounds.reduce((sum, r) => sum + r.wallMs, 0);
    return {
      latencyMs: quantiles(all(name)),
      bytes: sideRounds[0]?.bytes ?? 0,
      /** This process's CPU per request (client + server), ms. */
      cpuMsPerRequest: round(sideRounds.reduce((sum, r) => sum + r.cpuMs, 0) / all(name).length, 3),
      /** p99 of each round: how much the rounds moved. */
      roundP99sMs: sideRounds.map((r) => round(quantile(r.ms, 0.99), 2)),
      wallMs: round(wallMs),
    };
  };
  const bareSummary = summary('bare');
  const daemonSummary = summary('daemon');
  const checks = {
    daemonP99: daemonSummary.latencyMs.p99 <= goalP99Ms,
    /** Every answer of both sides listed every agent, connected (and the bodies were the same size). */
    complete: rounds['daemon']!.every((r) => r.complete) && rounds['bare']!.every((r) => r.complete),
    allGone: leaks.leftover.length === 0,
  };
  return finish(ctx, {
    benchmark: 'daemon-ls',
    baseline: bareSummary.latencyMs.p99,
    agentvisor: daemonSummary.latencyMs.p99,
    unit: 'ms p99',
    ratio: round(daemonSummary.latencyMs.p99 / bareSummary.latencyMs.p99, 4),
    goal: `GET /v1/agents p99 ≤ ${goalP99Ms} ms (ratio to a bare node:http server: information); every agent listed; all gone`,
    met: Object.values(checks).every(Boolean),
    details: {
      size,
      checks,
      client: 'in-process node:http, keep-alive agent with one socket, requests one at a time',
      bodyBytes,
      sides: { bare: bareSummary, daemon: daemonSummary },
      cli,
      processes: { spawned: pids.length, leftover: leaks.leftover.length },
    },
  });
}

function isComplete(body: AgentsBody, names: readonly string[]): boolean {
  const connected = new Set(body.agents.filter((row) => row.status === 'connected').map((row) => row.name));
  return body.agents.length === names.length && names.every((name) => connected.has(name));
}

/** The baseline: a bare node:http server answering `JSON.stringify(body)` to any GET. */
async function bareJsonServer(body: AgentsBody, token: string): Promise<{ endpoint: Endpoint; server: Server }> {
  const server = createServer((request, response) => {
    request.resume();
    const text = JSON.stringify(body);
    response.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(text) });
    response.end(text);
  });
  await new Promise<void>((resolve) => server.listen({ host: '127.0.0.1', port: 0 }, resolve));
  return { endpoint: { port: (server.address() as { port: number }).port, token }, server };
}

function closeServer(server: Server): Promise<void> {
  return new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

interface Spawned {
  ms: number;
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Spawns `node dist/cli/main.js ...args` and times it from spawn to exit. */
function runCli(args: readonly string[]): Promise<Spawned> {
  return new Promise<Spawned>((resolve, reject) => {
    const start = now();
    const child = spawn(process.execPath, [cliEntry, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NO_COLOR: '1' } });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.once('error', reject);
    child.once('close', (code) => resolve({ ms: now() - start, code, stdout, stderr }));
  });
}

/** `agentvisor ls` against the daemon, and `--version` as the floor; skipped without the CLI. */
async function measureCli(stateDir: string, size: DaemonLsSize): Promise<Record<string, unknown>> {
  if (size.cliRuns === 0) return { skipped: 'cliRuns is 0' };
  if (!existsSync(cliEntry)) return { skipped: `${cliEntry} does not exist (npm run build builds it once cli/ exists)` };
  const help = await runCli(['ls', '--help']);
  if (help.code !== 0) return { skipped: `node dist/cli/main.js ls --help exited ${help.code}: ${help.stderr.trim().slice(0, 300)}` };
  const ls: number[] = [];
  const version: number[] = [];
  let rowsListed = 0;
  for (let i = 0; i < size.cliRuns; i++) {
    const listed = await runCli(['ls', '--state-dir', stateDir]);
    if (listed.code !== 0) return { error: `agentvisor ls exited ${listed.code}: ${listed.stderr.trim().slice(0, 500)}` };
    rowsListed = listed.stdout.split('\n').filter((line) => /\becho-\d+\b/.test(line)).length;
    ls.push(listed.ms);
    const floor = await runCli(['--version']);
    if (floor.code === 0) version.push(floor.ms);
  }
  return {
    command: `node dist/cli/main.js ls --state-dir <dir> (stdout a pipe: the table without colours)`,
    runs: size.cliRuns,
    lsMs: quantiles(ls),
    versionMs: quantiles(version),
    rowsListed,
  };
}
