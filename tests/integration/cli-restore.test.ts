/**
 * The daemon's restore as a user meets it (the built CLI, `agentvisor serve` as a real child
 * process): a daemon killed with SIGKILL, started again on the same state directory (its
 * leftovers swept first), starts again the agent that ran and reopens its named session (a prompt
 * with `-s` continues the same session id), while the agent that was idle, the one stopped by
 * a caller and the one that exited under its restart policy stay idle. A graceful `agentvisor
 * shutdown` restores too; `serve --no-restore` (and the config's `"restore": false`) restores
 * nothing.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AgentsBody, HealthBody } from '../../daemon/api-types.js';
import { cliEnvironment, startCli, stopServe, waitForLine } from '../support/cli-process.js';
import { call } from '../support/daemon-http.js';
import { fixtureSpec, isRunning, scratch } from '../support/real-agents.js';

let files: ReturnType<typeof scratch>;
let env: Record<string, string>;
let serves: Array<ReturnType<typeof startCli>>;
let serveErr = '';
/** Agents a SIGKILLed daemon left: the next daemon's sweep kills them; afterEach does when a test failed first. */
let leftovers: number[];

const stateDir = () => files.path('state');
const config = () => files.path('agentvisor.config.json');
const cli = (...args: string[]) => startCli(['--state-dir', stateDir(), '--config', config(), ...args], { env, cwd: files.dir });
const jsonLines = (text: string) => text.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
/** Starts `agentvisor serve --port 0 ...args` on the state directory; resolves once it listens, with it in a box (a running execa is a thenable). */
const startServe = async (...args: string[]): Promise<{ serve: ReturnType<typeof startCli> }> => {
  serveErr = '';
  const serve = startCli(['--state-dir', stateDir(), '--config', config(), 'serve', '--port', '0', ...args], { env, cwd: files.dir, timeout: 0 });
  serves.push(serve);
  serve.stderr.on('data', (chunk: Buffer) => (serveErr += chunk.toString()));
  await waitForLine(serve.stdout, (line) => line.startsWith('dashboard: '), 'the daemon to listen', 30_000).catch((error: Error) => {
    throw new Error(`${error.message}; its stderr: ${serveErr}`);
  });
  return { serve };
};
/** The running daemon's `GET /v1/health`, found by its files as the CLI finds it. */
const health = async (): Promise<HealthBody> => {
  const { port } = JSON.parse(readFileSync(files.path('state/daemon.json'), 'utf8')) as { port: number };
  const token = readFileSync(files.path('state/daemon.token'), 'utf8').trim();
  return (await call({ port, token }, 'GET', '/v1/health')).json as HealthBody;
};
const restoreDone = async () => {
  await expect.poll(async () => (await health()).restore.state, { timeout: 20_000 }).toBe('done');
  return (await health()).restore;
};
const rows = async () => Object.fromEntries((JSON.parse((await cli('ls', '--format', 'json')).stdout) as AgentsBody).agents.map((row) => [row.name, row]));
/** `prompt fx -s work <text>`: its session line and its last line. */
const promptWork = async (text: string) => {
  const result = await cli('prompt', 'fx', '-s', 'work', text, '--format', 'json');
  expect(result.exitCode, result.stderr).toBe(0);
  const lines = jsonLines(result.stdout);
  return { session: lines.find((line) => line.type === 'session')!, last: lines.at(-1)! };
};

beforeEach(() => {
  files = scratch();
  env = cliEnvironment(files.dir);
  serves = [];
  leftovers = [];
  writeFileSync(
    config(),
    JSON.stringify({
      agents: {
        fx: fixtureSpec(['--load-session', '--state-file', files.path('fx-sessions.json')]),
        idle: fixtureSpec(),
        stopme: fixtureSpec(),
        // Exits 1.5 s after it starts, and its restart policy starts it no more: exited, an outcome.
        ends: fixtureSpec(['--exit-after', '1500', '--exit-code', '0'], { restart: { when: 'never' } }),
      },
    }),
  );
});

afterEach(async () => {
  for (const serve of serves) await stopServe(serve);
  for (const pid of leftovers) if (isRunning(pid)) process.kill(pid, 'SIGKILL');
  files.cleanup();
});

describe('serve restores what the last daemon on its state directory ran', () => {
  it('after SIGKILL: the agent that ran is connected again and its named session continues; idle, stopped and exited agents stay idle', async () => {
    const { serve: first } = await startServe();
    expect((await cli('start', 'fx')).exitCode).toBe(0);
    const opened = await promptWork('remember this');
    expect(opened.session).toMatchObject({ name: 'work', opened: 'new' });
    const sessionId = opened.session.sessionId as string;
    expect((await cli('start', 'stopme')).exitCode).toBe(0);
    expect((await cli('stop', 'stopme')).exitCode).toBe(0);
    expect((await cli('start', 'ends')).exitCode).toBe(0);
    await expect.poll(async () => (await rows()).ends?.status, { timeout: 15_000 }).toBe('exited');
    const oldPid = (await rows()).fx!.pid!;
    leftovers.push(oldPid);

    first.kill('SIGKILL');
    await first;

    await startServe();
    const report = await restoreDone();
    expect(report.agents).toEqual([{ agent: 'fx', outcome: 'restored', error: null }]);
    expect(report.sessions).toEqual([{ agent: 'fx', name: 'work', sessionId, cwd: files.dir, outcome: 'restored', error: null }]);
    const now = await rows();
    expect(Object.fromEntries(Object.entries(now).map(([name, row]) => [name, row.status]))).toMatchObject({ fx: 'connected', idle: 'idle', stopme: 'idle', ends: 'idle' });
    expect(now.fx!.pid).not.toBe(oldPid);
    expect(isRunning(oldPid), 'the old process is gone (ended with its stdin, or swept at the start)').toBe(false);
    expect(now.fx!.sessions).toBe(1);
    expect(serveErr).toMatch(/restore: agent fx started again \(pid \d+\)/);
    expect(serveErr).toContain(`restore: session "work" of agent fx reopened (${sessionId})`);

    const continued = await promptWork('and this');
    expect(continued.session).toMatchObject({ sessionId, name: 'work', opened: 'existing' });
    expect(continued.last).toMatchObject({ type: 'done', text: 'and this' });
    const history = await cli('sessions', 'history', sessionId);
    expect(history.stdout).toBe('> remember this\nremember this\n· end_turn\n> and this\nand this\n· end_turn\n');
  }, 120_000);

  it('after a graceful shutdown too; --no-restore, or the config\'s "restore": false, restores nothing', async () => {
    await startServe();
    expect((await cli('start', 'fx')).exitCode).toBe(0);
    const sessionId = (await promptWork('remember this')).session.sessionId as string;
    const shutdown = await cli('shutdown');
    expect(shutdown.exitCode, shutdown.stderr).toBe(0);

    // A deliberate shutdown stops every agent, and records none of those stops: the next start restores them.
    await startServe();
    const report = await restoreDone();
    expect(report).toMatchObject({ agents: [{ agent: 'fx', outcome: 'restored' }], sessions: [{ name: 'work', sessionId, outcome: 'restored' }] });
    expect((await rows()).fx!.status).toBe('connected');
    expect((await cli('shutdown')).exitCode).toBe(0);

    // The config says no.
    writeFileSync(files.path('no-restore.json'), JSON.stringify({ ...JSON.parse(readFileSync(config(), 'utf8')), restore: false }));
    const fromConfig = startCli(['--state-dir', stateDir(), '--config', files.path('no-restore.json'), 'serve', '--port', '0'], { env, cwd: files.dir, timeout: 0 });
    serves.push(fromConfig);
    await waitForLine(fromConfig.stdout, (line) => line.startsWith('dashboard: '), 'the daemon to listen', 30_000);
    expect((await health()).restore).toMatchObject({ state: 'off', agents: [], sessions: [] });
    expect((await rows()).fx!.status).toBe('idle');
    expect((await cli('shutdown')).exitCode).toBe(0);

    // --no-restore: nothing either — and what that daemon ran (nothing) is what is kept from then on.
    await startServe('--no-restore');
    expect((await health()).restore.state).toBe('off');
    expect((await rows()).fx!.status).toBe('idle');
    expect(serveErr).not.toContain('restore:');
    expect((await cli('shutdown')).exitCode).toBe(0);
    await startServe();
    expect(await restoreDone()).toMatchObject({ agents: [], sessions: [] });
    expect((await rows()).fx!.status).toBe('idle');
  }, 120_000);
});
