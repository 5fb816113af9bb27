/**
 * containment: what running the agents in a container costs (docs/containment.md), four parts
 * in one run, each against the same work without containment:
 *
 * 1. handshake — spawn the echo agent, `initialize`, stop, one at a time, as handshake.bench.ts;
 *    sides: raw (execa + SDK), agentvisor with `'none'` (its own cost, without containment),
 *    with `containment: 'auto'` (the strongest mechanism this host offers; its kind is
 *    reported) and with each other mechanism offered here, in rotated rounds (each in each place equally often: stats.ts, `rotate`). Goal: auto / raw ≤ 1.05 (medians).
 * 2. fan-out — `agents` echo agents started at once until all are connected, then stopped
 *    (raw: Promise.all of execa + `initialize`, then of the stop ladder; agentvisor with
 *    `'auto'`: `ensureAgent` × N, then `shutdown()`), interleaved rounds. Goal: ≤ 1.10.
 * 3. idle CPU — `idleAgents` echo agents connected and idle, this (the supervisor's) process's
 *    CPU over `idleMs` (10 s: one full /proc rescan), under `'proc-tracking'` — the only
 *    mechanism with a periodic cost, its /proc scanner — and under `'none'`. Goal: the
 *    difference ≤ 1 % of one core.
 * 4. escapees — `escapeAgents` fixture agents under `'auto'`, each with a grandchild in a
 *    session of its own (`--spawn-grandchild --grandchild-escapes`), then `shutdown()`. Goal:
 *    ≤ shutdownTimeoutMs + killTimeoutMs + 250 ms, and no agent and no escapee (host pids from
 *    the fixture's pid file) running once it resolves.
 *
 * The result line's headline is part 1 (auto vs raw); the other parts are in `details`.
 */
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { agentvisor, echoAgentScript, fixtureAgentScript, type AgentSpec, type Supervisor, type SupervisorOptions } from './lib/agentvisor.js';
import { isRunning, ownCpuMs, waitUntilGone } from './lib/processes.js';
import { finish, leakCheck } from './lib/report.js';
import { startRawAgent, stopRawAgent, type RawAgent } from './lib/raw-agent.js';
import { defaultContext, type BenchContext, type BenchResult } from './lib/results.js';
import { interleave, median, medianExtras, now, rotate, round, sleep, spread, type Phase, type Sample } from './lib/stats.js';

export interface ContainmentSize {
  handshakeRounds: number;
  handshakeWarmup: number;
  /** Also measure the handshake under every other mechanism this host offers. */
  everyMechanism: boolean;
  fanOutAgents: number;
  fanOutRounds: number;
  /** Unmeasured fan-out rounds first, with `fanOutWarmupAgents` agents. */
  fanOutWarmup: number;
  fanOutWarmupAgents: number;
  idleAgents: number;
  /**
   * Wait after the idle fleet is connected, before the CPU window opens: the first seconds
   * after a hundred agents connected still carry their start's garbage collection and
   * compilation (2.7-4.3 % of a core in the first 3 s, on either side, 2026-12-07).
   */
  idleSettleMs: number;
  idleMs: number;
  escapeAgents: number;
  shutdownTimeoutMs: number;
  killTimeoutMs: number;
}

export const defaultSize: ContainmentSize = {
  handshakeRounds: 15,
  handshakeWarmup: 2,
  everyMechanism: true,
  fanOutAgents: 30,
  fanOutRounds: 5,
  fanOutWarmup: 1,
  fanOutWarmupAgents: 10,
  idleAgents: 100,
  idleSettleMs: 3000,
  idleMs: 10_000,
  escapeAgents: 100,
  shutdownTimeoutMs: 500,
  killTimeoutMs: 500,
};
export const smokeSize: ContainmentSize = {
  handshakeRounds: 1,
  handshakeWarmup: 0,
  everyMechanism: true,
  fanOutAgents: 2,
  fanOutRounds: 1,
  fanOutWarmup: 0,
  fanOutWarmupAgents: 0,
  idleAgents: 2,
  idleSettleMs: 100,
  idleMs: 300,
  escapeAgents: 2,
  shutdownTimeoutMs: 200,
  killTimeoutMs: 200,
};
export const goals = { handshakeRatio: 1.05, fanOutRatio: 1.1, idleCpuPctOfCore: 1, slackMs: 250 };

type Containment = NonNullable<SupervisorOptions['containment']>;
/** How long each agent of a fleet started at once may take to answer `initialize`. */
const fleetHandshakeTimeoutMs = 120_000;
const echo: AgentSpec = { command: process.execPath, args: [echoAgentScript], displayName: 'Echo' };

/** A supervisor of `n` agents of `spec` (named `prefix-i`) under `containment`. */
function fleetSupervisor(containment: Containment, n: number, spec: AgentSpec, extra: SupervisorOptions = {}): { supervisor: Supervisor; names: string[] } {
  const names = Array.from({ length: n }, (_, i) => `agent-${i}`);
  // A hundred node agents starting at once on two cores take ~20 s of CPU before the last
  // answers `initialize` (each imports the SDK: ~0.35 s of CPU): the handshake timeout must not
  // be what this fleet measures.
  const supervisor = agentvisor.createSupervisor({
    handshakeTimeoutMs: fleetHandshakeTimeoutMs,
    ...extra,
    containment,
    maxAgents: Math.max(n, 1),
    agents: Object.fromEntries(names.map((name) => [name, spec])),
  });
  return { supervisor, names };
}

/** Starts every agent of the supervisor at once; shuts it down if one fails. Resolves with their pids. */
async function connectAll(supervisor: Supervisor, names: readonly string[]): Promise<number[]> {
  const handles = await Promise.all(names.map((name) => supervisor.ensureAgent(name))).catch(async (error: unknown) => {
    await supervisor.shutdown();
    throw error;
  });
  return handles.map((handle) => handle.pid);
}

/** Part 1: sides raw, auto and (optionally) every other mechanism offered here. */
async function handshakePart(size: ContainmentSize, ctx: BenchContext, pids: number[]) {
  const autoSupervisor = fleetSupervisor('auto', 1, echo).supervisor;
  const autoKind = autoSupervisor.containment.kind ?? 'none';
  // 'none' separates agentvisor's own cost (handshake.bench.ts) from the containment's.
  const supervisors: Record<string, Supervisor> = { none: fleetSupervisor('none', 1, echo).supervisor, [`auto (${autoKind})`]: autoSupervisor };
  const refused: Record<string, string> = {};
  if (size.everyMechanism) {
    for (const kind of ['pid-namespace', 'cgroup', 'proc-tracking'] as const) {
      if (kind === autoKind) continue;
      const { supervisor } = fleetSupervisor(kind, 1, echo);
      if (supervisor.containment.kind === kind) supervisors[kind] = supervisor;
      else {
        refused[kind] = supervisor.containment.refused.find((r) => r.kind === kind)?.reason ?? `fell back to ${supervisor.containment.kind}`;
        await supervisor.shutdown();
      }
    }
  }
  /** One cycle: `start()` resolves with the agent's pid once it is initialized, then `stop()`. */
  const cycle = async (start: () => Promise<number>, stop: () => Promise<void>): Promise<Sample> => {
    const t0 = now();
    pids.push(await start());
    const initialized = now();
    await stop();
    const end = now();
    return { value: end - t0, extra: { toInitializedMs: initialized - t0, stopMs: end - initialized } };
  };
  const sides: Record<string, () => Promise<Sample>> = {
    raw: async () => {
      let agent: RawAgent | undefined;
      return cycle(
        async () => (agent = await startRawAgent(echoAgentScript)).pid,
        () => stopRawAgent(agent!),
      );
    },
  };
  for (const [name, supervisor] of Object.entries(supervisors)) {
    sides[name] = () =>
      cycle(
        async () => (await supervisor.ensureAgent('agent-0')).pid,
        () => supervisor.stop('agent-0'),
      );
  }
  let samples: Record<string, Sample[]>;
  try {
    samples = await rotate({
      warmup: size.handshakeWarmup,
      rounds: size.handshakeRounds,
      sides,
      onRound: (i, r) => ctx.log(`  containment handshake round ${i}/${size.handshakeRounds}: ${Object.entries(r).map(([name, s]) => `${name} ${s.value.toFixed(1)} ms`).join(', ')}`),
    });
  } finally {
    await Promise.all(Object.values(supervisors).map((supervisor) => supervisor.shutdown()));
  }
  const values = (name: string) => samples[name]!.map((s) => s.value);
  const raw = median(values('raw'));
  const bySide = Object.fromEntries(
    Object.keys(samples).map((name) => [
      name,
      {
        medianMs: round(median(values(name))),
        ratio: round(median(values(name)) / raw, 4),
        pairedRatio: spread(values(name).map((value, i) => value / values('raw')[i]!)),
        phases: medianExtras(samples[name]!),
        spread: spread(values(name)),
      },
    ]),
  );
  const auto = median(values(`auto (${autoKind})`));
  return { autoKind, raw, auto, ratio: auto / raw, bySide, refused };
}

/** Part 2: N echo agents at once, connect + stop, raw vs auto. */
async function fanOutPart(size: ContainmentSize, ctx: BenchContext, pids: number[]) {
  let runningAfterStop = 0;
  const agentsIn = (phase: Phase) => (phase === 'warmup' ? size.fanOutWarmupAgents : size.fanOutAgents);
  const timed = async (connect: () => Promise<{ pids: number[]; stop: () => Promise<void> }>): Promise<Sample> => {
    const start = now();
    const fleet = await connect();
    const connectMs = now() - start;
    pids.push(...fleet.pids);
    const stopStart = now();
    await fleet.stop();
    const stopMs = now() - stopStart;
    runningAfterStop += fleet.pids.filter(isRunning).length;
    return { value: connectMs + stopMs, extra: { connectMs, stopMs } };
  };
  const samples = await interleave({
    warmup: size.fanOutWarmup,
    rounds: size.fanOutRounds,
    baseline: (phase) =>
      timed(async () => {
        const agents = await Promise.all(Array.from({ length: agentsIn(phase) }, () => startRawAgent(echoAgentScript)));
        return { pids: agents.map((agent) => agent.pid), stop: async () => void (await Promise.all(agents.map((agent) => stopRawAgent(agent)))) };
      }),
    agentvisor: (phase) =>
      timed(async () => {
        const { supervisor, names } = fleetSupervisor('auto', agentsIn(phase), echo);
        return { pids: await connectAll(supervisor, names), stop: () => supervisor.shutdown() };
      }),
    onRound: (i, a, b) => ctx.log(`  containment fan-out round ${i}/${size.fanOutRounds} (${size.fanOutAgents} agents): raw ${a.value.toFixed(0)} ms, auto ${b.value.toFixed(0)} ms`),
  });
  const raw = median(samples.baseline.map((s) => s.value));
  const auto = median(samples.agentvisor.map((s) => s.value));
  const phase = (side: Sample[], key: string) => round(median(side.map((s) => s.extra![key]!)));
  return {
    raw,
    auto,
    ratio: auto / raw,
    runningAfterStop,
    details: {
      rawMs: round(raw),
      autoMs: round(auto),
      ratio: round(auto / raw, 4),
      pairedRatio: spread(samples.baseline.map((s, i) => samples.agentvisor[i]!.value / s.value)),
      phases: {
        raw: { connectMs: phase(samples.baseline, 'connectMs'), stopMs: phase(samples.baseline, 'stopMs') },
        auto: { connectMs: phase(samples.agentvisor, 'connectMs'), stopMs: phase(samples.agentvisor, 'stopMs') },
      },
      spread: { raw: spread(samples.baseline.map((s) => s.value)), auto: spread(samples.agentvisor.map((s) => s.value)) },
      runningRightAfterStop: runningAfterStop,
    },
  };
}

/** Part 3: this process's CPU while `idleAgents` agents idle, per containment (% of one core). */
async function idlePart(size: ContainmentSize, ctx: BenchContext, pids: number[]) {
  const cpuPct: Record<string, number> = {};
  let hostProcesses = 0;
  for (const containment of ['none', 'proc-tracking'] as const) {
    const { supervisor, names } = fleetSupervisor(containment, size.idleAgents, echo);
    try {
      if (containment !== 'none' && supervisor.containment.kind !== containment) throw new Error(`${containment} is not offered here: ${JSON.stringify(supervisor.containment)}`);
      pids.push(...(await connectAll(supervisor, names)));
      await sleep(size.idleSettleMs);
      const cpu = ownCpuMs();
      const start = now();
      await sleep(size.idleMs);
      cpuPct[containment] = ((ownCpuMs() - cpu) / (now() - start)) * 100;
      hostProcesses = Math.max(hostProcesses, readdirSync('/proc').filter((entry) => /^\d+$/.test(entry)).length);
      ctx.log(`  containment idle: ${size.idleAgents} agents, ${containment}: ${cpuPct[containment]!.toFixed(3)} % of one core`);
    } finally {
      await supervisor.shutdown();
    }
  }
  const differencePct = cpuPct['proc-tracking']! - cpuPct['none']!;
  return {
    differencePct,
    details: {
      agents: size.idleAgents,
      windowMs: size.idleMs,
      /** Processes on the host while the fleet idled (what a full /proc rescan reads). */
      hostProcesses,
      cpuPctOfCore: { none: round(cpuPct['none']!, 3), procTracking: round(cpuPct['proc-tracking']!, 3), difference: round(differencePct, 3) },
    },
  };
}

/** Part 4: shutdown() of `escapeAgents` agents with an escapee each, under auto. */
async function escapePart(size: ContainmentSize, ctx: BenchContext, pids: number[]) {
  const dir = mkdtempSync(join(tmpdir(), 'agentvisor-bench-'));
  const pidFile = join(dir, 'pids.txt');
  const spec: AgentSpec = { command: process.execPath, args: [fixtureAgentScript, '--spawn-grandchild', '--grandchild-escapes', '--pid-file', pidFile], displayName: 'Fixture' };
  const { supervisor, names } = fleetSupervisor('auto', size.escapeAgents, spec, { shutdownTimeoutMs: size.shutdownTimeoutMs, killTimeoutMs: size.killTimeoutMs });
  let lines: Array<[number, number]> = [];
  try {
    pids.push(...(await connectAll(supervisor, names)));
    // Written before the agent serves ACP, so complete once every agent is connected.
    lines = readFileSync(pidFile, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => line.split(' ').map(Number) as [number, number]);
    const escapees = lines.map(([, escapee]) => escapee);
    pids.push(...escapees);
    const escapeesAliveBefore = escapees.filter(isRunning).length;
    const start = now();
    await supervisor.shutdown();
    const shutdownMs = now() - start;
    const agentsRunning = lines.filter(([agent]) => isRunning(agent)).length;
    const escapeesRunning = escapees.filter(isRunning).length;
    const escapeesRunningAfter1s = (await waitUntilGone(escapees, 1000)).length;
    ctx.log(`  containment escapees: ${size.escapeAgents} agents under ${supervisor.containment.kind}: shutdown ${shutdownMs.toFixed(0)} ms, ${agentsRunning} agents and ${escapeesRunning} escapees running after`);
    return { kind: supervisor.containment.kind, shutdownMs, agentsRunning, escapeesRunning, escapeesRunningAfter1s, escapeesAliveBefore, pidLines: lines.length };
  } finally {
    await supervisor.shutdown();
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function containmentBench(size: ContainmentSize = defaultSize, ctx: BenchContext = defaultContext()): Promise<BenchResult> {
  const pids: number[] = [];
  const handshake = await handshakePart(size, ctx, pids);
  const fanOut = await fanOutPart(size, ctx, pids);
  const idle = await idlePart(size, ctx, pids);
  const escape = await escapePart(size, ctx, pids);
  const leaks = await leakCheck(pids);
  const boundMs = size.shutdownTimeoutMs + size.killTimeoutMs + goals.slackMs;
  const checks = {
    handshakeRatio: handshake.ratio <= goals.handshakeRatio,
    fanOutRatio: fanOut.ratio <= goals.fanOutRatio,
    idleCpu: idle.differencePct <= goals.idleCpuPctOfCore,
    escapeShutdownWithinBound: escape.shutdownMs <= boundMs,
    noSurvivors: escape.agentsRunning === 0 && escape.escapeesRunning === 0 && escape.escapeesAliveBefore === size.escapeAgents && escape.pidLines === size.escapeAgents,
    allGone: fanOut.runningAfterStop === 0 && leaks.leftover.length === 0,
  };
  return finish(ctx, {
    benchmark: 'containment',
    baseline: round(handshake.raw, 3),
    agentvisor: round(handshake.auto, 3),
    unit: 'ms',
    ratio: round(handshake.ratio, 4),
    goal:
      `'auto' (${handshake.autoKind}): handshake ≤ ${goals.handshakeRatio}, fan-out ≤ ${goals.fanOutRatio} of raw; ` +
      `proc-tracking idle CPU ≤ ${goals.idleCpuPctOfCore} % of a core over none; escapees stopped ≤ ${boundMs} ms, none survives; all gone`,
    met: Object.values(checks).every(Boolean),
    details: {
      size,
      autoKind: handshake.autoKind,
      checks,
      handshake: { rawMs: round(handshake.raw), sides: handshake.bySide, refused: handshake.refused },
      fanOut: fanOut.details,
      idle: idle.details,
      escapees: { kind: escape.kind, boundMs, shutdownMs: round(escape.shutdownMs), agentsRunning: escape.agentsRunning, escapeesRunning: escape.escapeesRunning, escapeesRunningAfter1s: escape.escapeesRunningAfter1s },
      processes: { spawned: leaks.checked, leftover: leaks.leftover.length },
    },
  });
}
