/**
 * What every command starts from: the global options (`--config`, `--state-dir`,
 * `--no-color`), the config they lead to, and the state directory.
 */
import type { Command } from 'commander';
import { noteDaemonConfig } from '../daemon/daemon-files.js';
import { loadConfig, resolveStateDir, type Config } from './config.js';

/** The options every command takes (before or after its name). */
export interface GlobalOptions {
  config?: string;
  stateDir?: string;
  color?: boolean;
  /** `--no-autostart`: false. */
  autostart?: boolean;
}

/** The config and the state directory a command works with. */
export interface Context {
  config: Config;
  stateDir: string;
}

/** The global options as given to `command` or any of its parents. */
export function globalOptions(command: Command): GlobalOptions {
  return command.optsWithGlobals<GlobalOptions>();
}

/** Loads the config and resolves the state directory for `command`; throws a usage error for a bad config. */
export function loadContext(command: Command): Context {
  const globals = globalOptions(command);
  const config = loadConfig({ flag: globals.config });
  noteDaemonConfig(config.path); // a daemon this process serves names its config in the registry
  return { config, stateDir: resolveStateDir(globals.stateDir, config) };
}
