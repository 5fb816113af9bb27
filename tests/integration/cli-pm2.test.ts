/**
 * pm2's habits, as a user meets them with the real daemon and the built CLI: `logs` without a
 * name (every agent, each line prefixed with its name, followed at once), `ls` with the CPU and
 * memory of each agent's whole containment, and `describe NAME` (one agent in one view).
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentDescribeBody, AgentsBody } from '../../daemon/api-types.js';
import { cliEnvironment, startCli, stopServe, waitForLine } from '../support/cli-process.js';
import { fixtureAgentScript, fixtureSpec, isRunning, scratch } from '../support/real-agents.js';

let files: ReturnType<typeof scratch>;
let env: Record<string, string>;
let serve: ReturnType<typeof startCli> | undefined;

const stateDir = () => files.path('state');
const cli = (...args: string[]) => startCli(['--state-dir', stateDir(), '--config', files.path('agentvisor.config.json'), ...args], { env, cwd: files.dir });

/**
 * An agent whose process tree burns CPU and holds memory: a shell starts a busy node child
 * (~64 MiB kept, one core spun; it ends itself after 2 minutes), then becomes the fixture.
 */
const burner = `const keep = Buffer.alloc(64 * 1024 * 1024, 1); const end = Date.now() + 120000; while (Date.now() < end) keep[0]++;`;
const busySpec = {
  command: '/bin/sh',
  args: ['-c', `"${process.execPath}" -e '${burner}' & exec "${process.execPath}" "${fixtureAgentScript}" --stderr 'busy says hi'`],
  displayName: 'Busy',
};

beforeAll(async () => {
  files = scratch();
  env = cliEnvironment(files.dir);
  const agents = {
    fx: fixtureSpec(['--stderr', 'fx says hello']),
    busy: busySpec,
    envy: fixtureSpec([], { env: { SECRET_TOKEN: 'hunter2-not-for-your-eyes' }, handshakeTimeoutMs: 9000 }),
    stubborn: fixtureSpec(['--ignore-sigterm']),
    once: fixtureSpec(['--exit-after', '1500', '--exit-code', '0'], { restart: { when: 'on-failure' } }),
  };
  writeFileSync(files.path('agentvisor.config.json'), JSON.stringify({ agents }));
  serve = startCli(['--state-dir', stateDir(), '--config', files.path('agentvisor.config.json'), 'serve', '--port', '0'], { env, cwd: files.dir, timeout: 0 });
  await waitForLine(serve.stdout, (line) => line.startsWith('dashboard: '), 'the daemon to listen');
  for (const agent of ['fx', 'busy']) expect((await cli('start', agent)).exitCode).toBe(0);
});

afterAll(async () => {
  await stopServe(serve);
  files.cleanup();
});

describe('pm2 habits', () => {
  it('logs without a name shows every agent, each line prefixed with its name, in time order; json lines carry the agent', async () => {
    const text = await cli('logs');
    expect(text.exitCode).toBe(0);
    // The names are padded to the longest registered name (claude-stream-json).
    const lines = text.stdout.trimEnd().split('\n');
    expect(lines).toEqual(expect.arrayContaining([expect.stringMatching(/^fx +\| fx says hello$/), expect.stringMatching(/^busy +\| busy says hi$/)]));
    expect(lines.indexOf(lines.find((line) => line.startsWith('fx '))!)).toBeLessThan(lines.indexOf(lines.find((line) => line.startsWith('busy '))!)); // fx started first
    const json = (await cli('logs', '--format', 'json')).stdout.trim().split('\n').map((line) => JSON.parse(line) as { agent: string; line: string });
    expect(json).toEqual(expect.arrayContaining([expect.objectContaining({ agent: 'fx', line: 'fx says hello' }), expect.objectContaining({ agent: 'busy', line: 'busy says hi' })]));
    // With a name, as before: no prefix.
    expect(await cli('logs', 'fx')).toMatchObject({ exitCode: 0, stdout: 'fx says hello\n' });
  });

  it('logs -f without a name follows every agent at once until Ctrl-C', async () => {
    // It follows through two restarts (one of an agent that burns a core): more than the 15 s a plain command gets, on a loaded host.
    const follow = startCli(['--state-dir', stateDir(), '--config', files.path('agentvisor.config.json'), 'logs', '-f', '--lines', '1'], { env, cwd: files.dir, timeout: 60_000 });
    // The last line of each agent first: once both are shown, the cursor the streams follow from is taken.
    const shown = { fx: 0, busy: 0 };
    await waitForLine(follow.stdout, (line) => {
      if (/^fx +\| fx says hello$/.test(line)) shown.fx += 1;
      if (/^busy +\| busy says hi$/.test(line)) shown.busy += 1;
      return shown.fx === 1 && shown.busy === 1;
    }, 'the last line of each agent');
    // New lines of any agent are shown, with their names.
    const fxAgain = waitForLine(follow.stdout, (line) => /^fx +\| fx says hello$/.test(line), 'fx restarted');
    const busyAgain = waitForLine(follow.stdout, (line) => /^busy +\| busy says hi$/.test(line), 'busy restarted');
    expect((await cli('restart', 'fx')).exitCode).toBe(0);
    await fxAgain;
    expect((await cli('restart', 'busy')).exitCode).toBe(0);
    await busyAgain;
    follow.kill('SIGINT');
    const ended = await follow;
    expect(ended.exitCode).toBe(130);
    expect(ended.stdout.trimEnd().split('\n')).toHaveLength(4); // the last line of each, and each one's new line
  });

  it("ls shows each agent's CPU and memory (its whole process tree); --format json carries the numbers", async () => {
    const table = await cli('ls');
    expect(table.exitCode).toBe(0);
    expect(table.stdout.split('\n')[0]).toMatch(/^name +status +state +pid +uptime +restarts +cpu +mem +sessions +mode +model +usage +last error$/);
    expect(table.stdout).toMatch(/^codex +idle +idle +- +- +0 +- +- +0 +- +- +- +-$/m); // no open session: no mode, model or usage
    const busyLine = table.stdout.split('\n').find((line) => line.startsWith('busy '))!;
    const [, cpu, mem] = /connected\.\w+ +\d+ +\S+ +\d+ +(\d+\.\d)% +([\d.]+ MiB) /.exec(busyLine) ?? [];
    expect(Number(cpu)).toBeGreaterThan(5); // a core spun by the agent's child, not the agent itself (shared with whatever else this host runs)
    expect(parseFloat(mem!)).toBeGreaterThan(64);
    const { agents } = JSON.parse((await cli('ls', '--format', 'json')).stdout) as AgentsBody;
    const busy = agents.find((row) => row.name === 'busy')!;
    expect(busy.usage!.cpuPercent).toBeGreaterThan(5);
    expect(busy.usage!.memoryBytes).toBeGreaterThan(64 * 1024 * 1024);
    expect(busy.usage!.processes).toBeGreaterThanOrEqual(2);
    const fx = agents.find((row) => row.name === 'fx')!;
    expect(fx.usage!.memoryBytes).toBeGreaterThan(10 * 1024 * 1024);
    expect(fx.usage!.cpuPercent).toBeLessThan(busy.usage!.cpuPercent);
    expect(agents.find((row) => row.name === 'codex')!.usage).toBeNull();
  });

  it('describe shows one agent in one view: status, process, usage, spec without env values, sessions; --format json too', async () => {
    expect((await cli('prompt', 'envy', '-s', 'notes', 'hello')).exitCode).toBe(0);
    const text = await cli('describe', 'envy');
    expect(text.exitCode).toBe(0);
    expect(text.stdout).toMatch(/^envy \(Fixture\)$/m);
    expect(text.stdout).toMatch(/^ {2}status +connected for \d+(\.\d+)?\s?\w+$/m);
    expect(text.stdout).toMatch(/^ {2}state +connected\.\w+$/m);
    expect(text.stdout).toMatch(/^ {2}pid +\d+$/m);
    expect(text.stdout).toMatch(/^ {2}memory +[\d.]+ MiB \(\d+ process(es)?\)$/m);
    expect(text.stdout).toMatch(/^ {2}cpu +\d+\.\d%$/m);
    expect(text.stdout).toMatch(/^ {2}last error +-$/m);
    expect(text.stdout).toMatch(/^ {2}env +SECRET_TOKEN \(values hidden\)$/m);
    expect(text.stdout).toMatch(/^ {2}timeouts +handshake 9000 ms$/m);
    expect(text.stdout).not.toContain('hunter2');
    expect(text.stdout).toMatch(/^sessions \(1 open, 1 in all\)$/m);
    expect(text.stdout).toMatch(/notes/);

    const json = await cli('describe', 'envy', '--format', 'json');
    expect(json.stdout).not.toContain('hunter2');
    const body = JSON.parse(json.stdout) as AgentDescribeBody;
    expect(body.agent).toMatchObject({ name: 'envy', status: 'connected', restarts: 0, sessions: 1 });
    expect(body.agent.usage!.memoryBytes).toBeGreaterThan(0);
    expect(body.spec).toMatchObject({ command: process.execPath, envNames: ['SECRET_TOKEN'], protocol: 'acp', runtime: 'local', handshakeTimeoutMs: 9000 });
    expect(body.sessions).toEqual([expect.objectContaining({ agent: 'envy', name: 'notes', live: true })]);
    expect(body.workspaces).toEqual([]);

    const idle = JSON.parse((await cli('describe', 'codex', '--format', 'json')).stdout) as AgentDescribeBody;
    expect(idle.agent).toMatchObject({ status: 'idle', pid: null, usage: null });
    expect(idle.sessions).toEqual([]);
  });

  it('stop --force kills an agent that ignores SIGTERM without the ladder; restart --reason; an exit under on-failure is shown as exited', async () => {
    expect((await cli('start', 'stubborn')).exitCode).toBe(0);
    const started = Date.now();
    const killed = await cli('stop', 'stubborn', '--force', '--format', 'json');
    expect(killed.exitCode).toBe(0);
    // The graceful ladder would wait shutdownTimeoutMs + killTimeoutMs (7 s) for this agent.
    expect(Date.now() - started).toBeLessThan(6_000);
    expect(JSON.parse(killed.stdout)).toMatchObject({ status: 'idle', lastExit: { signal: 'SIGKILL' } });

    expect((await cli('restart', 'fx', '--reason', 'rotated its key')).exitCode).toBe(0);
    const described = await cli('describe', 'fx');
    expect(described.stdout).toMatch(/^ {2}restart policy +always$/m);
    expect(described.stdout).toMatch(/^ {2}last exit +code 0 at \d{4}-/m);
    expect(described.stdout).toMatch(/^ {2}status +connected for \d/m);

    expect((await cli('start', 'once')).exitCode).toBe(0);
    const deadline = Date.now() + 15_000;
    let row: { status?: string; lastExit?: unknown } = {};
    while (Date.now() < deadline && row.status !== 'exited') {
      const list = JSON.parse((await cli('ls', '--format', 'json')).stdout) as AgentsBody;
      row = list.agents.find((agent) => agent.name === 'once') ?? {};
    }
    expect(row).toMatchObject({ status: 'exited', lastExit: { code: 0, signal: null } });
    expect((await cli('describe', 'once')).stdout).toMatch(/^ {2}restart policy +on-failure$/m);
    // Eight CLI calls and a poll of up to 15 s: 13 s alone, 16-20 s under the whole suite's load.
  }, 45_000);

  it('describe of an unknown agent is the usual unknown_agent error, exit 2', async () => {
    const unknown = await cli('describe', 'nobody');
    expect(unknown.exitCode).toBe(2);
    expect(unknown.stderr).toContain('nobody');
    expect(unknown.stdout).toBe('');
  });
});

describe('monit', () => {
  it('redraws the agents with the summary line every interval; piped, frames follow one another; --count stops it; top is its alias', async () => {
    const frames = await startCli(['--state-dir', stateDir(), '--config', files.path('agentvisor.config.json'), 'monit', '--interval', '200', '--count', '2'], { env, cwd: files.dir, timeout: 30_000 });
    expect(frames.exitCode, frames.stderr).toBe(0);
    expect(frames.stdout).not.toContain('\x1b[2J'); // not a terminal: nothing cleared
    const headers = frames.stdout.split('\n').filter((line) => line.startsWith('agentvisor monit'));
    expect(headers).toHaveLength(2);
    expect(headers[0]).toMatch(/ \d+\/\d+ agents live · \d+ sessions · \d+ restarts · CPU [\d.]+% · [\d.]+ MiB$/);
    expect(frames.stdout.match(/^name +status +state +pid +uptime +restarts +cpu +mem +sessions +mode +model +usage +last error$/gm)).toHaveLength(2);
    expect(frames.stdout).toMatch(/^busy +connected/m);
    const top = await startCli(['--state-dir', stateDir(), '--config', files.path('agentvisor.config.json'), 'top', '--count', '1'], { env, cwd: files.dir, timeout: 30_000 });
    expect(top.stdout.split('\n').filter((line) => line.startsWith('agentvisor monit'))).toHaveLength(1);
  }, 60_000);
});

describe('a daemon on first use', () => {
  it('a command that needs the daemon starts one in the background (its state dir, its config), then goes on; stop and shutdown never start one; AGENTVISOR_NO_AUTOSTART=1 or --no-autostart turn it off', async () => {
    const own = files.path('auto-state');
    const args = (...rest: string[]) => ['--state-dir', own, '--config', files.path('agentvisor.config.json'), ...rest];
    const autostarting = { ...env, AGENTVISOR_NO_AUTOSTART: '' };
    const auto = (...rest: string[]) => startCli(args(...rest), { env: autostarting, cwd: files.dir, timeout: 45_000 });
    let pid: number | undefined;
    try {
      const off = await startCli(args('ls'), { env, cwd: files.dir });
      expect(off.exitCode, 'AGENTVISOR_NO_AUTOSTART=1').toBe(6);
      const flagged = await startCli(args('--no-autostart', 'ls'), { env: autostarting, cwd: files.dir });
      expect(flagged.exitCode, '--no-autostart').toBe(6);
      const stop = await auto('stop', 'fx');
      expect(stop.exitCode, 'a stop with no daemon has nothing to stop').toBe(6);
      expect(existsSync(join(own, 'daemon.json')), 'nor starts one').toBe(false);

      const first = await auto('ls', '--format', 'json');
      expect(first.exitCode, first.stderr).toBe(0);
      expect(first.stderr).toMatch(/started a daemon for .*auto-state \(pid \d+;/);
      expect((JSON.parse(first.stdout) as AgentsBody).agents.map((agent) => agent.name), 'the config\'s agents: the daemon got --config').toEqual(expect.arrayContaining(['busy', 'envy', 'fx']));
      pid = (JSON.parse(readFileSync(join(own, 'daemon.json'), 'utf8')) as { pid: number }).pid;
      expect(isRunning(pid)).toBe(true);

      const second = await auto('prompt', 'fx', 'hello again');
      expect(second).toMatchObject({ exitCode: 0, stdout: 'hello again\n' });
      expect(second.stderr, 'the same daemon: none started again').not.toContain('started a daemon');
      expect((JSON.parse(readFileSync(join(own, 'daemon.json'), 'utf8')) as { pid: number }).pid).toBe(pid);

      const shutdown = await auto('shutdown');
      expect(shutdown.exitCode, shutdown.stderr).toBe(0);
      expect(isRunning(pid)).toBe(false);
      const after = await auto('shutdown');
      expect(after.exitCode, 'shutdown with no daemon starts none').toBe(6);
    } finally {
      if (pid !== undefined && isRunning(pid)) process.kill(pid, 'SIGKILL');
    }
  }, 90_000); // nine CLI runs and a daemon's start: ~8 s alone, far more under the whole suite's load
});

describe('startup', () => {
  it('prints a systemd user unit whose ExecStart runs the daemon for this state dir and config; --install writes it; the command it runs starts that daemon', async () => {
    const own = files.path('startup-state');
    const args = ['--state-dir', own, '--config', files.path('agentvisor.config.json')];
    const printed = await startCli([...args, 'startup'], { env, cwd: files.dir });
    expect(printed.exitCode, printed.stderr).toBe(0);
    const unit = printed.stdout;
    expect(unit).toMatch(/^\[Service\]$/m);
    expect(unit).toMatch(/^Restart=on-failure$/m);
    expect(unit).toMatch(/^WantedBy=default\.target$/m);
    const execStart = /^ExecStart=(.*)$/m.exec(unit)![1]!;
    const words = execStart.split(' ');
    expect(words[0]).toBe(process.execPath);
    expect(words.slice(2)).toEqual([...args, 'serve']);

    const installed = await startCli([...args, 'startup', '--install'], { env, cwd: files.dir });
    expect(installed.exitCode, installed.stderr).toBe(0);
    const file = join(env.XDG_CONFIG_HOME!, 'systemd', 'user', 'agentvisor.service');
    expect(readFileSync(file, 'utf8')).toBe(unit);
    expect(installed.stdout).toContain('systemctl --user enable --now agentvisor');

    // What systemd would run: the daemon comes up for that state directory; shutdown ends it.
    const daemon = execa(words[0]!, words.slice(1), { env: { ...env, AGENTVISOR_NO_AUTOSTART: '1' }, reject: false });
    try {
      await waitForLine(daemon.stdout!, (line) => line.startsWith('dashboard: '), 'the unit\'s daemon to listen');
      expect(existsSync(join(own, 'daemon.json'))).toBe(true);
      expect((await startCli([...args, 'shutdown'], { env, cwd: files.dir })).exitCode).toBe(0);
      expect((await daemon).exitCode).toBe(0);
    } finally {
      daemon.kill('SIGKILL');
    }
  }, 60_000);
});
