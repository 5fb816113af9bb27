/**
 * stream: one session streams `chunks` `agent_message_chunk` updates to a subscriber that
 * counts them; throughput = chunks / time from sending the prompt to the end of the turn.
 * One agent per side, started once (not timed); a warm-up turn per side, then `rounds`
 * measured turns, the sides rotated (A B C, C B A, ...). Each turn starts from a collected
 * heap. The rounds are odd in number: the first turn of a round follows the same side's turn
 * of the round before, and such turns ran ~8 % faster in a 16-round experiment under load;
 * with an odd count each side gets as many of them (the first round's first turn follows
 * the last side's warm-up).
 *
 * Sides (each reads updates through `session.on('update', …)` + `await session.prompt(…)`):
 * - raw (baseline, keeps nothing): execa + SDK connection; the SDK's session helper
 *   (`connection.agent.buildSession(cwd).start()`), see lib/update-session.ts;
 * - agentvisor (headline): `supervisor.newSession('stream', { cwd })`, the Session API, with
 *   `store: 'sqlite'` (the default): every update goes into `<stateDir>/agentvisor.db`, one
 *   transaction per tick or per 5 ms of a stream (docs/store.md), inside the timed turn;
 * - agentvisor-memory (details): the same with `store: 'memory'` — the library's cost
 *   without the disk;
 * - agentvisor-connection (details, when size.connectionPath — on in the smoke size, off in
 *   a full run to save its minute; BENCH_STREAM_CONNECTION=1 turns it on): the same SDK
 *   session helper as raw, over the SDK connection agentvisor exposes
 *   (`(await supervisor.ensureAgent(name)).connection`) — how this benchmark read updates
 *   before the Session API existed. Its agent runs under the memory supervisor (the store
 *   does not keep such sessions), so the SQLite file holds the headline side's writes only.
 * Each supervisor has a state directory of its own (mkdtemp, removed at the end): the
 * benchmark never writes to the user's state directory, and the SQLite file starts empty.
 *
 * Goal (`met`): agentvisor (sqlite) throughput ≥ 0.90 × raw (ratio = agentvisor / raw,
 * medians of the rounds); each store holds every update its side streamed, warm-up included
 * (transcript count ≥ updates streamed), with no `store:error`; no process left behind.
 * details.checks.memoryRatio reports agentvisor-memory ≥ 0.95 × raw (the goal before the
 * store) as information; `met` does not require it.
 * details.store: how the SQLite file grew, per 100,000 updates (`storeStats().fileBytes`,
 * database + WAL, at the end minus at the start, over every update streamed through the
 * sqlite side), transcript bytes per update, and the file's size once closed (checkpointed).
 *
 * The agent: the prompt is the fixture's `{"op":"stream","count":N,"text":"x"}` command,
 * served by default by bench/agents/stream-agent.mjs, which sends the chunks back to back.
 * The fixture paces each chunk with setTimeout(0) (≥ 1 ms, ~700 chunks/s here), so 100,000
 * chunks from it take ~2.5 minutes per turn and measure that timer. BENCH_STREAM_AGENT=fixture
 * (or size.agent = 'fixture') uses the fixture anyway.
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
/** The headline goal: agentvisor with the SQLite store (the default) against raw. */
export const goalRatio = 0.9;
/** agentvisor with the memory store against raw: the goal before the store, reported as information. */
export const memoryGoalRatio = 0.95;

export { streamAgentScript };

/** The store's database file in a state directory (docs/store.md). */
const storeFileName = 'agentvisor.db';

interface Side {
  session: UpdateSession;
  pid: number;
}

type StoreStats = Awaited<ReturnType<Supervisor['storeStats']>>;

/** A supervisor of one side, with the state directory it owns and the store errors it reported. */
interface StoreSide {
  store: 'sqlite' | 'memory';
  stateDir: string;
  supervisor: Supervisor;
  storeErrors: number;
  droppedWrites: number;
  /** storeStats() before the first turn and after the last one. */
  before?: StoreStats;
  after?: StoreStats;
}

export async function streamBench(size: StreamSize = defaultSize, ctx: BenchContext = defaultContext()): Promise<BenchResult> {
  const script = size.agent === 'fixture' ? fixtureAgentScript : streamAgentScript;
  const spec = { command: process.execPath, args: [script], displayName: 'Stream' };
  const command = (count: number) => JSON.stringify({ op: 'stream', count, text: 'x' });
  const pids: number[] = [];
  let raw: RawAgent | undefined;
  const stores: StoreSide[] = [];
  const sessions: UpdateSession[] = [];
  const sides: Record<string, Side> = {};
  /** Updates streamed through each side, warm-up included. */
  const streamed: Record<string, number> = {};
  let closedFileBytes = Number.NaN;

  /**
   * One streaming turn: throughput in chunks/s, plus where the CPU went. It starts from a
   * collected heap, so that no turn pays for the garbage of the turn before.
   */
  const turn = async (name: string, { session, pid }: Side, count: number): Promise<Sample> => {
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
    streamed[name] = (streamed[name] ?? 0) + count;
    return {
      value: (count / ms) * 1000,
      extra: {
        ms,
        parentCpuUsPerChunk: ((ownCpuMs() - cpuParent) / count) * 1000,
        agentCpuUsPerChunk: ((processCpuMs(pid) - cpuAgent) / count) * 1000,
      },
    };
  };

  /** A supervisor with the given store, in a state directory of its own. */
  const storeSide = (store: StoreSide['store'], agents: Record<string, typeof spec>): StoreSide => {
    const stateDir = mkdtempSync(join(tmpdir(), `agentvisor-bench-stream-${store}-`));
    let supervisor: Supervisor;
    try {
      supervisor = agentvisor.createSupervisor({ store, stateDir, agents });
    } catch (error) {
      rmSync(stateDir, { recursive: true, force: true });
      throw error;
    }
    const side: StoreSide = { store, stateDir, supervisor, storeErrors: 0, droppedWrites: 0 };
    supervisor.on('store:error', ({ droppedWrites }) => {
      side.storeErrors++;
      side.droppedWrites += droppedWrites;
    });
    stores.push(side);
    return side;
  };

  let samples: Record<string, Sample[]>;
  let sqlite: StoreSide;
  let memory: StoreSide;
  try {
    raw = await startRawAgent(script);
    pids.push(raw.pid);
    sides['raw'] = { session: await openUpdateSession(raw.connection), pid: raw.pid };

    sqlite = storeSide('sqlite', { stream: spec });
    memory = storeSide('memory', { stream: spec, ...(size.connectionPath ? { 'stream-connection': spec } : {}) });
    for (const [name, { supervisor }] of [
      ['agentvisor', sqlite],
      ['agentvisor-memory', memory],
    ] as const) {
      const handle = await supervisor.ensureAgent('stream');
      pids.push(handle.pid);
      sides[name] = { session: await supervisor.newSession('stream', { cwd: process.cwd() }), pid: handle.pid };
    }
    if (size.connectionPath) {
      const connectionHandle = await memory.supervisor.ensureAgent('stream-connection');
      pids.push(connectionHandle.pid);
      sides['agentvisor-connection'] = { session: await openUpdateSession(connectionHandle.connection), pid: connectionHandle.pid };
    }
    sessions.push(...Object.values(sides).map((side) => side.session));
    for (const side of stores) side.before = await side.supervisor.storeStats();

    samples = await rotate({
      warmup: size.warmupChunks > 0 ? 1 : 0,
      rounds: size.rounds,
      sides: Object.fromEntries(Object.entries(sides).map(([name, side]) => [name, (phase: Phase) => turn(name, side, phase === 'warmup' ? size.warmupChunks : size.chunks)])),
      onRound: (i, round) =>
        ctx.log(
          `  stream round ${i}/${size.rounds} (${size.chunks} chunks): ` +
            Object.entries(round).map(([name, sample]) => `${name} ${sample.value.toFixed(0)} chunks/s`).join(', '),
        ),
    });
    // Every read applies the writes queued so far: these see each turn's last batch too.
    for (const side of stores) side.after = await side.supervisor.storeStats();
  } finally {
    for (const session of sessions) await session.close().catch(() => {});
    if (raw) await stopRawAgent(raw);
    try {
      for (const side of stores) await side.supervisor.shutdown();
      // Closed (the last connection checkpoints the WAL into the file): the file's settled size.
      const sqliteSide = stores.find((side) => side.store === 'sqlite');
      if (sqliteSide) closedFileBytes = fileSize(join(sqliteSide.stateDir, storeFileName));
    } finally {
      for (const side of stores) rmSync(side.stateDir, { recursive: true, force: true });
    }
  }
  const leaks = await leakCheck(pids);
  const pair = { baseline: samples['raw']!, agentvisor: samples['agentvisor']! };
  const { baseline, agentvisor: av, ratio } = headline(pair);
  const values = (name: string) => samples[name]!.map((s) => s.value);
  /** A further side against raw: its median, ratio, spread, per-round ratio and phases. */
  const sideDetails = (name: string, note: string) => ({
    note,
    chunksPerS: round(median(values(name)), 1),
    ratio: round(median(values(name)) / baseline, 4),
    spread: spread(values(name)),
    pairedRatio: spread(values(name).map((value, i) => value / values('raw')[i]!)),
    phases: medianExtras(samples[name]!),
  });
  const memoryDetails = sideDetails('agentvisor-memory', "the Session API with store: 'memory'");

  /** What a side's store gained over the turns, against the updates streamed through it. */
  const growth = (side: StoreSide, name: string) => {
    const updates = streamed[name] ?? 0;
    const before = side.before!;
    const after = side.after!;
    const entries = after.transcript.count - before.transcript.count;
    const bytes = after.transcript.bytes - before.transcript.bytes;
    return {
      updatesStreamed: updates,
      /** Transcript entries added: every update, plus a prompt and a prompt_result per turn. */
      transcriptEntriesAdded: entries,
      transcriptEntriesExpected: updates + 2 * (size.rounds + (size.warmupChunks > 0 ? 1 : 0)),
      transcriptBytesPerUpdate: round(bytes / updates, 1),
      complete: entries >= updates,
      storeErrors: side.storeErrors,
      droppedWrites: side.droppedWrites,
    };
  };
  const sqliteGrowth = growth(sqlite!, 'agentvisor');
  const memoryGrowth = growth(memory!, 'agentvisor-memory');
  const per100k = (bytes: number, updates: number) => Math.round((bytes / updates) * 100_000);
  const fileBefore = sqlite!.before!.fileBytes ?? Number.NaN;
  const fileAfter = sqlite!.after!.fileBytes ?? Number.NaN;
  const store = {
    file: `<temporary stateDir>/${storeFileName}`,
    /** Transcript entries the sqlite side added: its updates, plus a prompt and a prompt_result per turn. */
    transcriptEntriesStored: sqliteGrowth.transcriptEntriesAdded,
    updatesStreamed: sqliteGrowth.updatesStreamed,
    /** storeStats().fileBytes (database + WAL) at the end minus at the start, per 100,000 updates streamed. */
    fileBytesPer100k: per100k(fileAfter - fileBefore, sqliteGrowth.updatesStreamed),
    transcriptBytesPerUpdate: sqliteGrowth.transcriptBytesPerUpdate,
    fileBytes: { before: fileBefore, after: fileAfter, closed: closedFileBytes },
    /** The file once the store was closed (WAL checkpointed into it), per 100,000 updates streamed. */
    closedFileBytesPer100k: per100k(closedFileBytes, sqliteGrowth.updatesStreamed),
    sqlite: sqliteGrowth,
    memory: memoryGrowth,
  };
  const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(2);
  ctx.log(
    `  stream store (sqlite): ${store.transcriptEntriesStored} transcript entries for ${store.updatesStreamed} updates streamed, ` +
      `file ${mb(fileBefore)} → ${mb(fileAfter)} MiB (db + WAL; ${mb(closedFileBytes)} MiB once closed): ` +
      `${mb(store.fileBytesPer100k)} MiB per 100k updates, ${store.transcriptBytesPerUpdate} transcript bytes per update`,
  );

  const checks = {
    /** The headline: agentvisor with the SQLite store ≥ goalRatio × raw. */
    sqliteRatio: ratio >= goalRatio,
    /** Information only (not required by `met`): agentvisor with the memory store ≥ memoryGoalRatio × raw. */
    memoryRatio: memoryDetails.ratio >= memoryGoalRatio,
    /** Each store holds every update its side streamed (a store that drops writes fails), and reported no error. */
    sqliteStoreComplete: sqliteGrowth.complete && sqliteGrowth.storeErrors === 0,
    memoryStoreComplete: memoryGrowth.complete && memoryGrowth.storeErrors === 0,
    allGone: leaks.leftover.length === 0,
  };
  const viaConnection = samples['agentvisor-connection'];
  return finish(ctx, {
    benchmark: 'stream',
    baseline,
    agentvisor: av,
    unit: 'chunks/s',
    ratio,
    goal: `sqlite store: ratio ≥ ${goalRatio}; both stores hold every update; all gone (memory store ≥ ${memoryGoalRatio}: information)`,
    met: checks.sqliteRatio && checks.sqliteStoreComplete && checks.memoryStoreComplete && checks.allGone,
    details: {
      size,
      agentScript: size.agent,
      checks,
      ...sampleDetails(pair),
      agentvisorMemory: memoryDetails,
      store,
      ...(viaConnection ? { agentvisorConnection: sideDetails('agentvisor-connection', 'SDK session helper over handle.connection (no Session API)') } : {}),
      processes: { spawned: pids.length, leftover: leaks.leftover.length },
    },
  });
}

function fileSize(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return Number.NaN;
  }
}
