import { realClock, type Clock } from '../core/clock.js';

/** What a grace's end rejects with inside {@link withinGrace} (never seen outside it). */
const graceOver = new Error('the grace is over');

/** Waits for `promise`, but at most `ms` of real time (then undefined); the timer never outlives the wait. */
export function withinGrace<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  return bounded<T | undefined>(promise, ms, () => graceOver).catch((error: unknown) => {
    if (error === graceOver) return undefined;
    throw error;
  });
}

/**
 * Waits for `promise`, but at most `ms` on `clock` (real time by default): past it, rejects with
 * what `timedOut` makes. The timer never outlives the wait; `promise` itself runs on, and what
 * it resolves with after the bound goes to `disposeLate` (a stream to close, a process to end:
 * nobody waits for it any more).
 */
export async function bounded<T>(promise: Promise<T>, ms: number, timedOut: () => Error, clock: Clock = realClock, disposeLate?: (late: T) => void): Promise<T> {
  let timer: unknown;
  let late = false;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = clock.setTimeout(() => {
      late = true;
      reject(timedOut());
    }, ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } catch (error) {
    if (late && disposeLate) promise.then(disposeLate, () => {});
    throw error;
  } finally {
    clock.clearTimeout(timer);
  }
}
