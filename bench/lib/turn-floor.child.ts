/**
 * The turns benchmark's machine floor, in a process of its own (turns.bench.ts starts it):
 * the raw SDK, the raw SDK with each prompt decided by the least turn machine
 * (least-turn-machine.ts), and the same without the machine (its control), on one raw echo
 * agent, in the 1-session and the concurrent mode; the rounds take the three sides in every
 * order by turns (stats.ts, `rotate`).
 *
 * Why a process of its own: agentvisor is never loaded here, so the floor's XState runs
 * without agentvisor's machines sharing its code (and its inline caches), and no side runs
 * right after agentvisor's (its store commits a batch up to 20 ms after a turn).
 *
 * Argument: one JSON object, {@link FloorRequest}. Output: one JSON line, {@link FloorReport}.
 * When its parent goes (its stdin ends), it stops its agent and exits.
 */
import { setMaxListeners } from 'node:events';
import { withLeastTurnMachine, withTurnRouting, type CountedSession } from './least-turn-machine.js';
import { startRawAgent, stopRawAgent, type RawAgent } from './raw-agent.js';
import { rotate, type Phase, type Sample } from './stats.js';
import { runTurnRound, turnSide } from './turn-rounds.js';
import { openUpdateSession, type UpdateSession } from './update-session.js';

export interface FloorRequest {
  echoAgentScript: string;
  turns: number;
  sessions: number;
  rounds: number;
  warmupTurns: number;
}

export interface FloorReport {
  pid: number;
  modes: { sessions: number; raw: Sample[]; floor: Sample[]; control: Sample[] }[];
  /** Turns each wrapped side ran (warm-ups included), and the answers its wrapper gave: equal when every turn went through it. */
  turnsRun: { floor: number; control: number };
  answers: { floor: number; control: number };
}

async function main(request: FloorRequest): Promise<FloorReport> {
  let raw: RawAgent | undefined;
  const opened: UpdateSession[] = [];
  // The parent gone (killed, or its test timed out): stop the agent and leave, not run on.
  process.stdin.on('end', () => {
    if (raw) void stopRawAgent(raw, { shutdownTimeoutMs: 500, killTimeoutMs: 500 }).finally(() => process.exit(1));
    else process.exit(1);
  });
  process.stdin.resume();
  try {
    raw = await startRawAgent(request.echoAgentScript);
    // The SDK's session helper adds one abort listener per session to the connection's signal.
    setMaxListeners(3 * request.sessions + 10, raw.connection.signal);
    const open = async <T extends UpdateSession>(wrap: (session: UpdateSession) => T): Promise<T[]> => {
      const sessions: T[] = [];
      for (let i = 0; i < request.sessions; i++) sessions.push(wrap(await openUpdateSession(raw!.connection)));
      opened.push(...sessions);
      return sessions;
    };
    const rawSide = turnSide(raw.pid, await open((session) => session));
    const floorSessions: CountedSession[] = await open(withLeastTurnMachine);
    const controlSessions: CountedSession[] = await open(withTurnRouting);
    const floorSide = turnSide(raw.pid, floorSessions);
    const controlSide = turnSide(raw.pid, controlSessions);

    const modes: FloorReport['modes'] = [];
    for (const sessions of [1, request.sessions]) {
      const turnsIn = (phase: Phase) => (phase === 'warmup' ? request.warmupTurns : request.turns);
      const rounds = await rotate({
        warmup: request.warmupTurns > 0 ? 1 : 0,
        rounds: request.rounds,
        sides: {
          raw: (phase: Phase) => runTurnRound(rawSide, sessions, turnsIn(phase)),
          floor: (phase: Phase) => runTurnRound(floorSide, sessions, turnsIn(phase)),
          control: (phase: Phase) => runTurnRound(controlSide, sessions, turnsIn(phase)),
        },
      });
      modes.push({ sessions, raw: rounds['raw']!, floor: rounds['floor']!, control: rounds['control']! });
    }
    const answers = (sessions: CountedSession[]) => sessions.reduce((sum, session) => sum + session.answers(), 0);
    return {
      pid: raw.pid,
      modes,
      turnsRun: { floor: floorSide.turnsRun, control: controlSide.turnsRun },
      answers: { floor: answers(floorSessions), control: answers(controlSessions) },
    };
  } finally {
    for (const session of opened) await session.close().catch(() => {});
    if (raw) await stopRawAgent(raw);
  }
}

main(JSON.parse(process.argv[2] ?? '') as FloorRequest).then(
  (report) => process.stdout.write(`${JSON.stringify(report)}\n`, () => process.exit(0)),
  (error: unknown) => {
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`, () => process.exit(1));
  },
);
