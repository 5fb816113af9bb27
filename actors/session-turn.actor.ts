/**
 * The session machine's effects: a prompt turn (`session/prompt`) and a resume
 * (`session/load`), as promise actors over the agent's live connection. Leaving the
 * `prompting` state stops the turn actor, whose abort sends `session/cancel`.
 * Failures are thrown as `AgentError`s with a classified kind, never as raw SDK errors.
 */
import { fromPromise } from 'xstate';
import type { LoadSessionInput, PromptTurnInput, PromptTurnOutput } from '../machines/session-events.js';
import { acpErrorCode, acpMethods, type ClientConnection, type McpServer } from '../services/acp-client.service.js';
import { AgentError } from '../services/errors.js';
import type { LiveConnections } from './live-connections.js';

export interface SessionActorDependencies {
  connections: LiveConnections;
  /** The parameters a session was opened with, for session/load. */
  sessionParams(agent: string, sessionId: string): { cwd: string; mcpServers: McpServer[]; additionalDirectories?: string[] } | undefined;
}

/** Creates the `promptTurn` and `loadSession` actors that session machines are provided with. */
export function createSessionActors(deps: SessionActorDependencies) {
  const liveConnection = (agent: string): ClientConnection => {
    const live = deps.connections.get(agent);
    if (!live) throw new AgentError('agent_exited', `Agent "${agent}" is not connected`, { agent });
    return live.connection;
  };

  const promptTurn = fromPromise<PromptTurnOutput, PromptTurnInput>(async ({ input, signal }) => {
    const connection = liveConnection(input.agent);
    let settled = false;
    const cancel = () => {
      if (!settled && !connection.signal.aborted) {
        connection.agent.notify(acpMethods.agent.session.cancel, { sessionId: input.sessionId }).catch(() => {});
      }
    };
    signal.addEventListener('abort', cancel, { once: true });
    try {
      const response = await connection.agent.request(acpMethods.agent.session.prompt, { sessionId: input.sessionId, prompt: input.prompt });
      return { stopReason: response.stopReason };
    } catch (error) {
      throw classify(input.agent, connection, error, 'session/prompt');
    } finally {
      settled = true;
      signal.removeEventListener('abort', cancel);
    }
  });

  const loadSession = fromPromise<void, LoadSessionInput>(async ({ input }) => {
    const connection = liveConnection(input.agent);
    const params = deps.sessionParams(input.agent, input.sessionId);
    if (!params) throw new AgentError('session_closed', `Session ${input.sessionId} is unknown`, { agent: input.agent });
    try {
      await connection.agent.request(acpMethods.agent.session.load, { sessionId: input.sessionId, ...params });
    } catch (error) {
      throw classify(input.agent, connection, error, 'session/load');
    }
  });

  return { promptTurn, loadSession };
}

/** A closed connection means the agent died; anything else is the agent's error answer. */
export function classify(agent: string, connection: ClientConnection, error: unknown, request: string): AgentError {
  if (error instanceof AgentError) return error;
  if (connection.signal.aborted) {
    return new AgentError('agent_exited', `Agent "${agent}" exited during ${request}`, { agent, cause: error });
  }
  const code = acpErrorCode(error);
  const message = error instanceof Error ? error.message : String(error);
  return new AgentError(code === -32000 ? 'auth_required' : 'protocol_error', `${request} failed: ${message}`, { agent, cause: error });
}
