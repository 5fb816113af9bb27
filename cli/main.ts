#!/usr/bin/env node
/**
 * `agentvisor`: the command line (docs/cli.md). `run` supervises one agent in this process;
 * `serve` runs the daemon; the other commands talk to that daemon over its HTTP API. Every
 * failure ends with a message on stderr and an exit code of cli/exit-codes.ts.
 */
import { Command } from 'commander';
import { registerDaemonCommands } from './commands/agents.js';
import { registerDescribe } from './commands/describe.js';
import { registerDoctor } from './commands/doctor.js';
import { registerLogs } from './commands/logs.js';
import { registerMonit } from './commands/monit.js';
import { registerOrphans } from './commands/orphans.js';
import { registerPermissions } from './commands/permissions.js';
import { registerPrompt } from './commands/prompt.js';
import { registerRun } from './commands/run.js';
import { registerServe } from './commands/serve.js';
import { registerSessions } from './commands/sessions.js';
import { registerStartup } from './commands/startup.js';
import { ExitCode, exitCodesHelp } from './exit-codes.js';
import { applyJsonFlag } from './commands/options.js';
import { registerControls } from './commands/controls.js';
import { registerElicitations } from './commands/elicitations.js';
import { registerStatus } from './commands/status.js';
import { commanderErrorText, reportError } from './report-error.js';
import { packageVersion } from './version.js';

/** The program with every command; errors are thrown (exitOverride), never exit the process. */
function buildProgram(): Command {
  const program = new Command('agentvisor')
    .description('Supervise AI coding agents (Claude Code, Codex, Gemini CLI, any ACP agent)')
    .version(packageVersion(), '-V, --version', 'print the version')
    .option('-c, --config <file>', 'the config file (default: $AGENTVISOR_CONFIG, ./agentvisor.config.json, ~/.config/agentvisor/config.json)')
    .option('--state-dir <dir>', 'where state lives (default: the config\'s stateDir, $AGENTVISOR_STATE_DIR, ~/.local/state/agentvisor)')
    .option('--no-color', 'no colours (as NO_COLOR=1 does)')
    .option('--no-autostart', 'never start a daemon when none runs (as AGENTVISOR_NO_AUTOSTART=1 does)')
    .option('--json', 'print JSON: the same as --format json, for every command that prints')
    .exitOverride()
    // Commander's own errors (an unknown option, a bad choice) in the form of every other: `agentvisor: <message>`.
    .configureOutput({ outputError: (text, write) => write(commanderErrorText(text)) })
    .showHelpAfterError('(add --help for usage)')
    .addHelpText('after', exitCodesHelp());
  program.hook('preAction', (_program, action) => {
    if (action.optsWithGlobals<{ color?: boolean }>().color === false) process.env.NO_COLOR = '1';
    applyJsonFlag(action);
  });
  registerRun(program);
  registerServe(program);
  registerDaemonCommands(program);
  registerDescribe(program);
  registerPrompt(program);
  registerLogs(program);
  registerSessions(program);
  registerPermissions(program);
  registerDoctor(program);
  registerStartup(program);
  registerMonit(program);
  registerOrphans(program);
  registerStatus(program);
  registerControls(program);
  registerElicitations(program);
  return program;
}

/** Runs the CLI on `argv` and resolves with the exit code. */
async function main(argv: readonly string[] = process.argv): Promise<number> {
  try {
    await buildProgram().parseAsync([...argv]);
    return ExitCode.ok;
  } catch (error) {
    return reportError(error);
  }
}

/** Waits until what was written to stdout and stderr has been handed to the OS. */
function flushed(): Promise<void> {
  const drain = (stream: NodeJS.WriteStream) => new Promise<void>((resolve) => (stream.writableLength === 0 ? resolve() : stream.write('', () => resolve())));
  return Promise.all([drain(process.stdout), drain(process.stderr)]).then(() => undefined);
}

// A reader that went away (`agentvisor logs -f | head`): wind down as on Ctrl-C, so `run` still stops its agent.
let readerGone = false;
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code !== 'EPIPE' || readerGone) return;
  readerGone = true;
  process.kill(process.pid, 'SIGINT');
});

const code = await main();
await flushed();
process.exit(code);
