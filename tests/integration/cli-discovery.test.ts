/**
 * The CLI finds the daemon from any folder (docs/cli.md, "Finding the daemon"): a daemon
 * started from folder A with a config whose stateDir is A's own is found by `agentvisor ls`
 * run in folder B with no flags, through the registry of running daemons; two such daemons
 * are listed and refused (exit 2), never guessed between; --state-dir picks one; a stopped
 * daemon leaves no entry behind.
 */
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliEnvironment, startCli, stopServe, waitForLine } from '../support/cli-process.js';
import { fixtureSpec, scratch } from '../support/real-agents.js';

let files: ReturnType<typeof scratch>;
let env: Record<string, string>;
let first: ReturnType<typeof startCli> | undefined;
let second: ReturnType<typeof startCli> | undefined;

/** A `serve` started in `cwd`, once it listens (wrapped: the process is a promise of its end). */
const serveIn = async (cwd: string, args: string[] = []) => {
  const serve = startCli([...args, 'serve', '--port', '0'], { env, cwd, timeout: 0 });
  await waitForLine(serve.stdout, (line) => line.startsWith('dashboard: '), 'the daemon to listen');
  return { serve };
};
const cliIn = (cwd: string, ...args: string[]) => startCli(args, { env, cwd, timeout: 30_000 });
const registry = () => (existsSync(files.path('state/agentvisor/daemons')) ? readdirSync(files.path('state/agentvisor/daemons')) : []);

beforeAll(async () => {
  files = scratch();
  env = cliEnvironment(files.dir);
  for (const folder of ['a', 'b', 'c']) mkdirSync(files.path(folder));
  writeFileSync(files.path('a/agentvisor.config.json'), JSON.stringify({ stateDir: './a-state', agents: { fx: fixtureSpec() } }));
  writeFileSync(files.path('c/agentvisor.config.json'), JSON.stringify({ agents: { mine: fixtureSpec() } })); // names no stateDir
  first = (await serveIn(files.path('a'))).serve;
}, 30_000);

afterAll(async () => {
  await stopServe(second);
  await stopServe(first);
  files.cleanup();
});

describe('finding the daemon', { timeout: 45_000 }, () => {
  it('from another folder, with no flags: the one daemon running, through the registry', async () => {
    expect(registry()).toHaveLength(1);
    const listed = await cliIn(files.path('b'), 'ls', '--format', 'quiet');
    expect(listed.exitCode, listed.stderr).toBe(0);
    expect(listed.stdout.split('\n')).toContain('fx'); // the config of folder A's agent: A's daemon
    expect(listed.stderr).toBe('');
    const doctor = await cliIn(files.path('b'), 'doctor', '--format', 'json');
    expect(JSON.parse(doctor.stdout)).toMatchObject({ daemon: { pid: first!.pid } });
  });

  it('a command that would start a daemon attaches to the one running instead, and says whose it is when its own config differs', async () => {
    const autostarting = { ...env, AGENTVISOR_NO_AUTOSTART: '' };
    const listed = await startCli(['ls', '--format', 'quiet'], { env: autostarting, cwd: files.path('c'), timeout: 30_000 });
    expect(listed.exitCode, listed.stderr).toBe(0);
    expect(listed.stdout.split('\n')).toContain('fx');
    expect(listed.stderr).not.toContain('started a daemon');
    expect(listed.stderr).toContain(`using the daemon of state dir ${files.path('a/a-state')} (pid ${first!.pid}, config ${files.path('a/agentvisor.config.json')})`);
    expect(registry()).toHaveLength(1);
  });

  it('--state-dir, or an environment that names one, is never redirected', async () => {
    const named = await cliIn(files.path('b'), '--state-dir', files.path('elsewhere'), 'ls');
    expect(named.exitCode).toBe(6);
    expect(named.stderr).toContain(`no daemon running for state dir ${files.path('elsewhere')}`);
    const byEnv = await startCli(['ls'], { env: { ...env, AGENTVISOR_STATE_DIR: files.path('elsewhere') }, cwd: files.path('b') });
    expect(byEnv.exitCode).toBe(6);
  });

  it('two daemons: refused with both listed and how to pick one, exit 2; --state-dir picks', async () => {
    second = (await serveIn(files.path('b'), ['--state-dir', files.path('second-state')])).serve;
    const refused = await cliIn(files.path('b'), 'ls');
    expect(refused.exitCode).toBe(2);
    expect(refused.stderr).toContain('2 daemons are running and none for the default state dir');
    expect(refused.stderr).toContain(`--state-dir ${files.path('a/a-state')}   pid ${first!.pid}`);
    expect(refused.stderr).toContain(`--state-dir ${files.path('second-state')}   pid ${second.pid}`);
    expect(refused.stderr.trimEnd().split('\n').at(-1)).toBe('kind: usage (exit 2)');
    const picked = await cliIn(files.path('b'), '--state-dir', files.path('second-state'), 'ls', '--format', 'quiet');
    expect(picked.exitCode, picked.stderr).toBe(0);
    expect(picked.stdout.split('\n')).not.toContain('fx');
  });

  it('a stopped daemon leaves no entry: found again is the one still running, then none', async () => {
    await stopServe(second);
    expect(registry()).toHaveLength(1);
    expect((await cliIn(files.path('b'), 'ls', '--format', 'quiet')).stdout.split('\n')).toContain('fx');
    await stopServe(first);
    expect(registry()).toEqual([]);
    const none = await cliIn(files.path('b'), 'ls');
    expect(none.exitCode).toBe(6);
    expect(none.stderr).toContain(`no daemon running for state dir ${files.path('state/agentvisor')}`);
  });
});
