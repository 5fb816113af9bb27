/** Abort handling for every async method that takes `{ signal }`: written once, here. */
import { abortedError, invalidOptions } from '../core/errors.js';

/** Throws `invalid_options` unless `signal` is absent or an AbortSignal (a caller's `{ signal }`). */
export function requireSignal(signal: unknown): asserts signal is AbortSignal | undefined {
  if (signal !== undefined && !(signal instanceof AbortSignal)) throw invalidOptions(`Option signal must be an AbortSignal, got ${typeof signal}`);
}

/**
 * Rejects with kind `aborted` when `signal` fires first; the underlying work goes on (other
 * callers may share it). The listener is removed whichever settles first.
 */
export function abortable<T>(promise: Promise<T>, signal: AbortSignal | undefined, what: string): Promise<T> {
  requireSignal(signal);
  if (!signal) return promise;
  if (signal.aborted) return Promise.reject(abortedError(what, signal));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(abortedError(what, signal));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

/** Calls `onAbort` once if `signal` fires; returns the function that stops listening. */
export function onAbort(signal: AbortSignal | undefined, onAbort: () => void): () => void {
  requireSignal(signal);
  if (!signal) return () => {};
  if (signal.aborted) {
    onAbort();
    return () => {};
  }
  signal.addEventListener('abort', onAbort, { once: true });
  return () => signal.removeEventListener('abort', onAbort);
}
