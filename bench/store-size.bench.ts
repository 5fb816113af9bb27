/**
 * store-size: what a store full of history costs a supervisor. The SQLite store keeps
 * running totals and prunes only what exceeds a limit (docs/store.md, "How retention is
 * enforced"), so opening a supervisor, its first handshake and `shutdown()` — which enforce
 * retention — should cost the same on a store of `entries` transcript entries as on an empty
 * one, and a stream into it as much as a stream into an empty one.
 *
 * The large store: `entries` transcript entries over `sessions` sessions of a few agents,
 * written as agents write them (one row per tick of a session's stream, 1-40 entries, text
 * chunks mostly), `stderrLines` stderr lines and `events` events, all within the default
 * retention (its times end when it was built: it is rebuilt once older than
 * {@link maxCacheAgeDays} days, before age limits would apply). Built once and kept in
 * bench/results/store-size/ (git-ignored; `cache: false`, the smoke size, builds it in a
 * temporary directory), together with a JSON file describing it; each run works on a copy of
 * it (removed at the end), as the state directory of the large-store supervisors. An older
 * schema is migrated before anything is timed. The empty store: a state directory whose
 * store was created (migrated, empty) before the first round.
 *
 * Three measurements, each against a baseline measured in the same run:
 * - open: `createSupervisor({ stateDir })` + `ensureAgent('echo')` (the echo agent's
 *   handshake) + `storeStats()` (the first batch applied, with the retention it triggers),
 *   large store against empty store, sides alternating (A B, B A, ...) after `warmup`
 *   unmeasured rounds. Goal: median ratio ≤ {@link goalRatio} (the headline).
 * - shutdown: `shutdown()` of the same supervisor, from the call until it resolves (it
 *   stops the agent, applies the last writes, enforces retention, closes the store).
 *   Goal: large ≤ empty + {@link shutdownSlackMs} ms; the difference is reported.
 * - stream: one session streams `streamChunks` agent_message_chunk updates (the stream
 *   benchmark's turn, bench/agents/stream-agent.mjs): the raw SDK client against agentvisor
 *   with the large store; agentvisor with the empty store runs too, for the details.
 *   Goal: chunks/s ratio (large store / raw) ≥ {@link streamGoalRatio}, every update stored,
 *   no `store:error`.
 */
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { agentvisor, echoAgentScript, streamAgentScript, type Supervisor } from './lib/agentvisor.js';
import { finish, headline, leakCheck, sampleDetails } from './lib/report.js';
import { startRawAgent, stopRawAgent, type RawAgent } from './lib/raw-agent.js';
import { defaultContext, type BenchContext, type BenchResult } from './lib/results.js';
import { collectGarbage, median, medianExtras, now, rotate, round, spread, type Phase, type Sample } from './lib/stats.js';
import { openUpdateSession, type UpdateSession } from './lib/update-session.js';

export interface StoreSizeSize {
  /** Transcript entries in the large store. */
  entries: number;
  sessions: number;
  stderrLines: number;
  events: number;
  /** Open + handshake + shutdown rounds per side, after `warmup` unmeasured ones. */
  rounds: number;
  warmup: number;
  /** Chunks of a measured stream turn, and its rounds (after one warm-up turn per side of `streamWarmupChunks`, if any). */
  streamChunks: number;
  streamRounds: number;
  streamWarmupChunks: number;
  /** Keep the large store under bench/results/store-size/ for the next run (else build it in a temporary directory). */
  cache: boolean;
}

export const defaultSize: StoreSizeSize = {
  entries: 1_000_000,
  sessions: 2_000,
  stderrLines: 50_000,
  events: 50_000,
  rounds: 15,
  warmup: 2,
  streamChunks: 50_000,
  streamRounds: 5,
  streamWarmupChunks: 5_000,
  cache: true,
};
export const smokeSize: StoreSizeSize = {
  entries: 2_000,
  sessions: 10,
  stderrLines: 50,
  events: 50,
  rounds: 1,
  warmup: 0,
  streamChunks: 500,
  streamRounds: 1,
  streamWarmupChunks: 0,
  cache: false,
};
/** open + handshake, large store / empty store. */
export const goalRatio = 1.05;
/** shutdown(), large store − empty store, ms. */
export const shutdownSlackMs = 20;
/** Stream throughput, agentvisor with the large store / raw. */
export const streamGoalRatio = 0.9;
/** A cached store older than this is rebuilt: its entries must stay within the default retention (30 days). */
export const maxCacheAgeDays = 20;

/** Bump when the way the large store is filled changes: a cached store of another format is rebuilt. */
const fillFormat = 1;
const cacheDir = fileURLToPath(new URL('./results/store-size/', import.meta.url));
/** The store's database file in a state directory (docs/store.md). */
const storeFileName = 'agentvisor.db';
const day = 24 * 60 * 60 * 1000;
/** The large store's entries span this long, up to when it was built. */
const fillSpanMs = 5 * day;

/** What the JSON file next to a cached store says about it. */
interface StoreDescription {
  fillFormat: number;
  entries: number;
  sessions: number;
  stderrLines: number;
  events: number;
  builtAt: number;
  buildMs: number;
  rows: number;
}

type StoreStats = Awaited<ReturnType<Supervisor['storeStats']>>;

export async function storeSizeBench(size: StoreSizeSize = defaultSize, ctx: BenchContext = defaultContext()): Promise<BenchResult> {
  const pids: number[] = [];
  const scratch = mkdtempSync(join(tmpdir(), 'agentvisor-bench-store-size-'));
  const emptyDir = join(scratch, 'empty');
  const largeDir = size.cache ? join(cacheDir, `run-${process.pid}`) : join(scratch, 'large');
  const storeErrors = { empty: 0, large: 0 };
  const streamed: Record<string, number> = {};
  let large: { description: StoreDescription; cached: boolean; file: string; fileBytes: number };
  let samples: Record<string, Sample[]>;
  let streamSamples: Record<string, Sample[]>;
  let statsBefore: StoreStats | undefined;
  let statsAfter: StoreStats | undefined;
  try {
    const prepared = prepareLargeStore(size, size.cache ? cacheDir : scratch, ctx);
    large = { ...prepared, fileBytes: fileSize(prepared.file) };
    mkdirSync(largeDir, { recursive: true });
    copyFileSync(large.file, join(largeDir, storeFileName));
    agentvisor.openSqliteStore(join(emptyDir, storeFileName)).close();
    const stateDirs = { empty: emptyDir, large: largeDir };

    /** One round: open a supervisor on the side's state directory, the echo agent's handshake, the first batch applied; then shutdown(). */
    const openRound = async (side: 'empty' | 'large'): Promise<Sample> => {
      const start = now();
      const supervisor = agentvisor.createSupervisor({ stateDir: stateDirs[side], agents: { echo: { command: process.execPath, args: [echoAgentScript], displayName: 'Echo' } } });
      const opened = now();
      supervisor.on('store:error', () => storeErrors[side]++);
      let stored: number;
      let initialized: number;
      try {
        const handle = await supervisor.ensureAgent('echo');
        pids.push(handle.pid);
        initialized = now();
        await supervisor.storeStats();
        stored = now();
      } catch (error) {
        await supervisor.shutdown();
        throw error;
      }
      const stopping = now();
      await supervisor.shutdown();
      const shutdownMs = now() - stopping;
      return { value: stored - start, extra: { createSupervisorMs: opened - start, toInitializedMs: initialized - start, storeStatsMs: stored - initialized, shutdownMs } };
    };
    samples = await rotate({
      warmup: size.warmup,
      rounds: size.rounds,
      sides: { empty: () => openRound('empty'), large: () => openRound('large') },
      onRound: (i, r) =>
        ctx.log(
          `  store-size round ${i}/${size.rounds}: open+handshake empty ${r['empty']!.value.toFixed(1)} ms, large ${r['large']!.value.toFixed(1)} ms; ` +
            `shutdown empty ${r['empty']!.extra!['shutdownMs']!.toFixed(1)} ms, large ${r['large']!.extra!['shutdownMs']!.toFixed(1)} ms`,
        ),
    });

    ({ samples: streamSamples, before: statsBefore, after: statsAfter } = await streamRounds(size, stateDirs, pids, streamed, storeErrors, ctx));
  } finally {
    rmSync(scratch, { recursive: true, force: true });
    if (size.cache) rmSync(largeDir, { recursive: true, force: true });
  }
  const leaks = await leakCheck(pids);

  const pair = { baseline: samples['empty']!, agentvisor: samples['large']! };
  const { baseline, agentvisor: av, ratio } = headline(pair);
  const shutdownOf = (side: string) => median(samples[side]!.map((sample) => sample.extra!['shutdownMs']!));
  const shutdown = { emptyMs: round(shutdownOf('empty')), largeMs: round(shutdownOf('large')), differenceMs: round(shutdownOf('large') - shutdownOf('empty')) };
  const throughput = (side: string) => median(streamSamples[side]!.map((sample) => sample.value));
  const stream = {
    rawChunksPerS: round(throughput('raw'), 1),
    largeChunksPerS: round(throughput('large'), 1),
    emptyChunksPerS: round(throughput('empty'), 1),
    ratio: round(throughput('large') / throughput('raw'), 4),
    emptyRatio: round(throughput('empty') / throughput('raw'), 4),
    spread: Object.fromEntries(Object.entries(streamSamples).map(([side, values]) => [side, spread(values.map((sample) => sample.value))])),
    phases: Object.fromEntries(Object.entries(streamSamples).map(([side, values]) => [side, medianExtras(values)])),
  };
  const entriesAdded = statsAfter!.transcript.count - statsBefore!.transcript.count;
  const checks = {
    openRatio: ratio <= goalRatio,
    shutdownWithinSlack: shutdown.differenceMs <= shutdownSlackMs,
    streamRatio: stream.ratio >= streamGoalRatio,
    /** The large store kept every update streamed into it, and no store reported an error. */
    storeComplete: entriesAdded >= (streamed['large'] ?? 0) && storeErrors.empty === 0 && storeErrors.large === 0,
    allGone: leaks.leftover.length === 0,
  };
  const mb = (bytes: number) => round(bytes / 1024 / 1024, 1);
  ctx.log(
    `  store-size: large store ${large!.description.entries} entries (${large!.description.rows} rows, ${mb(large!.fileBytes)} MiB, ${large!.cached ? 'cached' : `built in ${(large!.description.buildMs / 1000).toFixed(1)} s`}); ` +
      `shutdown empty ${shutdown.emptyMs} ms, large ${shutdown.largeMs} ms (${shutdown.differenceMs >= 0 ? '+' : ''}${shutdown.differenceMs} ms); ` +
      `stream raw ${stream.rawChunksPerS}, large store ${stream.largeChunksPerS} (ratio ${stream.ratio}), empty store ${stream.emptyChunksPerS} chunks/s`,
  );
  return finish(ctx, {
    benchmark: 'store-size',
    baseline,
    agentvisor: av,
    unit: 'ms',
    ratio,
    goal: `open ≤ ${goalRatio}, shutdown ≤ empty + ${shutdownSlackMs} ms, stream ≥ ${streamGoalRatio} × raw; all gone`,
    met: Object.values(checks).every(Boolean),
    details: {
      size,
      checks,
      note: 'baseline: the empty store, agentvisor: the large store (open + handshake + first batch, ms)',
      largeStore: {
        ...large!.description,
        fileBytes: large!.fileBytes,
        cached: large!.cached,
        transcriptBytes: statsBefore!.transcript.bytes,
      },
      ...sampleDetails(pair),
      shutdown,
      stream: { ...stream, updatesStreamed: streamed, transcriptEntriesAdded: entriesAdded },
      storeErrors,
      processes: { spawned: pids.length, leftover: leaks.leftover.length },
    },
  });
}

/** The stream rounds: raw, agentvisor on the large store, agentvisor on the empty store, rotated. */
async function streamRounds(
  size: StoreSizeSize,
  stateDirs: { empty: string; large: string },
  pids: number[],
  streamed: Record<string, number>,
  storeErrors: { empty: number; large: number },
  ctx: BenchContext,
): Promise<{ samples: Record<string, Sample[]>; before: StoreStats; after: StoreStats }> {
  const spec = { command: process.execPath, args: [streamAgentScript], displayName: 'Stream' };
  const command = (count: number) => JSON.stringify({ op: 'stream', count, text: 'x' });
  const supervisors: Supervisor[] = [];
  const sessions: UpdateSession[] = [];
  let raw: RawAgent | undefined;
  try {
    raw = await startRawAgent(streamAgentScript);
    pids.push(raw.pid);
    const sides: Record<string, UpdateSession> = { raw: await openUpdateSession(raw.connection) };
    sessions.push(sides['raw']!);
    for (const side of ['large', 'empty'] as const) {
      const supervisor = agentvisor.createSupervisor({ stateDir: stateDirs[side], agents: { stream: spec } });
      supervisors.push(supervisor);
      supervisor.on('store:error', () => storeErrors[side]++);
      const handle = await supervisor.ensureAgent('stream');
      pids.push(handle.pid);
      sides[side] = await supervisor.newSession('stream', { cwd: process.cwd() });
      sessions.push(sides[side]);
    }
    const before = await supervisors[0]!.storeStats();
    const turn = async (name: string, session: UpdateSession, count: number): Promise<Sample> => {
      await collectGarbage();
      let received = 0;
      const off = session.on('update', (update) => {
        if (update.sessionUpdate === 'agent_message_chunk') received++;
      });
      const start = now();
      const stopReason = await session.prompt(command(count));
      const ms = now() - start;
      off();
      if (received !== count || stopReason !== 'end_turn') throw new Error(`store-size stream: got ${received}/${count} chunks, stop reason ${stopReason}`);
      streamed[name] = (streamed[name] ?? 0) + count;
      return { value: (count / ms) * 1000, extra: { ms } };
    };
    const samples = await rotate({
      warmup: size.streamWarmupChunks > 0 ? 1 : 0,
      rounds: size.streamRounds,
      sides: Object.fromEntries(Object.entries(sides).map(([name, session]) => [name, (phase: Phase) => turn(name, session, phase === 'warmup' ? size.streamWarmupChunks : size.streamChunks)])),
      onRound: (i, r) =>
        ctx.log(`  store-size stream round ${i}/${size.streamRounds} (${size.streamChunks} chunks): ${Object.entries(r).map(([name, sample]) => `${name} ${sample.value.toFixed(0)} chunks/s`).join(', ')}`),
    });
    // A read applies the writes queued so far: this one sees each turn's last batch.
    const after = await supervisors[0]!.storeStats();
    return { samples, before, after };
  } finally {
    for (const session of sessions) await session.close().catch(() => {});
    if (raw) await stopRawAgent(raw);
    for (const supervisor of supervisors) await supervisor.shutdown();
  }
}

/**
 * The large store's file, built unless a cached one of this size and fill format, young
 * enough, is there; migrated to the current schema (not timed).
 */
function prepareLargeStore(size: StoreSizeSize, dir: string, ctx: BenchContext): { description: StoreDescription; cached: boolean; file: string } {
  const name = `store-${size.entries}-${size.sessions}-${size.stderrLines}-${size.events}`;
  const file = join(dir, `${name}.db`);
  const descriptionFile = join(dir, `${name}.json`);
  const wanted = { fillFormat, entries: size.entries, sessions: size.sessions, stderrLines: size.stderrLines, events: size.events };
  let description: StoreDescription | undefined;
  try {
    description = JSON.parse(readFileSync(descriptionFile, 'utf8')) as StoreDescription;
  } catch {
    description = undefined;
  }
  const fits =
    description !== undefined &&
    existsSync(file) &&
    Object.entries(wanted).every(([key, value]) => description![key as keyof StoreDescription] === value) &&
    Date.now() - description.builtAt < maxCacheAgeDays * day;
  if (fits) {
    // Brings an older schema up to date once, here, rather than in a timed round.
    agentvisor.openSqliteStore(file).close();
    return { description: description!, cached: true, file };
  }
  mkdirSync(dir, { recursive: true });
  for (const path of [file, `${file}-wal`, `${file}-shm`, descriptionFile]) rmSync(path, { force: true });
  ctx.log(`  store-size: building a store of ${size.entries} transcript entries in ${file}`);
  const started = now();
  const rows = fillStore(file, size);
  description = { ...wanted, builtAt: Date.now(), buildMs: Math.round(now() - started), rows };
  writeFileSync(descriptionFile, `${JSON.stringify(description, null, 2)}\n`);
  return { description, cached: false, file };
}

/**
 * Fills a new store at `file` as agents would have: ticks of one session's stream (1-40
 * entries, one transcript row each), now and then a session's status, a stderr line or an
 * event, over {@link fillSpanMs} up to now. Returns the transcript rows written.
 */
function fillStore(file: string, size: StoreSizeSize): number {
  type Write = Parameters<ReturnType<typeof agentvisor.openSqliteStore>['write']>[0][number];
  const store = agentvisor.openSqliteStore(file);
  let seed = 0x5eed;
  /** A deterministic pseudo-random integer in [0, n). */
  const random = (n: number) => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return Math.floor(((seed >>> 8) / (1 << 24)) * n);
  };
  const agents = ['claude', 'codex', 'gemini'];
  const words = 'the quick brown fox jumps over a lazy dog while agentvisor keeps every update of every session in order '.repeat(4);
  const end = Date.now();
  const start = end - fillSpanMs;
  const timeAt = (done: number) => Math.floor(start + (fillSpanMs * done) / size.entries);
  const sessionOf = (index: number) => ({ agent: agents[index % agents.length]!, sessionId: `bench-session-${index}` });
  let written = 0;
  let rows = 0;
  let stderr = 0;
  let events = 0;
  try {
    const created: boolean[] = [];
    while (written < size.entries) {
      const batch: Write[] = [];
      let last = -1;
      // About a hundred ticks a write: consecutive ticks of one session would share a row, other sessions' end it.
      for (let tick = 0; tick < 100 && written < size.entries; tick++) {
        const index = random(size.sessions);
        const { agent, sessionId } = sessionOf(index);
        const at = timeAt(written);
        if (!created[index] || random(20) === 0) {
          batch.push({ type: 'session', at, agent, sessionId, cwd: `/work/project-${index % 50}`, state: created[index] ? 'idle' : 'running' });
          created[index] = true;
        }
        const count = Math.min(1 + random(40), size.entries - written);
        for (let i = 0; i < count; i++) {
          const offset = random(words.length - 200);
          const text = words.slice(offset, offset + 20 + random(180));
          const data =
            random(10) === 0
              ? { sessionUpdate: 'tool_call_update', toolCallId: `call-${written + i}`, status: 'completed', content: [{ type: 'content', content: { type: 'text', text } }] }
              : { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text } };
          batch.push({ type: 'transcript', at, agent, sessionId, kind: 'update', data });
        }
        written += count;
        // Stderr lines, events and session changes in between do not end a row; another session's tick does.
        if (index !== last) rows++;
        last = index;
        // stderr lines and events in proportion, spread over the same span.
        while (stderr < Math.floor((size.stderrLines * written) / size.entries)) batch.push({ type: 'stderr', at, agent, line: `${agent}: log line ${stderr++} ${text(random)}` });
        while (events < Math.floor((size.events * written) / size.entries)) {
          batch.push({ type: 'event', at, agent, event: 'agent:status', data: { status: events % 2 ? 'ready' : 'busy', previous: events % 2 ? 'busy' : 'ready', n: events } });
          events++;
        }
      }
      store.write(batch);
    }
  } finally {
    store.close();
  }
  return rows;
}

function text(random: (n: number) => number): string {
  return 'x'.repeat(10 + random(90));
}

function fileSize(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return Number.NaN;
  }
}
