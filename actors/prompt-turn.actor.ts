/**
 * A prompt turn (`session/prompt`) over the agent's live connection, as the session
 * machine's `promptTurn` actor. A callback actor, so the machine can tell it to cancel
 * (`session/cancel`) and still hear how the turn ended; when the machine leaves `prompting`
 * first (close, agent stopped), the actor's cleanup cancels the turn, once. Failures reach
 * the machine as `turn.failed` with a classified kind, never as raw SDK errors.
 */
import { fromCallback } from 'xstate';
import type { ClientConnection, ContentBlock } from '../core/acp-types.js';
import { failures } from '../core/errors.js';
import { rpcErrorDetails } from '../core/rpc-error.js';
import type { PromptTurnCommand, PromptTurnInput, SessionEvent } from '../machines/session-events.js';
import { acpMethods, toRequestError, validatePromptResponse } from '../services/acp-client.service.js';

export interface PromptTurnDependencies {
  /** The agent's usable connection, if it has one. */
  connectionOf(agent: string): ClientConnection | undefined;
  /** Answers `cancelled` to the session's pending permission requests (ACP asks this of a cancel). */
  cancelPermissions(agent: string, sessionId: string): void;
  /** Hears each turn: the prompt as it is sent, then how the turn ended (the store's transcript). */
  onTurn?(agent: string, sessionId: string, event: TurnEvent): void;
  /** The supervisor's clock (epoch ms), stamped on a failed turn. Date.now by default. */
  now?(): number;
}

/** A turn as the transcript keeps it: the prompt sent, then its stop reason or its error. */
export type TurnEvent = { prompt: ContentBlock[] } | { stopReason: string } | { error: { kind: string; message: string } };

/** Creates the `promptTurn` actor that session machines are provided with. */
export function createPromptTurnActor(deps: PromptTurnDependencies) {
  return fromCallback<PromptTurnCommand, PromptTurnInput, SessionEvent>(({ input, sendBack, receive }) => {
    const connection = deps.connectionOf(input.agent);
    if (!connection) {
      sendBack({ type: 'turn.failed', failure: failures.notConnected(input.agent) });
      return;
    }
    let settled = false;
    let cancelled = false;
    let released = false; // a late answer must not reach a later turn of the same session
    const cancel = () => {
      if (settled || cancelled) return;
      cancelled = true;
      if (!connection.signal.aborted) connection.agent.notify(acpMethods.agent.session.cancel, { sessionId: input.sessionId }).catch(() => {});
      deps.cancelPermissions(input.agent, input.sessionId);
    };
    deps.onTurn?.(input.agent, input.sessionId, { prompt: input.prompt });
    connection.agent.request(acpMethods.agent.session.prompt, { sessionId: input.sessionId, prompt: input.prompt, ...(input.meta ? { _meta: input.meta } : {}) }).then(validatePromptResponse).then(
      (response) => {
        settled = true;
        deps.onTurn?.(input.agent, input.sessionId, { stopReason: response.stopReason });
        if (!released) sendBack({ type: 'turn.completed', stopReason: response.stopReason });
      },
      (error: unknown) => {
        settled = true;
        const failure = toRequestError(input.agent, connection, error, 'session/prompt');
        deps.onTurn?.(input.agent, input.sessionId, { error: { kind: failure.kind, message: failure.message } });
        const at = (deps.now ?? Date.now)();
        if (!released) sendBack({ type: 'turn.failed', failure: { kind: failure.kind, message: failure.message, ...rpcErrorDetails(error), at } });
      },
    );
    receive((command) => {
      if (command.type === 'cancel') cancel();
    });
    return () => {
      cancel();
      released = true;
    };
  });
}
