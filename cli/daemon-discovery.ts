/**
 * Which daemon a command talks to (docs/cli.md, "Finding the daemon"). The daemon of the
 * command's state directory, as ever; and when nothing names a state directory (no
 * `--state-dir`, no `--config`, no `$AGENTVISOR_STATE_DIR` or `$AGENTVISOR_CONFIG`, no
 * `stateDir` in the config file found) and no daemon runs in the default one, the daemon the
 * registry (daemon/daemon-files.ts, `<toolStateDir>/daemons/`) says runs elsewhere — started
 * from another folder with a config that put its state somewhere else — as pm2 finds its one
 * daemon from any folder. Several such daemons: the command refuses and lists them (exit 2),
 * never picks one. None: the default state directory, where autostart starts one.
 */
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { readDaemonFiles, runningDaemons, type DaemonRegistryEntry } from '../daemon/daemon-files.js';
import { CliError } from './cli-error.js';
import type { Config } from './config.js';
import { globalOptions, loadContext, type Context, type GlobalOptions } from './context.js';
import { ExitCode } from './exit-codes.js';
import { processAlive } from './process-alive.js';

/** A command's context; `found` when its state directory is a registered daemon's, found because nothing named one. */
export interface DaemonContext extends Context {
  found?: DaemonRegistryEntry;
}

/** Whether the command line, the environment or the config file says which state directory to use. */
export function namesStateDir(globals: Pick<GlobalOptions, 'stateDir' | 'config'>, config: Config, env: NodeJS.ProcessEnv = process.env): boolean {
  return Boolean(globals.stateDir || globals.config || env.AGENTVISOR_STATE_DIR || env.AGENTVISOR_CONFIG || config.file.stateDir);
}

/**
 * The context of a command that talks to a daemon: {@link loadContext}'s, unless nothing names
 * a state directory, no daemon runs in the default one and the registry has one running
 * elsewhere: then that daemon's state directory. Exit 2, listing them, when it has several.
 */
export function daemonContext(command: Command, env: NodeJS.ProcessEnv = process.env): DaemonContext {
  const context = loadContext(command);
  if (namesStateDir(globalOptions(command), context.config, env)) return context;
  const own = readDaemonFiles(context.stateDir);
  if (own && processAlive(own.info.pid)) return context;
  const elsewhere = runningDaemons(env).filter((entry) => entry.stateDir !== resolve(context.stateDir));
  if (elsewhere.length === 0) return context;
  if (elsewhere.length > 1) throw severalDaemons(context.stateDir, elsewhere);
  const found = elsewhere[0]!;
  // A daemon started with another config than the one this command found may not know the agents it names: say whose it is.
  if (context.config.path !== null && context.config.path !== found.configPath) {
    process.stderr.write(`agentvisor: using the daemon of state dir ${found.stateDir} (pid ${found.pid}, config ${found.configPath ?? 'none'}), the only one running; --state-dir or --config picks another\n`);
  }
  return { ...context, stateDir: found.stateDir, found };
}

/** Exit 2: several daemons run, none in the default state directory, and nothing says which. */
function severalDaemons(stateDir: string, daemons: DaemonRegistryEntry[]): CliError {
  const rows = daemons.map((entry) => `  --state-dir ${entry.stateDir}   pid ${entry.pid}, ${entry.url}, config ${entry.configPath ?? 'none'}`);
  return new CliError(
    `${daemons.length} daemons are running and none for the default state dir ${stateDir}: say which with --state-dir (or the --config that names it)`,
    ExitCode.usage,
    rows.join('\n'),
  );
}
