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
export interface Answer<Ok = object> {
  requestId: string;
  result: ({ ok: true } & Ok) | { ok: false; failure: AgentFailure };
}

/**
 * Where answers to one actor's requests are heard: `listen(requestId, handler)` until the
 * returned function is called. The default is a listener of the actor's own per request; an
 * actor asked often (a session, once a turn) keeps one listener and routes by request id.
 */
export interface AnswerSource {
  listen(requestId: string, handler: (answer: Answer) => void): () => void;
}

/**
 * The answer source of an actor asked often: its one listener calls `deliver` with every
 * answer the actor emits, and each is handed to the request waiting for that id (if any).
 */
export class AnswerRouter implements AnswerSource {
  private readonly waiting = new Map<string, (answer: Answer) => void>();

  listen(requestId: string, handler: (answer: Answer) => void): () => void {
    this.waiting.set(requestId, handler);
    return () => this.waiting.delete(requestId);
  }

  deliver(answer: Answer): void {
    this.waiting.get(answer.requestId)?.(answer);
  }

  /** How many requests wait for their answer. */
  get pending(): number {
    return this.waiting.size;
  }
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
  /** Hears the answer (an actor's listener for this request by default). */
  answers?: AnswerSource;
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
    const answered = ({ result }: Answer) => {
      if (result.ok) finish(() => resolve(result as { ok: true } & Ok));
      else finish(() => reject(toError(agent, result.failure)));
    };
    if (options.answers) cleanups.push(options.answers.listen(requestId, answered));
    else {
      const subscription = actor.on(answerType, (answer: Answer) => answer.requestId === requestId && answered(answer));
      cleanups.push(() => subscription.unsubscribe());
    }
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
