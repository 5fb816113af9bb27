/**
 * `agentvisor run` as a user runs it: the built CLI in a real process, on the bundled echo
 * agent and the fixture agent (tests/fixtures/README.md), with a config file and a state
 * directory of its own. What it prints in each format, the exit code of each failure, the
 * permission flags, and Ctrl-C during a turn (130, and no agent process left behind).
 */
import { writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExitCode } from '../../cli/exit-codes.js';
import { cliEnvironment, startCli, waitForLine } from '../support/cli-process.js';
import { eventually, fixtureSpec, isRunning, scratch } from '../support/real-agents.js';

let files: ReturnType<typeof scratch>;
let env: Record<string, string>;

/** `agentvisor --state-dir <scratch> --config <scratch config> ...args`. */
const run = (...args: string[]) => startCli(['--state-dir', files.path('state-dir'), '--config', files.path('agentvisor.config.json'), ...args], { env, cwd: files.dir });
const permission = JSON.stringify({ op: 'permission', title: 'x' });

beforeAll(() => {
  files = scratch();
  env = cliEnvironment(files.dir);
  const config = {
    agents: {
      fixture: fixtureSpec(),
      tracked: fixtureSpec(['--pid-file', files.path('pids.txt')]),
      locked: fixtureSpec(['--require-auth']),
      refusing: fixtureSpec(['--fail-initialize']),
      ghost: { command: 'agentvisor-test-no-such-agent', displayName: 'Ghost' },
    },
  };
  writeFileSync(files.path('agentvisor.config.json'), JSON.stringify(config));
});

afterAll(() => files.cleanup());

describe.concurrent('agentvisor run', () => {
  it('prints the answer of the echo preset and exits 0', async () => {
    const result = await run('run', 'echo', 'hello world');
    expect(result.stderr).toBe('');
    expect(result.stdout).toBe('hello world\n');
    expect(result.exitCode).toBe(0);
  });

  it('--format json writes one JSON object per line, ending with done', async () => {
    const result = await run('run', 'echo', 'hello world', '--format', 'json');
    expect(result.exitCode).toBe(0);
    const lines = result.stdout.trim().split('\n').map((line) => JSON.parse(line) as { type: string; [key: string]: unknown });
    expect(lines[0]).toMatchObject({ type: 'session', agent: 'echo' });
    expect(lines[1]).toMatchObject({ type: 'started', sessionId: lines[0]!.sessionId });
    const updates = lines.filter((line) => line.type === 'update');
    expect(updates.map((line) => (line.update as { content: { text: string } }).content.text).join('')).toBe('hello world');
    expect(lines.at(-1)).toEqual({ type: 'done', sessionId: lines[0]!.sessionId, stopReason: 'end_turn', text: 'hello world' });
  });

  it('--format quiet prints only the final answer', async () => {
    const result = await run('run', 'echo', 'hello', 'quiet', 'world', '--format', 'quiet');
    expect(result).toMatchObject({ exitCode: 0, stdout: 'hello quiet world\n', stderr: '' });
  });

  it('tool calls and thoughts are one-liners on stderr; the answer alone is on stdout', async () => {
    const result = await run('run', 'fixture', JSON.stringify({ op: 'updates' }));
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toBe('updates:done\n');
    expect(result.stderr).toContain('· thinking: thinking');
    expect(result.stderr).toMatch(/· tool: .* pending/);
    expect(result.stderr).toMatch(/· tool: .* completed/);
  });

  it('an agent neither preset nor configured is a usage error (2)', async () => {
    const result = await run('run', 'nobody', 'hi');
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toContain('No agent named "nobody"');
    expect(result.stderr).toContain('fixture'); // the known agents are listed
  });

  it('a configured command that is not installed exits 3', async () => {
    const result = await run('run', 'ghost', 'hi');
    expect(result.exitCode).toBe(3);
    expect(result.stderr).toContain("Could not start Ghost. Check that it's installed.");
    expect(result.stderr).toContain('agentvisor-test-no-such-agent');
  });

  it('an agent that wants a login exits 4', async () => {
    const result = await run('run', 'locked', 'hi');
    expect(result.exitCode).toBe(4);
    expect(result.stderr).toContain('requires authentication');
    expect(result.stderr).toContain('fixture-token (Fixture token)');
    expect(result.stderr).toContain('agentvisor run --auth <method>');
  });

  it('--auth logs the agent in with one of its methods before the prompt', async () => {
    const result = await run('run', 'locked', '--auth', 'fixture-token', 'let me in');
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toBe('let me in\n');
    const refused = await run('run', 'locked', '--auth', 'wrong-method', 'hi');
    expect(refused.exitCode).toBe(4);
    // Two whole runs (each a CLI, an agent, a login): 2.4 s alone, 8-10 s under the whole suite's load.
  }, 40_000);

  it('a failed handshake exits 5', async () => {
    const result = await run('run', 'refusing', 'hi');
    expect(result.exitCode).toBe(5);
    expect(result.stderr).toContain('Could not connect to Fixture');
  });

  it('--approve-all allows a permission request', async () => {
    const result = await run('run', 'fixture', permission, '--approve-all');
    expect(result).toMatchObject({ exitCode: 0, stdout: 'permission:allow\n' });
  });

  it('--deny-all denies it', async () => {
    const result = await run('run', 'fixture', permission, '--deny-all');
    expect(result).toMatchObject({ exitCode: 0, stdout: 'permission:reject\n', stderr: '' });
  });

  it('neither flag and no terminal: denied, and stderr says --approve-all would allow it', async () => {
    const result = await run('run', 'fixture', permission);
    expect(result).toMatchObject({ exitCode: 0, stdout: 'permission:reject\n' });
    expect(result.stderr).toContain('denied permission for "x"');
    expect(result.stderr).toContain('--approve-all would allow it');
  });

  it('--approve-all with --deny-all is a usage error (2)', async () => {
    const result = await run('run', 'fixture', 'hi', '--approve-all', '--deny-all');
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toContain('cannot be used with');
  });

  it('SIGINT during a turn cancels it, exits 130 and leaves no agent process', async () => {
    const cli = run('run', 'tracked', JSON.stringify({ op: 'hang' }), '--format', 'json');
    await waitForLine(cli.stdout, (line) => line.includes('"type":"started"'), 'the turn to start');
    const [pid] = files.pidLines()[0] ?? [];
    expect(pid).toBeGreaterThan(0);
    expect(isRunning(pid!)).toBe(true);
    cli.kill('SIGINT');
    const result = await cli;
    expect(result.exitCode).toBe(130);
    expect(result.stderr).toContain('Interrupted');
    expect(JSON.parse(result.stdout.trim().split('\n').at(-1)!)).toMatchObject({ type: 'done', stopReason: 'cancelled' });
    // The CLI shut its supervisor down before exiting; a zombie not yet reaped by init counts as gone.
    await eventually(() => !isRunning(pid!), `agent ${pid} to be gone`, 2_000);
  });
});

describe.concurrent('--help', () => {
  it('ends with every exit code the CLI uses, each with its meaning', async () => {
    const result = await startCli(['--help'], { env, cwd: files.dir });
    expect(result.exitCode).toBe(0);
    const listed = [...result.stdout.split('Exit codes')[1]!.matchAll(/^\s+(\d+)\s+\S/gm)].map((match) => Number(match[1]));
    expect(listed).toEqual(Object.values(ExitCode));
  });
});

describe.concurrent('bad numbers on the command line', () => {
  it('serve --port 99999 is a usage error (exit 2) naming the range, before anything starts', async () => {
    const result = await startCli(['--state-dir', files.path('state-dir'), 'serve', '--port', '99999'], { env, cwd: files.dir });
    expect({ exitCode: result.exitCode, stdout: result.stdout }).toEqual({ exitCode: 2, stdout: '' });
    expect(result.stderr).toContain('--port must be a whole number from 0 to 65535 (got "99999")');
  });
});

describe.concurrent('agentvisor run with a bad config', () => {
  it('names the file and the field, and exits 2', async () => {
    const bad = files.path('bad.config.json');
    writeFileSync(bad, JSON.stringify({ agents: { mine: { preset: 'cladue' } }, maxAgents: 0 }));
    const result = await startCli(['--state-dir', files.path('state-dir'), 'run', 'mine', 'hi'], { env: { ...env, AGENTVISOR_CONFIG: bad }, cwd: files.dir });
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toContain(`Invalid config file ${bad}`);
    expect(result.stderr).toContain('agents.mine.preset: must be one of "claude"');
    expect(result.stderr).toContain('maxAgents');
  });

  it('a spec the library refuses is a usage error naming the field', async () => {
    const bad = files.path('bad-spec.config.json');
    writeFileSync(bad, JSON.stringify({ agents: { mine: { command: 'node', args: [42] } } }));
    const result = await startCli(['--state-dir', files.path('state-dir'), '--config', bad, 'run', 'mine', 'hi'], { env, cwd: files.dir });
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toContain(`Invalid config file ${bad}`);
    expect(result.stderr).toContain('agents.mine.args.0');
  });
});
