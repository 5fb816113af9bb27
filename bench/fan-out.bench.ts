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
import { interleave, median, now, round, settledHeapUsed, type Phase, type Sample } from './lib/stats.js';

export interface FanOutSize {
  agents: number;
  rounds: number;
  /** Unmeasured rounds first, with `warmupAgents` agents. */
  warmup: number;
  warmupAgents: number;
}

export const defaultSize: FanOutSize = { agents: 50, rounds: 5, warmup: 1, warmupAgents: 10 };
export const smokeSize: FanOutSize = { agents: 3, rounds: 1, warmup: 0, warmupAgents: 0 };
export const goalRatio = 1.1;
export const goalHeapPerAgentKB = 64;

/** One side's fleet of connected agents, as `measure` needs it. */
interface Fleet {
  pids: number[];
  /** How long the synchronous loop that starts the agents took (before any is connected). */
  spawnLoopMs: number;
  stop(): Promise<void>;
}

export async function fanOutBench(size: FanOutSize = defaultSize, ctx: BenchContext = defaultContext()): Promise<BenchResult> {
  const pids: number[] = [];
  let stillRunningAfterShutdown = 0;
  const echo: AgentSpec = { command: process.execPath, args: [echoAgentScript], displayName: 'Echo' };

  /**
   * One round of either side, with the same marks: `connect(n)` until all n are connected,
   * then the fleet's `stop()`; the heap after forced GC before the first spawn and with all n
   * connected (outside both timed spans), and the parent's CPU over both spans.
   */
  const measure = async (n: number, connect: (n: number) => Promise<Fleet>): Promise<Sample> => {
    const heapBefore = await settledHeapUsed();
    const cpuAtStart = ownCpuMs();
    const start = now();
    const fleet = await connect(n);
    const connectMs = now() - start;
    pids.push(...fleet.pids);
    const connectCpuMs = ownCpuMs() - cpuAtStart;
    const heapAfter = await settledHeapUsed();
    const cpuAtStop = ownCpuMs();
    const stopStart = now();
    await fleet.stop();
    const shutdownMs = now() - stopStart;
    const cpuMs = connectCpuMs + ownCpuMs() - cpuAtStop;
    stillRunningAfterShutdown += fleet.pids.filter(isRunning).length;
    return {
      value: connectMs + shutdownMs,
      extra: { connectMs, spawnLoopMs: fleet.spawnLoopMs, shutdownMs, heapPerAgentKB: (heapAfter - heapBefore) / n / 1024, parentCpuMsPerAgent: cpuMs / n },
    };
  };

  const raw = async (n: number): Promise<Fleet> => {
    const loopStart = now();
    const starting = Array.from({ length: n }, () => startRawAgent(echoAgentScript));
    const spawnLoopMs = now() - loopStart;
    const agents: RawAgent[] = await Promise.all(starting);
    return {
      pids: agents.map((agent) => agent.pid),
      spawnLoopMs,
      stop: async () => {
        await Promise.all(agents.map((agent) => stopRawAgent(agent)));
      },
    };
  };

  const withAgentvisor = async (n: number): Promise<Fleet> => {
    const names = Array.from({ length: n }, (_, i) => `echo-${i}`);
    const supervisor = agentvisor.createSupervisor({ agents: Object.fromEntries(names.map((name) => [name, echo])), maxAgents: n });
    const loopStart = now();
    const starting = names.map((name) => supervisor.ensureAgent(name));
    const spawnLoopMs = now() - loopStart;
    const handles: AgentHandle[] = await Promise.all(starting).catch(async (error: unknown) => {
      await supervisor.shutdown();
      throw error;
    });
    return { pids: handles.map((handle) => handle.pid), spawnLoopMs, stop: () => supervisor.shutdown() };
  };

  const agentsIn = (phase: Phase) => (phase === 'warmup' ? size.warmupAgents : size.agents);
  const samples = await interleave({
    ...size,
    baseline: (phase) => measure(agentsIn(phase), raw),
    agentvisor: (phase) => measure(agentsIn(phase), withAgentvisor),
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
