/**
 * The daemon's agents: `ls` (a pm2-like table), `start`, `stop` and `restart` (a spinner
 * while the daemon works), and the daemon itself: `dashboard`, `shutdown`.
 */
import type { Command } from 'commander';
import type { AgentRow, AgentsBody } from '../../daemon/api-types.js';
import { CliError } from '../cli-error.js';
import { globalOptions } from '../context.js';
import { daemonContext } from '../daemon-discovery.js';
import { autostartAllowed, startDaemonInBackground } from '../daemon-autostart.js';
import { DaemonClient } from '../daemon-client.js';
import { ExitCode } from '../exit-codes.js';
import { printJson, startSpinner, styleFor } from '../output.js';
import { processAlive } from '../process-alive.js';
import { currentMode, currentModel, focusSession, type SessionDetail } from '../session-view.js';
import { agentColumns, renderTable } from '../table.js';
import { formatOption, integerOption, type FormatOptions } from './options.js';

/**
 * The daemon of the state directory `command` works with. When none runs, one is started in
 * the background (cli/daemon-autostart.ts) unless `autostart` is false (`stop`, `shutdown`),
 * `--no-autostart` or AGENTVISOR_NO_AUTOSTART says no: then exit 6 says how to start one.
 */
export async function connect(command: Command, { autostart = true }: { autostart?: boolean } = {}): Promise<DaemonClient> {
  // Autostart starts a daemon for the state dir this command names (else the default one), never for a registered one's.
  const { config, stateDir } = daemonContext(command);
  try {
    return DaemonClient.connect(stateDir);
  } catch (error) {
    const noneRuns = error instanceof CliError && error.exitCode === ExitCode.noDaemon;
    if (!noneRuns || !autostart) throw error;
    if (!autostartAllowed(globalOptions(command).autostart)) {
      throw new CliError(error.message, ExitCode.noDaemon, error.hint ?? 'none is started on first use: AGENTVISOR_NO_AUTOSTART or --no-autostart says not to');
    }
  }
  await startDaemonInBackground(stateDir, config);
  return DaemonClient.connect(stateDir);
}

/** The agents and the sessions of the daemon, and for each agent the session `ls` shows (session-view.ts's `focusSession`). */
export async function agentsWithSessions(client: DaemonClient): Promise<{ agents: AgentRow[]; sessions: SessionDetail[]; focus: (agent: string) => SessionDetail | undefined }> {
  const [{ agents }, { sessions }] = await Promise.all([client.request<AgentsBody>('GET', '/v1/agents'), client.request<{ sessions: SessionDetail[] }>('GET', '/v1/sessions?open=1')]);
  const focused = new Map(agents.map((row) => [row.name, focusSession(sessions, row.name)]));
  return { agents, sessions, focus: (agent) => focused.get(agent) };
}

/** What `ls --format json` adds to each agent: the session its mode, model and usage columns show, or null. */
export function sessionSummary(session: SessionDetail | undefined) {
  if (!session) return null;
  return { sessionId: session.sessionId, name: session.name, mode: currentMode(session), model: currentModel(session), usage: session.usage ?? null };
}

/** `/v1/agents/<name>` with the name encoded. */
export const agentPath = (name: string, rest = '') => `/v1/agents/${encodeURIComponent(name)}${rest}`;

/** Adds `ls`, `start`, `stop`, `restart`, `auth`, `dashboard` and `shutdown` to the program. */
export function registerDaemonCommands(program: Command): void {
  program
    .command('ls')
    .alias('list')
    .description("the daemon's agents: status, state, pid, uptime, restarts, cpu, mem, sessions, the mode, model and usage of the default (or latest) open session, last error")
    .addOption(formatOption())
    .action(async (options: FormatOptions, command: Command) => {
      const { agents, focus } = await agentsWithSessions(await connect(command));
      if (options.format === 'json') return printJson({ agents: agents.map((row) => ({ ...row, session: sessionSummary(focus(row.name)) })) });
      if (options.format === 'quiet') return void process.stdout.write(agents.map((row) => `${row.name}\n`).join(''));
      if (agents.length === 0) return void process.stdout.write('no agents\n');
      process.stdout.write(renderTable(agents, agentColumns(Date.now(), focus), { width: process.stdout.isTTY ? process.stdout.columns : undefined, style: styleFor(process.stdout) }));
    });

  program
    .command('start')
    .description('start an agent in the daemon (resolves once it is connected)')
    .argument('<agent>', 'the agent')
    .addOption(formatOption())
    .action((agent: string, options: FormatOptions, command: Command) => agentAction(command, options, `Starting ${agent}…`, agentPath(agent, '/start')));
  program
    .command('stop')
    .description('stop an agent in the daemon (resolves once its processes are gone)')
    .argument('<agent>', 'the agent')
    .option('--force', 'SIGKILL its whole containment at once instead of the graceful ladder (for an agent that ignores SIGTERM)')
    .addOption(formatOption())
    // A stop with no daemon has nothing to stop: it starts none.
    .action((agent: string, options: FormatOptions & { force?: boolean }, command: Command) =>
      agentAction(command, options, `${options.force ? 'Killing' : 'Stopping'} ${agent}…`, agentPath(agent, '/stop'), options.force ? { force: true } : undefined, false),
    );
  program
    .command('restart')
    .description('restart an agent in the daemon: the stop ladder, then a start (its sessions are resumed as after a crash)')
    .argument('<agent>', 'the agent')
    .option('--reason <text>', "why, kept in the daemon's event log (GET /v1/events/log) as agent:restart")
    .addOption(formatOption())
    .action((agent: string, options: FormatOptions & { reason?: string }, command: Command) =>
      agentAction(command, options, `Restarting ${agent}…`, agentPath(agent, '/restart'), options.reason === undefined ? undefined : { reason: options.reason }),
    );

  program
    .command('auth')
    .description("log an agent in with one of the methods it offers (ACP authenticate), e.g. `auth codex openai-api-key`")
    .argument('<agent>', 'the agent')
    .argument('<method>', 'the id of one of its auth methods (a needs-login error lists them)')
    .option('--timeout <seconds>', "cancel the login if it has not finished by then (default: the daemon's authTimeoutMs, 120 s)", integerOption('--timeout', 1))
    .addOption(formatOption())
    .action(async (agent: string, methodId: string, options: FormatOptions & { timeout?: number }, command: Command) => {
      // A login that waits for a person says where to go on its stderr: shown while the daemon waits.
      const following = new AbortController();
      void showLoginPrompts(await connect(command), agent, following.signal);
      try {
        await agentAction(command, options, `Authenticating ${agent} with ${methodId}…`, agentPath(agent, '/authenticate'), {
          methodId,
          ...(options.timeout === undefined ? {} : { timeoutMs: options.timeout * 1000 }),
        });
      } finally {
        following.abort();
      }
    });

  program
    .command('dashboard')
    .description("print the dashboard's address (it carries the daemon's token: keep it to yourself)")
    .addOption(formatOption())
    .action(async (options: FormatOptions, command: Command) => {
      const url = (await connect(command)).dashboardUrl;
      if (options.format === 'json') return printJson({ url });
      process.stdout.write(`${url}\n`);
    });

  program
    .command('shutdown')
    .description('stop the daemon and its agents; returns once its process is gone')
    .option('--timeout <ms>', 'how long to wait for the daemon to exit', integerOption('--timeout', 1), 60_000)
    .addOption(formatOption())
    .action(async (options: FormatOptions & { timeout: number }, command: Command) => {
      const client = await connect(command, { autostart: false });
      await client.request('POST', '/v1/shutdown');
      const { pid } = client.info;
      const deadline = Date.now() + options.timeout;
      // The daemon's pid is the only sign it is gone; it is not our child, so poll it.
      while (processAlive(pid)) {
        if (Date.now() > deadline) throw new CliError(`The daemon (pid ${pid}) is still running after ${options.timeout} ms`, ExitCode.internal);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      if (options.format === 'json') return printJson({ stopped: true, pid });
      if (options.format === 'text') process.stdout.write(`daemon stopped (pid ${pid})\n`);
    });
}

/** One POST on an agent that answers its row: a spinner while the daemon works, then the row. */
/** The agent's stderr lines with a URL in them, as they come, until `signal`: what a login asks a person to open. */
async function showLoginPrompts(client: DaemonClient, agent: string, signal: AbortSignal): Promise<void> {
  try {
    for await (const entry of client.stream<{ line: string }>('GET', agentPath(agent, '/logs?follow=1&tail=0'), { signal })) {
      if (/https?:\/\//.test(entry.line)) process.stderr.write(`${agent} asks you to log in: ${entry.line}\n`);
    }
  } catch {
    // The login ended (the stream was cancelled) or the daemon went away: the answer says the rest.
  }
}

async function agentAction(command: Command, options: FormatOptions, doing: string, path: string, body?: unknown, autostart = true): Promise<void> {
  const client = await connect(command, { autostart });
  const spinner = startSpinner(doing);
  let row: AgentRow;
  try {
    row = await client.request<AgentRow>('POST', path, body === undefined ? {} : { body });
  } finally {
    spinner.stop();
  }
  if (options.format === 'json') return printJson(row);
  if (options.format === 'text') process.stdout.write(`${row.name}: ${row.status}${row.pid === null ? '' : ` (pid ${row.pid})`}\n`);
}
