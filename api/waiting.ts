/** Abort handling shared by the supervisor's and sessions' async methods. */
import { AgentError } from '../services/errors.js';

export function abortError(name: string, signal: AbortSignal): AgentError {
  return new AgentError('aborted', `Waiting for "${name}" was aborted`, { agent: name, cause: signal.reason });
}

/** Rejects with kind `aborted` when `signal` fires first; the underlying work goes on. */
export function abortable<T>(promise: Promise<T>, signal: AbortSignal | undefined, what: string): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.reject(abortError(what, signal));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(abortError(what, signal));
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
