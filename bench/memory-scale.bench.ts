/**
 * memory-scale: does the supervisor's memory stay flat while a large fleet streams? `agents`
 * fixture agents (real processes) with `sessionsPerAgent` sessions each, every session
 * streaming without pause: back-to-back turns of the fixture's `slow` prompt command, each
 * `chunksPerTurn` small `agent_message_chunk` updates (`chunkText`) `chunkIntervalMs` apart
 * (default: 2 chunks/s per session, 2,000 updates/s over the 1,000 sessions: a modest
 * steady pace, the sessions' starts staggered over one interval so the load is even).
 *
 * One supervisor, as an embedding app would run it: the default SQLite store in a temporary
 * state directory (removed at the end), `containment` left at its default ('auto': its kind
 * is reported), `maxAgents` raised to `agents` (the default, 8, would refuse the fleet). The
 * agents are started `startConcurrency` at a time, then the sessions opened (none of it is
 * part of the run's clock).
 *
 * Sampling: every `sampleMs` from the moment every session streams, `process.memoryUsage()`
 * of this (the supervisor's) process after a forced full GC (lib/stats.ts `collectGarbage`,
 * which uses `global.gc` when --expose-gc is given and enables it otherwise), so that a
 * sample is the live heap, not garbage awaiting collection; the GC pause is reported. The
 * first `warmupMs` (the first minute by default) is the fleet settling: caches filling,
 * the store's file and page cache growing, code optimized. The measured window is the next
 * `measureMs` (by default minute 1 to minute 2): its start is the median of its first
 * `edgeSamples` samples, its end the median of its last `edgeSamples` samples.
 *
 * Result: baseline = heapUsed at the start of the window, agentvisor = heapUsed at its end
 * (MiB), ratio = end / start. No raw-SDK side runs: the question is whether agentvisor's
 * memory grows with time under a steady load, and the baseline is its own heap a minute
 * earlier. details.perAgent / perSession: what the fleet costs the supervisor process —
 * heap and RSS at the start of the window minus before the supervisor was created, divided
 * by agents and by sessions (the per-agent figure includes its sessions'; children's memory
 * is not counted there; their total RSS is details.agentProcessesRssMiB).
 *
 * Goal (`met`): heap ratio ≤ 1.05 (growth ≤ 5 % over the window); every session streamed
 * during the window and no turn failed; no `store:error`; no process left behind. The RSS
 * ratio over the same window is reported (details.checks.rssRatio) as information: RSS also
 * follows the allocator and SQLite's page cache, which do not give memory back.
 */
import { setMaxListeners } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { agentvisor, fixtureAgentScript, type Supervisor } from './lib/agentvisor.js';
import { finish, leakCheck } from './lib/report.js';
import { defaultContext, type BenchContext, type BenchResult } from './lib/results.js';
import { collectGarbage, median, now, quantiles, round, sleep } from './lib/stats.js';

export interface MemoryScaleSize {
  agents: number;
  sessionsPerAgent: number;
  /** Streaming before the measured window opens (sampled too, not measured). */
  warmupMs: number;
  /** The measured window. */
  measureMs: number;
  sampleMs: number;
  /** Samples at each edge of the window whose median is its start (end) value. */
  edgeSamples: number;
  /** One turn: `chunksPerTurn` chunks of `chunkText`, `chunkIntervalMs` apart; the session's next turn follows at once. */
  chunksPerTurn: number;
  chunkIntervalMs: number;
  chunkText: string;
  /** Agents whose start (spawn + handshake) is in flight at once. */
  startConcurrency: number;
}

export const defaultSize: MemoryScaleSize = {
  agents: 100,
  sessionsPerAgent: 10,
  warmupMs: 60_000,
  measureMs: 60_000,
  sampleMs: 1_000,
  edgeSamples: 5,
  chunksPerTurn: 10,
  chunkIntervalMs: 500,
  chunkText: 'a small chunk of streamed text ',
  startConcurrency: 10,
};
export const smokeSize: MemoryScaleSize = {
  agents: 3,
  sessionsPerAgent: 2,
  warmupMs: 1_000,
  measureMs: 3_000,
  sampleMs: 1_000,
  edgeSamples: 1,
  chunksPerTurn: 5,
  chunkIntervalMs: 100,
  chunkText: 'a small chunk of streamed text ',
  startConcurrency: 3,
};
/** Heap at the end of the window / at its start. */
export const goalRatio = 1.05;

interface MemorySample {
  /** ms since every session started streaming. */
  atMs: number;
  heapUsed: number;
  rss: number;
  external: number;
  gcMs: number;
}

/** agentvisor's Session (the type lib/agentvisor.ts does not re-export). */
type Session = Awaited<ReturnType<Supervisor['newSession']>>;

const mib = (bytes: number) => round(bytes / 1024 / 1024, 2);

export async function memoryScaleBench(size: MemoryScaleSize = defaultSize, ctx: BenchContext = defaultContext()): Promise<BenchResult> {
  const spec = { command: process.execPath, args: [fixtureAgentScript], displayName: 'Fixture' };
  const names = Array.from({ length: size.agents }, (_, i) => `fixture-${i}`);
  const totalSessions = size.agents * size.sessionsPerAgent;
  const command = JSON.stringify({ op: 'slow', count: size.chunksPerTurn, intervalMs: size.chunkIntervalMs, text: size.chunkText });
  const stateDir = mkdtempSync(join(tmpdir(), 'agentvisor-bench-memory-scale-'));
  const pids: number[] = [];
  const samples: MemorySample[] = [];
  const received: number[] = new Array<number>(totalSessions).fill(0);
  const turnErrors: string[] = [];
  const storeErrors = { count: 0, droppedWrites: 0 };
  const stop = new AbortController();
  // Every running turn listens to `stop` (prompt's `signal`, removed when the turn ends): one listener per session.
  setMaxListeners(totalSessions + 10, stop.signal);
  let supervisor: Supervisor | undefined;
  let loops: Array<Promise<void>> = [];
  let containmentKind = 'unknown';
  let atWindowStart: number[] = [];
  let atWindowEnd: number[] = [];
  let turnsDone = 0;
  let agentRss = Number.NaN;
  let transcriptEntries = Number.NaN;

  await collectGarbage();
  const before = process.memoryUsage();
  try {
    supervisor = agentvisor.createSupervisor({ stateDir, maxAgents: size.agents, agents: Object.fromEntries(names.map((name) => [name, spec])) });
    const sup = supervisor;
    sup.on('store:error', ({ droppedWrites }) => {
      storeErrors.count++;
      storeErrors.droppedWrites += droppedWrites;
    });
    const startedAt = now();
    await mapLimit(names, size.startConcurrency, async (name) => {
      const handle = await sup.ensureAgent(name);
      pids.push(handle.pid);
    });
    containmentKind = sup.containment.kind ?? 'none';
    const sessions = await mapLimit(
      Array.from({ length: totalSessions }, (_, i) => names[Math.floor(i / size.sessionsPerAgent)]!),
      size.startConcurrency * size.sessionsPerAgent,
      (name) => sup.newSession(name, { cwd: process.cwd() }),
    );
    ctx.log(`  memory-scale: ${size.agents} agents (containment ${containmentKind}), ${totalSessions} sessions open in ${((now() - startedAt) / 1000).toFixed(1)} s`);

    sessions.forEach((session, i) =>
      session.on('update', (update) => {
        if (update.sessionUpdate === 'agent_message_chunk') received[i]!++;
      }),
    );
    /** A session's stream: turn after turn until `stop`; the first turn waits its share of one interval. */
    const stream = async (session: Session, i: number) => {
      await sleep((size.chunkIntervalMs * i) / totalSessions);
      while (!stop.signal.aborted) {
        try {
          const stopReason = await session.prompt(command, { signal: stop.signal });
          if (stopReason === 'end_turn') turnsDone++;
          else if (!stop.signal.aborted) throw new Error(`stop reason ${stopReason}`);
        } catch (error) {
          if (stop.signal.aborted) return;
          turnErrors.push(`session ${i}: ${error instanceof Error ? error.message : String(error)}`);
          return;
        }
      }
    };
    loops = sessions.map((session, i) => stream(session, i));

    // Sample every sampleMs on a fixed schedule (a sample's GC does not delay the next one).
    const t0 = now();
    const windowStartIndex = Math.round(size.warmupMs / size.sampleMs);
    const count = windowStartIndex + Math.round(size.measureMs / size.sampleMs);
    for (let k = 0; k <= count; k++) {
      await sleep(Math.max(0, t0 + k * size.sampleMs - now()));
      if (k === windowStartIndex) atWindowStart = [...received];
      const gcStart = now();
      await collectGarbage();
      const gcMs = now() - gcStart;
      const usage = process.memoryUsage();
      samples.push({ atMs: now() - t0, heapUsed: usage.heapUsed, rss: usage.rss, external: usage.external, gcMs });
      if (k % Math.max(1, Math.round(10_000 / size.sampleMs)) === 0 || k === count) {
        ctx.log(`  memory-scale ${(samples.at(-1)!.atMs / 1000).toFixed(0)} s${k < windowStartIndex ? ' (warm-up)' : ''}: heap ${mib(usage.heapUsed)} MiB, rss ${mib(usage.rss)} MiB, ${turnsDone} turns`);
      }
    }
    atWindowEnd = [...received];
    agentRss = pids.reduce((sum, pid) => sum + vmRssBytes(pid), 0);
    stop.abort();
    await Promise.all(loops);
    transcriptEntries = (await sup.storeStats()).transcript.count;
  } finally {
    stop.abort();
    await Promise.all(loops);
    try {
      if (supervisor) await supervisor.shutdown();
    } finally {
      rmSync(stateDir, { recursive: true, force: true });
    }
  }
  const leaks = await leakCheck(pids);

  const windowStartIndex = Math.round(size.warmupMs / size.sampleMs);
  const window = samples.slice(windowStartIndex);
  const edge = Math.max(1, Math.min(size.edgeSamples, Math.floor(window.length / 2)));
  const startOf = (key: 'heapUsed' | 'rss') => median(window.slice(0, edge).map((s) => s[key]));
  const endOf = (key: 'heapUsed' | 'rss') => median(window.slice(-edge).map((s) => s[key]));
  const heap = { start: startOf('heapUsed'), end: endOf('heapUsed') };
  const rss = { start: startOf('rss'), end: endOf('rss') };
  const heapRatio = round(heap.end / heap.start, 4);
  const rssRatio = round(rss.end / rss.start, 4);
  const windowS = (window.at(-1)!.atMs - window[0]!.atMs) / 1000;
  const updatesInWindow = atWindowEnd.map((n, i) => n - (atWindowStart[i] ?? 0));
  const per = (bytes: number, n: number) => round(bytes / n / 1024, 1);
  const checks = {
    heapRatio: heapRatio <= goalRatio,
    /** Information only (not required by `met`). */
    rssRatio: rssRatio <= goalRatio,
    everySessionStreamed: updatesInWindow.length === totalSessions && updatesInWindow.every((n) => n > 0) && turnErrors.length === 0,
    noStoreError: storeErrors.count === 0,
    allGone: leaks.leftover.length === 0,
  };
  ctx.log(
    `  memory-scale window ${windowS.toFixed(0)} s: heap ${mib(heap.start)} → ${mib(heap.end)} MiB (×${heapRatio}), rss ${mib(rss.start)} → ${mib(rss.end)} MiB (×${rssRatio}); ` +
      `${per(heap.start - before.heapUsed, size.agents)} KiB heap per agent, ${per(heap.start - before.heapUsed, totalSessions)} KiB per session; ` +
      `${round(updatesInWindow.reduce((a, b) => a + b, 0) / windowS, 0)} updates/s`,
  );
  return finish(ctx, {
    benchmark: 'memory-scale',
    baseline: mib(heap.start),
    agentvisor: mib(heap.end),
    unit: 'MiB heap',
    ratio: heapRatio,
    goal: `heap end/start of the window ≤ ${goalRatio}; every session streamed; no store error; all gone (rss: information)`,
    met: checks.heapRatio && checks.everySessionStreamed && checks.noStoreError && checks.allGone,
    details: {
      size,
      checks,
      note: 'baseline: heapUsed at the start of the measured window, agentvisor: at its end (MiB, after a forced GC); no raw side',
      containment: containmentKind,
      sessions: totalSessions,
      heapMiB: { beforeSupervisor: mib(before.heapUsed), windowStart: mib(heap.start), windowEnd: mib(heap.end), ratio: heapRatio },
      rssMiB: { beforeSupervisor: mib(before.rss), windowStart: mib(rss.start), windowEnd: mib(rss.end), ratio: rssRatio },
      heapSlopeKiBPerMin: round(slope(window.map((s) => [s.atMs / 60_000, s.heapUsed / 1024])), 1),
      perAgent: { heapKiB: per(heap.start - before.heapUsed, size.agents), rssKiB: per(rss.start - before.rss, size.agents) },
      perSession: { heapKiB: per(heap.start - before.heapUsed, totalSessions), rssKiB: per(rss.start - before.rss, totalSessions) },
      agentProcessesRssMiB: { total: mib(agentRss), perAgent: mib(agentRss / size.agents) },
      stream: {
        windowS: round(windowS, 1),
        updatesPerS: round(updatesInWindow.reduce((a, b) => a + b, 0) / windowS, 1),
        updatesPerSessionInWindow: quantiles(updatesInWindow),
        turnsCompleted: turnsDone,
        turnErrors: turnErrors.length,
        firstTurnErrors: turnErrors.slice(0, 5),
        transcriptEntries,
      },
      gcPauseMs: quantiles(samples.map((s) => s.gcMs)),
      samples: samples.map((s) => [round(s.atMs / 1000, 1), mib(s.heapUsed), mib(s.rss), mib(s.external)]),
      samplesColumns: ['s', 'heapUsed MiB', 'rss MiB', 'external MiB'],
      storeErrors,
      processes: { spawned: pids.length, leftover: leaks.leftover.length },
    },
  });
}

/** Runs `task` over `items`, at most `limit` at once; results in order. */
async function mapLimit<T, R>(items: readonly T[], limit: number, task: (item: T) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await task(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

/** Least-squares slope of y over x. */
function slope(points: ReadonlyArray<readonly [number, number]>): number {
  const n = points.length;
  const mx = points.reduce((sum, [x]) => sum + x, 0) / n;
  const my = points.reduce((sum, [, y]) => sum + y, 0) / n;
  const sxy = points.reduce((sum, [x, y]) => sum + (x - mx) * (y - my), 0);
  const sxx = points.reduce((sum, [x]) => sum + (x - mx) ** 2, 0);
  return sxx === 0 ? 0 : sxy / sxx;
}

/** A process's resident set (bytes) from /proc; 0 if it is gone or unreadable. */
function vmRssBytes(pid: number): number {
  try {
    const match = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}
