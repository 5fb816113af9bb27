/**
 * Asking a machine and awaiting its answer: send an event with a fresh `requestId`, resolve
 * or reject with the one emitted event that carries it. The single way the facade waits on
 * a machine; every listener made here is removed when the promise settles.
 */
import { randomUUID } from 'node:crypto';
import type { AnyActorRef } from 'xstate';
import { abortedError, toError, type AgentFailure } from '../core/errors.js';
import { onAbort, requireSignal } from '../util/abort.js';

/** The emitted answer: `{ requestId, result }` with `result.ok` false carrying a failure. */
interface Answer<Ok> {
  requestId: string;
  result: ({ ok: true } & Ok) | { ok: false; failure: AgentFailure };
}

export interface RequestOptions {
  /** Stops the caller's wait (rejects `aborted`), not the work, unless `onAbort` says more. */
  signal?: AbortSignal;
  /** Runs when the signal fires, before the wait is rejected (e.g. cancel the turn instead). */
  onAbort?: () => void;
  /** With `onAbort`: keep waiting for the answer after the signal fired (the cancel decides it). */
  waitAfterAbort?: boolean;
  /** The request's id, when the caller follows other answers to it too (a turn's classification); a fresh one by default. */
  requestId?: string;
}

/**
 * Sends `event` plus a `requestId` to `actor` and settles with the `answerType` event that
 * carries it: resolves with the successful result, rejects with the failure as an AgentError.
 */
export function request<Ok extends object = object>(
  actor: AnyActorRef,
  answerType: string,
  event: { type: string; [key: string]: unknown },
  agent: string,
  options: RequestOptions = {},
): Promise<{ ok: true } & Ok> {
  const requestId = options.requestId ?? randomUUID();
  try {
    requireSignal(options.signal);
  } catch (error) {
    return Promise.reject(error as Error);
  }
  return new Promise((resolve, reject) => {
    const cleanups: Array<() => void> = [];
    let settled = false;
    const finish = (outcome: () => void) => {
      settled = true;
      for (const cleanup of cleanups.splice(0)) cleanup();
      outcome();
    };
    const subscription = actor.on(answerType, (answer: Answer<Ok>) => {
      if (answer.requestId !== requestId) return;
      const { result } = answer;
      if (result.ok) finish(() => resolve(result));
      else finish(() => reject(toError(agent, result.failure)));
    });
    cleanups.push(() => subscription.unsubscribe());
    if (options.signal?.aborted && !options.waitAfterAbort) return finish(() => reject(abortedError(agent, options.signal!)));
    actor.send({ ...event, requestId });
    if (settled) return; // answered at once
    cleanups.push(
      onAbort(options.signal, () => {
        options.onAbort?.();
        if (!options.waitAfterAbort) finish(() => reject(abortedError(agent, options.signal!)));
      }),
    );
  });
}
