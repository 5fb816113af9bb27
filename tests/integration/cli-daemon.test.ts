/**
 * The daemon commands as a user runs them: `agentvisor serve --port 0` as a real process with
 * its own state directory and config (one daemon for the file, shut down in afterAll even
 * when a test fails), and the built CLI talking to it: ls, start, prompt (named sessions, a
 * queue of two), cancel, logs and logs -f, sessions, permissions, doctor, dashboard, restart,
 * stop, shutdown; and exit 6 when no daemon runs.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentsBody, PermissionsBody, SessionsBody } from '../../daemon/api-types.js';
import { createSupervisor } from '../../index.js';
import { cliEnvironment, startCli, stopServe, waitForLine } from '../support/cli-process.js';
import { fixtureSpec, isRunning, scratch } from '../support/real-agents.js';

let files: ReturnType<typeof scratch>;
let env: Record<string, string>;
let serve: ReturnType<typeof startCli> | undefined;
let serveOutput = '';

const stateDir = () => files.path('state');
/** `agentvisor --state-dir <the daemon's> --config <scratch config> ...args`. */
const cli = (...args: string[]) => startCli(['--state-dir', stateDir(), '--config', files.path('agentvisor.config.json'), ...args], { env, cwd: files.dir });
const jsonLines = (text: string) => text.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
const slow = (count: number) => JSON.stringify({ op: 'slow', count, intervalMs: 100 });

beforeAll(async () => {
  files = scratch();
  env = cliEnvironment(files.dir);
  writeFileSync(files.path('agentvisor.config.json'), JSON.stringify({ agents: { fx: fixtureSpec(['--stderr', 'fixture says hello']), locked: fixtureSpec(['--require-auth']) } }));
  serve = startCli(['--state-dir', stateDir(), '--config', files.path('agentvisor.config.json'), 'serve', '--port', '0'], { env, cwd: files.dir, timeout: 0 });
  serve.stdout.on('data', (chunk: Buffer) => (serveOutput += chunk.toString()));
  await waitForLine(serve.stdout, (line) => line.startsWith('dashboard: '), 'the daemon to listen');
});

afterAll(async () => {
  await stopServe(serve); // the daemon closes: its agents are stopped, its files removed
  files.cleanup();
});

describe('agentvisor with a daemon', () => {
  it('serve prints where it listens and the dashboard, and refuses a second daemon; ls lists the presets and the config agents, idle', async () => {
    const info = JSON.parse(readFileSync(files.path('state/daemon.json'), 'utf8')) as { url: string; pid: number };
    const token = readFileSync(files.path('state/daemon.token'), 'utf8').trim();
    expect(serveOutput).toContain(`agentvisor listening on ${info.url} (pid ${info.pid}, state dir ${stateDir()})`);
    expect(serveOutput).toContain(`dashboard: ${info.url}/?token=${token}`);
    const port = new URL(info.url).port;
    const [table, json, dashboard, second, portTaken] = await Promise.all([
      cli('ls'),
      cli('ls', '--format', 'json'),
      cli('dashboard'),
      cli('serve', '--port', '0'),
      startCli(['--state-dir', files.path('other-state'), 'serve', '--port', port], { env, cwd: files.dir }),
    ]);
    expect(second.exitCode).toBe(2);
    expect(second.stderr).toContain(`A daemon (pid ${info.pid}) already serves the state directory ${stateDir()}`);
    expect(portTaken.exitCode).toBe(2);
    expect(portTaken.stderr).toContain(`Cannot listen on 127.0.0.1:${port}`);
    expect(table.exitCode).toBe(0);
    expect(table.stdout.split('\n')[0]).toMatch(/^name +status +state +pid +uptime +restarts +cpu +mem +sessions +mode +model +usage +last error$/);
    expect(table.stdout).toMatch(/^fx +idle +idle +- +- +0 +- +- +0 +- +- +- +-$/m); // no open session: no mode, model or usage
    const { agents } = JSON.parse(json.stdout) as AgentsBody;
    expect(agents.map((row) => row.name).sort()).toEqual(['claude', 'claude-stream-json', 'codex', 'echo', 'fx', 'gemini', 'locked']);
    expect(dashboard.stdout).toBe(`${info.url}/?token=${token}\n`);
  });

  it('start connects an agent; ls shows its pid', async () => {
    const started = await cli('start', 'fx');
    expect(started.exitCode).toBe(0);
    const pid = Number(/^fx: connected \(pid (\d+)\)\n$/.exec(started.stdout)?.[1]);
    expect(isRunning(pid)).toBe(true);
    const { agents } = JSON.parse((await cli('ls', '--format', 'json')).stdout) as AgentsBody;
    expect(agents.find((row) => row.name === 'fx')).toMatchObject({ status: 'connected', pid });
  });

  it('auth logs a parked agent in: a prompt that exited 4 then works', async () => {
    const refused = await cli('prompt', 'locked', 'hi');
    expect(refused.exitCode).toBe(4);
    expect(refused.stderr).toContain('agentvisor auth locked <method>');
    const authenticated = await cli('auth', 'locked', 'fixture-token');
    expect(authenticated.exitCode).toBe(0);
    expect(authenticated.stdout).toMatch(/^locked: connected \(pid \d+\)\n$/);
    const answered = await cli('prompt', 'locked', 'now', 'in');
    expect(answered.exitCode).toBe(0);
    expect(answered.stdout).toBe('now in\n');
  });

  it('prompt -s streams the answer of a named session, in text and in json', async () => {
    const text = await cli('prompt', 'fx', '-s', 'one', 'hello', 'world');
    expect(text).toMatchObject({ exitCode: 0, stdout: 'hello world\n' });
    const json = await cli('prompt', 'fx', '-s', 'one', 'again', '--format', 'json');
    const lines = jsonLines(json.stdout);
    expect(lines.map((line) => line.type)).toEqual(expect.arrayContaining(['session', 'started', 'update', 'done']));
    expect(lines.find((line) => line.type === 'session')).toMatchObject({ name: 'one', opened: 'existing' });
    expect(lines.at(-1)).toMatchObject({ type: 'done', stopReason: 'end_turn', text: 'again' });
  });

  it('prompt reads its text from stdin when none is given (or it is -); an empty stdin is a usage error', async () => {
    const args = ['--state-dir', stateDir(), '--config', files.path('agentvisor.config.json'), 'prompt', 'fx', '-s', 'piped'];
    const piped = await startCli(args, { env, cwd: files.dir, input: 'from a pipe\n' });
    expect(piped).toMatchObject({ exitCode: 0, stdout: 'from a pipe\n' });
    const dash = await startCli([...args, '-'], { env, cwd: files.dir, input: 'dash too' });
    expect(dash).toMatchObject({ exitCode: 0, stdout: 'dash too\n' });
    const empty = await startCli(args, { env, cwd: files.dir, input: '  \n' });
    expect(empty.exitCode).toBe(2);
    expect(empty.stderr).toContain('The prompt is empty: give one as an argument or on stdin');
  });

  it('two prompts on one named session: the second waits behind the first, and both are answered in order', async () => {
    // The first turn holds on a permission request, so the second surely finds it running.
    const hold = JSON.stringify({ op: 'permission', title: 'hold' });
    const first = cli('prompt', 'fx', '-s', 'queue', hold, '--format', 'json');
    const asked = JSON.parse(await waitForLine(first.stdout, (line) => line.includes('"type":"permission"'), 'the first turn to ask')) as { permission: { id: string; sessionId: string } };
    const second = cli('prompt', 'fx', '-s', 'queue', 'second', '--format', 'json');
    const queued = JSON.parse(await waitForLine(second.stdout, (line) => line.includes('"type":"queued"'), 'the second prompt to queue'));
    expect(queued).toEqual({ type: 'queued', sessionId: asked.permission.sessionId, position: 1 });
    expect((await cli('permissions', 'answer', asked.permission.id, 'allow')).exitCode).toBe(0);
    const [firstResult, secondResult] = await Promise.all([first, second]);
    expect(firstResult.exitCode).toBe(0);
    expect(jsonLines(firstResult.stdout).at(-1)).toMatchObject({ type: 'done', text: 'permission:allow' });
    expect(secondResult.exitCode).toBe(0);
    expect(secondResult.stderr).toContain('waiting behind 1 prompt');
    expect(jsonLines(secondResult.stdout).at(-1)).toMatchObject({ type: 'done', text: 'second' });
    const history = jsonLines((await cli('sessions', 'history', asked.permission.sessionId, '--format', 'json')).stdout);
    const turns = history.filter((entry) => entry.kind === 'prompt' || entry.kind === 'prompt_result').map((entry) => (entry.kind === 'prompt' ? JSON.stringify(entry.data) : 'result'));
    expect(turns).toEqual([JSON.stringify({ prompt: [{ type: 'text', text: hold }] }), 'result', JSON.stringify({ prompt: [{ type: 'text', text: 'second' }] }), 'result']);
  });

  it('cancel stops the running turn of a named session', async () => {
    // 30 s of chunks: long enough that the cancel comes first, however loaded the host.
    const prompt = cli('prompt', 'fx', '-s', 'long', slow(300), '--format', 'json');
    await waitForLine(prompt.stdout, (line) => line.includes('"type":"update"'), 'the turn to stream');
    const cancelled = await cli('cancel', 'fx', '-s', 'long');
    expect(cancelled).toMatchObject({ exitCode: 0 });
    expect(cancelled.stdout).toMatch(/^cancelled the running turn of session \S+\n$/);
    const result = await prompt;
    expect(result.exitCode).toBe(0);
    expect(jsonLines(result.stdout).at(-1)).toMatchObject({ type: 'done', stopReason: 'cancelled' });
    expect(jsonLines(result.stdout).filter((line) => line.type === 'update').length).toBeLessThan(300);
    expect((await cli('cancel', 'fx', '-s', 'nobody')).exitCode).toBe(2);
  });

  it("logs shows an agent's stderr; logs -f follows it across a restart until Ctrl-C", async () => {
    const logs = await cli('logs', 'fx');
    expect(logs).toMatchObject({ exitCode: 0, stdout: 'fixture says hello\n' });
    const follow = cli('logs', 'fx', '-f', '--lines', '1');
    await waitForLine(follow.stdout, (line) => line === 'fixture says hello', 'the last line so far');
    const again = waitForLine(follow.stdout, (line) => line === 'fixture says hello', 'the restarted agent to say hello');
    const restarted = await cli('restart', 'fx');
    expect(restarted.stdout).toMatch(/^fx: connected \(pid \d+\)\n$/);
    await again;
    follow.kill('SIGINT');
    expect((await follow).exitCode).toBe(130);
  });

  it('sessions list, show and history', async () => {
    const { sessions } = JSON.parse((await cli('sessions', 'list', '--agent', 'fx', '--format', 'json')).stdout) as SessionsBody;
    const one = sessions.find((row) => row.name === 'one')!;
    expect(one).toMatchObject({ agent: 'fx', name: 'one' });
    const [list, show, history] = await Promise.all([cli('sessions'), cli('sessions', 'show', one.sessionId), cli('sessions', 'history', one.sessionId)]);
    expect(list.stdout).toContain(one.sessionId);
    expect(show.stdout).toMatch(new RegExp(`^session: +${one.sessionId}$`, 'm'));
    expect(show.stdout).toMatch(/^name: +one$/m);
    expect(history.stdout).toBe('> hello world\nhello world\n· end_turn\n> again\nagain\n· end_turn\n');
    expect((await cli('sessions', 'show', 'no-such-session')).exitCode).toBe(2);
  });

  it('a permission request waits in permissions list until answered', async () => {
    const prompt = cli('prompt', 'fx', '-s', 'perm', JSON.stringify({ op: 'permission', title: 'edit it' }));
    const notice = await waitForLine(prompt.stderr, (line) => line.includes('asks permission'), 'the permission notice');
    expect(notice).toContain('edit it');
    const { permissions } = JSON.parse((await cli('permissions', 'list', '--format', 'json')).stdout) as PermissionsBody;
    expect(permissions).toHaveLength(1);
    const [request] = permissions;
    expect(notice).toContain(`agentvisor permissions answer ${request!.id} allow|deny`);
    expect((await cli('permissions')).stdout).toContain('edit it');
    const answered = await cli('permissions', 'answer', request!.id, 'deny');
    expect(answered).toMatchObject({ exitCode: 0, stdout: `${request!.id}: answered reject\n` });
    expect(await prompt).toMatchObject({ exitCode: 0, stdout: 'permission:reject\n' });
    expect((await cli('permissions')).stdout).toBe('no permission requests waiting\n');
    expect((await cli('permissions', 'answer', request!.id, 'allow')).exitCode).toBe(2);
  });

  it("doctor reports the daemon's view", async () => {
    const [text, json] = await Promise.all([cli('doctor'), cli('doctor', '--format', 'json')]);
    expect(text.exitCode).toBe(0);
    expect(text.stdout).toMatch(/^daemon: +running at http:\/\/127\.0\.0\.1:\d+/m);
    expect(text.stdout).toMatch(/^store: +✓ sqlite/m);
    expect(JSON.parse(json.stdout)).toMatchObject({ stateDir: stateDir(), store: { kind: 'sqlite', ok: true }, daemon: { pid: serve!.pid } });
  });

  it('stop stops an agent; shutdown stops the daemon and waits until it is gone', async () => {
    const { agents } = JSON.parse((await cli('ls', '--format', 'json')).stdout) as AgentsBody;
    const pid = agents.find((row) => row.name === 'fx')!.pid!;
    const stopped = await cli('stop', 'fx');
    expect(stopped).toMatchObject({ exitCode: 0, stdout: 'fx: idle\n' });
    expect(isRunning(pid)).toBe(false);
    const shutdown = await cli('shutdown');
    expect(shutdown).toMatchObject({ exitCode: 0, stdout: `daemon stopped (pid ${serve!.pid})\n` });
    expect(isRunning(serve!.pid!)).toBe(false);
    expect((await serve!).exitCode).toBe(0);
    expect(existsSync(files.path('state/daemon.json'))).toBe(false);
    const ls = await cli('ls');
    expect(ls.exitCode).toBe(6);
    expect(ls.stderr).toContain(`no daemon running for state dir ${stateDir()}; start one with \`agentvisor serve\``);
  });
});

describe.concurrent('agentvisor without a daemon', () => {
  it.each([['ls'], ['start', 'echo'], ['prompt', 'echo', 'hi'], ['permissions'], ['shutdown']])('%s exits 6', async (...args) => {
    const result = await startCli(['--state-dir', files.path('empty-state'), ...args], { env, cwd: files.dir });
    expect(result.exitCode).toBe(6);
    expect(result.stderr).toContain('no daemon running for state dir');
  });

  it('serve stops on SIGTERM: its agents stopped, its files removed, exit 0', async () => {
    const args = ['--state-dir', files.path('signal-state'), '--config', files.path('agentvisor.config.json')];
    const daemon = startCli([...args, 'serve', '--port', '0'], { env, cwd: files.dir, timeout: 0 });
    try {
      await waitForLine(daemon.stdout, (line) => line.startsWith('dashboard: '), 'the daemon to listen');
      const started = await startCli([...args, 'start', 'fx'], { env, cwd: files.dir });
      const pid = Number(/\(pid (\d+)\)/.exec(started.stdout)?.[1]);
      expect(isRunning(pid)).toBe(true);
      daemon.kill('SIGTERM');
      expect((await daemon).exitCode).toBe(0);
      expect(isRunning(pid)).toBe(false);
      expect(existsSync(files.path('signal-state/daemon.json'))).toBe(false);
      expect(existsSync(files.path('signal-state/daemon.token'))).toBe(false);
    } finally {
      if (daemon.exitCode === null) daemon.kill('SIGKILL');
    }
  });

  it('doctor makes its own checks: agents, and the containment and store a supervisor here gets (no state made)', async () => {
    const result = await startCli(['--state-dir', files.path('empty-state'), 'doctor'], { env, cwd: files.dir });
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toMatch(/^daemon: +not running/m);
    expect(result.stdout).toMatch(/^ {2}✓ echo /m);
    expect(result.stdout).toMatch(/^containment: (pid-namespace|cgroup|proc-tracking|process groups only)/m);
    expect(result.stdout).toMatch(/^store: +✓ sqlite \(none yet: made on first use\)/m);
    expect(existsSync(files.path('empty-state')), 'doctor made no state directory').toBe(false);

    const used = files.path('used-state');
    const supervisor = createSupervisor({ stateDir: used, agents: {}, handleSignals: false, sweepOnStart: false });
    await supervisor.shutdown();
    const json = await startCli(['--state-dir', used, 'doctor', '--format', 'json'], { env, cwd: files.dir });
    const report = JSON.parse(json.stdout) as { daemon: unknown; containment: { kind: string | null }; store: { kind: string; ok: boolean; stats: { sessions: number } | null } };
    expect(report.daemon).toBeNull();
    expect(report.containment.kind).toBe(supervisor.containment.kind);
    expect(report.store).toMatchObject({ kind: 'sqlite', ok: true, stats: { sessions: 0 } });
  });
});
