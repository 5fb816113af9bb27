/**
 * pm2's habits, as a user meets them with the real daemon and the built CLI: `logs` without a
 * name (every agent, each line prefixed with its name, followed at once), `ls` with the CPU and
 * memory of each agent's whole containment, and `describe NAME` (one agent in one view).
 */
import { writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentDescribeBody, AgentsBody } from '../../daemon/api-types.js';
import { cliEnvironment, startCli, stopServe, waitForLine } from '../support/cli-process.js';
import { fixtureAgentScript, fixtureSpec, scratch } from '../support/real-agents.js';

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
    const follow = cli('logs', '-f', '--lines', '1');
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
    expect(table.stdout.split('\n')[0]).toMatch(/^name +status +state +pid +uptime +restarts +cpu +mem +sessions +last error$/);
    expect(table.stdout).toMatch(/^codex +idle +idle +- +- +0 +- +- +0 +-$/m);
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
    expect(text.stdout).toMatch(/^ {2}status +connected$/m);
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

  it('describe of an unknown agent is the usual unknown_agent error, exit 2', async () => {
    const unknown = await cli('describe', 'nobody');
    expect(unknown.exitCode).toBe(2);
    expect(unknown.stderr).toContain('nobody');
    expect(unknown.stdout).toBe('');
  });
});
