/**
 * Working directories as a person meets them on the command line (the built CLI and a real
 * `serve`): `prompt` works in the caller's directory unless `--cwd` (resolved against the
 * caller's) says otherwise; a directory that does not exist — given with `--cwd` to `prompt`
 * or `run`, or as an agent's `cwd` in the config file — is a usage error (exit 2) naming it;
 * and a named session asked for in another directory than its own is refused, not silently
 * used where it is.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SessionsBody } from '../../daemon/api-types.js';
import { cliEnvironment, startCli, stopServe, waitForLine } from '../support/cli-process.js';
import { fixtureSpec, scratch } from '../support/real-agents.js';

let files: ReturnType<typeof scratch>;
let env: Record<string, string>;
let serve: ReturnType<typeof startCli> | undefined;

const stateDir = () => files.path('state');
/** `agentvisor --state-dir <the daemon's> --config <scratch config> ...args`, run in `cwd` (default: the project folder). */
const cliIn = (cwd: string, ...args: string[]) => startCli(['--state-dir', stateDir(), '--config', files.path('agentvisor.config.json'), ...args], { env, cwd });
const cli = (...args: string[]) => cliIn(files.path('project'), ...args);
const sessionsOf = async () => (JSON.parse((await cli('sessions', 'list', '--agent', 'fx', '--format', 'json')).stdout) as SessionsBody).sessions;

beforeAll(async () => {
  files = scratch();
  env = cliEnvironment(files.dir);
  for (const folder of ['project/sub', 'other', 'daemon-home', 'conf']) mkdirSync(files.path(folder), { recursive: true });
  writeFileSync(files.path('agentvisor.config.json'), JSON.stringify({ agents: { fx: fixtureSpec() } }));
  // The daemon runs in a folder of its own: a session must never end up there by default.
  serve = startCli(['--state-dir', stateDir(), '--config', files.path('agentvisor.config.json'), 'serve', '--port', '0'], { env, cwd: files.path('daemon-home'), timeout: 0 });
  await waitForLine(serve.stdout, (line) => line.startsWith('dashboard: '), 'the daemon to listen');
});

afterAll(async () => {
  await stopServe(serve);
  files.cleanup();
});

describe('prompt', () => {
  it("without --cwd works in the caller's directory, not the daemon's; --cwd is resolved against the caller's", async () => {
    expect(await cli('prompt', 'fx', 'hello')).toMatchObject({ exitCode: 0, stdout: 'hello\n' });
    expect(await cli('prompt', 'fx', '-s', 'below', '--cwd', 'sub', 'hi')).toMatchObject({ exitCode: 0 });
    const sessions = await sessionsOf();
    expect(sessions.find((row) => row.name === 'default')).toMatchObject({ cwd: files.path('project') });
    expect(sessions.find((row) => row.name === 'below')).toMatchObject({ cwd: files.path('project/sub') });
  });

  it('--cwd that does not exist, or is a file, is a usage error naming it, and opens nothing', async () => {
    const missing = files.path('does/not/exist');
    const refused = await cli('prompt', 'fx', '-s', 'nowhere', '--cwd', missing, 'hi');
    expect(refused.exitCode).toBe(2);
    expect(refused.stderr).toContain(`cwd: ${missing} does not exist`);
    writeFileSync(files.path('project/notes.txt'), 'a file');
    const file = await cli('prompt', 'fx', '-s', 'nowhere', '--cwd', 'notes.txt', 'hi');
    expect(file.exitCode).toBe(2);
    expect(file.stderr).toContain(`cwd: ${files.path('project/notes.txt')} is not a directory`);
    expect((await sessionsOf()).some((row) => row.name === 'nowhere')).toBe(false);
  });

  it('a named session open in another directory is refused; in its own it is reused; --new opens one here', async () => {
    expect(await cli('prompt', 'fx', '-s', 'fix', 'one')).toMatchObject({ exitCode: 0 });
    const elsewhere = await cli('prompt', 'fx', '-s', 'fix', '--cwd', files.path('other'), 'two');
    expect(elsewhere.exitCode).toBe(2);
    expect(elsewhere.stderr).toContain(`Session "fix" of agent "fx" works in ${files.path('project')}, not in ${files.path('other')}`);
    const fromOther = await cliIn(files.path('other'), 'prompt', 'fx', '-s', 'fix', 'two');
    expect(fromOther.exitCode).toBe(2);
    expect(await cli('prompt', 'fx', '-s', 'fix', '--cwd', '.', 'three')).toMatchObject({ exitCode: 0, stdout: 'three\n' });
    expect(await cliIn(files.path('other'), 'prompt', 'fx', '-s', 'fix', '--new', 'four')).toMatchObject({ exitCode: 0, stdout: 'four\n' });
    const fix = (await sessionsOf()).filter((row) => row.name === 'fix');
    expect(fix).toHaveLength(1);
    expect(fix[0]).toMatchObject({ cwd: files.path('other') });
  }, 45_000); // six CLI runs, each a node start: ~6 s alone, more than 20 s under the whole suite's load
});

describe('run and the config file', () => {
  it('run --cwd that does not exist, or is a file, is a usage error naming it, before the agent starts', async () => {
    const config = files.path('conf/tracked.config.json');
    writeFileSync(config, JSON.stringify({ agents: { tracked: fixtureSpec(['--pid-file', files.path('tracked.pids')]) } }));
    writeFileSync(files.path('a-file'), 'not a directory');
    for (const [given, named, problem] of [
      [files.path('nope'), files.path('nope'), 'does not exist'],
      ['a-file', files.path('a-file'), 'is not a directory'], // relative: against the CLI's directory
    ] as const) {
      const result = await startCli(['--state-dir', files.path('run-state'), '--config', config, 'run', 'tracked', '--cwd', given, 'hi'], { env, cwd: files.dir });
      expect(result.exitCode).toBe(2);
      expect(result.stderr).toContain(`cwd: ${named} ${problem}`);
      expect(result.stderr).toContain('kind: invalid_options (exit 2)');
    }
    expect(files.pidLines('tracked.pids')).toEqual([]); // no agent process ran
  });

  it('prompt --cwd that does not exist is refused before a daemon is asked, or started', async () => {
    const fresh = files.path('fresh-state');
    const autostarting = { ...env, AGENTVISOR_NO_AUTOSTART: '' };
    const result = await startCli(['--state-dir', fresh, 'prompt', 'echo', '--cwd', files.path('nope'), 'hi'], { env: autostarting, cwd: files.dir });
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toContain(`cwd: ${files.path('nope')} does not exist`);
    expect(result.stderr).not.toContain('started a daemon');
    expect(existsSync(`${fresh}/daemon.json`)).toBe(false);
  });

  it("an agent's cwd in the config is the config file's folder's; one that does not exist is a usage error for run and serve", async () => {
    const config = files.path('conf/agentvisor.config.json');
    mkdirSync(files.path('conf/work'));
    writeFileSync(config, JSON.stringify({ agents: { here: fixtureSpec([], { cwd: 'work' }) } }));
    const fine = await startCli(['--state-dir', files.path('run-state'), '--config', config, 'run', 'here', 'fine'], { env, cwd: files.path('other') });
    expect(fine).toMatchObject({ exitCode: 0, stdout: 'fine\n' });

    writeFileSync(config, JSON.stringify({ agents: { lost: fixtureSpec([], { cwd: 'missing' }) } }));
    const refusal = `Invalid config file ${config}: Invalid spec for agent "lost": spec.cwd: ${files.path('conf/missing')} does not exist`;
    const run = await startCli(['--state-dir', files.path('run-state'), '--config', config, 'run', 'lost', 'hi'], { env, cwd: files.path('other') });
    expect(run.exitCode).toBe(2);
    expect(run.stderr).toContain(refusal);
    const served = await startCli(['--state-dir', files.path('serve-state'), '--config', config, 'serve', '--port', '0'], { env, cwd: files.path('other') });
    expect(served.exitCode).toBe(2);
    expect(served.stderr).toContain(refusal);
  });
});
