/**
 * Which failures the restart policy may retry. Auth and installation problems do not go
 * away by themselves, so retrying them would only spawn processes in a loop.
 */
import type { AgentErrorKind } from '../../core/errors.js';

const retryableKinds: ReadonlySet<AgentErrorKind> = new Set<AgentErrorKind>([
  'handshake_failed',
  'handshake_timeout',
  'agent_exited',
  // A remote host or its link down: it may come back (a dropped connection is an agent lost, reconnected by policy).
  'runtime_unreachable',
]);

/** True when an automatic restart may fix a failure of this kind. */
export function isRetryable(kind: AgentErrorKind): boolean {
  return retryableKinds.has(kind);
}
