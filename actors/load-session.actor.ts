/**
 * Resuming a session (`session/load`) on the agent's current connection, as the session
 * machine's `loadSession` actor. Rejects with a classified `AgentError`.
 */
import { fromPromise } from 'xstate';
import type { ClientConnection, McpServer } from '../core/acp-types.js';
import { failures, toError } from '../core/errors.js';
import type { LoadSessionInput } from '../machines/session-events.js';
import { acpMethods, toRequestError } from '../services/acp-client.service.js';

export interface LoadSessionDependencies {
  /** The agent's usable connection, if it has one. */
  connectionOf(agent: string): ClientConnection | undefined;
  /** The parameters a session was opened with, for session/load. */
  sessionParams(agent: string, sessionId: string): { cwd: string; mcpServers: McpServer[] } | undefined;
  /** Told when session/load starts replaying the session's history and when it is done. */
  replaying?(agent: string, sessionId: string, replaying: boolean): void;
}

/** Creates the `loadSession` actor that session machines are provided with. */
export function createLoadSessionActor(deps: LoadSessionDependencies) {
  return fromPromise<void, LoadSessionInput>(async ({ input }) => {
    const connection = deps.connectionOf(input.agent);
    if (!connection) throw toError(input.agent, failures.notConnected(input.agent));
    const params = deps.sessionParams(input.agent, input.sessionId);
    if (!params) throw toError(input.agent, failures.sessionClosed(input.sessionId));
    deps.replaying?.(input.agent, input.sessionId, true);
    try {
      await connection.agent.request(acpMethods.agent.session.load, { sessionId: input.sessionId, ...params });
    } catch (error) {
      throw toRequestError(input.agent, connection, error, 'session/load');
    } finally {
      deps.replaying?.(input.agent, input.sessionId, false);
    }
  });
}
