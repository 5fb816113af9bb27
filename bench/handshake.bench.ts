/**
 * handshake: spawn the echo agent, `initialize`, stop (the agent exits when its stdin
 * closes) — one at a time, `rounds` rounds per side, interleaved with the raw baseline.
 * Goal: median time ratio agentvisor / raw ≤ 1.05.
 */
import { agentvisor, echoAgentScript } from './lib/agentvisor.js';
import { finish, headline, leakCheck, sampleDetails } from './lib/report.js';
import { startRawAgent, stopRawAgent } from './lib/raw-agent.js';
import { defaultContext, type BenchContext, type BenchResult } from './lib/results.js';
import { ownCpuMs } from './lib/processes.js';
import { interleave, now, round, type Sample } from './lib/stats.js';

export interface HandshakeSize {
  rounds: number;
  warmup: number;
}

export const defaultSize: HandshakeSize = { rounds: 30, warmup: 3 };
export const smokeSize: HandshakeSize = { rounds: 2, warmup: 0 };
export const goalRatio = 1.05;

export async function handshakeBench(size: HandshakeSize = defaultSize, ctx: BenchContext = defaultContext()): Promise<BenchResult> {
  const pids: number[] = [];
  const supervisor = agentvisor.createSupervisor({
    agents: { echo: { command: process.execPath, args: [echoAgentScript], displayName: 'Echo' } },
  });

  const baseline = async (): Promise<Sample> => {
    const cpu = ownCpuMs();
    const start = now();
    const agent = await startRawAgent(echoAgentScript);
    pids.push(agent.pid);
    const initialized = now();
    await stopRawAgent(agent);
    const end = now();
    return {
      value: end - start,
      extra: { spawnMs: agent.timings.spawned - start, toInitializedMs: initialized - start, stopMs: end - initialized, parentCpuMs: ownCpuMs() - cpu },
    };
  };

  const withAgentvisor = async (): Promise<Sample> => {
    const cpu = ownCpuMs();
    const start = now();
    const handle = await supervisor.ensureAgent('echo');
    pids.push(handle.pid);
    const initialized = now();
    await supervisor.stop('echo');
    const end = now();
    return { value: end - start, extra: { toInitializedMs: initialized - start, stopMs: end - initialized, parentCpuMs: ownCpuMs() - cpu } };
  };

  let samples;
  try {
    samples = await interleave({
      ...size,
      baseline,
      agentvisor: withAgentvisor,
      onRound: (i, a, b) => ctx.log(`  handshake round ${i}/${size.rounds}: raw ${a.value.toFixed(1)} ms, agentvisor ${b.value.toFixed(1)} ms`),
    });
  } finally {
    await supervisor.shutdown();
  }
  const leaks = await leakCheck(pids);
  const { baseline: base, agentvisor: av, ratio } = headline(samples);
  const met = ratio <= goalRatio && leaks.leftover.length === 0;
  return finish(ctx, {
    benchmark: 'handshake',
    baseline: base,
    agentvisor: av,
    unit: 'ms',
    ratio,
    goal: `ratio ≤ ${goalRatio}`,
    met,
    details: {
      size,
      ...sampleDetails(samples),
      processes: { spawned: leaks.checked, leftover: leaks.leftover.length },
      overheadMs: round(av - base),
    },
  });
}
