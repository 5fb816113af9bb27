/**
 * `agentvisor orphans` as a user runs it (the built CLI, real processes left by a "crashed"
 * supervisor): without a daemon it lists and kills by a supervisor of its own; with one it asks
 * the daemon. `--kill` kills every leftover, `--pid N` just those; a pid that is no leftover
 * exits 2 and kills nothing. And `serve`'s start-up policy: `--orphans report` leaves a
 * leftover running and says so in its log, the default ('kill') kills it; a bad policy (flag
 * or config) exits 2 naming it.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { OrphansBody } from '../../daemon/api-types.js';
import type { OrphanSweepResult } from '../../index.js';
import { cliEnvironment, startCli, stopServe, waitForLine } from '../support/cli-process.js';
import { leaveOrphan, type Leftover } from '../support/orphan-records.js';
import { eventually, isRunning, scratch } from '../support/real-agents.js';

let files: ReturnType<typeof scratch>;
let env: Record<string, string>;
let leftovers: Leftover[];
let serve: ReturnType<typeof startCli> | undefined;
let serveErr = '';

const stateDir = () => files.path('state');
const cli = (...args: string[]) => startCli(['--state-dir', stateDir(), ...args], { env, cwd: files.dir });
const leave = async (agent: string) => {
  const leftover = await leaveOrphan(stateDir(), agent);
  leftovers.push(leftover);
  return leftover;
};
/** Starts `agentvisor [globals] serve --port 0 ...args` (in `serve`); resolves once it listens (not with it: a running execa is a thenable). */
const startServe = async (globals: string[], ...args: string[]): Promise<void> => {
  serveErr = '';
  serve = startCli(['--state-dir', stateDir(), ...globals, 'serve', '--port', '0', ...args], { env, cwd: files.dir, timeout: 0 });
  serve.stderr.on('data', (chunk: Buffer) => (serveErr += chunk.toString()));
  await waitForLine(serve.stdout, (line) => line.startsWith('dashboard: '), 'the daemon to listen', 30_000);
};

beforeEach(() => {
  files = scratch();
  env = cliEnvironment(files.dir);
  leftovers = [];
});

afterEach(async () => {
  await stopServe(serve);
  serve = undefined;
  for (const leftover of leftovers) leftover.kill();
  files.cleanup();
});

describe('agentvisor orphans without a daemon', () => {
  it('lists what was left (text, json, quiet) and touches nothing; --pid kills just that one; --kill the rest; it starts no daemon', async () => {
    const [one, two] = [await leave('one'), await leave('two')];
    // Autostart allowed: still none is started (a daemon's start could kill them).
    const autostart = { ...env, AGENTVISOR_NO_AUTOSTART: '' };
    const [text, json, quiet] = await Promise.all([
      startCli(['--state-dir', stateDir(), 'orphans'], { env: autostart, cwd: files.dir }),
      cli('orphans', '--format', 'json'),
      cli('orphans', '--format', 'quiet'),
    ]);
    expect(text.exitCode, text.stderr).toBe(0);
    const lines = text.stdout.trimEnd().split('\n');
    // The pid column is right-aligned to its widest pid: no padding when every pid has three digits (pids wrap at pid_max).
    expect(lines[0]).toMatch(/^ *pid +agent +started +left by +command +what is left$/);
    expect(lines).toEqual(expect.arrayContaining([expect.stringMatching(new RegExp(`^ *${one.pid} +one +\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d \\(\\d+s ago\\) +pid ${process.pid} +sleep +running$`))]));
    expect(lines.at(-1)).toBe('2 left by a crashed supervisor; kill them with `agentvisor orphans --kill`, or some with `--pid N`');
    expect(existsSync(files.path('state/daemon.json'))).toBe(false);
    const body = JSON.parse(json.stdout) as OrphanSweepResult & { startup: unknown };
    expect(body).toMatchObject({ dryRun: true, killed: [], skipped: [], startup: null });
    expect(body.orphans.map((orphan) => [orphan.agent, orphan.pid, orphan.command, typeof orphan.startedAt]).sort()).toEqual([
      ['one', one.pid, 'sleep', 'number'],
      ['two', two.pid, 'sleep', 'number'],
    ]);
    expect(quiet.stdout.split('\n').filter(Boolean).map(Number).sort()).toEqual([one.pid, two.pid].sort());
    expect([isRunning(one.pid), isRunning(two.pid)]).toEqual([true, true]);

    const killOne = await cli('orphans', '--pid', String(one.pid));
    expect(killOne).toMatchObject({ exitCode: 0, stdout: `killed pid ${one.pid} (one: sleep)\n` });
    await eventually(() => !isRunning(one.pid), 'the pid given to be gone');
    expect(isRunning(two.pid)).toBe(true);

    const killRest = await cli('orphans', '--kill', '--format', 'json');
    expect(killRest.exitCode).toBe(0);
    expect((JSON.parse(killRest.stdout) as OrphanSweepResult).killed).toEqual([{ agent: 'two', pid: two.pid, command: 'sleep' }]);
    await eventually(() => !isRunning(two.pid), 'the rest to be gone');
    expect(await cli('orphans')).toMatchObject({ exitCode: 0, stdout: `no orphans: nothing a crashed supervisor left runs for state dir ${stateDir()}\n` });
  }, 60_000);

  it('refuses a pid that is no leftover (exit 2, nothing killed), a bad pid and --kill with --pid (exit 2)', async () => {
    const one = await leave('one');
    const [notRecorded, zero, both] = await Promise.all([cli('orphans', '--pid', String(one.pid), '--pid', String(process.pid)), cli('orphans', '--pid', '0'), cli('orphans', '--kill', '--pid', String(one.pid))]);
    expect(notRecorded.exitCode).toBe(2);
    expect(notRecorded.stderr).toContain(`Not a leftover of a crashed supervisor: pid ${process.pid} is in no process record`);
    expect(zero.exitCode).toBe(2);
    expect(zero.stderr).toContain('--pid must be a whole number from 1');
    expect(both.exitCode).toBe(2);
    expect(both.stderr).toContain("option '--kill' cannot be used with option '--pid <pid>'");
    expect(isRunning(one.pid)).toBe(true);
  }, 60_000);
});

describe('agentvisor orphans with a daemon, and serve --orphans', () => {
  it("serve --orphans report leaves a leftover running and logs it; orphans lists it through the daemon, --pid and --kill kill through it", async () => {
    const [one, two] = [await leave('one'), await leave('two')];
    await startServe([], '--orphans', 'report');
    expect([isRunning(one.pid), isRunning(two.pid)]).toEqual([true, true]);
    // Its log (stderr) says so, after the lines on stdout: another pipe, read in its own time.
    await eventually(() => serveErr.includes('kill them with `agentvisor orphans --kill`'), 'the daemon to log what it found');
    expect(serveErr).toContain("orphans: 2 processes left by a crashed supervisor, still running (orphans: 'report', nothing killed):");
    expect(serveErr).toMatch(new RegExp(`  pid ${one.pid}  one  sleep, started \\d{4}-`));
    expect(serveErr).toContain('kill them with `agentvisor orphans --kill`');

    const listed = await cli('orphans', '--format', 'json');
    expect(listed.exitCode).toBe(0);
    const body = JSON.parse(listed.stdout) as OrphansBody;
    expect(body.startup).toMatchObject({ policy: 'report', at: expect.any(Number), result: { dryRun: true, killed: [] } });
    expect(body.orphans.map((orphan) => orphan.pid).sort()).toEqual([one.pid, two.pid].sort());

    const refused = await cli('orphans', '--pid', String(process.pid));
    expect(refused.exitCode).toBe(2);
    expect(refused.stderr).toContain(`pid ${process.pid} is in no process record`);
    const killOne = await cli('orphans', '--pid', String(one.pid));
    expect(killOne).toMatchObject({ exitCode: 0, stdout: `killed pid ${one.pid} (one: sleep)\n` });
    await eventually(() => !isRunning(one.pid), 'the pid given to be gone');
    expect(isRunning(two.pid)).toBe(true);
    // The daemon's log says what was killed.
    await eventually(() => serveErr.includes(`killed 1 leftover of a crashed supervisor: pid ${one.pid} (one: sleep)`), 'the daemon to log the kill');
    expect((await cli('orphans', '--kill')).stdout).toBe(`killed pid ${two.pid} (two: sleep)\n`);
    await eventually(() => !isRunning(two.pid), 'the rest to be gone');
  }, 90_000);

  it("serve without --orphans (the default, 'kill') has killed a leftover once it listens, and logs it", async () => {
    const one = await leave('one');
    await startServe([]);
    await eventually(() => !isRunning(one.pid), 'the leftover to be gone');
    await eventually(() => serveErr.includes(`killed 1 leftover of a crashed supervisor: pid ${one.pid} (one: sleep) (orphans: 'kill')`), 'the daemon to log the kill');
    const listed = JSON.parse((await cli('orphans', '--format', 'json')).stdout) as OrphansBody;
    expect(listed).toMatchObject({ orphans: [], startup: { policy: 'kill', result: { killed: [{ pid: one.pid }] } } });
  }, 60_000);

  it("the config's orphans is the default of --orphans; a bad one, in the config or the flag, exits 2 naming it", async () => {
    const one = await leave('one');
    writeFileSync(files.path('report.json'), JSON.stringify({ orphans: 'report' }));
    writeFileSync(files.path('bad.json'), JSON.stringify({ orphans: 'nuke' }));
    const [badConfig, badFlag] = await Promise.all([cli('--config', files.path('bad.json'), 'serve', '--port', '0'), cli('serve', '--port', '0', '--orphans', 'nuke')]);
    expect(badConfig.exitCode).toBe(2);
    expect(badConfig.stderr).toContain('orphans: must be one of "kill", "report", "ignore"');
    expect(badFlag.exitCode).toBe(2);
    expect(badFlag.stderr).toContain("option '--orphans <policy>' argument 'nuke' is invalid");
    expect(isRunning(one.pid)).toBe(true);
    await startServe(['--config', files.path('report.json')]);
    expect(isRunning(one.pid)).toBe(true);
    await eventually(() => serveErr.includes("orphans: 1 process left by a crashed supervisor, still running (orphans: 'report', nothing killed):"), 'the daemon to log what it found');
  }, 60_000);
});
