/**
 * Prompt turns (`session/prompt`) over the agent's live connection, as the session machine's
 * `promptTurn` actor: a callback actor that lives as long as the session, so the machine can
 * tell it to start a turn, to cancel it (`session/cancel`) and still hear how it ended, or to
 * release it; when the session stops (closed, agent stopped), the actor's cleanup cancels a
 * turn in flight, once. Failures reach the machine as `turn.failed` with a classified kind,
 * never as raw SDK errors.
 *
 * It also watches each turn for stalls (no update for the session's `stallTimeoutMs`,
 * reported `turn.stalled`): a turn is watched from its start until it is answered or
 * released, the machine forwards the updates' `activity` and pauses the watch while a person
 * is asked (see {@link StallWatch}).
 */
import { fromCallback } from 'xstate';
import type { ClientConnection, ContentBlock } from '../core/acp-types.js';
import { clockNow, realClock, type Clock } from '../core/clock.js';
import { failures } from '../core/errors.js';
import { rpcErrorDetails } from '../core/rpc-error.js';
import type { PromptTurnCommand, PromptTurnInput, SessionEvent } from '../machines/session-events.js';
import { acpMethods, toRequestError, validatePromptResponse } from '../services/acp-client.service.js';
import { StallWatch } from './stall-watch.js';

export interface PromptTurnDependencies {
  /** The agent's usable connection, if it has one. */
  connectionOf(agent: string): ClientConnection | undefined;
  /** Answers `cancelled` to the session's pending permission requests (ACP asks this of a cancel). */
  cancelPermissions(agent: string, sessionId: string): void;
  /** Hears each turn: the prompt as it is sent, then how the turn ended (the store's transcript). */
  onTurn?(agent: string, sessionId: string, event: TurnEvent): void;
  /** The supervisor's clock: the stall watch's, and the time stamped on a failed turn (the real one by default). */
  clock?: Clock;
}

/** A turn as the transcript keeps it: the prompt sent, then its stop reason or its error. */
export type TurnEvent = { prompt: ContentBlock[] } | { stopReason: string } | { error: { kind: string; message: string } };

/**
 * Creates the `promptTurn` actor that session machines are provided with: one per session,
 * for its lifetime, running the turns it is told to `start` one at a time. A turn answered
 * after it was released (or after the next one started) is not reported: a late answer
 * must not reach a later turn of the same session.
 */
export function createPromptTurnActor(deps: PromptTurnDependencies) {
  return fromCallback<PromptTurnCommand, PromptTurnInput, SessionEvent>(({ input, sendBack, receive }) => {
    const { agent, sessionId } = input;
    /** The turn in flight: how to cancel it, and whether its answer is still wanted. */
    let current: { cancel(): void; released: boolean } | null = null;
    const clock = deps.clock ?? realClock;
    const stallWatch = new StallWatch(clock, input.stallTimeoutMs, () => sendBack({ type: 'turn.stalled' }));

    /** The turn in flight is cancelled and its answer no longer wanted. */
    const abandon = () => {
      if (!current) return;
      current.cancel();
      current.released = true;
      current = null;
    };
    /**
     * `release` (the agent was lost) and the session's end: the turn is abandoned and the
     * watch's timer cleared — no turn follows soon. A turn that completed leaves the timer to
     * lapse instead: the next turn likely comes first and reuses it.
     */
    const release = () => {
      abandon();
      stallWatch.stop();
    };

    const start = (prompt: Extract<PromptTurnCommand, { type: 'start' }>) => {
      abandon();
      const connection = deps.connectionOf(agent);
      if (!connection) {
        sendBack({ type: 'turn.failed', failure: failures.notConnected(agent) });
        return;
      }
      let settled = false;
      let cancelled = false;
      const turn = {
        released: false,
        cancel: () => {
          if (settled || cancelled) return;
          cancelled = true;
          if (!connection.signal.aborted) connection.agent.notify(acpMethods.agent.session.cancel, { sessionId }).catch(() => {});
          deps.cancelPermissions(agent, sessionId);
        },
      };
      current = turn;
      stallWatch.watch();
      deps.onTurn?.(agent, sessionId, { prompt: prompt.prompt });
      connection.agent.request(acpMethods.agent.session.prompt, { sessionId, prompt: prompt.prompt, ...(prompt.meta ? { _meta: prompt.meta } : {}) }).then(validatePromptResponse).then(
        (response) => {
          settled = true;
          if (current === turn) {
            current = null;
            stallWatch.pause();
          }
          deps.onTurn?.(agent, sessionId, { stopReason: response.stopReason });
          if (!turn.released) sendBack({ type: 'turn.completed', stopReason: response.stopReason });
        },
        (error: unknown) => {
          settled = true;
          if (current === turn) {
            current = null;
            stallWatch.stop(); // the session fails: no turn follows until it is resumed
          }
          const failure = toRequestError(agent, connection, error, 'session/prompt');
          deps.onTurn?.(agent, sessionId, { error: { kind: failure.kind, message: failure.message } });
          const at = clockNow(clock);
          if (!turn.released) sendBack({ type: 'turn.failed', failure: { kind: failure.kind, message: failure.message, ...rpcErrorDetails(error), at } });
        },
      );
    };

    receive((command) => {
      switch (command.type) {
        case 'start':
          return start(command);
        case 'cancel':
          return current?.cancel();
        case 'release':
          return release();
        case 'activity':
          return stallWatch.activity();
        case 'pauseStallWatch':
          return stallWatch.pause();
        case 'resumeStallWatch':
          if (current) stallWatch.watch();
          return;
      }
    });
    // The session stopped (closed, or its agent stopped): a turn still in flight is cancelled.
    return release;
  });
}
