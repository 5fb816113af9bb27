/**
 * `agentvisor orphans`: what a crashed supervisor (a daemon, a `run`, a program) left running
 * in the state directory — pid, agent, start time, command — listed without touching it;
 * `--kill` kills every one, `--pid N` (repeatable) just those. Through the daemon when one runs
 * (`GET /v1/orphans`, `POST /v1/orphans/kill`), else by a supervisor of its own in this process
 * (as `doctor` does). It never starts a daemon: a daemon's start may sweep them itself.
 */
import { Option, type Command } from 'commander';
import type { OrphansBody } from '../../daemon/api-types.js';
import type { OrphanProcess, OrphanSweepResult } from '../../index.js';
import { daemonContext } from '../daemon-discovery.js';
import { askRunningDaemon } from '../daemon-client.js';
import { loadLibrary } from '../library.js';
import { formatDuration, printJson, styleFor } from '../output.js';
import { renderTable, type Column } from '../table.js';
import { formatOption, integerOption, type FormatOptions } from './options.js';

interface OrphansOptions extends FormatOptions {
  kill?: boolean;
  pid?: number[];
}

/** What the listing prints from: the dry run, and (through a daemon) what its start did. */
type Listing = OrphanSweepResult & { startup: OrphansBody['startup'] | null };

const parsePid = integerOption('--pid', 1, 2 ** 31 - 1);

/** Adds `orphans` to the program. */
export function registerOrphans(program: Command): void {
  program
    .command('orphans')
    .description('what a crashed supervisor left running (pid, agent, start time, command); --kill kills them all, --pid N just those')
    .addOption(new Option('--kill', 'kill every one listed').conflicts('pid'))
    .option('--pid <pid>', 'kill just this one (repeat for more); a pid that is no leftover is refused, exit 2', (value: string, previous: number[] = []) => [...previous, parsePid(value)])
    .addOption(formatOption())
    .action(async (options: OrphansOptions, command: Command) => {
      const { stateDir } = daemonContext(command);
      const style = styleFor(process.stdout);
      if (!options.kill && options.pid === undefined) {
        const listing = (await askRunningDaemon(stateDir, (client) => client.request<OrphansBody>('GET', '/v1/orphans'))) ?? { ...(await locally(stateDir, { dryRun: true })), startup: null };
        if (options.format === 'json') return printJson(listing);
        if (options.format === 'quiet') return void process.stdout.write(listing.orphans.map((orphan) => `${orphan.pid}\n`).join(''));
        return void process.stdout.write(renderListing(listing, stateDir));
      }
      const only = options.pid === undefined ? undefined : [...new Set(options.pid)];
      const result =
        (await askRunningDaemon(stateDir, (client) => client.request<OrphanSweepResult>('POST', '/v1/orphans/kill', { body: only === undefined ? {} : { pids: only } }))) ??
        (await locally(stateDir, only === undefined ? {} : { only }));
      if (options.format === 'json') return printJson(result);
      if (options.format === 'quiet') return void process.stdout.write(result.killed.map((killed) => `${killed.pid}\n`).join(''));
      process.stdout.write(renderKill(result, style));
    });
}


/** The sweep (or dry run) by a supervisor of this process, with no agents, no store and no start-up sweep. */
async function locally(stateDir: string, options: { dryRun?: boolean; only?: number[] }): Promise<OrphanSweepResult> {
  const { createSupervisor } = await loadLibrary();
  const supervisor = createSupervisor({ agents: {}, stateDir, store: 'memory', handleSignals: false, sweepOnStart: false });
  try {
    return await supervisor.sweepOrphans(options);
  } finally {
    await supervisor.shutdown();
  }
}

function renderListing(listing: Listing, stateDir: string): string {
  const style = styleFor(process.stdout);
  const startup = listing.startup?.policy === 'report' ? style.dim(` (the daemon runs with orphans: 'report': it kills none by itself)`) : '';
  if (listing.orphans.length === 0) return `no orphans: nothing a crashed supervisor left runs for state dir ${stateDir}\n`;
  const table = renderTable(listing.orphans, orphanColumns(Date.now()), { width: process.stdout.isTTY ? process.stdout.columns : undefined, style });
  const count = `${listing.orphans.length} left by a crashed supervisor${startup}`;
  return `${table}${style.dim(`${count}; kill them with \`agentvisor orphans --kill\`, or some with \`--pid N\``)}\n`;
}

function renderKill(result: OrphanSweepResult, style: ReturnType<typeof styleFor>): string {
  const lines = result.killed.map((killed) => `killed pid ${killed.pid} (${killed.agent}${killed.terminal ? ', terminal' : ''}: ${killed.command}${killed.container ? `; container ${killed.container} removed` : ''}${killed.pod ? `; pod ${killed.pod} deleted` : ''})`);
  // Records of live supervisors and other hosts were never candidates: only what was a leftover is said.
  for (const skipped of result.skipped.filter((entry) => entry.reason !== 'owner alive' && !entry.reason.startsWith("another host's"))) {
    lines.push(style.dim(`pid ${skipped.pid} (${skipped.agent}): ${skipped.reason}${skipped.reason === 'not running' || skipped.reason === 'pid reused' ? ', its record removed' : ''}`));
  }
  return lines.length === 0 ? 'nothing to kill\n' : `${lines.join('\n')}\n`;
}

/** The columns of the listing. */
function orphanColumns(now: number): Array<Column<OrphanProcess>> {
  return [
    { header: 'pid', value: (orphan) => String(orphan.pid), align: 'right' },
    { header: 'agent', value: (orphan) => `${orphan.agent}${orphan.terminal ? ' (terminal)' : ''}` },
    { header: 'started', value: (orphan) => (orphan.startedAt === null ? '-' : `${new Date(orphan.startedAt).toISOString().replace('T', ' ').slice(0, 19)} (${formatDuration(now - orphan.startedAt)} ago)`) },
    { header: 'left by', value: (orphan) => `pid ${orphan.owner}`, paint: (cell, _orphan, style) => style.dim(cell) },
    { header: 'command', value: (orphan) => orphan.command, flexible: true },
    {
      header: 'what is left',
      value: (orphan) => [orphan.running ? 'running' : 'its process is gone', orphan.container ? `container ${orphan.container}` : '', orphan.pod ? `pod ${orphan.pod}` : ''].filter(Boolean).join(', '),
      flexible: true,
    },
  ];
}
