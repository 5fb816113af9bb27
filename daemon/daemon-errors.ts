/**
 * The daemon's own failures, in one place: its kinds, their messages, and the daemon's only
 * `new AgentError(` (the library's are all in core/errors.ts). They are failures of
 * `agentvisor serve` (`startDaemon()`) itself before it serves — its state directory or its
 * address — never of an agent. `AgentError` stays the one error class: these kinds join
 * `AgentErrorKind` by declaration merging (`AgentErrorKindExtensions`), so `error.kind` is
 * typed for the daemon and the CLI, while a user of the library alone never sees them.
 */
import { AgentError } from '../core/errors.js';

/** Why `agentvisor serve` (`startDaemon()`) refused to start. */
export type DaemonErrorKind =
  /** Another live daemon already serves this state directory. */
  | 'daemon_running'
  /** The address to listen on is taken, or cannot be used (not this host's, needs privileges). */
  | 'address_unavailable';

declare module '../core/errors.js' {
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type -- its keys are the kinds it adds
  interface AgentErrorKindExtensions extends Record<DaemonErrorKind, true> {}
}

/** `daemon_running`: the daemon (pid, url) already serving `stateDir`. */
export function daemonRunning(stateDir: string, running: { pid: number; url: string }): AgentError {
  return new AgentError('daemon_running', `A daemon (pid ${running.pid}) already serves the state directory ${stateDir} at ${running.url}; stop it with \`agentvisor shutdown\` or use another --state-dir`);
}

/** `address_unavailable`: listening on `address` (host:port, as in a URL) failed with `error`. */
export function addressUnavailable(address: string, error: NodeJS.ErrnoException): AgentError {
  const why = error.code === 'EADDRINUSE' ? 'is already in use' : error.code === 'EADDRNOTAVAIL' ? 'is not an address of this host' : error.code === 'EACCES' ? 'needs privileges' : `failed (${error.message})`;
  return new AgentError('address_unavailable', `Cannot listen on ${address}: the address ${why}; pick another with --port or --host`, { cause: error });
}
