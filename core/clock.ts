/**
 * XState's clock interface (setTimeout/clearTimeout), as `createActor` takes it; written out
 * here (structurally the same) so that public types can name it.
 */
export interface Clock {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- XState's own signature
  setTimeout(fn: (...args: any[]) => void, timeout: number): any;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- XState's own signature
  clearTimeout(id: any): void;
  /** The clock's time (epoch ms; XState's SimulatedClock has it, from 0): what failures are stamped with. */
  now?(): number;
}

/** The real clock, for timers that run beside XState's (permission timeouts). */
export const realClock: Clock = {
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (id) => clearTimeout(id as NodeJS.Timeout),
  now: () => Date.now(),
};

/** The time on `clock`: its own `now()` (a SimulatedClock's), else the real time. */
export function clockNow(clock: Clock): number {
  return typeof clock.now === 'function' ? clock.now() : Date.now();
}
