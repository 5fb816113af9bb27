/**
 * XState's clock interface (setTimeout/clearTimeout), as `createActor` takes it; written out
 * here (structurally the same) so that public types can name it.
 */
export interface Clock {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- XState's own signature
  setTimeout(fn: (...args: any[]) => void, timeout: number): any;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- XState's own signature
  clearTimeout(id: any): void;
}

/** The real clock, for timers that run beside XState's (permission timeouts). */
export const realClock: Clock = {
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (id) => clearTimeout(id as NodeJS.Timeout),
};
