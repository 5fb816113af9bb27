/**
 * `agentvisor startup`: the daemon at login, as pm2's `startup` does — a systemd user unit
 * that runs `agentvisor serve` for this state directory and config (and restarts it if it
 * dies). Printed by default; `--install` writes it to `$XDG_CONFIG_HOME/systemd/user/` and says
 * the one command that enables it (the CLI runs no systemctl of its own).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Command } from 'commander';
import type { Config } from '../config.js';
import { loadContext } from '../context.js';
import { printJson } from '../output.js';
import { formatOption, type FormatOptions } from './options.js';

/** The unit's file name: one per user (a second state directory needs a unit of its own: --name). */
const defaultUnitName = 'agentvisor';

/** Adds `startup` to the program. */
export function registerStartup(program: Command): void {
  program
    .command('startup')
    .description('print (or --install) a systemd user unit that runs the daemon at login and restarts it if it dies')
    .option('--install', 'write the unit to ~/.config/systemd/user/ instead of printing it')
    .option('--name <name>', 'the unit name (default: agentvisor)', defaultUnitName)
    .addOption(formatOption())
    .action((options: FormatOptions & { install?: boolean; name: string }, command: Command) => {
      const { config, stateDir } = loadContext(command);
      const unit = systemdUnit(stateDir, config);
      if (!options.install) return void (options.format === 'json' ? printJson({ unit, file: null }) : process.stdout.write(unit));
      const file = join(process.env.XDG_CONFIG_HOME || join(homedir(), '.config'), 'systemd', 'user', `${options.name}.service`);
      mkdirSync(dirname(file), { recursive: true });
      writeFileSync(file, unit);
      if (options.format === 'json') return printJson({ unit, file, enable: `systemctl --user enable --now ${options.name}` });
      if (options.format === 'quiet') return void process.stdout.write(`${file}\n`);
      process.stdout.write(
        `wrote ${file}\nenable it now and at every login:  systemctl --user enable --now ${options.name}\n` +
          `keep it running after you log out:   loginctl enable-linger ${process.env.USER ?? '$USER'}\n`,
      );
    });
}

/** The unit: this node, this CLI, this state directory and config; PATH as now (the agents' commands are found through it). */
export function systemdUnit(stateDir: string, config: Config): string {
  const main = fileURLToPath(new URL('../main.js', import.meta.url));
  const args = [process.execPath, main, '--state-dir', stateDir, ...(config.path ? ['--config', config.path] : []), 'serve'];
  return [
    '[Unit]',
    'Description=agentvisor daemon (AI coding agents, supervised)',
    'After=network.target',
    '',
    '[Service]',
    'Type=simple',
    `ExecStart=${args.map(quoteForSystemd).join(' ')}`,
    `Environment=${quoteForSystemd(`PATH=${process.env.PATH ?? '/usr/bin:/bin'}`)}`,
    'Environment=AGENTVISOR_NO_AUTOSTART=1',
    // SIGTERM is the daemon's graceful shutdown (its agents stopped, their processes gone).
    'KillMode=mixed',
    'TimeoutStopSec=60',
    'Restart=on-failure',
    'RestartSec=2',
    '',
    '[Install]',
    'WantedBy=default.target',
    '',
  ].join('\n');
}

/** A word of a systemd command line: quoted when it holds a space, a quote, a backslash or a `%` (systemd's specifier). */
function quoteForSystemd(word: string): string {
  const escaped = word.replace(/%/g, '%%');
  return /[\s"'\\]/.test(escaped) ? `"${escaped.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"` : escaped;
}
