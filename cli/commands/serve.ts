/**
 * `agentvisor serve`: the daemon in the foreground. A supervisor with the store (every
 * preset and every agent of the config) behind the HTTP API and the dashboard; SIGINT or
 * SIGTERM closes it (a second signal kills the agents at once), and so does
 * `agentvisor shutdown`. At start it deals with what a crashed supervisor left (`--orphans`),
 * then starts again what the last daemon on the state directory ran (`--no-restore`: nothing).
 */
import { Option, type Command } from 'commander';
import type { Daemon } from '../../daemon/daemon.js';
import { DEFAULT_ORPHAN_POLICY, DEFAULT_PORT, ORPHAN_POLICIES, type OrphanPolicy } from '../../daemon/daemon-types.js';
import type { OrphanSweepResult } from '../../index.js';
import { agentSpecs, asConfigError, supervisorOptions, type Config } from '../config.js';
import { loadContext } from '../context.js';
import { onInterrupt } from '../interrupt.js';
import { printJson, styleFor } from '../output.js';
import { formatOption, integerOption, maxPort, type FormatOptions } from './options.js';

interface ServeOptions extends FormatOptions {
  port?: number;
  host: string;
  orphans?: OrphanPolicy;
  /** false with --no-restore; the config's `restore` otherwise. */
  restore: boolean;
}

/** Adds `serve` to the program. */
export function registerServe(program: Command): void {
  program
    .command('serve')
    .description('run the daemon: the agents behind an HTTP API and the dashboard, until SIGINT or `agentvisor shutdown`')
    .option('--port <n>', `the port (0 picks a free one; default ${DEFAULT_PORT})`, integerOption('--port', 0, maxPort))
    .option('--host <address>', 'the address to listen on', '127.0.0.1')
    .addOption(
      new Option('--orphans <policy>', `what to do at start with the processes a crashed supervisor left: kill them, report them (kill nothing), ignore them (default: the config's orphans, else ${DEFAULT_ORPHAN_POLICY})`).choices(
        ORPHAN_POLICIES,
      ),
    )
    .option('--no-restore', "start none of the agents and named sessions the last daemon on this state directory ran (default: the config's restore, else they are started again)")
    .addOption(formatOption())
    .action((options: ServeOptions, command: Command) => serve(options, command));
}

async function serve(options: ServeOptions, command: Command): Promise<void> {
  const { config, stateDir } = loadContext(command);
  const err = styleFor(process.stderr);
  if (!isLoopback(options.host)) {
    process.stderr.write(`${err.yellow('warning:')} listening on ${options.host}, not loopback: anyone who can reach it and has the token can run agents on this machine\n`);
  }
  const { startDaemon } = await import('../../daemon/daemon.js'); // the daemon and the library: loaded only to serve
  const port = options.port ?? DEFAULT_PORT;
  const agents = await agentSpecs(config);
  // --no-restore wins; without it, the config's restore (default true).
  const restore = command.getOptionValueSource('restore') === 'cli' ? options.restore : (config.file.restore ?? true);
  const time = () => new Date().toTimeString().slice(0, 8);
  const daemon = await start(config, () =>
    startDaemon({
      supervisor: { ...supervisorOptions(config), agents, stateDir, handleSignals: false },
      host: options.host,
      port,
      orphans: options.orphans ?? config.file.orphans,
      restore,
      log: (line) => void process.stderr.write(`${err.dim(time())} ${line}\n`),
    }),
  );
  const offEvents = narrate(daemon);
  let failClose!: (error: unknown) => void;
  const closeFailed = new Promise<never>((_resolve, reject) => (failClose = reject));
  closeFailed.catch(() => undefined); // raced below; never an unhandled rejection
  const offInterrupt = onInterrupt({
    first: () => void daemon.close().catch(failClose),
    again: () => void daemon.supervisor.shutdown({ force: true }).catch(failClose),
  });
  const listening = { url: daemon.url, pid: process.pid, stateDir: daemon.stateDir ?? stateDir, dashboard: daemon.dashboardUrl };
  // json: one line a program can wait for; the log stays on stderr in every format.
  if (options.format === 'json') printJson({ type: 'listening', ...listening });
  else if (options.format === 'text') process.stdout.write(`agentvisor listening on ${listening.url} (pid ${listening.pid}, state dir ${listening.stateDir})\ndashboard: ${listening.dashboard}\n`);
  reportStartupOrphans(daemon);
  try {
    await Promise.race([daemon.closed, closeFailed]);
  } finally {
    offInterrupt();
    offEvents();
  }
}

/** Starts the daemon; a spec or option the library refuses is a usage error naming the config file. */
async function start(config: Config, startIt: () => Promise<Daemon>): Promise<Daemon> {
  try {
    return await startIt();
  } catch (error) {
    throw asConfigError(config, error); // daemon_running and address_unavailable exit 2 too (cli/exit-codes.ts)
  }
}

/** Agents' status changes and errors as dim lines on stderr, for whoever watches the daemon; and each orphan sweep that killed something. */
function narrate(daemon: Daemon): () => void {
  const style = styleFor(process.stderr);
  const time = () => new Date().toTimeString().slice(0, 8);
  const offStatus = daemon.supervisor.on('agent:status', ({ agent, previous, status }) => process.stderr.write(style.dim(`${time()} ${agent}: ${previous} → ${status}\n`)));
  const offError = daemon.supervisor.on('error', ({ agent, kind, message }) => process.stderr.write(`${style.dim(time())} ${style.red(`${agent}: ${kind}`)} ${message}\n`));
  const offOrphans = daemon.supervisor.on('orphans:swept', (result) => {
    if (result.killed.length > 0) process.stderr.write(`${style.dim(time())} ${killedLine(result)}\n`);
  });
  return () => {
    offStatus();
    offError();
    offOrphans();
  };
}

/**
 * What the start did with a crashed supervisor's leftovers, on stderr (the daemon's log:
 * `<stateDir>/daemon.log` when it was started on first use): under `'report'` each one left
 * running and how to kill it; under `'kill'` what was killed. Nothing when there was nothing.
 */
function reportStartupOrphans(daemon: Daemon): void {
  const { policy, result } = daemon.orphans;
  if (!result) return;
  const style = styleFor(process.stderr);
  if (policy === 'kill') {
    if (result.killed.length > 0) process.stderr.write(`${killedLine(result)} (orphans: 'kill')\n`);
    return;
  }
  if (result.orphans.length === 0) return;
  const count = `${result.orphans.length} process${result.orphans.length === 1 ? '' : 'es'}`;
  process.stderr.write(`${style.yellow('orphans:')} ${count} left by a crashed supervisor, still running (orphans: 'report', nothing killed):\n`);
  for (const orphan of result.orphans) {
    const started = orphan.startedAt === null ? '' : `, started ${new Date(orphan.startedAt).toISOString()}`;
    const container = `${orphan.container ? `, container ${orphan.container}` : ''}${orphan.pod ? `, pod ${orphan.pod}` : ''}`;
    process.stderr.write(`  pid ${orphan.pid}  ${orphan.agent}${orphan.terminal ? ' (terminal)' : ''}  ${orphan.command}${started}${container}\n`);
  }
  process.stderr.write(style.dim('kill them with `agentvisor orphans --kill`, or some with `agentvisor orphans --pid N`\n'));
}

/** `killed 2 leftovers of a crashed supervisor: pid 41822 (codex: codex-acp), ...`. */
function killedLine(result: OrphanSweepResult): string {
  const each = result.killed.map((killed) => `pid ${killed.pid} (${killed.agent}: ${killed.command}${killed.container ? `, container ${killed.container}` : ''}${killed.pod ? `, pod ${killed.pod}` : ''})`);
  return `killed ${result.killed.length} leftover${result.killed.length === 1 ? '' : 's'} of a crashed supervisor: ${each.join(', ')}`;
}

/** Whether `host` is a loopback address (nothing outside this machine can reach it). */
export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || host === '[::1]' || /^127(\.\d{1,3}){3}$/.test(host);
}
