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
 *   update and result go into `<stateDir>/agentvisor.db` inside the timed turn.
 *
 * The machine floor (reported in details, not the goal's): after those rounds, once their
 * agents are stopped, a process of its own (lib/turn-floor.child.ts, which never loads
 * agentvisor) runs the same modes, rounds and turns on a raw echo agent of its own, three
 * sides in every order by turns: the raw SDK; the raw SDK with each prompt decided by the
 * least XState machine that decides a turn (lib/least-turn-machine.ts: two states, two
 * transitions of one inline action each); and the same wrapper without the machine (its
 * control). floor / raw is what an XState machine
 * stepping at each turn's start and end adds to the raw SDK's turn on this machine (the
 * control / raw says the wrapper itself adds nothing); docs/performance.md, *turns*.
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
import { execFile } from 'node:child_process';
import { setMaxListeners } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { agentvisor, echoAgentScript, type Supervisor } from './lib/agentvisor.js';
import { finish, headline, leakCheck, sampleDetails, type Headline } from './lib/report.js';
import { startRawAgent, stopRawAgent, type RawAgent } from './lib/raw-agent.js';
import { defaultContext, type BenchContext, type BenchResult } from './lib/results.js';
import { interleave, median, round, type Interleaved, type Phase, type Sample } from './lib/stats.js';
import type { FloorReport, FloorRequest } from './lib/turn-floor.child.js';
import { runTurnRound, turnSide, type TurnSide } from './lib/turn-rounds.js';
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

interface ModeResult {
  sessions: number;
  samples: Interleaved;
  headline: Headline;
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

  /** A side whose sessions are closed at the end. */
  const side = (pid: number, sessions: UpdateSession[]): TurnSide => {
    opened.push(...sessions);
    return turnSide(pid, sessions);
  };

  try {
    raw = await startRawAgent(echoAgentScript);
    pids.push(raw.pid);
    // The SDK's session helper adds one abort listener per session to the connection's signal:
    // 16 sessions are no leak, but pass Node's default warning threshold (10).
    setMaxListeners(size.sessions + 10, raw.connection.signal);
    const rawSessions: UpdateSession[] = [];
    for (let i = 0; i < size.sessions; i++) rawSessions.push(await openUpdateSession(raw.connection));
    const rawSide = side(raw.pid, rawSessions);

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
      const samples = await interleave({
        warmup: size.warmupTurns > 0 ? 1 : 0,
        rounds: size.rounds,
        baseline: (phase) => runTurnRound(rawSide, sessions, turnsIn(phase)),
        agentvisor: (phase) => runTurnRound(avSide, sessions, turnsIn(phase)),
        onRound: (i, a, b) =>
          ctx.log(
            `  turns round ${i}/${size.rounds} (${label}, ${size.turns} turns): raw ${a.value.toFixed(1)} µs/turn (${a.extra!['turnsPerS']!.toFixed(0)} turns/s), ` +
              `agentvisor ${b.value.toFixed(1)} µs/turn (${b.extra!['turnsPerS']!.toFixed(0)} turns/s)`,
          ),
      });
      modes.push({ sessions, samples, headline: headline(samples) });
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
  // Once this process's agents are gone: the floor's process is the only one at work.
  ctx.log('  turns: the machine floor, in a process of its own');
  const floor = await runFloor({ echoAgentScript, turns: size.turns, sessions: size.sessions, rounds: size.rounds, warmupTurns: size.warmupTurns });
  pids.push(floor.pid);
  const leaks = await leakCheck(pids);

  const worst = modes.reduce((a, b) => (b.headline.ratio > a.headline.ratio ? b : a));
  const modeDetails = Object.fromEntries(
    modes.map(({ sessions, samples, headline: h }) => {
      const turnsPerS = (sample: Sample[]) => round(1_000_000 / median(sample.map((x) => x.value)), 1);
      return [
        sessions === 1 ? 'oneSession' : `sessions${sessions}`,
        {
          sessions,
          usPerTurn: { raw: h.baseline, agentvisor: h.agentvisor },
          turnsPerS: { raw: turnsPerS(samples.baseline), agentvisor: turnsPerS(samples.agentvisor) },
          ratio: h.ratio,
          met: h.ratio <= goalRatio,
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
  const machineFloor = floorDetails(floor);
  ctx.log(
    `  turns: ${modes.map((m) => `${m.sessions} session(s) ratio ${m.headline.ratio}`).join(', ')}; headline: ${worst.sessions} session(s); ` +
      `store: ${entriesAdded} transcript entries for ${avTurns} turns`,
  );
  ctx.log(
    `  turns, machine floor (its own process): ${Object.values(machineFloor.modes)
      .map((m) => `${m.sessions} session(s) floor ${m.floor.ratio}, control ${m.control.ratio}`)
      .join(', ')}; every turn answered through its wrapper: ${machineFloor.everyTurnAnswered}`,
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
        'machineFloor: the raw SDK with the least machine that decides a turn, and without it (control), / the raw SDK, in a process of its own',
      modes: modeDetails,
      machineFloor,
      store: { turns: avTurns, transcriptEntriesAdded: entriesAdded, transcriptEntriesExpected: entriesPerTurn * avTurns, ...storeErrors },
      processes: { spawned: pids.length, leftover: leaks.leftover.length },
    },
  });
}

/**
 * Runs the machine floor in a process of its own (lib/turn-floor.child.ts) and reads its
 * report. A floor that does not finish within a millisecond a turn (5-10× what it takes) plus
 * 30 s is killed, and the benchmark fails; the child stops its agent when this process goes.
 */
async function runFloor(request: FloorRequest): Promise<FloorReport> {
  const child = fileURLToPath(new URL('./lib/turn-floor.child.ts', import.meta.url));
  const repository = fileURLToPath(new URL('..', import.meta.url));
  const turnsInAll = 2 * 3 * (request.rounds * request.turns + request.warmupTurns);
  const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', child, JSON.stringify(request)], {
    cwd: repository,
    maxBuffer: 16 * 1024 * 1024,
    timeout: 30_000 + turnsInAll,
    killSignal: 'SIGKILL',
  });
  const last = stdout.trim().split('\n').at(-1) ?? '';
  return JSON.parse(last) as FloorReport;
}

/** The floor's and its control's µs per turn and ratios to the raw SDK's (medians of the same rotation), per mode. */
function floorDetails(report: FloorReport) {
  const against = (raw: Sample[], samples: Sample[]) => {
    const compared: Interleaved = { baseline: raw, agentvisor: samples };
    const { agentvisor: usPerTurn, ratio } = headline(compared);
    return { usPerTurn, ratio, pairedRatio: sampleDetails(compared)['pairedRatio'] };
  };
  return {
    modes: Object.fromEntries(
      report.modes.map(({ sessions, raw, floor, control }) => [
        sessions === 1 ? 'oneSession' : `sessions${sessions}`,
        { sessions, rawUsPerTurn: round(median(raw.map((s) => s.value)), 3), floor: against(raw, floor), control: against(raw, control) },
      ]),
    ),
    turnsRun: report.turnsRun,
    answers: report.answers,
    /** Each wrapped side answered every turn it ran (the machine's answers on the floor side). */
    everyTurnAnswered: report.answers.floor === report.turnsRun.floor && report.answers.control === report.turnsRun.control,
  };
}
