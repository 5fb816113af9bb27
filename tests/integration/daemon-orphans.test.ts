/**
 * The daemon and what a crashed supervisor left in its state directory, on real processes:
 * the start-up policy (`orphans: 'kill' | 'report' | 'ignore'`, a bad value refused before
 * anything listens), `GET /v1/orphans` (a dry run, and what the start did), `POST
 * /v1/orphans/kill` (every leftover, or given pids; a pid that is none is 404
 * orphan_not_found and nothing is killed), and the event stream's `orphans:swept`.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startDaemon, type Daemon, type DaemonOptions } from '../../daemon/daemon.js';
import { AgentError } from '../../index.js';
import { call, openEvents } from '../support/daemon-http.js';
import { leaveOrphan, type Leftover } from '../support/orphan-records.js';
import { eventually, isRunning } from '../support/real-agents.js';

let stateDir: string;
let daemon: Daemon | undefined;
let leftovers: Leftover[];

beforeEach(() => {
  stateDir = mkdtempSync(join(tmpdir(), 'agentvisor-daemon-orphans-'));
  leftovers = [];
  daemon = undefined;
});

afterEach(async () => {
  await daemon?.close();
  for (const leftover of leftovers) leftover.kill();
  rmSync(stateDir, { recursive: true, force: true });
});

const leave = async (agent: string) => {
  const leftover = await leaveOrphan(stateDir, agent);
  leftovers.push(leftover);
  return leftover;
};
const start = async (options: Partial<DaemonOptions> = {}) => (daemon = await startDaemon({ port: 0, ...options, supervisor: { stateDir, ...options.supervisor } }));

describe('the start-up policy', () => {
  it("'report' lists what was left, kills nothing, and keeps the listing for GET /v1/orphans", async () => {
    const left = await leave('left');
    const before = Date.now();
    const started = await start({ orphans: 'report' });
    expect(started.orphans).toMatchObject({ policy: 'report', result: { dryRun: true, killed: [] } });
    expect(started.orphans.at).toBeGreaterThanOrEqual(before);
    expect(started.orphans.result?.orphans).toEqual([expect.objectContaining({ agent: 'left', pid: left.pid, command: 'sleep', running: true, startedAt: expect.any(Number) })]);
    expect(isRunning(left.pid)).toBe(true);
    const listed = await call(started, 'GET', '/v1/orphans');
    expect(listed.status).toBe(200);
    expect(listed.json).toEqual({
      dryRun: true,
      orphans: [expect.objectContaining({ agent: 'left', pid: left.pid, command: 'sleep', running: true, startedAt: expect.any(Number), owner: process.pid })],
      killed: [],
      skipped: [],
      startup: JSON.parse(JSON.stringify(started.orphans)),
    });
    expect(isRunning(left.pid)).toBe(true);
    expect(existsSync(join(stateDir, 'processes', 'left.json'))).toBe(true);
  });

  it("'kill' (the default) has killed what was left by the time the daemon is started, and says so", async () => {
    const left = await leave('left');
    const started = await start();
    expect(started.orphans).toMatchObject({ policy: 'kill', at: expect.any(Number), result: { dryRun: false, killed: [{ agent: 'left', pid: left.pid, command: 'sleep' }] } });
    await eventually(() => !isRunning(left.pid), 'the leftover to be gone');
    const listed = await call(started, 'GET', '/v1/orphans');
    expect(listed.json).toMatchObject({ orphans: [], startup: { policy: 'kill' } });
  });

  it('starts without a state directory under every policy: nothing is recorded, so nothing is swept, and the report says so', async () => {
    for (const orphans of [undefined, 'kill', 'report', 'ignore'] as const) {
      const started = await startDaemon({ port: 0, supervisor: { stateDir: false }, ...(orphans ? { orphans } : {}) });
      try {
        expect(started.orphans).toEqual({ policy: orphans ?? 'kill', at: null, result: null });
        expect((await call(started, 'GET', '/v1/health')).status).toBe(200);
      } finally {
        await started.close();
      }
    }
  });

  it("'ignore' neither lists nor kills at start (nor does supervisor.sweepOnStart: false alone); GET /v1/orphans still lists", async () => {
    const left = await leave('left');
    const ignoring = await start({ orphans: 'ignore' });
    expect(ignoring.orphans).toEqual({ policy: 'ignore', at: null, result: null });
    expect(isRunning(left.pid)).toBe(true);
    expect((await call(ignoring, 'GET', '/v1/orphans')).json.orphans).toEqual([expect.objectContaining({ pid: left.pid })]);
    await ignoring.close();
    const unswept = await start({ supervisor: { stateDir, sweepOnStart: false } });
    expect(unswept.orphans).toEqual({ policy: 'ignore', at: null, result: null });
    expect(isRunning(left.pid)).toBe(true);
  });

  it('refuses a bad policy, or one given beside supervisor.sweepOnStart, with invalid_options naming the field, before it listens', async () => {
    const left = await leave('left');
    const bogus = await startDaemon({ supervisor: { stateDir }, port: 0, orphans: 'delete' as never }).catch((error: unknown) => error);
    expect(bogus).toBeInstanceOf(AgentError);
    expect(bogus).toMatchObject({ kind: 'invalid_options', message: expect.stringContaining("Option orphans: must be one of 'kill', 'report', 'ignore' (got \"delete\")") });
    const both = await startDaemon({ supervisor: { stateDir, sweepOnStart: true }, port: 0, orphans: 'report' }).catch((error: unknown) => error);
    expect(both).toMatchObject({ kind: 'invalid_options', message: expect.stringContaining('Option orphans: give it or supervisor.sweepOnStart, not both') });
    expect(existsSync(join(stateDir, 'daemon.json'))).toBe(false);
    expect(isRunning(left.pid)).toBe(true);
  });
});

describe('POST /v1/orphans/kill', () => {
  it('kills just the pids given; a pid that is no leftover is 404 orphan_not_found and nothing is killed; bad bodies are 400', async () => {
    const [one, two] = [await leave('one'), await leave('two')];
    const started = await start({ orphans: 'report' });
    const events = await openEvents(started, 'topics=orphans');
    try {
      const refused = await call(started, 'POST', '/v1/orphans/kill', { body: { pids: [one.pid, process.pid] } });
      expect(refused.status).toBe(404);
      expect(refused.json.error).toMatchObject({ kind: 'orphan_not_found', message: expect.stringContaining(`pid ${process.pid} is in no process record`) });
      for (const body of [{ pids: [] }, { pids: [0] }, { pids: [1.5] }, { pids: String(one.pid) }, { pid: one.pid }]) {
        const bad = await call(started, 'POST', '/v1/orphans/kill', { body });
        expect({ body, status: bad.status, kind: bad.json.error.kind }).toEqual({ body, status: 400, kind: 'invalid_request' });
      }
      expect([isRunning(one.pid), isRunning(two.pid)]).toEqual([true, true]);

      const killed = await call(started, 'POST', '/v1/orphans/kill', { body: { pids: [one.pid] } });
      expect(killed.status).toBe(200);
      expect(killed.json).toEqual({ dryRun: false, orphans: [expect.objectContaining({ agent: 'one', pid: one.pid })], killed: [{ agent: 'one', pid: one.pid, command: 'sleep' }], skipped: [] });
      await eventually(() => !isRunning(one.pid), 'the pid given to be gone');
      expect(isRunning(two.pid)).toBe(true);
      const swept = await events.next((message) => message.type === 'orphans:swept', 'orphans:swept');
      expect(swept.result).toEqual(killed.json);
      expect((await call(started, 'GET', '/v1/orphans')).json.orphans).toEqual([expect.objectContaining({ agent: 'two', pid: two.pid })]);
    } finally {
      events.close();
    }
  });

  it('with no body (or no pids) kills every leftover', async () => {
    const [one, two] = [await leave('one'), await leave('two')];
    const started = await start({ orphans: 'report' });
    const all = await call(started, 'POST', '/v1/orphans/kill');
    expect(all.status).toBe(200);
    expect(all.json.killed.map((entry: { pid: number }) => entry.pid).sort()).toEqual([one.pid, two.pid].sort());
    await eventually(() => !isRunning(one.pid) && !isRunning(two.pid), 'every leftover to be gone');
    expect((await call(started, 'POST', '/v1/orphans/kill', { body: {} })).json).toEqual({ dryRun: false, orphans: [], killed: [], skipped: [] });
  });
});
