/**
 * shutdown: `agents` connected fixture agents, `stubborn` of which ignore SIGTERM (fixture
 * `--ignore-sigterm`: they also ignore their closed stdin, so only SIGKILL ends them), then
 * `shutdown()` — timed from the call until it resolves. Raw baseline: the same ladder written
 * by hand for every agent in parallel (close stdin → wait shutdownTimeoutMs → SIGTERM the
 * group → wait killTimeoutMs → SIGKILL the group).
 *
 * The start-up of the fleet is not timed. A warm-up round of `warmupAgents` per side, then
 * `rounds` measured ones, sides in alternating order (A B, B A, ...). Goals: every process
 * gone when `shutdown()` resolves, and time ≤ shutdownTimeoutMs + killTimeoutMs + 250 ms.
 *
 * Phases, in ms from the start of the shutdown: when the last SIGTERM and the last SIGKILL
 * went out (agentvisor: an agent actor entering `stopping.terminating` / `stopping.killing`),
 * when the last well-behaved agent was gone (raw: its `exit` event; agentvisor: its actor
 * back in `idle`), and when the last one was. What follows the last SIGKILL is the kernel
 * tearing the processes down and the parent noticing.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { watchAgentStates } from './lib/agent-states.js';
import { agentvisor, fixtureAgentScript, type AgentSpec } from './lib/agentvisor.js';
import { isRunning, readPidFile } from './lib/processes.js';
import { finish, headline, leakCheck, sampleDetails } from './lib/report.js';
import { startRawAgent, stopRawAgent } from './lib/raw-agent.js';
import { defaultContext, type BenchContext, type BenchResult } from './lib/results.js';
import { interleave, now, type Phase, type Sample } from './lib/stats.js';

export interface ShutdownSize {
  agents: number;
  /** How many of them ignore SIGTERM (of the warm-up's agents too). */
  stubborn: number;
  rounds: number;
  /** Unmeasured rounds first, with `warmupAgents` agents. */
  warmup: number;
  warmupAgents: number;
  shutdownTimeoutMs: number;
  killTimeoutMs: number;
}

export const defaultSize: ShutdownSize = { agents: 50, stubborn: 5, rounds: 5, warmup: 1, warmupAgents: 10, shutdownTimeoutMs: 500, killTimeoutMs: 500 };
export const smokeSize: ShutdownSize = { agents: 3, stubborn: 1, rounds: 1, warmup: 0, warmupAgents: 0, shutdownTimeoutMs: 200, killTimeoutMs: 200 };
export const slackMs = 250;

/** The latest time (ms since `begin()`) each phase was reached. */
class Phases {
  private readonly last = new Map<string, number>();
  private start = 0;

  /** Agents 0 .. stubborn - 1 are the ones that ignore SIGTERM. */
  constructor(private readonly stubborn: number) {}

  begin(): void {
    this.start = now();
  }

  elapsed(): number {
    return now() - this.start;
  }

  mark(phase: string): void {
    this.last.set(phase, this.elapsed());
  }

  /** Marks agent `i` gone, as one of the stubborn ones or of the well-behaved ones. */
  gone(i: number): void {
    this.mark(i < this.stubborn ? 'stubbornGone' : 'wellBehavedGone');
  }

  extra(totalMs: number): Record<string, number> {
    const killed = this.last.get('SIGKILL');
    return {
      lastSigtermMs: this.last.get('SIGTERM') ?? Number.NaN,
      lastSigkillMs: killed ?? Number.NaN,
      wellBehavedGoneMs: this.last.get('wellBehavedGone') ?? Number.NaN,
      allGoneAfterLastSigkillMs: killed === undefined ? Number.NaN : totalMs - killed,
    };
  }
}

export async function shutdownBench(size: ShutdownSize = defaultSize, ctx: BenchContext = defaultContext()): Promise<BenchResult> {
  const dir = mkdtempSync(join(tmpdir(), 'agentvisor-bench-'));
  const pidFile = join(dir, 'pids.txt');
  const timeouts = { shutdownTimeoutMs: size.shutdownTimeoutMs, killTimeoutMs: size.killTimeoutMs };
  const flagsOf = (i: number) => (i < size.stubborn ? ['--ignore-sigterm', '--pid-file', pidFile] : ['--pid-file', pidFile]);
  const agentsIn = (phase: Phase) => (phase === 'warmup' ? size.warmupAgents : size.agents);
  let runningAfterShutdown = 0;

  /** Both sides' timed part: `stop()` from the call until it resolves, then who still runs. */
  const timed = async (phases: Phases, pids: readonly number[], stop: () => Promise<void>): Promise<Sample> => {
    phases.begin();
    await stop();
    const totalMs = phases.elapsed();
    runningAfterShutdown += pids.filter(isRunning).length;
    return { value: totalMs, extra: phases.extra(totalMs) };
  };

  const baseline = async (phase: Phase): Promise<Sample> => {
    const agents = await Promise.all(Array.from({ length: agentsIn(phase) }, (_, i) => startRawAgent(fixtureAgentScript, flagsOf(i))));
    const phases = new Phases(size.stubborn);
    return timed(
      phases,
      agents.map((agent) => agent.pid),
      async () => {
        await Promise.all(agents.map((agent, i) => stopRawAgent(agent, timeouts, (rung) => phases.mark(rung)).then(() => phases.gone(i))));
      },
    );
  };

  const withAgentvisor = async (phase: Phase): Promise<Sample> => {
    const agents: Record<string, AgentSpec> = {};
    for (let i = 0; i < agentsIn(phase); i++) agents[`fixture-${i}`] = { command: process.execPath, args: [fixtureAgentScript, ...flagsOf(i)], displayName: 'Fixture' };
    const supervisor = agentvisor.createSupervisor({ agents, maxAgents: agentsIn(phase), ...timeouts });
    const handles = await Promise.all(Object.keys(agents).map((name) => supervisor.ensureAgent(name))).catch(async (error: unknown) => {
      await supervisor.shutdown();
      throw error;
    });
    // The ladder's rungs as the agent actors enter them, and each agent's way to idle.
    const phases = new Phases(size.stubborn);
    const unwatch = watchAgentStates(supervisor, Object.keys(agents), (i, state) => {
      if (state === 'stopping.terminating') phases.mark('SIGTERM');
      else if (state === 'stopping.killing') phases.mark('SIGKILL');
      else if (state === 'idle') phases.gone(i);
    });
    const sample = await timed(
      phases,
      handles.map((handle) => handle.pid),
      () => supervisor.shutdown(),
    );
    unwatch();
    return sample;
  };

  let samples;
  let spawned: number[];
  try {
    samples = await interleave({
      ...size,
      baseline,
      agentvisor: withAgentvisor,
      onRound: (i, a, b) => ctx.log(`  shutdown round ${i}/${size.rounds} (${size.agents} agents, ${size.stubborn} stubborn): raw ${a.value.toFixed(0)} ms, agentvisor ${b.value.toFixed(0)} ms`),
    });
  } finally {
    spawned = readPidFile(pidFile);
    rmSync(dir, { recursive: true, force: true });
  }
  const leaks = await leakCheck(spawned);
  const { baseline: base, agentvisor: av, ratio } = headline(samples);
  const boundMs = size.shutdownTimeoutMs + size.killTimeoutMs + slackMs;
  const worstAgentvisor = Math.max(...samples.agentvisor.map((s) => s.value));
  const checks = {
    withinBound: av <= boundMs,
    allGone: runningAfterShutdown === 0 && leaks.leftover.length === 0 && spawned.length === (size.agents * size.rounds + size.warmupAgents * size.warmup) * 2,
  };
  return finish(ctx, {
    benchmark: 'shutdown',
    baseline: base,
    agentvisor: av,
    unit: 'ms',
    ratio,
    goal: `≤ ${boundMs} ms (${size.shutdownTimeoutMs}+${size.killTimeoutMs}+${slackMs}), all gone`,
    met: Object.values(checks).every(Boolean),
    details: {
      size,
      boundMs,
      worstAgentvisorMs: Math.round(worstAgentvisor),
      checks,
      ...sampleDetails(samples),
      processes: { spawned: spawned.length, runningRightAfterShutdown: runningAfterShutdown, leftover: leaks.leftover.length },
    },
  });
}
