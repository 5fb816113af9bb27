/**
 * The agent machine's `authenticate` actor: ACP `authenticate` with one of the agent's auth
 * methods, over its live connection. Rejects when the agent refuses, or has no connection;
 * the machine records the refusal (class auth) and stays parked in `needsAuth`.
 */
import { fromPromise } from 'xstate';
import type { ClientConnection } from '../core/acp-types.js';
import { failures, toError } from '../core/errors.js';
import type { AuthenticateInput } from '../machines/agent-events.js';
import { acpMethods } from '../services/acp-client.service.js';

export interface AuthenticateDependencies {
  /** The agent's open connection, if it has one (usable or not yet published: authenticate runs before `connected`). */
  connectionOf(agent: string): ClientConnection | undefined;
}

export function createAuthenticateActor(deps: AuthenticateDependencies) {
  return fromPromise<void, AuthenticateInput>(async ({ input }) => {
    const connection = deps.connectionOf(input.agent);
    if (!connection) throw toError(input.agent, failures.notConnected(input.agent));
    try {
      await connection.agent.request(acpMethods.agent.authenticate, { methodId: input.methodId });
    } catch (error) {
      // The connection closed under the request: the agent was lost, it did not refuse.
      if (connection.signal.aborted) throw toError(input.agent, failures.notConnected(input.agent));
      throw error;
    }
  });
}
