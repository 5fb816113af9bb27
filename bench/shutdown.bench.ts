/**
 * shutdown: `agents` connected fixture agents, `stubborn` of which ignore SIGTERM (fixture
 * `--ignore-sigterm`: they also ignore their closed stdin, so only SIGKILL ends them), then
 * `shutdown()` — timed from the call until it resolves. Raw baseline: the same ladder written
 * by hand for every agent in parallel (close stdin → wait shutdownTimeoutMs → SIGTERM the
 * group → wait killTimeoutMs → SIGKILL the group).
 *
 * The start-up of the fleet is not timed. Goals: every process gone when `shutdown()`
 * resolves, and time ≤ shutdownTimeoutMs + killTimeoutMs + 250 ms.
 *
 * Phases, in ms from the start of the shutdown: when the last SIGTERM and the last SIGKILL
 * went out (agentvisor: an agent actor entering `stopping.terminating` / `stopping.killing`),
 * when the last well-behaved agent was gone, and when the last one was. What follows the
 * last SIGKILL is the kernel tearing the processes down and the parent noticing.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { agentvisor, fixtureAgentScript, type AgentSpec } from './lib/agentvisor.js';
import { isRunning, readPidFile } from './lib/processes.js';
import { finish, headline, leakCheck, sampleDetails } from './lib/report.js';
import { startRawAgent, stopRawAgent } from './lib/raw-agent.js';
import { defaultContext, type BenchContext, type BenchResult } from './lib/results.js';
import { interleave, now, type Sample } from './lib/stats.js';

export interface ShutdownSize {
  agents: number;
  /** How many of them ignore SIGTERM. */
  stubborn: number;
  rounds: number;
  shutdownTimeoutMs: number;
  killTimeoutMs: number;
}

export const defaultSize: ShutdownSize = { agents: 100, stubborn: 10, rounds: 2, shutdownTimeoutMs: 500, killTimeoutMs: 500 };
export const smokeSize: ShutdownSize = { agents: 3, stubborn: 1, rounds: 1, shutdownTimeoutMs: 200, killTimeoutMs: 200 };
export const slackMs = 250;

type AgentRef = { subscribe(listener: (snapshot: { value: unknown }) => void): { unsubscribe(): void } };

/** The latest time (ms since the start) each phase was reached. */
class Phases {
  private readonly last = new Map<string, number>();

  mark(phase: string, start: number): void {
    this.last.set(phase, now() - start);
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
  let runningAfterShutdown = 0;

  const baseline = async (): Promise<Sample> => {
    const agents = await Promise.all(Array.from({ length: size.agents }, (_, i) => startRawAgent(fixtureAgentScript, flagsOf(i))));
    const phases = new Phases();
    const start = now();
    await Promise.all(
      agents.map((agent, i) =>
        stopRawAgent(agent, timeouts, (rung) => phases.mark(rung, start)).then(() => phases.mark(i < size.stubborn ? 'stubbornGone' : 'wellBehavedGone', start)),
      ),
    );
    const end = now();
    runningAfterShutdown += agents.filter((agent) => isRunning(agent.pid)).length;
    return { value: end - start, extra: phases.extra(end - start) };
  };

  const withAgentvisor = async (): Promise<Sample> => {
    const agents: Record<string, AgentSpec> = {};
    for (let i = 0; i < size.agents; i++) agents[`fixture-${i}`] = { command: process.execPath, args: [fixtureAgentScript, ...flagsOf(i)], displayName: 'Fixture' };
    const supervisor = agentvisor.createSupervisor({ agents, maxAgents: size.agents, ...timeouts });
    const handles = await Promise.all(Object.keys(agents).map((name) => supervisor.ensureAgent(name))).catch(async (error: unknown) => {
      await supervisor.shutdown();
      throw error;
    });
    // The ladder's rungs as the agent actors enter them, and each agent's way to idle.
    const phases = new Phases();
    let start = 0;
    const names = Object.keys(agents);
    const subscriptions = names.map((name, i) => {
      const child = supervisor.actor.getSnapshot().children[name] as unknown as AgentRef;
      return child.subscribe((snapshot) => {
        const value = snapshot.value as Record<string, unknown> | string;
        if (typeof value === 'object' && value['stopping'] === 'terminating') phases.mark('SIGTERM', start);
        else if (typeof value === 'object' && value['stopping'] === 'killing') phases.mark('SIGKILL', start);
        else if (value === 'idle') phases.mark(i < size.stubborn ? 'stubbornGone' : 'wellBehavedGone', start);
      });
    });
    start = now();
    await supervisor.shutdown();
    const end = now();
    for (const subscription of subscriptions) subscription.unsubscribe();
    runningAfterShutdown += handles.filter((handle) => isRunning(handle.pid)).length;
    return { value: end - start, extra: phases.extra(end - start) };
  };

  let samples;
  let spawned: number[] = [];
  try {
    samples = await interleave({
      warmup: 0,
      rounds: size.rounds,
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
    allGone: runningAfterShutdown === 0 && leaks.leftover.length === 0 && spawned.length === size.agents * size.rounds * 2,
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
