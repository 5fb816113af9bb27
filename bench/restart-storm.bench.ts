/**
 * restart storm: `agents` connected fixture agents are SIGKILLed at once (their process
 * groups, from outside); each is restarted after the backoff (initialDelayMs, default 50 ms)
 * until all are connected again. Timed from the kill to the last reconnection.
 *
 * Three fleets stay up for the whole benchmark and take turns, a storm each per round, in
 * order and in reverse by turns (raw first, then raw last, ...: see `rotate` in lib/stats.ts),
 * so that each fleet storms first as often as the one it is compared with:
 * - raw: execa + SDK with a hand-written restart (exit → setTimeout(initialDelayMs) → spawn
 *   + initialize), no jitter;
 * - agentvisor with `restart.jitter` 0;
 * - agentvisor with `restart.jitter` = size.jitter (default 1: each delay is drawn from
 *   (0, initialDelayMs]).
 * The fleets live in lib/storm-fleets.ts. Spawn times are taken in the parent: for
 * agentvisor, the moment an agent actor enters `reconnecting.spawning` (its process is
 * spawned on entry); for raw, just before execa. They are counted in `bucketMs` buckets
 * from the kill.
 *
 * Besides spawns, each storm records when each death was noticed (raw: the child's `exit`
 * event, which is what agentvisor's process service listens for; agentvisor: status
 * `disconnected`, reported once that service has also reaped the group and given the pipes
 * up to 200 ms to drain) and when each restart fell due (the moment its backoff timer was
 * set plus its delay; for agentvisor read through the `clock` option).
 *
 * The headline ratio is agentvisor (jitter 0) / raw recovery time. Goals: every agent of
 * every fleet connected again after every storm, and jitter spreads the restarts' backoff
 * delays over the window (jitter 0: all equal). Bursts are reported per 10 ms bucket —
 * deaths noticed, restarts falling due, spawns made — with and without jitter, but not
 * judged: how bunched the deaths are noticed varies from storm to storm, and each spawn
 * call blocks the parent until the child has exec'd, so on a 2-core machine spawns cannot
 * burst either way (see docs/performance.md).
 *
 * `restart.stableAfterMs` is set short so that each storm starts again at the first backoff
 * step (the benchmark waits it out between storms).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readPidFile } from './lib/processes.js';
import { finish, leakCheck } from './lib/report.js';
import { defaultContext, type BenchContext, type BenchResult } from './lib/results.js';
import { median, rotate, round, sleep, spread } from './lib/stats.js';
import { agentvisorFleet, histogram, quartiles, rawFleet, sparse, type Fleet, type StormRecord } from './lib/storm-fleets.js';

export interface RestartStormSize {
  agents: number;
  /** Storms per fleet (rounds; even, so that every fleet storms first as often as last). */
  storms: number;
  initialDelayMs: number;
  jitter: number;
  bucketMs: number;
}

export const defaultSize: RestartStormSize = { agents: 50, storms: 2, initialDelayMs: 50, jitter: 1, bucketMs: 10 };
export const smokeSize: RestartStormSize = { agents: 2, storms: 2, initialDelayMs: 50, jitter: 1, bucketMs: 10 };

const stableAfterMs = 100;

export async function restartStormBench(size: RestartStormSize = defaultSize, ctx: BenchContext = defaultContext()): Promise<BenchResult> {
  const dir = mkdtempSync(join(tmpdir(), 'agentvisor-bench-'));
  const fleets: Fleet[] = [];
  let records: Record<string, StormRecord[]>;
  const pidFiles = ['raw', 'jitter0', 'jitter'].map((name) => join(dir, `${name}.pids`));
  let spawned: number[];
  try {
    const options = { ...size, stableAfterMs };
    fleets.push(await rawFleet(options, pidFiles[0]!));
    fleets.push(await agentvisorFleet(options, 0, pidFiles[1]!));
    fleets.push(await agentvisorFleet(options, size.jitter, pidFiles[2]!));
    records = await rotate({
      warmup: 0,
      rounds: size.storms,
      sides: Object.fromEntries(
        fleets.map((fleet) => [
          fleet.label,
          async () => {
            const record = await fleet.storm();
            await sleep(stableAfterMs + 50);
            return record;
          },
        ]),
      ),
      onRound: (i, round) => {
        for (const [label, record] of Object.entries(round)) {
          ctx.log(`  restart storm ${i}/${size.storms} ${label}: all ${size.agents} back in ${record.recoveryMs.toFixed(0)} ms; max per ${size.bucketMs} ms: ${record.maxExitPerBucket} deaths noticed, ${record.maxDuePerBucket} restarts due, ${record.maxPerBucket} spawned, spawns over ${record.spawnSpanMs.toFixed(0)} ms`);
        }
      },
    });
  } finally {
    for (const fleet of fleets) await fleet.close();
    spawned = pidFiles.flatMap(readPidFile);
    rmSync(dir, { recursive: true, force: true });
  }
  const leaks = await leakCheck(spawned);

  const [raw, plain, jittered] = fleets.map((fleet) => records[fleet.label]!) as [StormRecord[], StormRecord[], StormRecord[]];
  const recovery = (list: StormRecord[]) => median(list.map((r) => r.recoveryMs));
  const worst = (list: StormRecord[], key: 'maxPerBucket' | 'maxDuePerBucket' | 'maxExitPerBucket') => Math.max(...list.map((r) => r[key]));
  // How much of the biggest burst of deaths noticed survives as a burst of restarts falling
  // due: 1 without jitter (every restart is due exactly initialDelayMs after its death),
  // below 1 when jitter spreads them. This factors out how the deaths were noticed, which
  // varies from storm to storm and fleet to fleet.
  const burstKept = (list: StormRecord[]) => median(list.map((r) => r.maxDuePerBucket / Math.max(1, r.maxExitPerBucket)));
  const baseline = round(recovery(raw), 3);
  const av = round(recovery(plain), 3);
  const last = (list: StormRecord[]) => list[list.length - 1]!;
  const summary = (list: StormRecord[]) => ({
    recoveryMs: spread(list.map((r) => r.recoveryMs)),
    maxExitsPerBucket: list.map((r) => r.maxExitPerBucket),
    maxDuesPerBucket: list.map((r) => r.maxDuePerBucket),
    maxSpawnsPerBucket: list.map((r) => r.maxPerBucket),
    spawnSpanMs: list.map((r) => round(r.spawnSpanMs, 1)),
    // The last storm, as times since the kill: deaths noticed, restarts due, spawns made.
    exitDetectedMs: quartiles(last(list).exitsAt),
    dueMs: quartiles(last(list).duesAt),
    spawnMs: quartiles(last(list).spawnsAt),
    dueHistogram: sparse(histogram(last(list).duesAt, size.bucketMs), size.bucketMs),
    spawnHistogram: sparse(histogram(last(list).spawnsAt, size.bucketMs), size.bucketMs),
  });
  const delayRange = (list: StormRecord[]) => {
    const all = list.flatMap((r) => r.delays);
    return { min: Math.min(...all), max: Math.max(...all), distinct: new Set(all).size };
  };
  const spreadDelays = delayRange(jittered);
  const plainDelays = delayRange(plain);
  const checks = {
    allReconnected: [raw, plain, jittered].every((list) => list.length === size.storms && list.every((r) => r.reconnected === size.agents)),
    // Jitter's job: restarts wait different delays across the window instead of all the same
    // one. Whether that shows as fewer spawns per 10 ms depends on how the deaths were noticed
    // and on how fast the parent can spawn (reported below, not judged: see the module doc).
    jitterSpreadsDelays:
      plainDelays.distinct === 1 &&
      spreadDelays.distinct > Math.min(5, size.agents / 2) &&
      spreadDelays.max - spreadDelays.min >= size.initialDelayMs * size.jitter * 0.5,
    noLeftovers: leaks.leftover.length === 0,
  };
  return finish(ctx, {
    benchmark: 'restart-storm',
    baseline,
    agentvisor: av,
    unit: 'ms',
    ratio: round(av / baseline, 4),
    goal: `all reconnect; jitter ${size.jitter} spreads restart delays over the window`,
    met: Object.values(checks).every(Boolean),
    details: {
      size,
      stableAfterMs,
      checks,
      // Worst 10 ms bucket over all storms: restarts falling due (the policy's doing) and
      // spawns actually made (bounded by how fast the parent can spawn on 2 cores).
      maxExitsPerBucket: { raw: worst(raw, 'maxExitPerBucket'), jitter0: worst(plain, 'maxExitPerBucket'), jitter: worst(jittered, 'maxExitPerBucket') },
      maxDuesPerBucket: { raw: worst(raw, 'maxDuePerBucket'), jitter0: worst(plain, 'maxDuePerBucket'), jitter: worst(jittered, 'maxDuePerBucket') },
      burstKept: { raw: round(burstKept(raw), 2), jitter0: round(burstKept(plain), 2), jitter: round(burstKept(jittered), 2) },
      delaysMs: { jitter0: plainDelays, jitter: spreadDelays },
      maxSpawnsPerBucket: { raw: worst(raw, 'maxPerBucket'), jitter0: worst(plain, 'maxPerBucket'), jitter: worst(jittered, 'maxPerBucket') },
      jitteredRecoveryMs: round(recovery(jittered), 1),
      raw: summary(raw),
      agentvisorJitter0: summary(plain),
      agentvisorJitter: summary(jittered),
      processes: { spawned: spawned.length, leftover: leaks.leftover.length },
    },
  });
}
