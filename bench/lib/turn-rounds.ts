/**
 * The rounds of the turns benchmark (turns.bench.ts and its machine floor, turn-floor.child.ts):
 * a side is an agent's sessions with a count of the chunks each received; a round runs
 * `turns` one-word prompts over its first `sessions` sessions, each session's turns one
 * after another, the sessions concurrently, and checks that every turn got exactly one chunk
 * and `end_turn`.
 */
import { ownCpuMs, processCpuMs } from './processes.js';
import { collectGarbage, now, quantile, type Sample } from './stats.js';
import type { UpdateSession } from './update-session.js';

/** One side's agent and its sessions, with the chunks each session has received so far. */
export interface TurnSide {
  pid: number;
  sessions: UpdateSession[];
  received: number[];
  /** Turns run on this side, warm-up included. */
  turnsRun: number;
}

/** Subscribes a side's sessions: `received[i]` counts session i's chunks. */
export function turnSide(pid: number, sessions: UpdateSession[]): TurnSide {
  const received = sessions.map(() => 0);
  sessions.forEach((session, i) =>
    session.on('update', (update) => {
      if (update.sessionUpdate === 'agent_message_chunk') received[i]!++;
    }),
  );
  return { pid, sessions, received, turnsRun: 0 };
}

/** One round of a side, from a collected heap. Value: µs per turn; extras: turns/s, latency, both processes' CPU per turn. */
export async function runTurnRound(s: TurnSide, sessions: number, turns: number): Promise<Sample> {
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
}
