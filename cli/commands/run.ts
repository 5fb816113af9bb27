/**
 * `agentvisor run <agent> "<prompt>"`: one prompt, in this process, no daemon. A supervisor
 * with a memory store starts the agent (a spinner while it shakes hands), opens a session,
 * streams the answer, and is always shut down before the CLI exits: no agent process
 * outlives the command. SIGINT cancels the turn; a second one forces the shutdown.
 */
import { Option, type Command } from 'commander';
import type { Supervisor } from '../../index.js';
import { CliError } from '../cli-error.js';
import { promptText } from '../prompt-text.js';
import { agentNames, agentSpec, asConfigError, supervisorOptions, type Config } from '../config.js';
import { loadContext } from '../context.js';
import { ExitCode } from '../exit-codes.js';
import { interrupted, onInterrupt, type StopSignal } from '../interrupt.js';
import { isAgentError, loadLibrary } from '../library.js';
import { startSpinner } from '../output.js';
import { PermissionAsker, type PermissionMode } from '../permission-prompt.js';
import { TurnPrinter } from '../turn-printer.js';
import { formatOption, sessionCwd, type FormatOptions } from './options.js';

interface RunOptions extends FormatOptions {
  cwd?: string;
  approveAll?: boolean;
  approveReads?: boolean;
  denyAll?: boolean;
  auth?: string;
}

/** Adds `run` to the program. */
export function registerRun(program: Command): void {
  program
    .command('run')
    .description('run one prompt on an agent in this process (no daemon) and print the answer')
    .argument('<agent>', 'a preset (claude, claude-stream-json, codex, gemini, echo) or an agent of the config')
    .argument('[prompt...]', 'the prompt (read from stdin when omitted and stdin is not a terminal)')
    .option('--cwd <dir>', "the session's working directory (default: the current one)")
    .addOption(new Option('--approve-reads', 'allow the read-only tool calls (kinds read, search, fetch, think); the others are asked on a terminal, else denied').conflicts(['approveAll', 'denyAll']))
    .addOption(new Option('--approve-all', 'allow every permission request').conflicts('denyAll'))
    .addOption(new Option('--deny-all', 'deny every permission request'))
    .option('--auth <method>', "authenticate first with this one of the agent's auth methods (e.g. openai-api-key for codex)")
    .addOption(formatOption())
    .action((agent: string, words: string[], options: RunOptions, command: Command) => run(agent, words, options, command));
}

async function run(agent: string, words: string[], options: RunOptions, command: Command): Promise<void> {
  const { config, stateDir } = loadContext(command);
  const spec = await agentSpec(config, agent);
  if (!spec) throw unknownAgent(agent, config);
  // Checked before anything starts: a --cwd that is no directory never spawns the agent.
  const cwd = await sessionCwd(options.cwd);
  const { createSupervisor } = await loadLibrary();
  const text = await promptText(words, 'agentvisor run <agent> "<prompt>"');
  const mode: PermissionMode = options.approveAll ? 'allow' : options.denyAll ? 'deny' : options.approveReads ? 'allow-reads' : 'ask';
  const asker = new PermissionAsker();
  const supervisor = openSupervisor(config, () =>
    createSupervisor({ ...supervisorOptions(config), agents: { [agent]: spec }, store: 'memory', handleSignals: false, permissions: asker.policy(mode), stateDir }),
  );
  const printer = new TurnPrinter(options.format);
  const controller = new AbortController();
  let signal: StopSignal | undefined;
  const offInterrupt = onInterrupt({
    first: (received) => {
      signal = received;
      asker.close();
      controller.abort();
    },
    again: () => void supervisor.shutdown({ force: true }).catch(() => undefined), // the shutdown in `finally` reports it
  });
  try {
    await turn(supervisor, agent, text, cwd, options, printer, controller.signal, spec.displayName ?? agent);
    if (signal) throw interrupted(signal);
  } catch (error) {
    if (signal) throw interrupted(signal);
    printer.failed(isAgentError(error) ? error : { kind: 'internal', message: String((error as Error).message ?? error) });
    throw error;
  } finally {
    await supervisor.shutdown();
    offInterrupt();
  }
}

/** Starts the agent, opens a session, sends the prompt and prints the turn. */
async function turn(supervisor: Supervisor, agent: string, text: string, cwd: string, options: RunOptions, printer: TurnPrinter, signal: AbortSignal, displayName: string): Promise<void> {
  const spinner = startSpinner(`Starting ${displayName}…`);
  try {
    await supervisor.ensureAgent(agent, { signal });
    if (options.auth !== undefined) await supervisor.authenticate(agent, options.auth, { signal });
  } finally {
    spinner.stop();
  }
  const session = await supervisor.newSession(agent, { cwd, signal });
  printer.event({ type: 'session', agent, sessionId: session.id });
  session.on('update', (update) => printer.update(session.id, update));
  printer.event({ type: 'started', sessionId: session.id });
  const stopReason = await session.prompt(text, { signal });
  printer.done(session.id, stopReason);
}

/** Creates the supervisor; a spec or option the library refuses is a usage error naming the config file. */
function openSupervisor(config: Config, create: () => Supervisor): Supervisor {
  try {
    return create();
  } catch (error) {
    throw asConfigError(config, error);
  }
}

/**
 * `unknown_agent` for a name that is neither a preset nor in the config: the library's words
 * for it, as `start` or `prompt` relay them from the daemon (docs/cli.md, "Errors").
 */
export function unknownAgent(agent: string, config: Config): CliError {
  const where = config.path ? `the presets and ${config.path}` : 'the presets (there is no config file)';
  return new CliError(`No agent named "${agent}" is registered`, ExitCode.usage, `known agents, from ${where}: ${agentNames(config).join(', ')}`, 'unknown_agent');
}
