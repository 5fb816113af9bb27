/**
 * `agentvisor monit` (alias `top`): a live view of the daemon's agents, as pm2's `monit` —
 * every agent's status, state, pid, uptime, restarts, CPU and memory of its whole process
 * tree, sessions and last error, with a summary line, redrawn every `--interval` ms until
 * Ctrl-C. On a terminal each frame replaces the last (the screen is cleared); piped, frames
 * follow one another. `--count N` stops after N frames (scripts, tests).
 */
import type { Command } from 'commander';
import { interrupted, onInterrupt, type StopSignal } from '../interrupt.js';
import { printJson, stripAnsi, styleFor } from '../output.js';
import { agentColumns, renderTable } from '../table.js';
import { agentsWithSessions, connect, sessionSummary } from './agents.js';
import { formatOption, integerOption, type FormatOptions } from './options.js';

interface MonitOptions extends FormatOptions {
  interval: number;
  count?: number;
}

/** Adds `monit` (alias `top`) to the program. */
export function registerMonit(program: Command): void {
  program
    .command('monit')
    .alias('top')
    .description("a live view of the daemon's agents: status, restarts, CPU and memory, sessions (Ctrl-C leaves)")
    .option('--interval <ms>', 'how often it is redrawn', integerOption('--interval', 100), 1000)
    .option('--count <n>', 'stop after this many frames', integerOption('--count', 1))
    .addOption(formatOption())
    .action((options: MonitOptions, command: Command) => monit(options, command));
}

async function monit(options: MonitOptions, command: Command): Promise<void> {
  const client = await connect(command);
  const out = process.stdout;
  const style = styleFor(out);
  let signal: StopSignal | undefined;
  let wake: (() => void) | undefined;
  const offInterrupt = onInterrupt({ first: (received) => ((signal = received), wake?.()) });
  try {
    for (let frame = 1; signal === undefined; frame++) {
      const { agents, focus } = await agentsWithSessions(client);
      const now = Date.now();
      if (options.format === 'json') printJson({ at: now, url: client.info.url, agents: agents.map((row) => ({ ...row, session: sessionSummary(focus(row.name)) })) });
      const live = agents.filter((row) => row.status !== 'idle').length;
      const cpu = agents.reduce((sum, row) => sum + (row.usage?.cpuPercent ?? 0), 0);
      const memory = agents.reduce((sum, row) => sum + (row.usage?.memoryBytes ?? 0), 0);
      const header = `${style.bold('agentvisor monit')}  ${client.info.url}  ${new Date(now).toLocaleTimeString()}  ` +
        `${live}/${agents.length} agents live · ${agents.reduce((sum, row) => sum + row.sessions, 0)} sessions · ` +
        `${agents.reduce((sum, row) => sum + row.restarts, 0)} restarts · CPU ${cpu.toFixed(1)}% · ${(memory / 1024 / 1024).toFixed(1)} MiB`;
      const table = agents.length ? renderTable(agents, agentColumns(now, focus), { width: out.isTTY ? out.columns : undefined, style }) : 'no agents\n';
      // On a terminal: home, clear, draw (one write: no flicker). Piped: one frame after another. quiet: the summary line only.
      if (options.format === 'quiet') out.write(`${stripAnsi(header)}\n`);
      else if (options.format === 'text') out.write(`${out.isTTY ? '\x1b[H\x1b[2J' : frame > 1 ? '\n' : ''}${header}\n\n${table}${out.isTTY ? style.dim('\nCtrl-C leaves') + '\n' : ''}`);
      if (options.count !== undefined && frame >= options.count) return;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, options.interval);
        wake = () => (clearTimeout(timer), resolve());
      });
    }
    throw interrupted(signal);
  } finally {
    offInterrupt();
  }
}


