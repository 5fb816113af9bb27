/**
 * fs-hostile: "the fs service never blocks the event loop — 8 agents streaming while a hostile
 * agent reads 500 MiB files and slow FIFOs: the event-loop delay p99 ≤ 20 ms and the streaming
 * agents' throughput ≥ 0.9 of a run without the hostile one."
 *
 * One supervisor in this process (the built package, default options: containment 'auto',
 * the SQLite store in a temporary state directory, fs served through the sandbox with its
 * default 10 MiB read limit and 30 s deadline) runs `streamers` fixture agents and one hostile
 * fixture agent:
 *
 * - Every streaming agent has one session that runs turns back to back for the whole benchmark,
 *   each the fixture's `{"op":"stream","count":chunksPerTurn,"text":"x"}` (one chunk per timer
 *   tick, the fixture's own pace: ~750-800 chunks/s an agent here, the 8 together about two
 *   thirds of a core), cancelled at the end.
 * - The hostile agent has `hostileSessions` sessions whose cwd is a temporary directory
 *   holding a `fileMiB` MiB file of numbered 100-byte text lines (written once, fsync'ed, so
 *   the rounds read it from the page cache and no writeback runs meanwhile), a FIFO nobody
 *   writes to, and a FIFO a child process holds open and writes a line per second into. Each
 *   hostile session loops prompts, one fixture `read` command each, by turns (each session
 *   starting at another kind):
 *     whole  — `{"op":"read","path":FILE}`: the whole file, refused by the read limit;
 *     deep   — `{"op":"read","path":FILE,"line":deepLine,"limit":10}`: a window near the end,
 *              which the sandbox can only find by streaming through the file (checked: the
 *              ten lines carry their numbers);
 *     fifo   — the FIFO without a writer: refused (not a regular file);
 *     fifo-w — the FIFO with the slow writer: refused.
 *
 * Sides, in rotated rounds (A B, B A, …) after a warm-up round of each:
 * - without (the baseline): the streaming agents alone, the hostile agent idle;
 * - with (the headline): the hostile sessions reading (started `settleMs` before the window
 *   opens, stopped after it closes and awaited, so no read overlaps the next round).
 * A round is a window of `roundMs`: the chunks the streaming sessions received in it (their
 * throughput, chunks/s), and this process's event-loop delay over it
 * (`perf_hooks.monitorEventLoopDelay({ resolution: 10 })`, a fresh histogram per round; the
 * values are as Node reports them — the interval between two 10 ms ticks, so an idle loop
 * reads ~10 ms), and on the with side the hostile reads answered inside the window, by kind
 * and outcome.
 *
 * Goal (`met`): throughput with / without ≥ 0.9 (medians of the rounds); the event-loop delay
 * — how late a tick came: the p99 interval less the 10 ms it should be — ≤ 20 ms in every
 * round with the hostile agent; in every measured round with it, at least
 * one read of every kind answered as expected (whole refused by the limit, deep with the right
 * ten lines, both FIFOs refused) and no read answered otherwise (a hostile agent that did
 * nothing, or whose reads failed another way, cannot pass); every streaming agent streamed in
 * every round; no process left behind.
 *
 * Diagnosis, in `details.sides.<side>`: the CPU of this process, of its main thread (on a CPU
 * and waiting for one), of the streaming agents and of the whole machine over each window, and
 * `lateTicks` — every tick of a timer of our own that came more than 20 ms after the one
 * before, split by the main thread's scheduler statistics into time on a CPU (work in this
 * process holding the loop), time waiting for a CPU (the machine's other processes) and, the
 * rest, time asleep in a system call (blocking I/O), with the garbage collections inside.
 * BENCH_FS_HOSTILE_STORE=memory runs the same with `store: 'memory'`, to tell the SQLite
 * store's stalls from the fs service's.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { closeSync, fsyncSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay, PerformanceObserver, type PerformanceEntry } from 'node:perf_hooks';
import { agentvisor, fixtureAgentScript, type AgentSpec, type Supervisor } from './lib/agentvisor.js';
import { isRunning, ownCpuMs, processCpuMs, waitUntilGone } from './lib/processes.js';
import { finish, leakCheck } from './lib/report.js';
import { defaultContext, type BenchContext, type BenchResult } from './lib/results.js';
import { median, now, quantile, rotate, round, sleep, spread, type Phase } from './lib/stats.js';

type Session = Awaited<ReturnType<Supervisor['newSession']>>;

export interface FsHostileSize {
  /** Streaming agents (one session each). */
  streamers: number;
  /** Chunks of one streaming turn (the next starts as soon as one ends). */
  chunksPerTurn: number;
  /** Sessions of the hostile agent reading at once. */
  hostileSessions: number;
  /** The big file, MiB (of 100-byte lines). */
  fileMiB: number;
  /** The deep window's first line (1-based) and its length. */
  deepLine: number;
  deepLimit: number;
  /** The slow writer's interval. */
  writerIntervalMs: number;
  rounds: number;
  /** Unmeasured rounds of each side first (0: none). */
  warmup: number;
  /** The measured window of a round, and of a warm-up round. */
  roundMs: number;
  warmupMs: number;
  /** Before a window opens: the streams (and on the with side the hostile reads) run this long. */
  settleMs: number;
}

export const defaultSize: FsHostileSize = {
  streamers: 8,
  chunksPerTurn: 2_000,
  hostileSessions: 4,
  fileMiB: 500,
  deepLine: 5_000_000,
  deepLimit: 10,
  writerIntervalMs: 1_000,
  rounds: 5,
  warmup: 1,
  roundMs: 10_000,
  warmupMs: 3_000,
  settleMs: 500,
};
export const smokeSize: FsHostileSize = {
  streamers: 2,
  chunksPerTurn: 200,
  hostileSessions: 2,
  fileMiB: 12,
  deepLine: 120_000,
  deepLimit: 10,
  writerIntervalMs: 200,
  rounds: 1,
  warmup: 0,
  roundMs: 1_000,
  warmupMs: 0,
  settleMs: 200,
};
/** The goals. */
export const goalRatio = 0.9;
export const goalP99Ms = 20;
/** The sandbox's default read limit (services/fs-sandbox.service.ts): the big file must exceed it. */
const defaultMaxReadBytes = 10 * 1024 * 1024;
/** monitorEventLoopDelay's sampling interval, ms. */
export const resolutionMs = 10;

/**
 * The store: 'sqlite' (the default, as a consumer runs it) or, with BENCH_FS_HOSTILE_STORE=memory,
 * 'memory' — to tell the store's own stalls from the fs service's (docs/performance.md).
 */
const store: 'sqlite' | 'memory' = process.env['BENCH_FS_HOSTILE_STORE'] === 'memory' ? 'memory' : 'sqlite';

const lineBytes = 100;
const kinds = ['whole', 'deep', 'fifo', 'fifo-w'] as const;
type Kind = (typeof kinds)[number];
type Outcome = 'expected' | 'unexpected';

/** The hostile reads answered within one window, by kind. */
type KindCounts = Record<Kind, { expected: number; unexpected: number; ms: number[] }>;

interface RoundResult {
  chunksPerS: number;
  /** Chunks of each streaming session in the window. */
  perStreamer: number[];
  windowMs: number;
  loop: { p50: number; p99: number; max: number; mean: number; count: number };
  /** This process's CPU over the window, % of one core; the hostile agent's. */
  cpuPct: number;
  hostileCpuPct: number;
  /** The streaming agents' CPU together, % of one core; the whole machine's busy CPUs, % of all (/proc/stat). */
  streamersCpuPct: number;
  machineBusyPct: number;
  hostile?: KindCounts;
  /** sandbox:violation events in the window. */
  violations: number;
  /** Where the late ticks' time went (see LateTicks). */
  late: LateReport;
}

export async function fsHostileBench(size: FsHostileSize = defaultSize, ctx: BenchContext = defaultContext()): Promise<BenchResult> {
  const dir = mkdtempSync(join(tmpdir(), 'agentvisor-bench-fs-hostile-'));
  const stateDir = join(dir, 'state');
  const work = join(dir, 'work');
  mkdirSync(work);
  const bigFile = join(work, 'big.txt');
  const fifo = join(work, 'fifo');
  const fifoWriter = join(work, 'fifo-writer');
  const spec: AgentSpec = { command: process.execPath, args: [fixtureAgentScript], displayName: 'Fixture' };
  const streamerNames = Array.from({ length: size.streamers }, (_, i) => `stream-${i}`);
  const hostileName = 'hostile';

  const pids: number[] = [];
  let writer: ChildProcess | undefined;
  let supervisor: Supervisor | undefined;
  let rounds: Record<string, RoundResult[]>;
  let setup: { fileBytes: number; lines: number; writeMs: number };
  const unexpectedSamples: string[] = [];
  let storeErrors = 0;
  let streamFailures = 0;
  const streamFailureSamples: string[] = [];
  try {
    const t0 = now();
    const lines = writeLinesFile(bigFile, size.fileMiB * 1024 * 1024);
    setup = { fileBytes: lines * lineBytes, lines, writeMs: round(now() - t0, 0) };
    if (setup.fileBytes <= defaultMaxReadBytes) throw new Error(`fs-hostile: the file (${setup.fileBytes} bytes) must exceed the 10 MiB read limit`);
    if (size.deepLine + size.deepLimit - 1 > lines) throw new Error(`fs-hostile: the deep window ${size.deepLine}+${size.deepLimit} is past the file's ${lines} lines`);
    execFileSync('mkfifo', [fifo, fifoWriter]);
    writer = startSlowWriter(fifoWriter, size.writerIntervalMs);
    pids.push(writer.pid!);
    ctx.log(`  fs-hostile (store ${store}): ${(setup.fileBytes / 1024 / 1024).toFixed(0)} MiB file of ${lines} lines written in ${setup.writeMs} ms; 2 FIFOs (one with a writer, pid ${writer.pid})`);

    const agents = Object.fromEntries([...streamerNames, hostileName].map((name) => [name, spec]));
    supervisor = agentvisor.createSupervisor({ agents, stateDir, store, maxAgents: streamerNames.length + 1 });
    supervisor.on('store:error', () => void storeErrors++);
    let violations = 0;
    supervisor.on('sandbox:violation', () => void violations++);

    // The streaming sessions: turns back to back until the end; chunks counted per session.
    const counts = streamerNames.map(() => 0);
    const streams: Session[] = [];
    const streamerPids: number[] = [];
    for (const [i, name] of streamerNames.entries()) {
      const handle = await supervisor.ensureAgent(name);
      pids.push(handle.pid);
      streamerPids.push(handle.pid);
      const session = await supervisor.newSession(name, { cwd: work });
      session.on('update', (update) => {
        if (update.sessionUpdate === 'agent_message_chunk') counts[i]!++;
      });
      streams.push(session);
    }
    const hostileHandle = await supervisor.ensureAgent(hostileName);
    pids.push(hostileHandle.pid);
    const hostile: Array<{ session: Session; text: string[] }> = [];
    for (let i = 0; i < size.hostileSessions; i++) {
      const session = await supervisor.newSession(hostileName, { cwd: work });
      const entry = { session, text: [] as string[] };
      session.on('update', (update) => {
        if (update.sessionUpdate === 'agent_message_chunk' && update.content.type === 'text') entry.text.push(update.content.text);
      });
      hostile.push(entry);
    }

    const streamStop = new AbortController();
    const streamCommand = JSON.stringify({ op: 'stream', count: size.chunksPerTurn, text: 'x' });
    const streamLoops = streams.map(async (session) => {
      while (!streamStop.signal.aborted) {
        try {
          await session.prompt(streamCommand, { signal: streamStop.signal });
        } catch (error) {
          if (streamStop.signal.aborted) break;
          streamFailures++;
          if (streamFailureSamples.length < 5) streamFailureSamples.push(error instanceof Error ? error.message : String(error));
          await sleep(100);
        }
      }
    });

    const commands: Record<Kind, string> = {
      whole: JSON.stringify({ op: 'read', path: bigFile }),
      deep: JSON.stringify({ op: 'read', path: bigFile, line: size.deepLine, limit: size.deepLimit }),
      fifo: JSON.stringify({ op: 'read', path: fifo }),
      'fifo-w': JSON.stringify({ op: 'read', path: fifoWriter }),
    };
    const deepExpected = Array.from({ length: size.deepLimit }, (_, i) => lineText(size.deepLine + i)).join('\n');
    /** Whether a read's answer (the turn's chunks) is what the kind should get. */
    const judge = (kind: Kind, answer: string): Outcome => {
      switch (kind) {
        case 'whole':
          return answer.startsWith('error:') && answer.includes('the read limit') ? 'expected' : 'unexpected';
        case 'deep':
          return answer === `read:${deepExpected}` ? 'expected' : 'unexpected';
        case 'fifo':
        case 'fifo-w':
          return answer.startsWith('error:') && answer.includes('a FIFO, not a regular file') ? 'expected' : 'unexpected';
      }
    };

    /**
     * The hostile sessions read by turns until `stop`; the reads answered while `window.open`
     * are counted. Resolves once every session's last read has been answered.
     */
    const runHostile = (stop: AbortSignal, window: { open: boolean; counts: KindCounts }) =>
      Promise.all(
        hostile.map(async (entry, s) => {
          for (let n = s; !stop.aborted; n++) {
            const kind = kinds[n % kinds.length]!;
            entry.text = [];
            const start = now();
            let answer: string;
            try {
              const stopReason = await entry.session.prompt(commands[kind]);
              answer = stopReason === 'end_turn' ? entry.text.join('') : `stop reason ${stopReason}: ${entry.text.join('')}`;
            } catch (error) {
              answer = `prompt failed: ${error instanceof Error ? error.message : String(error)}`;
            }
            const ms = now() - start;
            const outcome = judge(kind, answer);
            if (outcome === 'unexpected' && unexpectedSamples.length < 5) unexpectedSamples.push(`${kind}: ${answer.slice(0, 300)}`);
            if (window.open) {
              const bucket = window.counts[kind];
              bucket[outcome]++;
              bucket.ms.push(ms);
            }
            if (answer.startsWith('prompt failed')) await sleep(100);
          }
        }),
      );

    const side = (withHostile: boolean) => async (phase: Phase): Promise<RoundResult> => {
      const windowMs = phase === 'warmup' ? size.warmupMs : size.roundMs;
      const window = { open: false, counts: emptyCounts() };
      const stop = new AbortController();
      const reading = withHostile ? runHostile(stop.signal, window) : undefined;
      await sleep(size.settleMs);
      const loop = monitorEventLoopDelay({ resolution: resolutionMs });
      const late = new LateTicks(goalP99Ms);
      const before = [...counts];
      const violationsBefore = violations;
      const cpu = ownCpuMs();
      const hostileCpu = processCpuMs(hostileHandle.pid);
      const streamersCpu = streamerPids.map(processCpuMs);
      const machine = machineCpu();
      window.open = true;
      loop.enable();
      late.start();
      const start = now();
      await sleep(windowMs);
      loop.disable();
      const lateReport = late.stop();
      const elapsed = now() - start;
      window.open = false;
      const perStreamer = counts.map((count, i) => count - before[i]!);
      const cpuPct = ((ownCpuMs() - cpu) / elapsed) * 100;
      const hostileCpuPct = ((processCpuMs(hostileHandle.pid) - hostileCpu) / elapsed) * 100;
      const streamersCpuPct = (streamerPids.reduce((sum, pid, i) => sum + processCpuMs(pid) - streamersCpu[i]!, 0) / elapsed) * 100;
      const machineAfter = machineCpu();
      const machineBusyPct = ((machineAfter.busy - machine.busy) / (machineAfter.total - machine.total)) * 100;
      const violationsInWindow = violations - violationsBefore;
      stop.abort();
      await reading;
      const ms = (ns: number) => round(ns / 1e6, 2);
      return {
        chunksPerS: (perStreamer.reduce((a, b) => a + b, 0) / elapsed) * 1000,
        perStreamer,
        windowMs: round(elapsed, 1),
        loop: { p50: ms(loop.percentile(50)), p99: ms(loop.percentile(99)), max: ms(loop.max), mean: ms(loop.mean), count: loop.count },
        cpuPct: round(cpuPct, 1),
        hostileCpuPct: round(hostileCpuPct, 1),
        streamersCpuPct: round(streamersCpuPct, 1),
        machineBusyPct: round(machineBusyPct, 1),
        ...(withHostile ? { hostile: window.counts } : {}),
        violations: violationsInWindow,
        late: lateReport,
      };
    };

    try {
      rounds = await rotate<RoundResult>({
        warmup: size.warmup,
        rounds: size.rounds,
        sides: { without: side(false), with: side(true) },
        onRound: (i, r) => {
          const w = r['with']!;
          const h = w.hostile!;
          ctx.log(
            `  fs-hostile round ${i}/${size.rounds}: without ${r['without']!.chunksPerS.toFixed(0)} chunks/s, loop p99 ${r['without']!.loop.p99} ms; ` +
              `with ${w.chunksPerS.toFixed(0)} chunks/s, loop p99 ${w.loop.p99} ms (max ${w.loop.max}); hostile reads ` +
              kinds.map((kind) => `${kind} ${h[kind].expected}${h[kind].unexpected > 0 ? `+${h[kind].unexpected} unexpected` : ''}`).join(', ') +
              `; ticks > ${goalP99Ms} ms apart: ` +
              (['without', 'with'] as const).map((name) => `${name} ${r[name]!.late.late.count} (on CPU ${r[name]!.late.late.onCpuMs} ms, waiting for one ${r[name]!.late.late.runQueueMs} ms)`).join(', '),
          );
        },
      });
    } finally {
      streamStop.abort();
      await Promise.all(streamLoops);
    }
  } finally {
    try {
      await supervisor?.shutdown();
    } finally {
      if (writer && isRunning(writer.pid!)) writer.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  }
  const writerGone = writer ? (await waitUntilGone([writer.pid!], 2000)).length === 0 : true;
  const leaks = await leakCheck(pids);

  const sideSummary = (name: string) => {
    const rs = rounds[name]!;
    const p99s = rs.map((r) => r.loop.p99);
    return {
      chunksPerS: spread(rs.map((r) => r.chunksPerS)),
      loopP99Ms: { median: round(median(p99s), 2), max: round(Math.max(...p99s), 2), perRound: p99s },
      loopMaxMs: round(Math.max(...rs.map((r) => r.loop.max)), 2),
      loopMeanMs: round(median(rs.map((r) => r.loop.mean)), 2),
      cpuPct: round(median(rs.map((r) => r.cpuPct)), 1),
      hostileAgentCpuPct: round(median(rs.map((r) => r.hostileCpuPct)), 1),
      streamersCpuPct: round(median(rs.map((r) => r.streamersCpuPct)), 1),
      machineBusyPct: round(median(rs.map((r) => r.machineBusyPct)), 1),
      violationsPerRound: rs.map((r) => r.violations),
      lateTicks: mergeLate(rs.map((r) => r.late)),
    };
  };
  const without = sideSummary('without');
  const withHostile = sideSummary('with');
  const baseline = round(without.chunksPerS.median, 1);
  const av = round(withHostile.chunksPerS.median, 1);
  const ratio = round(av / baseline, 4);
  const withRounds = rounds['with']!;
  const hostileRounds = withRounds.map((r) => r.hostile!);
  const hostileSummary = Object.fromEntries(
    kinds.map((kind) => {
      const ms = hostileRounds.flatMap((h) => h[kind].ms);
      return [
        kind,
        {
          expectedPerRound: hostileRounds.map((h) => h[kind].expected),
          unexpectedPerRound: hostileRounds.map((h) => h[kind].unexpected),
          answerMs: ms.length > 0 ? { p50: round(quantile(ms, 0.5), 1), max: round(Math.max(...ms), 1) } : null,
        },
      ];
    }),
  );
  const checks = {
    throughputRatio: ratio >= goalRatio,
    // The delay is how late a tick came: the histogram's ticks are `resolutionMs` apart when the loop is idle.
    loopP99: withHostile.loopP99Ms.max - resolutionMs <= goalP99Ms,
    /** Every measured round with the hostile agent answered reads of every kind as expected, and none otherwise. */
    hostileReadEveryKind: hostileRounds.every((h) => kinds.every((kind) => h[kind].expected > 0)),
    hostileNothingUnexpected: hostileRounds.every((h) => kinds.every((kind) => h[kind].unexpected === 0)),
    everyAgentStreamed: Object.values(rounds).every((rs) => rs.every((r) => r.perStreamer.every((n) => n > 0))) && streamFailures === 0,
    storeOk: storeErrors === 0,
    allGone: leaks.leftover.length === 0 && writerGone,
  };
  return finish(ctx, {
    benchmark: 'fs-hostile',
    baseline,
    agentvisor: av,
    unit: 'chunks/s',
    ratio,
    goal: `throughput with the hostile agent / without ≥ ${goalRatio}; event-loop delay (lateness: the p99 between ticks less the ${resolutionMs} ms interval) ≤ ${goalP99Ms} ms in every round with it; every kind of hostile read answered as expected each round; all gone`,
    met: Object.values(checks).every(Boolean),
    details: {
      size,
      store,
      checks,
      file: { ...setup, deepLine: size.deepLine, deepOffsetMiB: round(((size.deepLine - 1) * lineBytes) / 1024 / 1024, 1) },
      eventLoopDelay: {
        note: `monitorEventLoopDelay({ resolution: ${resolutionMs} }), ms between ticks (an idle loop reads ~${resolutionMs}); p99 per round`,
        with: withHostile.loopP99Ms,
        without: without.loopP99Ms,
      },
      sides: { without, with: withHostile },
      pairedRatio: spread(withRounds.map((r, i) => r.chunksPerS / rounds['without']![i]!.chunksPerS)),
      hostile: hostileSummary,
      unexpectedSamples,
      streamFailures: { count: streamFailures, samples: streamFailureSamples },
      storeErrors,
      processes: { spawned: pids.length, leftover: leaks.leftover.length + (writerGone ? 0 : 1) },
    },
  });
}

/** Line `n` (1-based) of the big file, without its newline: its number, then filler to 99 bytes. */
function lineText(n: number): string {
  const head = `${String(n).padStart(9, '0')} hostile line `;
  return head + 'x'.repeat(lineBytes - 1 - head.length);
}

/**
 * Writes `floor(bytes / 100)` numbered lines of 100 bytes to `path` in blocks of ~1 MiB (one
 * buffer, its numbers rewritten per block), then fsyncs it. Returns the line count.
 */
function writeLinesFile(path: string, bytes: number): number {
  const lines = Math.floor(bytes / lineBytes);
  const perBlock = 10_000;
  const block = Buffer.from(Array.from({ length: perBlock }, (_, i) => `${lineText(i + 1)}\n`).join(''), 'latin1');
  const fd = openSync(path, 'w');
  try {
    for (let first = 1; first <= lines; first += perBlock) {
      const count = Math.min(perBlock, lines - first + 1);
      for (let i = 0; i < count; i++) {
        // The 9-digit number at the start of each line.
        let n = first + i;
        for (let d = 8; d >= 0; d--) {
          block[i * lineBytes + d] = 0x30 + (n % 10);
          n = Math.floor(n / 10);
        }
      }
      writeSync(fd, block, 0, count * lineBytes);
    }
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  return lines;
}

/**
 * A child that holds `fifo` open (read-write, so the open does not wait for a reader) and
 * writes a line into it every `intervalMs`.
 */
function startSlowWriter(fifo: string, intervalMs: number): ChildProcess {
  const script = `const fs = require('node:fs'); const fd = fs.openSync(process.argv[1], fs.constants.O_RDWR); let n = 0; setInterval(() => fs.writeSync(fd, 'tick ' + ++n + '\\n'), ${intervalMs});`;
  const child = spawn(process.execPath, ['-e', script, fifo], { stdio: 'ignore' });
  if (child.pid === undefined) throw new Error('fs-hostile: could not start the FIFO writer');
  child.on('error', () => {});
  return child;
}

/** The machine's CPU time so far, busy and total, in /proc/stat ticks (NaN without /proc). */
function machineCpu(): { busy: number; total: number } {
  try {
    const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1, 9).map(Number);
    const total = fields.reduce((a, b) => a + b, 0);
    // idle and iowait are the 4th and 5th.
    return { busy: total - fields[3]! - fields[4]!, total };
  } catch {
    return { busy: Number.NaN, total: Number.NaN };
  }
}

function emptyCounts(): KindCounts {
  return Object.fromEntries(kinds.map((kind) => [kind, { expected: 0, unexpected: 0, ms: [] as number[] }])) as unknown as KindCounts;
}

/** One tick of the LateTicks timer that came more than `thresholdMs` after the one before. */
interface LateTick {
  /** Since the tick before (the timer's interval included), ms. */
  gapMs: number;
  /** Of it: the main thread on a CPU, and runnable but waiting for one (/proc/self/task/<pid>/schedstat). */
  onCpuMs: number;
  runQueueMs: number;
  /** Garbage collection inside the gap (PerformanceObserver 'gc'). */
  gcMs: number;
}

interface LateReport {
  /** The main thread over the whole window: on a CPU, and waiting for one, % of the window. */
  mainThreadCpuPct: number;
  mainThreadRunQueuePct: number;
  gcMs: number;
  gcMaxMs: number;
  /** Ticks more than the threshold apart, and where their time went (sums, ms). */
  late: { count: number; gapMs: number; onCpuMs: number; runQueueMs: number; gcMs: number };
  worst: LateTick[];
}

/**
 * A diagnosis of event-loop delay, beside monitorEventLoopDelay: a 10 ms timer of its own that,
 * when a tick comes more than `thresholdMs` after the previous one, splits the gap by the main
 * thread's scheduler statistics into time on a CPU (this process's JavaScript or native work:
 * blocking) and time runnable but waiting for a CPU (the machine's other processes: not
 * ours to fix), plus the garbage collections inside it. Linux only (NaN elsewhere).
 */
class LateTicks {
  private timer: NodeJS.Timeout | undefined;
  private readonly gcs: PerformanceEntry[] = [];
  private readonly observer = new PerformanceObserver((list) => this.gcs.push(...list.getEntries()));
  private readonly late = { count: 0, gapMs: 0, onCpuMs: 0, runQueueMs: 0, gcMs: 0 };
  private readonly worst: LateTick[] = [];
  private first = schedstat();
  private startedAt = 0;

  constructor(private readonly thresholdMs: number) {}

  start(): void {
    this.observer.observe({ entryTypes: ['gc'] });
    this.first = schedstat();
    this.startedAt = now();
    let last = { at: this.startedAt, stat: this.first };
    this.timer = setInterval(() => {
      const at = now();
      const stat = schedstat();
      const gapMs = at - last.at;
      if (gapMs > this.thresholdMs) {
        const tick: LateTick = {
          gapMs: round(gapMs, 1),
          onCpuMs: round((stat.cpuNs - last.stat.cpuNs) / 1e6, 1),
          runQueueMs: round((stat.waitNs - last.stat.waitNs) / 1e6, 1),
          gcMs: round(this.gcWithin(last.at, at), 1),
        };
        this.late.count++;
        this.late.gapMs += tick.gapMs;
        this.late.onCpuMs += tick.onCpuMs;
        this.late.runQueueMs += tick.runQueueMs;
        this.late.gcMs += tick.gcMs;
        this.worst.push(tick);
        this.worst.sort((a, b) => b.gapMs - a.gapMs);
        this.worst.length = Math.min(this.worst.length, 3);
      }
      last = { at, stat };
    }, resolutionMs);
  }

  stop(): LateReport {
    clearInterval(this.timer);
    const elapsed = now() - this.startedAt;
    const end = schedstat();
    this.observer.disconnect();
    const gc = this.gcs.map((entry) => entry.duration);
    return {
      mainThreadCpuPct: round(((end.cpuNs - this.first.cpuNs) / 1e6 / elapsed) * 100, 1),
      mainThreadRunQueuePct: round(((end.waitNs - this.first.waitNs) / 1e6 / elapsed) * 100, 1),
      gcMs: round(gc.reduce((a, b) => a + b, 0), 1),
      gcMaxMs: round(Math.max(0, ...gc), 1),
      late: { count: this.late.count, gapMs: round(this.late.gapMs, 1), onCpuMs: round(this.late.onCpuMs, 1), runQueueMs: round(this.late.runQueueMs, 1), gcMs: round(this.late.gcMs, 1) },
      worst: this.worst,
    };
  }

  /** GC time overlapping [from, to]. */
  private gcWithin(from: number, to: number): number {
    let ms = 0;
    for (const entry of this.gcs) ms += Math.max(0, Math.min(to, entry.startTime + entry.duration) - Math.max(from, entry.startTime));
    return ms;
  }
}

/** The main thread's time on a CPU and waiting for one so far, ns (NaN without /proc). */
function schedstat(): { cpuNs: number; waitNs: number } {
  try {
    const [cpu, wait] = readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ');
    return { cpuNs: Number(cpu), waitNs: Number(wait) };
  } catch {
    return { cpuNs: Number.NaN, waitNs: Number.NaN };
  }
}

/** A side's late ticks over its rounds: sums, the main thread's medians, the worst ticks. */
function mergeLate(reports: readonly LateReport[]) {
  const sum = (pick: (r: LateReport) => number) => round(reports.reduce((total, r) => total + pick(r), 0), 1);
  return {
    mainThreadCpuPct: round(median(reports.map((r) => r.mainThreadCpuPct)), 1),
    mainThreadRunQueuePct: round(median(reports.map((r) => r.mainThreadRunQueuePct)), 1),
    gcMs: sum((r) => r.gcMs),
    gcMaxMs: round(Math.max(...reports.map((r) => r.gcMaxMs)), 1),
    late: { count: sum((r) => r.late.count), gapMs: sum((r) => r.late.gapMs), onCpuMs: sum((r) => r.late.onCpuMs), runQueueMs: sum((r) => r.late.runQueueMs), gcMs: sum((r) => r.late.gcMs) },
    worst: reports
      .flatMap((r) => r.worst)
      .sort((a, b) => b.gapMs - a.gapMs)
      .slice(0, 5),
  };
}
