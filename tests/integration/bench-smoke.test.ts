/**
 * Keeps the benchmarks from rotting: each one runs once at its tiny smoke size and must
 * write a well-formed result line (to a temp file, never bench/results/latest.jsonl) and
 * leave no process behind. Timing is never asserted — `npm run bench` is where it counts.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import * as chaosSoak from '../../bench/chaos-soak.bench.js';
import * as containment from '../../bench/containment.bench.js';
import * as daemonLs from '../../bench/daemon-ls.bench.js';
import * as daemonStream from '../../bench/daemon-stream.bench.js';
import * as daemonWsStatus from '../../bench/daemon-ws-status.bench.js';
import * as fanOut from '../../bench/fan-out.bench.js';
import * as fsHostile from '../../bench/fs-hostile.bench.js';
import * as storeSize from '../../bench/store-size.bench.js';
import * as handshake from '../../bench/handshake.bench.js';
import { agentScripts } from '../../bench/lib/agentvisor.js';
import { clientScripts } from '../../bench/lib/daemon.js';
import { prepareAgentEnvironment } from '../../bench/lib/env.js';
import { leftoverAgents } from '../../bench/lib/processes.js';
import * as memoryScale from '../../bench/memory-scale.bench.js';
import type { BenchContext, BenchResult } from '../../bench/lib/results.js';
import * as restartStorm from '../../bench/restart-storm.bench.js';
import * as shutdown from '../../bench/shutdown.bench.js';
import * as stream from '../../bench/stream.bench.js';
import * as streamJson from '../../bench/stream-json.bench.js';
import * as turns from '../../bench/turns.bench.js';

prepareAgentEnvironment(); // as `npm run bench` does (this file runs in its own fork)
const dir = mkdtempSync(join(tmpdir(), 'agentvisor-bench-smoke-'));
const resultsFile = join(dir, 'results.jsonl');
const ctx: BenchContext = { resultsFile, log: () => {} };

afterAll(() => rmSync(dir, { recursive: true, force: true }));

function lastLine(): BenchResult {
  const lines = readFileSync(resultsFile, 'utf8').trim().split('\n');
  return JSON.parse(lines[lines.length - 1]!) as BenchResult;
}

function expectWellFormed(result: BenchResult, name: string): void {
  const line = lastLine();
  expect(line).toEqual(JSON.parse(JSON.stringify(result)));
  expect(line.benchmark).toBe(name);
  for (const key of ['baseline', 'agentvisor', 'ratio'] as const) {
    expect(Number.isFinite(line[key]), `${key} = ${line[key]}`).toBe(true);
    expect(line[key]).toBeGreaterThan(0);
  }
  expect(line.unit).toMatch(/\S/);
  expect(line.goal).toMatch(/\S/);
  expect(typeof line.met).toBe('boolean');
  expect((line.details['processes'] as { leftover: number }).leftover).toBe(0);
  expect(leftoverAgents(agentScripts)).toEqual([]);
}

describe('benchmarks at smoke size', () => {
  it('handshake', async () => {
    expectWellFormed(await handshake.handshakeBench(handshake.smokeSize, ctx), 'handshake');
  }, 30_000);

  it('stream', async () => {
    expectWellFormed(await stream.streamBench(stream.smokeSize, ctx), 'stream');
  }, 30_000);

  it('turns', async () => {
    const result = await turns.turnsBench(turns.smokeSize, ctx);
    expectWellFormed(result, 'turns');
    // The machine floor ran in its own process, both modes, every round of both its sides, and
    // each of its turns was answered through its wrapper (the floor's by the machine).
    const floor = result.details['machineFloor'] as {
      modes: Record<string, { floor: { ratio: number; pairedRatio: { n: number } }; control: { ratio: number; pairedRatio: { n: number } } }>;
      everyTurnAnswered: boolean;
      turnsRun: { floor: number; control: number };
    };
    expect(Object.keys(floor.modes)).toEqual(['oneSession', `sessions${turns.smokeSize.sessions}`]);
    for (const mode of Object.values(floor.modes)) {
      for (const side of [mode.floor, mode.control]) {
        expect(Number.isFinite(side.ratio), `ratio = ${side.ratio}`).toBe(true);
        expect(side.ratio).toBeGreaterThan(0);
        expect(side.pairedRatio.n).toBe(turns.smokeSize.rounds);
      }
    }
    expect(floor.turnsRun.floor).toBeGreaterThan(0);
    expect(floor.everyTurnAnswered).toBe(true);
  }, 60_000);

  it('stream-json', async () => {
    expectWellFormed(await streamJson.streamJsonBench(streamJson.smokeSize, ctx), 'stream-json');
  });

  it('fan-out', async () => {
    expectWellFormed(await fanOut.fanOutBench(fanOut.smokeSize, ctx), 'fan-out');
  }, 30_000);

  it('shutdown', async () => {
    expectWellFormed(await shutdown.shutdownBench(shutdown.smokeSize, ctx), 'shutdown');
  }, 30_000);

  it('restart storm', async () => {
    expectWellFormed(await restartStorm.restartStormBench(restartStorm.smokeSize, ctx), 'restart-storm');
  }, 30_000);

  it('containment', async () => {
    expectWellFormed(await containment.containmentBench(containment.smokeSize, ctx), 'containment');
  }, 30_000);

  it('daemon-ws-status', async () => {
    expectWellFormed(await daemonWsStatus.daemonWsStatusBench(daemonWsStatus.smokeSize, ctx), 'daemon-ws-status');
    // Its client processes (WebSocket client, prompt load) are gone too.
    expect(leftoverAgents(clientScripts)).toEqual([]);
  }, 60_000);

  it('daemon-ls', async () => {
    expectWellFormed(await daemonLs.daemonLsBench(daemonLs.smokeSize, ctx), 'daemon-ls');
  }, 60_000);

  it('daemon-stream', async () => {
    expectWellFormed(await daemonStream.daemonStreamBench(daemonStream.smokeSize, ctx), 'daemon-stream');
    expect(leftoverAgents([daemonStream.streamClientScript])).toEqual([]);
  }, 60_000);

  it('fs-hostile', async () => {
    expectWellFormed(await fsHostile.fsHostileBench(fsHostile.smokeSize, ctx), 'fs-hostile');
  }, 30_000);

  it('store-size', async () => {
    expectWellFormed(await storeSize.storeSizeBench(storeSize.smokeSize, ctx), 'store-size');
  }, 60_000);

  it('memory-scale', async () => {
    expectWellFormed(await memoryScale.memoryScaleBench(memoryScale.smokeSize, ctx), 'memory-scale');
  }, 60_000);

  it('chaos-soak', async () => {
    expectWellFormed(await chaosSoak.chaosSoakBench(chaosSoak.smokeSize, ctx), 'chaos-soak');
  }, 60_000);
});
