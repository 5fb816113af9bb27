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
 * Five configurations of the same build, in rotated rounds (each in each place equally often: stats.ts, `rotate`), each
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
 * process or a frozen one (`missed`, by the agent's state in `missedStates`), errors by kind,
 * the longest call and this process's CPU per prompt are in details.
 *
 * Every call a caller makes (`newSession`, `prompt`, and `close`, which a caller does not
 * wait for after an error) is timed; the agent's state (`describe(name).state`, its attempt,
 * whether it has a process, its last error) and the session's status are sampled as a
 * `newSession` or `close` is made, and every 250 ms while a call is pending longer than a
 * second. A call that took longer than half `pendingBoundMs`, or is still pending when the
 * drain bound runs out, is reported with that trajectory (`slowCalls`, `pendingAtEnd`), so a
 * wait is told with what it waited on; `slowCallCounts` counts the calls over 1 s and 5 s,
 * `newSessionMadeOn` the states sessions were opened on. A call still pending at the end
 * counts as over the bound when it is older than the bound.
 *
 * Sizes: `defaultSize` (all five configurations, 40 s of chaos each, 2 rounds, ~9 min),
 * `smokeSize`, and the named `sizes` (`npm run bench -- chaos-soak --size=soak3m`): `soak3m`
 * is the restart policy's check, `defaults` alone for 3 minutes of chaos; with either of the
 * ratio's configurations missing there is no ratio, and `met` is the policy's bounds and no
 * process left behind.
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
  /** Which configurations to run (all five when absent), in this order. */
  configurations?: Configuration[];
}

export const defaultSize: ChaosSoakSize = { agents: 16, durationMs: 40_000, rounds: 2, chaosEveryMs: 250, killShare: 0.5, stopForMs: [200, 1500], retryMs: 20, seed: 28 };
export const smokeSize: ChaosSoakSize = { agents: 2, durationMs: 500, rounds: 1, chaosEveryMs: 300, killShare: 0.5, stopForMs: [100, 300], retryMs: 20, seed: 28 };
/** Named sizes (`--size=NAME`). soak3m: the restart policy's check — everything as shipped, 16 agents, 3 minutes of chaos. */
export const sizes: Record<string, ChaosSoakSize> = {
  soak3m: { ...defaultSize, durationMs: 180_000, rounds: 1, configurations: ['defaults'] },
};

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
  /** Chaos steps that found the picked agent without a process (between processes, or given up) or frozen already. */
  missed: number;
  errors: Record<string, number>;
  longestCallMs: number;
  /** The longest call of each kind, ms. */
  longestByCallMs: Record<CallKind, number>;
  callsOverBound: number;
  drainMs: number;
  drained: boolean;
  /** When the supervisor said it was overloaded, ms into the chaos; null: never. */
  overloadedAtMs: number | null;
  /** The agent's state when a chaos step found it without a process, counted. */
  missedStates: Record<string, number>;
  /**
   * The agent's state when each `newSession` was made, counted: `connected.*` after an error means
   * its stream had closed and the exit was not yet seen (the start waits for the loss and what follows).
   */
  newSessionMadeOn: Record<string, number>;
  /** Calls over 1 s and over 5 s, by kind. */
  slowCallCounts: Record<CallKind, { over1s: number; over5s: number }>;
  /** Calls that settled after longer than half the bound (the first 20), with what they waited on. */
  slowCalls: SlowCall[];
  /** Calls still pending when the drain bound ran out (after the chaos stopped). */
  pendingAtEnd: SlowCall[];
}

export type CallKind = 'newSession' | 'prompt' | 'close';

/** A call pending longer than half the bound: which, on which agent, how long, how it ended, and the agent's states meanwhile. */
export interface SlowCall {
  call: CallKind;
  agent: string;
  /** When it was made, ms into the chaos (negative: before it began). */
  atMs: number;
  ms: number;
  /** 'ok', an error's kind, or 'pending'. */
  outcome: string;
  /** Samples while it was pending, each when it changed: `+<s>s <state> attempt <n> <pid|no process> [session <status>]`. */
  states: string[];
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
  const record: SoakRecord = {
    promptsPerS: 0,
    prompts: 0,
    parentCpuUsPerPrompt: 0,
    sessionsOpened: 0,
    kills: 0,
    freezes: 0,
    missed: 0,
    errors: {},
    longestCallMs: 0,
    longestByCallMs: { newSession: 0, prompt: 0, close: 0 },
    callsOverBound: 0,
    drainMs: 0,
    drained: false,
    overloadedAtMs: null,
    missedStates: {},
    newSessionMadeOn: {},
    slowCallCounts: { newSession: { over1s: 0, over5s: 0 }, prompt: { over1s: 0, over5s: 0 }, close: { over1s: 0, over5s: 0 } },
    slowCalls: [],
    pendingAtEnd: [],
  };
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
  let started = now();
  type Session = Awaited<ReturnType<Supervisor['newSession']>>;
  interface Pending {
    call: CallKind;
    agent: string;
    startedAt: number;
    session: Session | null;
    states: string[];
    last: string;
    /** Counted already, as pending when the drain bound ran out. */
    counted: boolean;
  }
  const pending = new Set<Pending>();
  const slowCallsKept = 20;
  const describeNow = (entry: Pending): string => {
    let agentPart: string;
    try {
      const summary = supervisor.describe(entry.agent);
      agentPart = `${summary.state} attempt ${summary.attempt} ${summary.pid === null ? 'no process' : 'pid'}${summary.lastError ? ` lastError ${summary.lastError.kind}` : ''}`;
    } catch (error) {
      agentPart = `describe failed: ${(error as Error).message}`;
    }
    return entry.session === null ? agentPart : `${agentPart} session ${entry.session.status}`;
  };
  const sample = (entry: Pending) => {
    const state = describeNow(entry);
    if (state === entry.last) return;
    entry.last = state;
    entry.states.push(`+${((now() - entry.startedAt) / 1000).toFixed(1)}s ${state}`);
  };
  const slowCall = (entry: Pending, ms: number, outcome: string): SlowCall => ({ call: entry.call, agent: entry.agent, atMs: round(entry.startedAt - started), ms: round(ms), outcome, states: entry.states });
  // Watches the calls pending longer than a second: the agent's state (and the session's status) as it changes.
  const watchdog = setInterval(() => {
    const t = now();
    for (const entry of pending) if (t - entry.startedAt >= 1000) sample(entry);
  }, 250);
  watchdog.unref();
  const timedCall = async <T>(call: CallKind, agent: string, session: Session | null, run: () => Promise<T>): Promise<T> => {
    const entry: Pending = { call, agent, startedAt: now(), session, states: [], last: '', counted: false };
    pending.add(entry);
    // The state a session is opened (or closed) on, at once; a prompt's only once it waits (they are many).
    if (call !== 'prompt') sample(entry);
    if (call === 'newSession') {
      const state = entry.last.split(' ')[0]!;
      record.newSessionMadeOn[state] = (record.newSessionMadeOn[state] ?? 0) + 1;
    }
    let outcome = 'ok';
    try {
      return await run();
    } catch (error) {
      outcome = (error as { kind?: string }).kind ?? 'other';
      throw error;
    } finally {
      pending.delete(entry);
      // A call counted as pending when the drain bound ran out is not counted again as it settles (at the shutdown).
      if (!entry.counted) {
        const ms = now() - entry.startedAt;
        record.longestCallMs = Math.max(record.longestCallMs, ms);
        record.longestByCallMs[call] = Math.max(record.longestByCallMs[call], ms);
        if (ms > 1000) record.slowCallCounts[call].over1s++;
        if (ms > 5000) record.slowCallCounts[call].over5s++;
        if (ms > goals.pendingBoundMs) record.callsOverBound++;
        if (ms > goals.pendingBoundMs / 2 && record.slowCalls.length < slowCallsKept) record.slowCalls.push(slowCall(entry, ms, outcome));
      }
    }
  };
  const caller = async (name: string) => {
    let session: Session | null = null;
    while (chaosOn) {
      try {
        if (session === null) {
          session = await timedCall('newSession', name, null, () => supervisor.newSession(name, { cwd: process.cwd() }));
          record.sessionsOpened++;
        }
        const open: Session = session;
        await timedCall('prompt', name, open, () => open.prompt('x'));
        if (chaosOn) record.prompts++;
      } catch (error) {
        const kind = (error as { kind?: string }).kind ?? 'other';
        record.errors[kind] = (record.errors[kind] ?? 0) + 1;
        const failed = session;
        if (failed !== null) void timedCall('close', name, failed, () => failed.close()).catch(() => {});
        session = null;
        await sleep(size.retryMs);
      }
    }
    const last = session;
    if (last !== null) await timedCall('close', name, last, () => last.close()).catch(() => {});
  };
  const offOverloaded = supervisor.on('supervisor:overloaded', () => {
    record.overloadedAtMs ??= round(now() - started);
  });

  try {
    await Promise.all(names.map((name) => supervisor.ensureAgent(name).then((handle) => pids.add(handle.pid))));
    const random = seeded(size.seed);
    const cpuBefore = process.cpuUsage();
    started = now();
    const callers = names.map((name) => caller(name));
    while (now() - started < size.durationMs) {
      await sleep(size.chaosEveryMs);
      const name = names[Math.floor(random() * names.length)]!;
      const kill = random() < size.killShare;
      const pauseMs = size.stopForMs[0] + random() * (size.stopForMs[1] - size.stopForMs[0]);
      const summary = supervisor.describe(name);
      const pid = summary.pid;
      if (pid === null || frozen.has(pid)) {
        record.missed++;
        const why = pid === null ? summary.state : 'frozen already';
        record.missedStates[why] = (record.missedStates[why] ?? 0) + 1;
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
    // What still waits at the bound: each call with its age and the states it went through.
    for (const entry of pending) {
      sample(entry);
      entry.counted = true;
      const ms = now() - entry.startedAt;
      if (ms > 1000) record.slowCallCounts[entry.call].over1s++;
      if (ms > 5000) record.slowCallCounts[entry.call].over5s++;
      if (ms > goals.pendingBoundMs) record.callsOverBound++;
      record.longestCallMs = Math.max(record.longestCallMs, ms);
      record.longestByCallMs[entry.call] = Math.max(record.longestByCallMs[entry.call], ms);
      record.pendingAtEnd.push(slowCall(entry, ms, 'pending'));
    }
  } finally {
    chaosOn = false;
    clearInterval(watchdog);
    offOverloaded();
    for (const pid of [...frozen.keys()]) thaw(pid);
    for (const agent of supervisor.list()) if (agent.pid !== null) pids.add(agent.pid);
    await supervisor.shutdown();
    rmSync(stateDir, { recursive: true, force: true });
  }
  return record;
}

export async function chaosSoakBench(size: ChaosSoakSize = defaultSize, ctx: BenchContext = defaultContext()): Promise<BenchResult> {
  const pids = new Set<number>();
  const chosen = size.configurations ?? (Object.keys(configurations) as Configuration[]);
  const records = await rotate<SoakRecord>({
    warmup: 0,
    rounds: size.rounds,
    sides: Object.fromEntries(chosen.map((configuration) => [configuration, () => soak(configuration, size, pids)])),
    onRound: (i, round) => {
      for (const configuration of chosen) {
        const r = round[configuration]!;
        ctx.log(
          `  chaos-soak round ${i}/${size.rounds} ${configuration.padEnd(11)}: ${r.prompts} prompts (${r.promptsPerS.toFixed(0)}/s, ${r.parentCpuUsPerPrompt.toFixed(0)} µs of this process's CPU each), ${r.sessionsOpened} sessions, ` +
            `${r.kills} kills, ${r.freezes} freezes, ${r.missed} missed ${JSON.stringify(r.missedStates)}; errors ${JSON.stringify(r.errors)}; ` +
            `longest call ${r.longestCallMs.toFixed(0)} ms (${Object.entries(r.longestByCallMs).map(([call, ms]) => `${call} ${ms.toFixed(0)}`).join(', ')}), ${r.callsOverBound} over ${goals.pendingBoundMs / 1000} s; ` +
            `newSession made on ${JSON.stringify(r.newSessionMadeOn)}; over 1 s/5 s ${Object.entries(r.slowCallCounts).map(([call, c]) => `${call} ${c.over1s}/${c.over5s}`).join(', ')}; ` +
            `overloaded ${r.overloadedAtMs === null ? 'never' : `at ${(r.overloadedAtMs / 1000).toFixed(1)} s`}; drained ${r.drained ? `in ${r.drainMs.toFixed(0)} ms` : 'NO'}`,
        );
        for (const slow of [...r.slowCalls, ...r.pendingAtEnd]) {
          ctx.log(`    ${slow.outcome === 'pending' ? 'still pending' : `took ${(slow.ms / 1000).toFixed(1)} s (${slow.outcome})`}: ${slow.call} on ${slow.agent} made at ${(slow.atMs / 1000).toFixed(1)} s${slow.outcome === 'pending' ? `, ${(slow.ms / 1000).toFixed(1)} s ago` : ''}`);
          for (const state of slow.states) ctx.log(`      ${state}`);
        }
      }
    },
  });
  const leaks = await leakCheck(pids);
  const rate = (configuration: Configuration) => (records[configuration] ? median(records[configuration].map((r) => r.promptsPerS)) : Number.NaN);
  /** The restart policy's bounds, per configuration: reported (and part of `met` only for a run without the ratio). */
  const policyChecks = Object.fromEntries(
    Object.entries(records).map(([configuration, list]) => [configuration, { everyCallerDrained: list.every((r) => r.drained), noCallPendingOverBound: list.every((r) => r.callsOverBound === 0) }]),
  );
  const policyHolds = Object.values(policyChecks).every((check) => check.everyCallerDrained && check.noCallPendingOverBound);
  ctx.log(`  chaos-soak policy (drained within ${goals.drainBoundMs / 1000} s, no call pending over ${goals.pendingBoundMs / 1000} s): ${JSON.stringify(policyChecks)}`);
  const withRatio = records['none+memory'] !== undefined && records['auto+sqlite'] !== undefined;
  const baseline = rate('none+memory');
  const defaults = rate('auto+sqlite');
  const checks = withRatio
    ? { ratio: defaults / baseline >= goals.ratio, allGone: leaks.leftover.length === 0 }
    : { policy: policyHolds, allGone: leaks.leftover.length === 0 };
  const summary = (list: SoakRecord[]) => ({
    promptsPerS: spread(list.map((r) => r.promptsPerS)),
    prompts: list.map((r) => r.prompts),
    parentCpuUsPerPrompt: list.map((r) => round(r.parentCpuUsPerPrompt)),
    sessionsOpened: list.map((r) => r.sessionsOpened),
    kills: list.map((r) => r.kills),
    freezes: list.map((r) => r.freezes),
    missed: list.map((r) => r.missed),
    missedStates: list.map((r) => r.missedStates),
    errors: list.map((r) => r.errors),
    longestCallMs: list.map((r) => round(r.longestCallMs)),
    longestByCallMs: list.map((r) => Object.fromEntries(Object.entries(r.longestByCallMs).map(([call, ms]) => [call, round(ms)]))),
    callsOverBound: list.map((r) => r.callsOverBound),
    overloadedAtMs: list.map((r) => r.overloadedAtMs),
    drainMs: list.map((r) => round(r.drainMs)),
    newSessionMadeOn: list.map((r) => r.newSessionMadeOn),
    slowCallCounts: list.map((r) => r.slowCallCounts),
    slowCalls: list.map((r) => r.slowCalls),
    pendingAtEnd: list.map((r) => r.pendingAtEnd),
  });
  const only = chosen.length === 1 ? chosen[0]! : null;
  return finish(ctx, {
    benchmark: 'chaos-soak',
    baseline: withRatio ? round(baseline, 3) : Number.NaN,
    agentvisor: withRatio ? round(defaults, 3) : only !== null ? round(rate(only), 3) : Number.NaN,
    unit: 'prompts/s',
    ratio: withRatio ? round(defaults / baseline, 4) : Number.NaN,
    goal: withRatio
      ? `prompts/s under chaos with containment auto and the SQLite store ≥ ${goals.ratio} of none+memory; all gone`
      : `under chaos (${chosen.join(', ')}): every caller drains within ${goals.drainBoundMs / 1000} s, no call pending over ${goals.pendingBoundMs / 1000} s; all gone`,
    met: Object.values(checks).every(Boolean),
    details: {
      size,
      checks,
      policyChecks: { drainBoundMs: goals.drainBoundMs, pendingBoundMs: goals.pendingBoundMs, ...policyChecks },
      note: withRatio
        ? 'higher is better: prompts completed per second of chaos; baseline = containment none + memory store, agentvisor = containment auto + SQLite store (restart limits raised in both)'
        : `no ratio: ${chosen.join(', ')} only; agentvisor = ${only ?? 'n/a'} prompts completed per second of chaos`,
      ...(withRatio
        ? {
            ratios: {
              'auto+memory': round(rate('auto+memory') / baseline, 4),
              'none+sqlite': round(rate('none+sqlite') / baseline, 4),
              /** Everything as shipped, the restart limits too. */
              defaults: round(rate('defaults') / baseline, 4),
            },
          }
        : {}),
      configurations: Object.fromEntries(Object.entries(records).map(([configuration, list]) => [configuration, summary(list)])),
      processes: { spawned: pids.size, leftover: leaks.leftover.length },
    },
  });
}
