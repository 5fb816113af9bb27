/**
 * The least state machine that decides a prompt turn, around a raw SDK session: the floor
 * of the turns benchmark (turns.bench.ts).
 *
 * agentvisor's session machine steps twice a turn: the prompt is accepted (or refused), and
 * the turn's end is turned into the caller's answer. This is the smallest XState machine
 * that does the same — two states, `ready --prompt--> running --turn.completed--> ready`;
 * the prompt's step keeps the caller's request id (one assign) and starts the turn (one
 * inline action), the end's step answers the caller by id (one emit). No status events, no
 * refusals, no permission or stall states, no store, no child actor. Whatever a design
 * with a machine per session adds to the raw SDK, it adds at least this; the benchmark
 * measures it side by side with the raw SDK and with agentvisor in the same rounds.
 *
 * The answer reaches the caller the way agentvisor's does: one listener per session routes
 * each answer to its caller by request id. {@link withTurnRouting} is the same wrapper
 * without the machine (the turn started and answered directly): the control, so that the
 * difference between the two is the machine's.
 */
import { assign, createActor, emit, setup } from 'xstate';
import type { UpdateSession } from './update-session.js';

interface LeastTurnContext {
  request: string | null;
  startTurn: (requestId: string, text: string) => void;
}

type LeastTurnEvent = { type: 'prompt'; requestId: string; text: string } | { type: 'turn.completed'; stopReason: string };

const leastTurnMachine = setup({
  types: {
    context: {} as LeastTurnContext,
    events: {} as LeastTurnEvent,
    input: {} as { startTurn: LeastTurnContext['startTurn'] },
    emitted: {} as { type: 'request.settled'; requestId: string; stopReason: string },
  },
}).createMachine({
  id: 'leastTurn',
  context: ({ input }) => ({ request: null, startTurn: input.startTurn }),
  initial: 'ready',
  states: {
    ready: {
      on: {
        prompt: {
          target: 'running',
          actions: [
            assign({ request: ({ event }) => event.requestId }),
            ({ context, event }) => context.startTurn(event.requestId, event.text),
          ],
        },
      },
    },
    running: {
      on: {
        'turn.completed': {
          target: 'ready',
          actions: emit(({ context, event }) => ({ type: 'request.settled' as const, requestId: context.request ?? '', stopReason: event.stopReason })),
        },
      },
    },
  },
});

type TurnOutcome = { stopReason: string } | { error: unknown };

/** Callers waiting for their turn's answer, by request id: the routing the floor and its control share. */
function answerRouting() {
  const callers = new Map<string, { resolve: (stopReason: string) => void; reject: (error: unknown) => void }>();
  let requests = 0;
  return {
    /** A new request's id; `settle` with that id answers the promise it returns. */
    open(): { requestId: string; answer: Promise<string> } {
      const requestId = `turn:${++requests}`;
      const answer = new Promise<string>((resolve, reject) => callers.set(requestId, { resolve, reject }));
      return { requestId, answer };
    },
    settle(requestId: string, outcome: TurnOutcome): void {
      const caller = callers.get(requestId);
      callers.delete(requestId);
      if ('stopReason' in outcome) caller?.resolve(outcome.stopReason);
      else caller?.reject(outcome.error);
    },
  };
}

/** `inner` with each prompt decided by the least turn machine (see the module comment). */
export function withLeastTurnMachine(inner: UpdateSession): UpdateSession {
  const routing = answerRouting();
  const actor = createActor(leastTurnMachine, {
    input: {
      startTurn: (requestId, text) => {
        inner.prompt(text).then(
          (stopReason) => actor.send({ type: 'turn.completed', stopReason }),
          // A failed turn fails the benchmark: its caller hears the error (no machine path for it here).
          (error: unknown) => routing.settle(requestId, { error }),
        );
      },
    },
  });
  actor.on('request.settled', ({ requestId, stopReason }) => routing.settle(requestId, { stopReason }));
  actor.start();
  return {
    on: (event, listener) => inner.on(event, listener),
    prompt: (text) => {
      const { requestId, answer } = routing.open();
      actor.send({ type: 'prompt', requestId, text });
      return answer;
    },
    close: async () => {
      actor.stop();
      await inner.close();
    },
  };
}

/** The control of {@link withLeastTurnMachine}: the same request ids and answer routing, no machine. */
export function withTurnRouting(inner: UpdateSession): UpdateSession {
  const routing = answerRouting();
  return {
    on: (event, listener) => inner.on(event, listener),
    prompt: (text) => {
      const { requestId, answer } = routing.open();
      inner.prompt(text).then(
        (stopReason) => routing.settle(requestId, { stopReason }),
        (error: unknown) => routing.settle(requestId, { error }),
      );
      return answer;
    },
    close: () => inner.close(),
  };
}
