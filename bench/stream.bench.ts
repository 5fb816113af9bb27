/**
 * stream: one session streams `chunks` `agent_message_chunk` updates to a subscriber that
 * counts them; throughput = chunks / time from sending the prompt to the end of the turn.
 * One agent per side, started once (not timed); a warm-up turn per side, then `rounds`
 * measured turns, sides in alternating order (A B, B A, ...). Each turn starts from a
 * collected heap. The rounds are odd in number: the first turn of a round follows the same
 * side's turn of the round before, and such turns ran ~8 % faster in a 16-round experiment
 * under load; with an odd count each side gets as many of them (the first round's first
 * turn follows the other side's warm-up).
 *
 * Sides (each reads updates through `session.on('update', …)` + `await session.prompt(…)`):
 * - raw (baseline): execa + SDK connection; the SDK's session helper
 *   (`connection.agent.buildSession(cwd).start()`), see lib/update-session.ts;
 * - agentvisor (headline): `supervisor.newSession('stream', { cwd })`, the Session API;
 * - agentvisor-connection (details, when size.connectionPath — on in the smoke size, off in
 *   a full run to save its minute; BENCH_STREAM_CONNECTION=1 turns it on): the same SDK
 *   session helper as raw, over the SDK connection agentvisor exposes
 *   (`(await supervisor.ensureAgent(name)).connection`) — how this benchmark read updates
 *   before the Session API existed.
 * Goal: agentvisor throughput ≥ 0.95 × raw (ratio = agentvisor / raw, medians of the rounds).
 *
 * The agent: the prompt is the fixture's `{"op":"stream","count":N,"text":"x"}` command,
 * served by default by bench/agents/stream-agent.mjs, which sends the chunks back to back.
 * The fixture paces each chunk with setTimeout(0) (≥ 1 ms, ~700 chunks/s here), so 100,000
 * chunks from it take ~2.5 minutes per turn and measure that timer. BENCH_STREAM_AGENT=fixture
 * (or size.agent = 'fixture') uses the fixture anyway.
 */
import { agentvisor, fixtureAgentScript, streamAgentScript, type Supervisor } from './lib/agentvisor.js';
import { ownCpuMs, processCpuMs } from './lib/processes.js';
import { finish, headline, leakCheck, sampleDetails } from './lib/report.js';
import { startRawAgent, stopRawAgent, type RawAgent } from './lib/raw-agent.js';
import { defaultContext, type BenchContext, type BenchResult } from './lib/results.js';
import { collectGarbage, median, now, rotate, round, spread, medianExtras, type Phase, type Sample } from './lib/stats.js';
import { openUpdateSession, type UpdateSession } from './lib/update-session.js';

export interface StreamSize {
  chunks: number;
  rounds: number;
  /** Chunks of the unmeasured warm-up turn on each side (0: none). */
  warmupChunks: number;
  agent: 'stream-agent' | 'fixture';
  /** Also measure the SDK session helper over `handle.connection` (see above). */
  connectionPath: boolean;
}

const envAgent = process.env['BENCH_STREAM_AGENT'] === 'fixture' ? 'fixture' : 'stream-agent';
const envConnection = process.env['BENCH_STREAM_CONNECTION'] === '1';
export const defaultSize: StreamSize = { chunks: 100_000, rounds: 7, warmupChunks: 10_000, agent: envAgent, connectionPath: envConnection };
export const smokeSize: StreamSize = { chunks: 1_000, rounds: 1, warmupChunks: 0, agent: envAgent, connectionPath: true };
export const goalRatio = 0.95;

export { streamAgentScript };

interface Side {
  session: UpdateSession;
  pid: number;
}

export async function streamBench(size: StreamSize = defaultSize, ctx: BenchContext = defaultContext()): Promise<BenchResult> {
  const script = size.agent === 'fixture' ? fixtureAgentScript : streamAgentScript;
  const spec = { command: process.execPath, args: [script], displayName: 'Stream' };
  const command = (count: number) => JSON.stringify({ op: 'stream', count, text: 'x' });
  const pids: number[] = [];
  let raw: RawAgent | undefined;
  let supervisor: Supervisor | undefined;
  const sessions: UpdateSession[] = [];
  const sides: Record<string, Side> = {};

  /**
   * One streaming turn: throughput in chunks/s, plus where the CPU went. It starts from a
   * collected heap, so that no turn pays for the garbage of the turn before.
   */
  const turn = async ({ session, pid }: Side, count: number): Promise<Sample> => {
    await collectGarbage();
    let received = 0;
    const off = session.on('update', (update) => {
      if (update.sessionUpdate === 'agent_message_chunk') received++;
    });
    const cpuParent = ownCpuMs();
    const cpuAgent = processCpuMs(pid);
    const start = now();
    const stopReason = await session.prompt(command(count));
    const ms = now() - start;
    off();
    if (received !== count || stopReason !== 'end_turn') throw new Error(`stream: got ${received}/${count} chunks, stop reason ${stopReason}`);
    return {
      value: (count / ms) * 1000,
      extra: {
        ms,
        parentCpuUsPerChunk: ((ownCpuMs() - cpuParent) / count) * 1000,
        agentCpuUsPerChunk: ((processCpuMs(pid) - cpuAgent) / count) * 1000,
      },
    };
  };

  let samples: Record<string, Sample[]>;
  try {
    raw = await startRawAgent(script);
    pids.push(raw.pid);
    sides['raw'] = { session: await openUpdateSession(raw.connection), pid: raw.pid };

    supervisor = agentvisor.createSupervisor({ agents: { stream: spec, 'stream-connection': spec } });
    const handle = await supervisor.ensureAgent('stream');
    pids.push(handle.pid);
    sides['agentvisor'] = { session: await supervisor.newSession('stream', { cwd: process.cwd() }), pid: handle.pid };
    if (size.connectionPath) {
      const connectionHandle = await supervisor.ensureAgent('stream-connection');
      pids.push(connectionHandle.pid);
      sides['agentvisor-connection'] = { session: await openUpdateSession(connectionHandle.connection), pid: connectionHandle.pid };
    }
    sessions.push(...Object.values(sides).map((side) => side.session));

    samples = await rotate({
      warmup: size.warmupChunks > 0 ? 1 : 0,
      rounds: size.rounds,
      sides: Object.fromEntries(Object.entries(sides).map(([name, side]) => [name, (phase: Phase) => turn(side, phase === 'warmup' ? size.warmupChunks : size.chunks)])),
      onRound: (i, round) =>
        ctx.log(
          `  stream round ${i}/${size.rounds} (${size.chunks} chunks): ` +
            Object.entries(round).map(([name, sample]) => `${name} ${sample.value.toFixed(0)} chunks/s`).join(', '),
        ),
    });
  } finally {
    for (const session of sessions) await session.close().catch(() => {});
    if (raw) await stopRawAgent(raw);
    await supervisor?.shutdown();
  }
  const leaks = await leakCheck(pids);
  const pair = { baseline: samples['raw']!, agentvisor: samples['agentvisor']! };
  const { baseline, agentvisor: av, ratio } = headline(pair);
  const viaConnection = samples['agentvisor-connection'];
  return finish(ctx, {
    benchmark: 'stream',
    baseline,
    agentvisor: av,
    unit: 'chunks/s',
    ratio,
    goal: `ratio ≥ ${goalRatio}`,
    met: ratio >= goalRatio && leaks.leftover.length === 0,
    details: {
      size,
      agentScript: size.agent,
      ...sampleDetails(pair),
      ...(viaConnection
        ? {
            agentvisorConnection: {
              note: 'SDK session helper over handle.connection (no Session API)',
              chunksPerS: round(median(viaConnection.map((s) => s.value)), 1),
              ratio: round(median(viaConnection.map((s) => s.value)) / baseline, 4),
              spread: spread(viaConnection.map((s) => s.value)),
              phases: medianExtras(viaConnection),
            },
          }
        : {}),
      processes: { spawned: pids.length, leftover: leaks.leftover.length },
    },
  });
}
