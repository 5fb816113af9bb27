/**
 * One operation's cancel, in one signal: aborted when its time is up on a clock (the
 * supervisor's: a SimulatedClock in tests) or when any of the signals it follows aborts —
 * each with the reason it gives. `clear()` stops the timer and the listening; call it once
 * the operation is over.
 */
import type { Clock } from '../core/clock.js';

export interface Deadline {
  readonly signal: AbortSignal;
  clear(): void;
}

export function deadline(clock: Clock, ms: number, timedOut: () => unknown, follows: Array<{ signal: AbortSignal | undefined; reason: () => unknown }> = []): Deadline {
  const controller = new AbortController();
  const timer = clock.setTimeout(() => controller.abort(timedOut()), ms);
  const listeners = follows.flatMap(({ signal, reason }) => {
    if (!signal) return [];
    const onAbort = () => controller.abort(reason());
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
    return [() => signal.removeEventListener('abort', onAbort)];
  });
  return {
    signal: controller.signal,
    clear: () => {
      clock.clearTimeout(timer);
      for (const remove of listeners) remove();
    },
  };
}
