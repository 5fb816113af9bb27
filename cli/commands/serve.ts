/**
 * `agentvisor serve`: the daemon in the foreground. A supervisor with the store (every
 * preset and every agent of the config) behind the HTTP API and the dashboard; SIGINT or
 * SIGTERM closes it (a second signal kills the agents at once), and so does
 * `agentvisor shutdown`.
 */
import type { Command } from 'commander';
import type { Daemon } from '../../daemon/daemon.js';
import { DEFAULT_PORT } from '../../daemon/daemon-types.js';
import { agentSpecs, asConfigError, supervisorOptions, type Config } from '../config.js';
import { loadContext } from '../context.js';
import { onInterrupt } from '../interrupt.js';
import { styleFor } from '../output.js';
import { integerOption, maxPort } from './options.js';

interface ServeOptions {
  port?: number;
  host: string;
}

/** Adds `serve` to the program. */
export function registerServe(program: Command): void {
  program
    .command('serve')
    .description('run the daemon: the agents behind an HTTP API and the dashboard, until SIGINT or `agentvisor shutdown`')
    .option('--port <n>', `the port (0 picks a free one; default ${DEFAULT_PORT})`, integerOption('--port', 0, maxPort))
    .option('--host <address>', 'the address to listen on', '127.0.0.1')
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
  const daemon = await start(config, () =>
    startDaemon({ supervisor: { ...supervisorOptions(config), agents, stateDir, handleSignals: false }, host: options.host, port }),
  );
  const offEvents = narrate(daemon);
  let failClose!: (error: unknown) => void;
  const closeFailed = new Promise<never>((_resolve, reject) => (failClose = reject));
  closeFailed.catch(() => undefined); // raced below; never an unhandled rejection
  const offInterrupt = onInterrupt({
    first: () => void daemon.close().catch(failClose),
    again: () => void daemon.supervisor.shutdown({ force: true }).catch(failClose),
  });
  process.stdout.write(`agentvisor listening on ${daemon.url} (pid ${process.pid}, state dir ${daemon.stateDir ?? stateDir})\ndashboard: ${daemon.dashboardUrl}\n`);
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

/** Agents' status changes and errors as dim lines on stderr, for whoever watches the daemon. */
function narrate(daemon: Daemon): () => void {
  const style = styleFor(process.stderr);
  const time = () => new Date().toTimeString().slice(0, 8);
  const offStatus = daemon.supervisor.on('agent:status', ({ agent, previous, status }) => process.stderr.write(style.dim(`${time()} ${agent}: ${previous} → ${status}\n`)));
  const offError = daemon.supervisor.on('error', ({ agent, kind, message }) => process.stderr.write(`${style.dim(time())} ${style.red(`${agent}: ${kind}`)} ${message}\n`));
  return () => {
    offStatus();
    offError();
  };
}

/** Whether `host` is a loopback address (nothing outside this machine can reach it). */
export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || host === '[::1]' || /^127(\.\d{1,3}){3}$/.test(host);
}
