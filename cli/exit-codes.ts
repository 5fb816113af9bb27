/**
 * The exit codes of `agentvisor` (docs/cli.md): one per thing a script may want to tell
 * apart, and the one function that turns a failure's kind and class into its code.
 */

/** Every exit code the CLI uses. */
export const ExitCode = {
  /** Done. */
  ok: 0,
  /** A bug, or something unexpected: the message says what. */
  internal: 1,
  /** Bad arguments, a bad config file, invalid input. */
  usage: 2,
  /** The agent's command is not installed (`not_installed`). */
  notInstalled: 3,
  /** The agent needs a login (`auth_required`, or a failure of class `auth`). */
  auth: 4,
  /** The agent failed: handshake, exit, protocol error, limits, restart intensity, ... */
  agentFailed: 5,
  /** No daemon runs for the state directory, or it cannot be reached. */
  noDaemon: 6,
  /** Interrupted by SIGINT. */
  interrupted: 130,
  /** Ended by SIGTERM (128 + 15, as a shell reports it). */
  terminated: 143,
} as const;

export type ExitCodeValue = (typeof ExitCode)[keyof typeof ExitCode];

/** What each exit code means, in the words `--help` prints them. */
const exitCodeMeanings: Record<keyof typeof ExitCode, string> = {
  ok: 'done',
  internal: 'internal error',
  usage: 'usage (bad arguments, config or input)',
  notInstalled: 'agent not installed',
  auth: 'authentication needed',
  agentFailed: 'the agent failed',
  noDaemon: 'no daemon running (or not reachable)',
  interrupted: 'interrupted (SIGINT)',
  terminated: 'terminated (SIGTERM)',
};

/** The exit codes, every one, as `agentvisor --help` ends. */
export function exitCodesHelp(): string {
  const lines = (Object.keys(ExitCode) as Array<keyof typeof ExitCode>).map((name) => `  ${String(ExitCode[name]).padStart(3)}  ${exitCodeMeanings[name]}`);
  return `\nExit codes (docs/cli.md):\n${lines.join('\n')}`;
}

/** Kinds that say the invocation was wrong: fixing the command line or the config fixes them. */
const usageKinds = new Set([
  'invalid_options',
  'unknown_agent',
  'invalid_request',
  'invalid_json',
  'payload_too_large',
  'session_not_found',
  'permission_not_found',
  'elicitation_not_found', // elicitations answer: no such request waits (answered, or its turn ended)
  'terminal_not_found', // a session's terminal it never had
  'orphan_not_found', // orphans --pid: a pid that is no leftover of a crashed supervisor
  'not_supported',
  'unsupported',
  'too_large',
  'daemon_running', // serve: a daemon already serves the state directory
  'address_unavailable', // serve: the port is taken, or the host is not this machine's
]);

/** The daemon's own refusals of this client: it is there, but not reachable for us. */
const unreachableKinds = new Set(['unauthorized', 'forbidden_host', 'forbidden_origin', 'shutting_down']);

/** Kinds that are a bug on one side or the other (the CLI and the daemon disagree). */
const internalKinds = new Set(['internal', 'not_found', 'method_not_allowed', 'unsupported_media_type', 'store_failed']);

/** Every kind by which an agent (or its session) failed. */
const agentKinds = new Set([
  'spawn_failed',
  'handshake_failed',
  'handshake_timeout',
  'agent_exited',
  'protocol_error',
  'restart_intensity',
  'workspace_failed',
  'limit_reached',
  'stopped',
  'session_busy',
  'session_closed',
]);

/**
 * The exit code of a failure, from an `AgentError`'s kind and class or an API error body's
 * (`{ kind, class }`). An unknown kind with a failure class is an agent's failure (5); one
 * without is internal (1).
 *
 * @example
 * exitCodeFor({ kind: 'not_installed' }); // 3
 * exitCodeFor({ kind: 'protocol_error', class: 'auth' }); // 4
 */
export function exitCodeFor(failure: { kind?: string | undefined; class?: string | undefined }): ExitCodeValue {
  const { kind = '' } = failure;
  if (kind === 'not_installed') return ExitCode.notInstalled;
  if (kind === 'auth_required' || kind === 'auth_timeout' || failure.class === 'auth') return ExitCode.auth;
  if (kind === 'aborted') return ExitCode.interrupted;
  if (usageKinds.has(kind)) return ExitCode.usage;
  if (unreachableKinds.has(kind)) return ExitCode.noDaemon;
  if (internalKinds.has(kind)) return ExitCode.internal;
  if (agentKinds.has(kind) || kind.startsWith('runtime_') || failure.class !== undefined) return ExitCode.agentFailed;
  return ExitCode.internal;
}
