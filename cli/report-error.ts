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

/** Prints what went wrong and returns the exit code. */
export function reportError(error: unknown, stderr: NodeJS.WriteStream = process.stderr): ExitCodeValue {
  if (error instanceof CommanderError) return commanderExit(error);
  const style = styleFor(stderr);
  const say = (message: string, hints: string[] = []) => {
    stderr.write(`${style.red('agentvisor:')} ${message}\n`);
    for (const hint of hints) stderr.write(`${style.dim(hint)}\n`);
  };
  if (error instanceof CliError) {
    say(error.message, error.hint ? [error.hint] : []);
    return error.exitCode;
  }
  if (isAgentError(error)) {
    say(error.message, agentHints(error));
    return exitCodeFor(error);
  }
  if (error instanceof ApiError) {
    const issues = error.issues.map((issue) => `  ${issue.path ? `${issue.path}: ` : ''}${issue.message}`);
    say(error.message, [...issues, ...agentHints(error), ...(error.kind === 'unauthorized' ? ['The daemon refused the token in daemon.token: is it a daemon of another state dir?'] : [])]);
    return exitCodeFor(error);
  }
  say(`internal error: ${error instanceof Error ? error.message : String(error)}`, process.env.AGENTVISOR_DEBUG && error instanceof Error && error.stack ? [error.stack] : []);
  return ExitCode.internal;
}

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

function agentHints(error: AgentFailureView): string[] {
  const hints: string[] = [];
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
  return hints;
}

/** Commander's own ends: help and version are success, every other is a usage error (it printed why). */
function commanderExit(error: CommanderError): ExitCodeValue {
  if (error.code === 'commander.helpDisplayed' || error.code === 'commander.version') return ExitCode.ok;
  if (error.exitCode === 0) return ExitCode.ok;
  return ExitCode.usage;
}
