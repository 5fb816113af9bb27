/**
 * fan-out: `agents` echo agents started at once (`ensureAgent` × N, all in flight together)
 * until every one is connected, then `shutdown()`. Raw baseline: N × (execa + SDK
 * `initialize`) with Promise.all, then N × the stop ladder.
 *
 * Measured per round: connect time + shutdown time (the heap snapshot taken between them is
 * excluded), and the parent's heap growth per connected agent (after forced GC, before the
 * first spawn vs with all N connected). Children's memory is not counted.
 *
 * Goals: time ratio ≤ 1.10; agentvisor's heap growth per agent *net of the raw baseline's*
 * (i.e. what agentvisor adds on top of the execa child + SDK connection every consumer
 * holds) ≤ 64 KB — the gross figure is reported too; every process gone once `shutdown()`
 * resolves.
 */
import { agentvisor, echoAgentScript, type AgentHandle, type AgentSpec } from './lib/agentvisor.js';
import { isRunning, ownCpuMs } from './lib/processes.js';
import { finish, headline, leakCheck, sampleDetails } from './lib/report.js';
import { startRawAgent, stopRawAgent, type RawAgent } from './lib/raw-agent.js';
import { defaultContext, type BenchContext, type BenchResult } from './lib/results.js';
import { interleave, median, now, round, settledHeapUsed, type Sample } from './lib/stats.js';

export interface FanOutSize {
  agents: number;
  rounds: number;
  /** Unmeasured rounds first, with `warmupAgents` agents. */
  warmup: number;
  warmupAgents: number;
}

export const defaultSize: FanOutSize = { agents: 100, rounds: 2, warmup: 1, warmupAgents: 10 };
export const smokeSize: FanOutSize = { agents: 3, rounds: 1, warmup: 0, warmupAgents: 0 };
export const goalRatio = 1.1;
export const goalHeapPerAgentKB = 64;

export async function fanOutBench(size: FanOutSize = defaultSize, ctx: BenchContext = defaultContext()): Promise<BenchResult> {
  const pids: number[] = [];
  let stillRunningAfterShutdown = 0;
  const echo: AgentSpec = { command: process.execPath, args: [echoAgentScript], displayName: 'Echo' };

  const baselineRound = async (n: number): Promise<Sample> => {
    const heapBefore = await settledHeapUsed();
    const cpu = ownCpuMs();
    const start = now();
    const starting = Array.from({ length: n }, () => startRawAgent(echoAgentScript));
    const spawnLoopMs = now() - start;
    const agents: RawAgent[] = await Promise.all(starting);
    const connected = now();
    for (const agent of agents) pids.push(agent.pid);
    const cpuConnect = ownCpuMs() - cpu;
    const heapAfter = await settledHeapUsed();
    const cpuStop = ownCpuMs();
    const stopStart = now();
    await Promise.all(agents.map((agent) => stopRawAgent(agent)));
    const end = now();
    stillRunningAfterShutdown += agents.filter((agent) => isRunning(agent.pid)).length;
    return roundSample(n, { start, connected, stopStart, end, spawnLoopMs, heapBefore, heapAfter, cpuConnect, cpuStop });
  };

  const agentvisorRound = async (n: number): Promise<Sample> => {
    const heapBefore = await settledHeapUsed();
    const cpu = ownCpuMs();
    const start = now();
    const names = Array.from({ length: n }, (_, i) => `echo-${i}`);
    const supervisor = agentvisor.createSupervisor({ agents: Object.fromEntries(names.map((name) => [name, echo])), maxAgents: n });
    let handles: AgentHandle[];
    let spawnLoopMs = 0;
    try {
      const loopStart = now();
      const starting = names.map((name) => supervisor.ensureAgent(name));
      spawnLoopMs = now() - loopStart;
      handles = await Promise.all(starting);
    } catch (error) {
      await supervisor.shutdown();
      throw error;
    }
    const connected = now();
    for (const handle of handles) pids.push(handle.pid);
    const cpuConnect = ownCpuMs() - cpu;
    const heapAfter = await settledHeapUsed();
    const cpuStop = ownCpuMs();
    const stopStart = now();
    await supervisor.shutdown();
    const end = now();
    stillRunningAfterShutdown += handles.filter((handle) => isRunning(handle.pid)).length;
    return roundSample(n, { start, connected, stopStart, end, spawnLoopMs, heapBefore, heapAfter, cpuConnect, cpuStop });
  };

  for (let i = 0; i < size.warmup; i++) {
    await baselineRound(size.warmupAgents);
    await agentvisorRound(size.warmupAgents);
  }
  const samples = await interleave({
    warmup: 0,
    rounds: size.rounds,
    baseline: () => baselineRound(size.agents),
    agentvisor: () => agentvisorRound(size.agents),
    onRound: (i, a, b) =>
      ctx.log(
        `  fan-out round ${i}/${size.rounds} (${size.agents} agents): raw ${a.value.toFixed(0)} ms, agentvisor ${b.value.toFixed(0)} ms; ` +
          `heap/agent raw ${a.extra!['heapPerAgentKB']!.toFixed(1)} KB, agentvisor ${b.extra!['heapPerAgentKB']!.toFixed(1)} KB`,
      ),
  });
  const leaks = await leakCheck(pids);
  const { baseline, agentvisor: av, ratio } = headline(samples);
  const heapRaw = median(samples.baseline.map((s) => s.extra!['heapPerAgentKB']!));
  const heapAv = median(samples.agentvisor.map((s) => s.extra!['heapPerAgentKB']!));
  const heapNet = heapAv - heapRaw;
  const checks = {
    timeRatio: ratio <= goalRatio,
    heapNetPerAgent: heapNet <= goalHeapPerAgentKB,
    allGoneAfterShutdown: stillRunningAfterShutdown === 0 && leaks.leftover.length === 0,
  };
  return finish(ctx, {
    benchmark: 'fan-out',
    baseline,
    agentvisor: av,
    unit: 'ms',
    ratio,
    goal: `ratio ≤ ${goalRatio}, heap/agent (net of raw) ≤ ${goalHeapPerAgentKB} KB, all gone`,
    met: Object.values(checks).every(Boolean),
    details: {
      size,
      checks,
      heapPerAgentKB: { baseline: round(heapRaw, 1), agentvisorGross: round(heapAv, 1), agentvisorNet: round(heapNet, 1) },
      ...sampleDetails(samples),
      processes: { spawned: leaks.checked, runningRightAfterShutdown: stillRunningAfterShutdown, leftover: leaks.leftover.length },
    },
  });
}

/** One fan-out round's sample, from the marks both sides take at the same points. */
function roundSample(
  n: number,
  marks: { start: number; connected: number; stopStart: number; end: number; spawnLoopMs: number; heapBefore: number; heapAfter: number; cpuConnect: number; cpuStop: number },
): Sample {
  return {
    value: marks.connected - marks.start + (marks.end - marks.stopStart),
    extra: {
      connectMs: marks.connected - marks.start,
      spawnLoopMs: marks.spawnLoopMs,
      shutdownMs: marks.end - marks.stopStart,
      heapPerAgentKB: (marks.heapAfter - marks.heapBefore) / n / 1024,
      parentCpuMsPerAgent: (marks.cpuConnect + ownCpuMs() - marks.cpuStop) / n,
    },
  };
}
