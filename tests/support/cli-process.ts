/**
 * Helpers for the CLI's integration tests: run the BUILT `agentvisor` (`node
 * dist/cli/main.js`) as a real process with an environment of its own — HOME, the XDG
 * folders and the state directory in a scratch folder, so a test never reads ~/.config or
 * writes ~/.local — and wait for lines it prints.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { execa, type ResultPromise } from 'execa';

export const cliMain = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));

if (!existsSync(cliMain)) throw new Error(`${cliMain} is missing: run npm run build (npm test does it first)`);

/**
 * An environment with nothing of the user's: HOME, XDG_CONFIG_HOME and XDG_STATE_HOME under
 * `dir`, no colour, and no daemon started on first use (a test that wants one clears
 * AGENTVISOR_NO_AUTOSTART and shuts it down).
 */
export function cliEnvironment(dir: string, extra: Record<string, string> = {}): Record<string, string> {
  for (const folder of ['home', 'config', 'state']) mkdirSync(join(dir, folder), { recursive: true });
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: join(dir, 'home'),
    XDG_CONFIG_HOME: join(dir, 'config'),
    XDG_STATE_HOME: join(dir, 'state'),
    NO_COLOR: '1',
    AGENTVISOR_NO_AUTOSTART: '1',
    ...extra,
  };
}

/** Options of one CLI run. */
export interface CliRunOptions {
  env: Record<string, string>;
  cwd?: string;
  /** A hung CLI fails its test instead of timing the whole file out. */
  timeout?: number;
  /** What the CLI reads on stdin (a pipe); none: stdin is closed at once. */
  input?: string;
}

/** Starts `agentvisor ...args`; the promise resolves with its result (never rejects on a non-zero exit). */
export function startCli(args: readonly string[], options: CliRunOptions): ResultPromise<{ reject: false; stdin: 'ignore'; extendEnv: false; stripFinalNewline: false }> {
  // The type says stdin 'ignore' either way: no caller writes to it (a given input is written by execa).
  return execa(process.execPath, [cliMain, ...args], {
    env: options.env,
    extendEnv: false,
    cwd: options.cwd,
    reject: false,
    ...(options.input !== undefined ? { input: options.input } : { stdin: 'ignore' as const }),
    stripFinalNewline: false, // what the CLI prints, exactly
    timeout: options.timeout ?? 15_000,
  }) as unknown as ResultPromise<{ reject: false; stdin: 'ignore'; extendEnv: false; stripFinalNewline: false }>;
}

/**
 * Resolves with the first line `stream` prints that `matches`; rejects when the stream ends
 * first or after `ms` (a safety net: the line is an event, not a delay).
 */
export function waitForLine(stream: NodeJS.ReadableStream, matches: (line: string) => boolean, what: string, ms = 15_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: stream, crlfDelay: Infinity });
    const timer = setTimeout(() => finish(new Error(`timed out waiting for ${what}`)), ms);
    const finish = (result: string | Error) => {
      clearTimeout(timer);
      lines.removeAllListeners('line');
      lines.removeAllListeners('close');
      if (result instanceof Error) reject(result);
      else resolve(result);
    };
    lines.on('line', (line) => {
      if (matches(line)) finish(line);
    });
    lines.on('close', () => finish(new Error(`the output ended before ${what}`)));
  });
}

/**
 * Ends a `serve` started by a test (afterAll, also when a test failed): SIGTERM, so the daemon
 * stops its agents and removes its files; SIGKILL when it has not exited within 10 s.
 */
export async function stopServe(serve: ReturnType<typeof startCli> | undefined): Promise<void> {
  if (!serve || serve.exitCode !== null) return;
  serve.kill('SIGTERM');
  const ended = await Promise.race([serve, new Promise((resolve) => setTimeout(() => resolve('late'), 10_000))]);
  if (ended === 'late') serve.kill('SIGKILL');
  await serve;
}
