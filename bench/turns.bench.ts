/**
 * turns: are turns as cheap through agentvisor as through the raw SDK? Many tiny prompts,
 * each answered with ONE `agent_message_chunk` and then `end_turn`: the cost measured is the
 * per-turn machinery (the prompt request, the session's state machine, the update's
 * delivery, the store's writes, the response), not streaming throughput (stream.bench.ts).
 *
 * The agent: the echo agent (dist/examples/echo-agent.js), which echoes a prompt word by
 * word; the prompt is the one word `x`, so every turn is exactly one chunk, then `end_turn`.
 * One agent per side, started once, with `sessions` sessions opened up front (none of it
 * timed).
 *
 * Two modes, each its own interleaved run (a warm-up round per side of `warmupTurns` turns,
 * then `rounds` measured rounds, sides alternating: A B, B A, ...; every round starts from a
 * collected heap):
 * - 1 session: `turns` prompts one after another on the agent's first session;
 * - `sessions` sessions at once: the same `turns` split evenly over `sessions` sessions of
 *   the SAME agent, each session's prompts one after another, all sessions concurrently.
 *   One agent with 16 sessions rather than 16 agents: it measures what agentvisor does per
 *   session and per turn under concurrency (session routing on one connection, the store
 *   batching several sessions' writes) with the same two processes as the 1-session mode,
 *   so the two figures differ by concurrency only. Sixteen agents on this machine's 2 cores
 *   would mostly measure the scheduling of 17 node processes; many agents are
 *   memory-scale.bench.ts's and fan-out.bench.ts's subject.
 *
 * Sides (each reads updates through `session.on('update', …)` + `await session.prompt(…)`):
 * - raw (baseline, keeps nothing): execa + SDK connection, the SDK's session helper
 *   (lib/update-session.ts), as in stream.bench.ts;
 * - agentvisor: `supervisor.newSession('echo', { cwd })`, the Session API, with the default
 *   SQLite store in a temporary state directory (removed at the end): each turn's prompt,
 *   update and result go into `<stateDir>/agentvisor.db` inside the timed turn;
 * - machine floor (reported, not the goal's): the raw side's sessions (more of them, on the
 *   same raw agent), each prompt decided by the least XState machine that decides a turn
 *   (lib/least-turn-machine.ts: two states, a step to accept the prompt and one to answer
 *   it). It prints what any design with a machine step at a turn's start and end costs over
 *   the raw SDK on this machine, in the same rounds (docs/performance.md, *turns*);
 * - its control (reported): the same wrapper, request ids and answer routing without the
 *   machine — the floor's difference from it is the machine's.
 *
 * Value of a round: µs per turn = elapsed time / turns (lower is better); turns/s (its
 * inverse, all sessions together) is in details. Ratio = agentvisor / raw µs per turn,
 * medians of the rounds; the headline is the mode with the worse (higher) ratio, and both
 * modes' figures are in details.modes.
 *
 * Goal (`met`): ratio ≤ 1.10 in both modes (agentvisor's turns cost at most 1.10× the raw
 * SDK's, i.e. its turns/s ≥ 1/1.10 of raw); every turn got its one chunk and `end_turn`
 * (else the benchmark throws); the store holds every turn (≥ 3 transcript entries per turn:
 * prompt, update, prompt_result) with no `store:error`; no process left behind.
 */
import { setMaxListeners } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { agentvisor, echoAgentScript, type Supervisor } from './lib/agentvisor.js';
import { ownCpuMs, processCpuMs } from './lib/processes.js';
import { finish, headline, leakCheck, sampleDetails, type Headline } from './lib/report.js';
import { withLeastTurnMachine, withTurnRouting } from './lib/least-turn-machine.js';
import { startRawAgent, stopRawAgent, type RawAgent } from './lib/raw-agent.js';
import { defaultContext, type BenchContext, type BenchResult } from './lib/results.js';
import { collectGarbage, median, now, quantile, rotate, round, spread, type Interleaved, type Phase, type Sample } from './lib/stats.js';
import { openUpdateSession, type UpdateSession } from './lib/update-session.js';

export interface TurnsSize {
  /** Turns of a measured round, in each mode (the concurrent mode splits them evenly over its sessions). */
  turns: number;
  /** Sessions of the concurrent mode, all on one agent. */
  sessions: number;
  rounds: number;
  /** Turns of the unmeasured warm-up round of each side, in each mode (0: none). */
  warmupTurns: number;
}

export const defaultSize: TurnsSize = { turns: 4_800, sessions: 16, rounds: 9, warmupTurns: 480 };
export const smokeSize: TurnsSize = { turns: 64, sessions: 16, rounds: 1, warmupTurns: 0 };
/** agentvisor / raw, µs per turn, in both modes. */
export const goalRatio = 1.1;

/** Transcript entries a turn adds to the store: the prompt, the update, the prompt_result. */
const entriesPerTurn = 3;

/** One side's agent and its sessions, with the chunks each session has received so far. */
interface Side {
  pid: number;
  sessions: UpdateSession[];
  received: number[];
  /** Turns run on this side, warm-up included. */
  turnsRun: number;
}

interface ModeResult {
  sessions: number;
  samples: Interleaved;
  headline: Headline;
  /** The machine floor's rounds (raw SDK + the least turn machine), paired with `samples`' rounds. */
  floor: Sample[];
  /** Its control's rounds: the same wrapper without the machine. */
  control: Sample[];
}

export async function turnsBench(size: TurnsSize = defaultSize, ctx: BenchContext = defaultContext()): Promise<BenchResult> {
  const spec = { command: process.execPath, args: [echoAgentScript], displayName: 'Echo' };
  const pids: number[] = [];
  const stateDir = mkdtempSync(join(tmpdir(), 'agentvisor-bench-turns-'));
  let raw: RawAgent | undefined;
  let supervisor: Supervisor | undefined;
  const opened: UpdateSession[] = [];
  const storeErrors = { count: 0, droppedWrites: 0 };
  const modes: ModeResult[] = [];
  let entriesAdded = Number.NaN;
  let avTurns = 0;

  /** Subscribes a side's sessions: `received[i]` counts session i's chunks. */
  const side = (pid: number, sessions: UpdateSession[]): Side => {
    const received = sessions.map(() => 0);
    sessions.forEach((session, i) =>
      session.on('update', (update) => {
        if (update.sessionUpdate === 'agent_message_chunk') received[i]!++;
      }),
    );
    opened.push(...sessions);
    return { pid, sessions, received, turnsRun: 0 };
  };

  /**
   * One round of a side: `turns` split over its first `sessions` sessions, each session's
   * turns one after another, the sessions concurrently. Value: µs per turn.
   */
  const runRound = async (s: Side, sessions: number, turns: number): Promise<Sample> => {
    await collectGarbage();
    const perSession = Math.max(1, Math.round(turns / sessions));
    const total = perSession * sessions;
    const latencies: number[] = [];
    const cpuParent = ownCpuMs();
    const cpuAgent = processCpuMs(s.pid);
    const start = now();
    await Promise.all(
      s.sessions.slice(0, sessions).map(async (session, i) => {
        for (let t = 0; t < perSession; t++) {
          const before = s.received[i]!;
          const sent = now();
          const stopReason = await session.prompt('x');
          latencies.push(now() - sent);
          if (stopReason !== 'end_turn' || s.received[i] !== before + 1) {
            throw new Error(`turns: session ${i} got ${s.received[i]! - before} chunk(s), stop reason ${stopReason}; expected 1 chunk and end_turn`);
          }
        }
      }),
    );
    const ms = now() - start;
    s.turnsRun += total;
    return {
      value: (ms / total) * 1000,
      extra: {
        turnsPerS: (total / ms) * 1000,
        latencyP50Us: quantile(latencies, 0.5) * 1000,
        latencyP99Us: quantile(latencies, 0.99) * 1000,
        parentCpuUsPerTurn: ((ownCpuMs() - cpuParent) / total) * 1000,
        agentCpuUsPerTurn: ((processCpuMs(s.pid) - cpuAgent) / total) * 1000,
      },
    };
  };

  try {
    raw = await startRawAgent(echoAgentScript);
    pids.push(raw.pid);
    // The SDK's session helper adds one abort listener per session to the connection's signal:
    // 16 sessions (three times: the raw side's, the floor's and its control's) are no leak, but
    // pass Node's default warning threshold (10).
    setMaxListeners(3 * size.sessions + 10, raw.connection.signal);
    const rawSessions: UpdateSession[] = [];
    for (let i = 0; i < size.sessions; i++) rawSessions.push(await openUpdateSession(raw.connection));
    const rawSide = side(raw.pid, rawSessions);
    const floorSessions: UpdateSession[] = [];
    for (let i = 0; i < size.sessions; i++) floorSessions.push(withLeastTurnMachine(await openUpdateSession(raw.connection)));
    const floorSide = side(raw.pid, floorSessions);
    const controlSessions: UpdateSession[] = [];
    for (let i = 0; i < size.sessions; i++) controlSessions.push(withTurnRouting(await openUpdateSession(raw.connection)));
    const controlSide = side(raw.pid, controlSessions);

    supervisor = agentvisor.createSupervisor({ stateDir, agents: { echo: spec } });
    supervisor.on('store:error', ({ droppedWrites }) => {
      storeErrors.count++;
      storeErrors.droppedWrites += droppedWrites;
    });
    const handle = await supervisor.ensureAgent('echo');
    pids.push(handle.pid);
    const avSessions: UpdateSession[] = [];
    for (let i = 0; i < size.sessions; i++) avSessions.push(await supervisor.newSession('echo', { cwd: process.cwd() }));
    const avSide = side(handle.pid, avSessions);
    const before = await supervisor.storeStats();

    for (const sessions of [1, size.sessions]) {
      const label = sessions === 1 ? '1 session' : `${sessions} sessions`;
      const turnsIn = (phase: Phase) => (phase === 'warmup' ? size.warmupTurns : size.turns);
      const rounds = await rotate({
        warmup: size.warmupTurns > 0 ? 1 : 0,
        rounds: size.rounds,
        sides: {
          baseline: (phase) => runRound(rawSide, sessions, turnsIn(phase)),
          agentvisor: (phase) => runRound(avSide, sessions, turnsIn(phase)),
          floor: (phase) => runRound(floorSide, sessions, turnsIn(phase)),
          control: (phase) => runRound(controlSide, sessions, turnsIn(phase)),
        },
        onRound: (i, { baseline: a, agentvisor: b, floor: f, control: c }) =>
          ctx.log(
            `  turns round ${i}/${size.rounds} (${label}, ${size.turns} turns): raw ${a!.value.toFixed(1)} µs/turn (${a!.extra!['turnsPerS']!.toFixed(0)} turns/s), ` +
              `agentvisor ${b!.value.toFixed(1)} µs/turn (${b!.extra!['turnsPerS']!.toFixed(0)} turns/s), machine floor ${f!.value.toFixed(1)} µs/turn (control ${c!.value.toFixed(1)})`,
          ),
      });
      const samples: Interleaved = { baseline: rounds['baseline']!, agentvisor: rounds['agentvisor']! };
      modes.push({ sessions, samples, headline: headline(samples), floor: rounds['floor']!, control: rounds['control']! });
    }
    // A read applies the writes queued so far: this one sees the last turn's batch too.
    entriesAdded = (await supervisor.storeStats()).transcript.count - before.transcript.count;
    avTurns = avSide.turnsRun;
  } finally {
    for (const session of opened) await session.close().catch(() => {});
    try {
      if (raw) await stopRawAgent(raw);
      if (supervisor) await supervisor.shutdown();
    } finally {
      rmSync(stateDir, { recursive: true, force: true });
    }
  }
  const leaks = await leakCheck(pids);

  const worst = modes.reduce((a, b) => (b.headline.ratio > a.headline.ratio ? b : a));
  const modeDetails = Object.fromEntries(
    modes.map(({ sessions, samples, headline: h, floor, control }) => {
      const turnsPerS = (sample: Sample[]) => round(1_000_000 / median(sample.map((x) => x.value)), 1);
      return [
        sessions === 1 ? 'oneSession' : `sessions${sessions}`,
        {
          sessions,
          usPerTurn: { raw: h.baseline, agentvisor: h.agentvisor },
          turnsPerS: { raw: turnsPerS(samples.baseline), agentvisor: turnsPerS(samples.agentvisor) },
          ratio: h.ratio,
          met: h.ratio <= goalRatio,
          machineFloor: { ...floorDetails(samples.baseline, floor), control: floorDetails(samples.baseline, control) },
          ...sampleDetails(samples),
        },
      ];
    }),
  );
  const checks = {
    /** Every mode: agentvisor µs per turn ≤ goalRatio × raw. */
    ratioEveryMode: modes.every((mode) => mode.headline.ratio <= goalRatio),
    /** The store holds every turn's prompt, update and result, and reported no error. */
    storeComplete: entriesAdded >= entriesPerTurn * avTurns && storeErrors.count === 0,
    allGone: leaks.leftover.length === 0,
  };
  ctx.log(
    `  turns: ${modes.map((m) => `${m.sessions} session(s) ratio ${m.headline.ratio} (machine floor ${floorDetails(m.samples.baseline, m.floor).ratio}, its control ${floorDetails(m.samples.baseline, m.control).ratio})`).join(', ')}; headline: ${worst.sessions} session(s); ` +
      `store: ${entriesAdded} transcript entries for ${avTurns} turns`,
  );
  return finish(ctx, {
    benchmark: 'turns',
    baseline: worst.headline.baseline,
    agentvisor: worst.headline.agentvisor,
    unit: 'µs/turn',
    ratio: worst.headline.ratio,
    goal: `µs/turn ratio ≤ ${goalRatio} with 1 and ${size.sessions} sessions (headline: the worse); store holds every turn; all gone`,
    met: Object.values(checks).every(Boolean),
    details: {
      size,
      checks,
      headlineMode: worst.sessions === 1 ? '1 session' : `${worst.sessions} sessions on one agent`,
      note:
        'lower is better: µs per turn, agentvisor (sqlite store) / raw SDK; turns/s in modes.*.turnsPerS; ' +
        'modes.*.machineFloor: the raw SDK with the least machine that decides a turn (lib/least-turn-machine.ts), same rounds; .control: the same without the machine',
      modes: modeDetails,
      store: { turns: avTurns, transcriptEntriesAdded: entriesAdded, transcriptEntriesExpected: entriesPerTurn * avTurns, ...storeErrors },
      processes: { spawned: pids.length, leftover: leaks.leftover.length },
    },
  });
}

/** A reported side's µs per turn and its ratio to the raw side's, medians of the same rounds. */
function floorDetails(raw: readonly Sample[], floor: readonly Sample[]): { usPerTurn: number; ratio: number; pairedRatio: ReturnType<typeof spread> } {
  const floorUs = median(floor.map((s) => s.value));
  return {
    usPerTurn: round(floorUs, 3),
    ratio: round(floorUs / median(raw.map((s) => s.value)), 4),
    pairedRatio: spread(floor.map((s, i) => s.value / raw[i]!.value)),
  };
}
