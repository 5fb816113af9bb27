/**
 * A daemon on first use (docs/cli.md), as pm2 starts its own: a command that talks to the
 * daemon and finds none starts `agentvisor serve` in the background for the same state
 * directory and config, on a free port, its output in `<stateDir>/daemon.log`, and goes on
 * once it answers. `AGENTVISOR_NO_AUTOSTART=1` or `--no-autostart` turns it off (then exit 6
 * says how to start one); `stop` and `shutdown` never start one.
 */
import { spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readDaemonFiles } from '../daemon/daemon-files.js';
import { CliError } from './cli-error.js';
import type { Config } from './config.js';
import { ExitCode } from './exit-codes.js';

/** How long a daemon started here may take to answer (it loads the library and opens the store). */
const startTimeoutMs = 30_000;

/** Whether a command may start a daemon: not when the environment or `--no-autostart` says no. */
export function autostartAllowed(flag: boolean | undefined, env: NodeJS.ProcessEnv = process.env): boolean {
  return flag !== false && !env.AGENTVISOR_NO_AUTOSTART;
}

/** Starts a daemon for `stateDir` in the background; resolves once its files say where it listens. */
export async function startDaemonInBackground(stateDir: string, config: Config): Promise<void> {
  mkdirSync(stateDir, { recursive: true });
  const logFile = join(stateDir, 'daemon.log');
  const log = openSync(logFile, 'a');
  const main = fileURLToPath(new URL('./main.js', import.meta.url));
  const args = [main, '--state-dir', stateDir, ...(config.path ? ['--config', config.path] : []), 'serve', '--port', '0'];
  const child = spawn(process.execPath, args, { detached: true, stdio: ['ignore', log, log] });
  closeSync(log);
  let exit: string | null = null;
  child.once('exit', (code, signal) => (exit = signal ?? String(code)));
  child.once('error', (error) => (exit = error.message));
  child.unref();
  const deadline = Date.now() + startTimeoutMs;
  for (;;) {
    const files = readDaemonFiles(stateDir);
    if (files && files.info.pid === child.pid) break;
    if (exit !== null || Date.now() > deadline) {
      if (exit === null) child.kill('SIGTERM');
      const tail = readFileSync(logFile, 'utf8').trim().split('\n').slice(-3).join(' | ');
      throw new CliError(`Could not start a daemon for ${stateDir} (${exit === null ? 'no answer in 30 s' : `it exited: ${exit}`})${tail ? `: ${tail}` : ''}`, ExitCode.noDaemon, `its log: ${logFile}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  process.stderr.write(`agentvisor: started a daemon for ${stateDir} (pid ${child.pid}; \`agentvisor shutdown\` stops it; AGENTVISOR_NO_AUTOSTART=1 or --no-autostart: never start one)\n`);
}
