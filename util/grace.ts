import { realClock, type Clock } from '../core/clock.js';

/** Waits for `promise`, but at most `ms` of real time; the timer never outlives the wait. */
export async function withinGrace<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
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
