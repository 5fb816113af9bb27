/**
 * Which failures the restart policy may retry. Auth and installation problems do not go
 * away by themselves, so retrying them would only spawn processes in a loop.
 */
import type { AgentErrorKind } from '../../services/errors.js';

const retryableKinds: ReadonlySet<AgentErrorKind> = new Set<AgentErrorKind>([
  'handshake_failed',
  'handshake_timeout',
  'agent_exited',
]);

/** True when an automatic restart may fix a failure of this kind. */
export function isRetryable(kind: AgentErrorKind): boolean {
  return retryableKinds.has(kind);
}

/**
 * The exact user-facing message for a failure of `kind` of the agent `displayName`.
 * These strings are part of the lifecycle contract (README, DESIGN): change them only
 * together with the docs.
 */
export function failureMessage(kind: AgentErrorKind, displayName: string): string {
  switch (kind) {
    case 'not_installed':
      return `Could not start ${displayName}. Check that it's installed.`;
    case 'spawn_failed':
      return `Could not start ${displayName}`;
    case 'handshake_failed':
    case 'handshake_timeout':
      return `Could not connect to ${displayName}`;
    case 'agent_exited':
      return `${displayName} exited unexpectedly`;
    case 'auth_required':
      return `${displayName} requires authentication`;
    default:
      return `${displayName}: ${kind.replace(/_/g, ' ')}`;
  }
}
