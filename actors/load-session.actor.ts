/**
 * Reopening a failed session on the agent's current connection, as the session machine's
 * `loadSession` actor: `session/resume` when the agent advertises it (nothing replayed: the
 * store already holds the transcript), else `session/load`. The session's state comes again
 * from the answer, and the choices its user made are re-applied before it resolves.
 * Rejects with a classified `AgentError`.
 */
import { fromPromise } from 'xstate';
import type { ClientConnection, InitializeResponse, McpServer } from '../core/acp-types.js';
import { failures, toError } from '../core/errors.js';
import type { LoadSessionInput } from '../machines/session-events.js';
import { reopenMethod, toRequestError, validateReopenAnswer, type SessionStateAnswer } from '../services/acp-client.service.js';

export interface LoadSessionDependencies {
  /** The agent's usable connection, if it has one. */
  connectionOf(agent: string): ClientConnection | undefined;
  /** What the agent's current connection advertised. */
  capabilitiesOf(agent: string): NonNullable<InitializeResponse['agentCapabilities']>;
  /** The parameters a session was opened with, for session/load or session/resume. */
  sessionParams(agent: string, sessionId: string): { cwd: string; mcpServers: McpServer[]; additionalDirectories?: string[]; _meta?: Record<string, unknown> } | undefined;
  /** Told when session/load starts replaying the session's history and when it is done. */
  replaying?(agent: string, sessionId: string, replaying: boolean): void;
  /** The agent answered: the session's state as it reports it now; resolves once the user's choices are set again. */
  reopened?(agent: string, sessionId: string, answer: SessionStateAnswer): Promise<void>;
}

/** Creates the `loadSession` actor that session machines are provided with. */
export function createLoadSessionActor(deps: LoadSessionDependencies) {
  return fromPromise<void, LoadSessionInput>(async ({ input }) => {
    const connection = deps.connectionOf(input.agent);
    if (!connection) throw toError(input.agent, failures.notConnected(input.agent));
    const params = deps.sessionParams(input.agent, input.sessionId);
    if (!params) throw toError(input.agent, failures.sessionClosed(input.sessionId));
    const method = reopenMethod(deps.capabilitiesOf(input.agent), 'resume');
    if (!method) throw toError(input.agent, failures.cannotLoadSessions(input.agent));
    const replays = method === 'session/load';
    if (replays) deps.replaying?.(input.agent, input.sessionId, true);
    let answer: SessionStateAnswer;
    try {
      answer = validateReopenAnswer(method, await connection.agent.request(method, { sessionId: input.sessionId, ...params }));
    } catch (error) {
      throw toRequestError(input.agent, connection, error, method);
    } finally {
      if (replays) deps.replaying?.(input.agent, input.sessionId, false);
    }
    await deps.reopened?.(input.agent, input.sessionId, answer);
  });
}
