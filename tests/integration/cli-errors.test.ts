/**
 * Every command tells a failure in one form (docs/cli.md, "Errors"): `agentvisor: <message>`,
 * a line per hint, then `kind: <kind> (exit <code>)`, with the exit code of cli/exit-codes.ts
 * for the kind; the same failure reads the same whether the library raised it in the CLI's
 * process (`run`) or the daemon relayed it in its error body (`start`, `prompt`, ...).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliEnvironment, startCli, stopServe, waitForLine } from '../support/cli-process.js';
import { scratch } from '../support/real-agents.js';

let files: ReturnType<typeof scratch>;
let env: Record<string, string>;
let serve: ReturnType<typeof startCli> | undefined;

beforeAll(async () => {
  files = scratch();
  env = cliEnvironment(files.dir);
  serve = startCli(['--state-dir', files.path('served'), 'serve', '--port', '0'], { env, cwd: files.dir, timeout: 0 });
  await waitForLine(serve.stdout, (line) => line.startsWith('dashboard: '), 'the daemon to listen');
});

afterAll(async () => {
  await stopServe(serve);
  files.cleanup();
});

/** The first line, the last line and the exit code of `agentvisor ...args`. */
async function failure(args: string[]) {
  const result = await startCli(args, { env, cwd: files.dir, timeout: 30_000 });
  const lines = result.stderr.trimEnd().split('\n');
  return { first: lines[0], last: lines.at(-1), exitCode: result.exitCode, stdout: result.stdout };
}

describe('one form for every command', () => {
  it('an unknown agent: in the CLI (run) or relayed by the daemon, the same line, kind and exit code', async () => {
    const commands = [
      ['run', 'nope', 'hi'],
      ['start', 'nope'],
      ['stop', 'nope'],
      ['restart', 'nope'],
      ['describe', 'nope'],
      ['logs', 'nope'],
      ['prompt', 'nope', 'hi'],
      ['auth', 'nope', 'some-method'],
    ];
    const results = await Promise.all(commands.map((command) => failure(['--state-dir', files.path('served'), ...command])));
    for (const [index, result] of results.entries()) {
      expect({ command: commands[index]![0], ...result, stdout: undefined }).toEqual({
        command: commands[index]![0],
        first: 'agentvisor: No agent named "nope" is registered',
        last: 'kind: unknown_agent (exit 2)',
        exitCode: 2,
        stdout: undefined,
      });
    }
  }, 60_000);

  it('no daemon, autostart off: every command that needs one says so alike, exit 6', async () => {
    const none = files.path('no-daemon-here');
    const commands = [['ls'], ['start', 'echo'], ['stop', 'echo'], ['restart', 'echo'], ['describe', 'echo'], ['logs'], ['sessions'], ['permissions'], ['prompt', 'echo', 'hi'], ['auth', 'echo', 'm'], ['monit', '--count', '1'], ['dashboard']];
    const results = await Promise.all(commands.map((command) => failure(['--state-dir', none, ...command])));
    for (const [index, result] of results.entries()) {
      expect({ command: commands[index]![0], first: result.first, last: result.last, exitCode: result.exitCode }).toEqual({
        command: commands[index]![0],
        first: `agentvisor: no daemon running for state dir ${none}; start one with \`agentvisor serve\``,
        last: 'kind: no_daemon (exit 6)',
        exitCode: 6,
      });
    }
  }, 60_000);

  it("a usage error, commander's or the CLI's own, and invalid options: the same form, exit 2", async () => {
    const cases: Array<[string[], RegExp, string]> = [
      [['ls', '--format', 'xml'], /^agentvisor: option '--format <format>' argument 'xml' is invalid/, 'kind: usage (exit 2)'],
      [['--state-dir', files.path('served'), 'start'], /^agentvisor: missing required argument 'agent'/, 'kind: usage (exit 2)'],
      [['serve', '--port', '99999'], /^agentvisor: .*--port must be a whole number from 0 to 65535/, 'kind: usage (exit 2)'],
      [['run', 'echo', '--cwd', files.path('nope'), 'hi'], /^agentvisor: Option --cwd: .* does not exist$/, 'kind: invalid_options (exit 2)'],
      [['--state-dir', files.path('served'), 'prompt', 'echo', '--cwd', files.path('nope'), 'hi'], /^agentvisor: Option --cwd: .* does not exist$/, 'kind: invalid_options (exit 2)'],
      [['--state-dir', files.path('served'), 'sessions', 'show', 'nope'], /^agentvisor: No session has the id "nope"$/, 'kind: session_not_found (exit 2)'],
    ];
    for (const [args, first, last] of cases) {
      const result = await failure(args);
      expect(result.first, args.join(' ')).toMatch(first);
      expect(result.last, args.join(' ')).toBe(last);
      expect(result.exitCode, args.join(' ')).toBe(2);
    }
  }, 60_000);
});
