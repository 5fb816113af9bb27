/**
 * The agent machine's `authenticate` actor: ACP `authenticate` with one of the agent's auth
 * methods, over its live connection, bounded: by the attempt's timeout on the supervisor's
 * clock (then it rejects `auth_timeout`, saying what the agent asked the person to do), by
 * its caller's AbortSignal (`aborted`), and by the actor being stopped — each cancels the
 * request (`$/cancel_request`). Rejects when the agent refuses, or has no connection; the
 * machine records the refusal (class auth) and stays parked in `needsAuth`.
 */
import { fromPromise } from 'xstate';
import type { ClientConnection } from '../core/acp-types.js';
import type { Clock } from '../core/clock.js';
import { agentFailure, failures, toError } from '../core/errors.js';
import type { AuthenticateInput } from '../machines/agent-events.js';
import { acpMethods } from '../services/acp-client.service.js';
import { deadline } from '../util/deadline.js';

/** One authenticate() as its callers bound it. */
export interface AuthenticationBounds {
  timeoutMs: number;
  /** Aborted when a caller gives up: the login is cancelled. */
  signal?: AbortSignal;
  /** What the agent asked the person to do meanwhile (URLs it wrote to stderr), for the timeout's message. */
  asked(): string[];
}

export interface AuthenticateDependencies {
  /** The agent's open connection, if it has one (usable or not yet published: authenticate runs before `connected`). */
  connectionOf(agent: string): ClientConnection | undefined;
  /** The bounds of the agent's authenticate() under way. */
  bounds(agent: string): AuthenticationBounds;
  displayName(agent: string): string;
  /** The supervisor's clock, for the timeout. */
  clock: Clock;
}

export function createAuthenticateActor(deps: AuthenticateDependencies) {
  return fromPromise<void, AuthenticateInput>(async ({ input, signal: stopped }) => {
    const connection = deps.connectionOf(input.agent);
    if (!connection) throw toError(input.agent, failures.notConnected(input.agent));
    const bounds = deps.bounds(input.agent);
    const name = deps.displayName(input.agent);
    const cancel = deadline(deps.clock, bounds.timeoutMs, () => timedOut(input, bounds, name), [
      { signal: bounds.signal, reason: () => agentFailure('aborted', input.agent, `authenticate() of ${name} with ${input.methodId} was aborted by its caller`) },
      { signal: stopped, reason: () => agentFailure('aborted', input.agent, `authenticate() of ${name} was stopped`) },
    ]);
    try {
      cancel.signal.throwIfAborted();
      // stopWaitingOnCancel: a login waiting for a person may never answer the cancel.
      await connection.agent.request(acpMethods.agent.authenticate, { methodId: input.methodId }, { cancellationSignal: cancel.signal, stopWaitingOnCancel: true });
    } catch (error) {
      // The connection closed under the request: the agent was lost, it did not refuse.
      if (connection.signal.aborted) throw toError(input.agent, failures.notConnected(input.agent));
      if (cancel.signal.aborted) throw cancel.signal.reason;
      throw error;
    } finally {
      cancel.clear();
    }
  });
}

/** `auth_timeout`, with what the agent asked the person to do when it said. */
function timedOut(input: AuthenticateInput, bounds: AuthenticationBounds, displayName: string) {
  const asked = bounds.asked();
  const what = asked.length > 0 ? `: it is waiting for a person — open ${asked.join(' or ')} to log in, then authenticate again` : ': it may be waiting for a person (a browser login)';
  return agentFailure('auth_timeout', input.agent, `${displayName} did not finish logging in with ${input.methodId} within ${bounds.timeoutMs} ms${what}`);
}
