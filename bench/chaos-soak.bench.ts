/**
 * chaos-soak: how many prompts a supervisor completes while its agents are killed and frozen
 * at random, and what of it the defaults (containment and the SQLite store) cost.
 *
 * `agents` echo agents, one caller each: open a session, prompt one word again and again;
 * on any error, close that session, wait `retryMs`, open a new one. Meanwhile, every
 * `chaosEveryMs`, a chaos step picks an agent at random and either SIGKILLs its process
 * (share `killShare`) or SIGSTOPs it and SIGCONTs it `stopForMs` later (a frozen agent: its
 * calls wait). After `durationMs` the chaos stops (everything frozen is continued), the
 * callers finish the call they are in and stop, and the supervisor shuts down.
 *
 * Five configurations of the same build, in rotated rounds (A B C D E, E D C B A, …), each
 * with the same chaos (a seeded schedule: the same agent indices, actions and pauses):
 * - `none+memory` (the baseline): `containment: 'none'`, `store: 'memory'`;
 * - `auto+sqlite`: `containment: 'auto'` and the SQLite store, the two defaults suspected of
 *   halving a soak's throughput;
 * - `auto+memory` and `none+sqlite`: each of them alone, so a difference is attributed;
 * - `defaults`: everything as shipped, the restart limits too.
 * The first four raise the restart limits out of the way (the supervisor-wide overload hold
 * and each agent's restart intensity), so that they compare containment and the store only;
 * `defaults` shows what the limits do under chaos (docs/performance.md, chaos-soak).
 * Every configuration: `maxAgents` = agents (the default 8 would queue half of them), the
 * restart backoff as shipped.
 *
 * Value: prompts completed per second of chaos (higher is better). Ratio = auto+sqlite /
 * none+memory. Goal (`met`): ratio ≥ 0.90 and no process left behind. Also checked and
 * reported, not part of `met` (they are the restart policy's, not this cost's): every
 * caller's loop ends within `drainBoundMs` of the chaos stopping and no API call is pending
 * longer than `pendingBoundMs`, per configuration. Kills, freezes, chaos steps that found no
 * process (`missed`: the agent was restarting, held or given up), errors by kind, the
 * longest call and this process's CPU per prompt are in details.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { agentvisor, echoAgentScript, type Supervisor, type SupervisorOptions } from './lib/agentvisor.js';
import { finish, leakCheck } from './lib/report.js';
import { defaultContext, type BenchContext, type BenchResult } from './lib/results.js';
import { median, now, rotate, round, sleep, spread } from './lib/stats.js';

export interface ChaosSoakSize {
  agents: number;
  /** Chaos per configuration and round. */
  durationMs: number;
  rounds: number;
  chaosEveryMs: number;
  /** Share of chaos steps that SIGKILL (the rest SIGSTOP, then SIGCONT). */
  killShare: number;
  /** How long a frozen agent stays frozen: [min, max]. */
  stopForMs: [number, number];
  /** A caller's pause after an error, before it opens a new session. */
  retryMs: number;
  seed: number;
}

export const defaultSize: ChaosSoakSize = { agents: 16, durationMs: 40_000, rounds: 2, chaosEveryMs: 250, killShare: 0.5, stopForMs: [200, 1500], retryMs: 20, seed: 28 };
export const smokeSize: ChaosSoakSize = { agents: 2, durationMs: 500, rounds: 1, chaosEveryMs: 300, killShare: 0.5, stopForMs: [100, 300], retryMs: 20, seed: 28 };

export const goals = { ratio: 0.9, drainBoundMs: 10_000, pendingBoundMs: 10_000 };

export type Configuration = 'none+memory' | 'auto+sqlite' | 'auto+memory' | 'none+sqlite' | 'defaults';
/** Restart limits out of the way: the supervisor-wide overload hold never engages, nor does an agent's intensity. */
const limitsRaised: Pick<SupervisorOptions, 'overload' | 'restart'> = { overload: { intensity: 1_000_000 }, restart: { intensity: 1_000_000 } };
const configurations: Record<Configuration, Pick<SupervisorOptions, 'containment' | 'store' | 'overload' | 'restart'>> = {
  'none+memory': { containment: 'none', store: 'memory', ...limitsRaised },
  'auto+sqlite': { containment: 'auto', store: 'sqlite', ...limitsRaised },
  'auto+memory': { containment: 'auto', store: 'memory', ...limitsRaised },
  'none+sqlite': { containment: 'none', store: 'sqlite', ...limitsRaised },
  // Everything as shipped: containment 'auto', the SQLite store, and the restart limits.
  defaults: {},
};

export interface SoakRecord {
  promptsPerS: number;
  prompts: number;
  /** This (the supervisor's) process's CPU per completed prompt during the chaos, µs. */
  parentCpuUsPerPrompt: number;
  sessionsOpened: number;
  kills: number;
  freezes: number;
  /** Chaos steps that found the picked agent without a process (restarting). */
  missed: number;
  errors: Record<string, number>;
  longestCallMs: number;
  callsOverBound: number;
  drainMs: number;
  drained: boolean;
}

/** mulberry32: a small seeded generator, so every configuration gets the same chaos. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** One configuration's soak (exported to profile one alone: see docs/performance.md, chaos-soak). */
export async function soak(configuration: Configuration, size: ChaosSoakSize, pids: Set<number> = new Set()): Promise<SoakRecord> {
  const stateDir = mkdtempSync(join(tmpdir(), 'agentvisor-bench-soak-'));
  const names = Array.from({ length: size.agents }, (_, i) => `echo-${i}`);
  const spec = { command: process.execPath, args: [echoAgentScript], displayName: 'Echo' };
  const supervisor: Supervisor = agentvisor.createSupervisor({
    ...configurations[configuration],
    stateDir,
    maxAgents: size.agents,
    agents: Object.fromEntries(names.map((name) => [name, spec])),
  });
  const record: SoakRecord = { promptsPerS: 0, prompts: 0, parentCpuUsPerPrompt: 0, sessionsOpened: 0, kills: 0, freezes: 0, missed: 0, errors: {}, longestCallMs: 0, callsOverBound: 0, drainMs: 0, drained: false };
  const frozen = new Map<number, NodeJS.Timeout>();
  const signal = (pid: number, name: NodeJS.Signals) => {
    try {
      process.kill(pid, name);
      return true;
    } catch {
      return false;
    }
  };
  const thaw = (pid: number) => {
    clearTimeout(frozen.get(pid));
    frozen.delete(pid);
    signal(pid, 'SIGCONT');
  };
  let chaosOn = true;
  const timedCall = async <T>(call: () => Promise<T>): Promise<T> => {
    const start = now();
    try {
      return await call();
    } finally {
      const ms = now() - start;
      record.longestCallMs = Math.max(record.longestCallMs, ms);
      if (ms > goals.pendingBoundMs) record.callsOverBound++;
    }
  };
  const caller = async (name: string) => {
    let session: Awaited<ReturnType<Supervisor['newSession']>> | null = null;
    while (chaosOn) {
      try {
        if (session === null) {
          session = await timedCall(() => supervisor.newSession(name, { cwd: process.cwd() }));
          record.sessionsOpened++;
        }
        await timedCall(() => session!.prompt('x'));
        if (chaosOn) record.prompts++;
      } catch (error) {
        const kind = (error as { kind?: string }).kind ?? 'other';
        record.errors[kind] = (record.errors[kind] ?? 0) + 1;
        void session?.close().catch(() => {});
        session = null;
        await sleep(size.retryMs);
      }
    }
    await session?.close().catch(() => {});
  };

  try {
    await Promise.all(names.map((name) => supervisor.ensureAgent(name).then((handle) => pids.add(handle.pid))));
    const random = seeded(size.seed);
    const cpuBefore = process.cpuUsage();
    const started = now();
    const callers = names.map((name) => caller(name));
    while (now() - started < size.durationMs) {
      await sleep(size.chaosEveryMs);
      const name = names[Math.floor(random() * names.length)]!;
      const kill = random() < size.killShare;
      const pauseMs = size.stopForMs[0] + random() * (size.stopForMs[1] - size.stopForMs[0]);
      const pid = supervisor.list().find((agent) => agent.name === name)?.pid ?? null;
      if (pid === null || frozen.has(pid)) {
        record.missed++;
        continue;
      }
      pids.add(pid);
      if (kill) {
        if (signal(pid, 'SIGKILL')) record.kills++;
      } else if (signal(pid, 'SIGSTOP')) {
        record.freezes++;
        frozen.set(pid, setTimeout(() => thaw(pid), pauseMs));
      }
    }
    const chaosMs = now() - started;
    const cpu = process.cpuUsage(cpuBefore);
    chaosOn = false;
    for (const pid of [...frozen.keys()]) thaw(pid);
    record.promptsPerS = (record.prompts / chaosMs) * 1000;
    record.parentCpuUsPerPrompt = (cpu.user + cpu.system) / Math.max(1, record.prompts);
    const drainStart = now();
    const drained = await Promise.race([Promise.all(callers).then(() => true), sleep(goals.drainBoundMs).then(() => false)]);
    record.drainMs = now() - drainStart;
    record.drained = drained;
  } finally {
    chaosOn = false;
    for (const pid of [...frozen.keys()]) thaw(pid);
    for (const agent of supervisor.list()) if (agent.pid !== null) pids.add(agent.pid);
    await supervisor.shutdown();
    rmSync(stateDir, { recursive: true, force: true });
  }
  return record;
}

export async function chaosSoakBench(size: ChaosSoakSize = defaultSize, ctx: BenchContext = defaultContext()): Promise<BenchResult> {
  const pids = new Set<number>();
  const records = await rotate<SoakRecord>({
    warmup: 0,
    rounds: size.rounds,
    sides: Object.fromEntries((Object.keys(configurations) as Configuration[]).map((configuration) => [configuration, () => soak(configuration, size, pids)])),
    onRound: (i, round) => {
      for (const [configuration, r] of Object.entries(round)) {
        ctx.log(
          `  chaos-soak round ${i}/${size.rounds} ${configuration.padEnd(11)}: ${r.prompts} prompts (${r.promptsPerS.toFixed(0)}/s, ${r.parentCpuUsPerPrompt.toFixed(0)} µs of this process's CPU each), ${r.sessionsOpened} sessions, ` +
            `${r.kills} kills, ${r.freezes} freezes, ${r.missed} missed; errors ${JSON.stringify(r.errors)}; longest call ${r.longestCallMs.toFixed(0)} ms; drained ${r.drained ? `in ${r.drainMs.toFixed(0)} ms` : 'NO'}`,
        );
      }
    },
  });
  const leaks = await leakCheck(pids);
  const rate = (configuration: Configuration) => median(records[configuration]!.map((r) => r.promptsPerS));
  const baseline = rate('none+memory');
  const defaults = rate('auto+sqlite');
  const checks = {
    ratio: defaults / baseline >= goals.ratio,
    allGone: leaks.leftover.length === 0,
  };
  /** The restart policy's bounds, per configuration: reported, not part of `met`. */
  const policyChecks = Object.fromEntries(
    Object.entries(records).map(([configuration, list]) => [configuration, { everyCallerDrained: list.every((r) => r.drained), noCallPendingOverBound: list.every((r) => r.callsOverBound === 0) }]),
  );
  const summary = (list: SoakRecord[]) => ({
    promptsPerS: spread(list.map((r) => r.promptsPerS)),
    prompts: list.map((r) => r.prompts),
    parentCpuUsPerPrompt: list.map((r) => round(r.parentCpuUsPerPrompt)),
    sessionsOpened: list.map((r) => r.sessionsOpened),
    kills: list.map((r) => r.kills),
    freezes: list.map((r) => r.freezes),
    missed: list.map((r) => r.missed),
    errors: list.map((r) => r.errors),
    longestCallMs: list.map((r) => round(r.longestCallMs)),
    drainMs: list.map((r) => round(r.drainMs)),
  });
  return finish(ctx, {
    benchmark: 'chaos-soak',
    baseline: round(baseline, 3),
    agentvisor: round(defaults, 3),
    unit: 'prompts/s',
    ratio: round(defaults / baseline, 4),
    goal: `prompts/s under chaos with containment auto and the SQLite store ≥ ${goals.ratio} of none+memory; all gone`,
    met: Object.values(checks).every(Boolean),
    details: {
      size,
      checks,
      policyChecks: { drainBoundMs: goals.drainBoundMs, pendingBoundMs: goals.pendingBoundMs, ...policyChecks },
      note: 'higher is better: prompts completed per second of chaos; baseline = containment none + memory store, agentvisor = containment auto + SQLite store (restart limits raised in both)',
      ratios: {
        'auto+memory': round(rate('auto+memory') / baseline, 4),
        'none+sqlite': round(rate('none+sqlite') / baseline, 4),
        /** Everything as shipped, the restart limits too. */
        defaults: round(rate('defaults') / baseline, 4),
      },
      configurations: Object.fromEntries(Object.entries(records).map(([configuration, list]) => [configuration, summary(list)])),
      processes: { spawned: pids.size, leftover: leaks.leftover.length },
    },
  });
}
