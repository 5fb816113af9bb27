/**
 * How a failed command ends: its message (and what to do about it) on stderr, and the exit
 * code of cli/exit-codes.ts.
 */
import { CommanderError } from 'commander';
import { CliError } from './cli-error.js';
import { ApiError } from './daemon-client.js';
import { ExitCode, exitCodeFor, type ExitCodeValue } from './exit-codes.js';
import { isAgentError } from './library.js';
import { styleFor } from './output.js';

/** Agent failures whose last stderr lines help to see why. */
const showsStderr = new Set(['handshake_failed', 'handshake_timeout', 'agent_exited', 'spawn_failed', 'protocol_error', 'restart_intensity']);

/**
 * One failure as every command prints it (docs/cli.md, "Errors"): whichever way it came — the
 * CLI's own, the library's `AgentError` in this process, the same error relayed by the daemon
 * in its error body — it is told in one form.
 */
export interface ErrorReport {
  /** The first line, after `agentvisor: ` (a config's issues may follow on lines of their own). */
  message: string;
  /** What to do about it, a line each. */
  hints: string[];
  /** The library's or daemon's kind, else the CLI's own (see {@link cliKind}). */
  kind: string;
  exitCode: ExitCodeValue;
}

/** The CLI's own kinds, for the errors that are no library's or daemon's: by exit code. */
export const cliKind: Partial<Record<ExitCodeValue, string>> = {
  [ExitCode.internal]: 'internal',
  [ExitCode.usage]: 'usage',
  [ExitCode.noDaemon]: 'no_daemon',
  [ExitCode.interrupted]: 'interrupted',
  [ExitCode.terminated]: 'terminated',
};

/** What `error` says, in the one form every command prints. */
export function errorReport(error: unknown): ErrorReport {
  if (error instanceof CliError) {
    return { message: error.message, hints: error.hint ? [error.hint] : [], kind: error.kind ?? cliKind[error.exitCode] ?? 'internal', exitCode: error.exitCode };
  }
  // The library's error here, or the daemon's body of the same error: told alike.
  if (isAgentError(error) || error instanceof ApiError) {
    const issues = (error instanceof ApiError ? error.issues : []).map((issue) => `  ${issue.path ? `${issue.path}: ` : ''}${issue.message}`);
    const relayed = error instanceof ApiError;
    return {
      message: error.message,
      hints: [
        ...issues,
        ...agentHints(error, relayed),
        ...(error.kind === 'unauthorized' ? ['The daemon refused the token in daemon.token: is it a daemon of another state dir?'] : []),
      ],
      kind: error.kind,
      exitCode: exitCodeFor(error),
    };
  }
  return {
    message: `internal error: ${error instanceof Error ? error.message : String(error)}`,
    hints: process.env.AGENTVISOR_DEBUG && error instanceof Error && error.stack ? [error.stack] : [],
    kind: 'internal',
    exitCode: ExitCode.internal,
  };
}

/**
 * Prints what went wrong and returns the exit code: `agentvisor: <message>`, a line per hint,
 * then `kind: <kind> (exit <code>)`.
 */
export function reportError(error: unknown, stderr: NodeJS.WriteStream = process.stderr): ExitCodeValue {
  if (error instanceof CommanderError) return commanderExit(error, stderr);
  const report = errorReport(error);
  const style = styleFor(stderr);
  stderr.write(`${style.red('agentvisor:')} ${report.message}\n`);
  for (const hint of report.hints) stderr.write(`${style.dim(hint)}\n`);
  stderr.write(`${style.dim(kindLine(report))}\n`);
  return report.exitCode;
}

/** The last line of every error. */
export const kindLine = (report: Pick<ErrorReport, 'kind' | 'exitCode'>) => `kind: ${report.kind} (exit ${report.exitCode})`;

/** What to do about an agent's failure, and its last stderr lines when they say why. */
/** What an agent failure says, from the library (an AgentError) or through the daemon (its error body). */
interface AgentFailureView {
  kind: string;
  class?: string | undefined;
  agent?: string | undefined;
  authMethods?: Array<{ id: string; name: string }> | undefined;
  command?: string | undefined;
  installHint?: string | undefined;
  retryAt?: number | null | undefined;
  stderr: readonly string[];
}

function agentHints(error: AgentFailureView, relayed = false): string[] {
  const hints: string[] = [];
  if (error.kind === 'unknown_agent') hints.push(unknownAgentHint);
  if (error.kind === 'not_installed') {
    if (error.command) hints.push(`command not found: ${error.command}`);
    if (error.installHint) hints.push(`install it: ${error.installHint}`);
  }
  if (error.kind === 'auth_required' || error.class === 'auth') {
    const methods = (error.authMethods ?? []).map((method) => (method.name && method.name !== method.id ? `${method.id} (${method.name})` : method.id));
    hints.push(`log in with the agent's own command first, then try again${methods.length > 0 ? `; or pick one of its methods: ${methods.join(', ')}` : ''}`);
    if (methods.length > 0) hints.push(`  with \`agentvisor run --auth <method> ...\`, or \`agentvisor auth ${error.agent ?? '<agent>'} <method>\` for the daemon's agent`);
  }
  if (error.retryAt) hints.push(`the limit resets at ${new Date(error.retryAt).toLocaleString()}`);
  if (showsStderr.has(error.kind) && error.stderr.length > 0) hints.push('the agent wrote:', ...error.stderr.slice(-5).map((line) => `  ${line}`));
  // The daemon's error body carries no stderr: say where it is.
  else if (showsStderr.has(error.kind) && relayed && error.agent) hints.push(`what the agent wrote: \`agentvisor logs ${error.agent}\``);
  return hints;
}

/** The hint of `unknown_agent`, from whichever command. */
export const unknownAgentHint = 'the agents: `agentvisor ls` (the daemon\'s); `run` knows the presets and the config\'s';

/**
 * Commander's own ends: help and version are success, every other is a usage error. Commander
 * printed why, as `agentvisor: <message>` (the program's outputError, cli/main.ts): the kind
 * line follows.
 */
function commanderExit(error: CommanderError, stderr: NodeJS.WriteStream): ExitCodeValue {
  if (error.code === 'commander.helpDisplayed' || error.code === 'commander.version') return ExitCode.ok;
  if (error.exitCode === 0) return ExitCode.ok;
  stderr.write(`${styleFor(stderr).dim(kindLine({ kind: 'usage', exitCode: ExitCode.usage }))}\n`);
  return ExitCode.usage;
}

/** Commander's error text in the CLI's form: `agentvisor: <message>` instead of `error: <message>`. */
export function commanderErrorText(text: string): string {
  return text.replace(/^error: /, 'agentvisor: ');
}
