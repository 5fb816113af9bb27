/** XState's clock interface (setTimeout/clearTimeout), as `createActor` takes it. */
import type { ActorOptions, AnyActorLogic } from 'xstate';

export type Clock = NonNullable<ActorOptions<AnyActorLogic>['clock']>;

/** The real clock, for timers that run beside XState's (permission timeouts). */
export const realClock: Clock = {
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (id) => clearTimeout(id as NodeJS.Timeout),
};
