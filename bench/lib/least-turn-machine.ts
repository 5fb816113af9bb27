/**
 * The least state machine that decides a prompt turn, around a raw SDK session: the floor
 * of the turns benchmark (turns.bench.ts, measured in a process of its own by
 * turn-floor.child.ts).
 *
 * agentvisor's session machine steps twice a turn: the prompt is accepted (or refused), and
 * the turn's end is turned into the caller's answer. This is the smallest XState machine
 * that does the same — two states, `ready --prompt--> running --turn.completed|turn.failed-->
 * ready` — and each of its transitions runs one inline action: the prompt's starts the turn,
 * the end's answers the caller. Its context holds only those two effects and is never
 * assigned (the request id travels in the events); no emitted events, no status, permission
 * or stall states, store or child actor; a prompt while a turn runs is refused at once (off
 * the measured path: the benchmark's sessions prompt one turn at a time). What an XState
 * machine stepping at each turn's start and end adds to the raw SDK, it adds at least this.
 *
 * {@link withTurnRouting} is the same wrapper without the machine (the turn started and
 * answered directly): the control, so that the difference between the two is the machine's.
 * Both count the answers they give, so that a run can check every turn went through them.
 */
import { createActor, setup } from 'xstate';
import type { UpdateSession } from './update-session.js';

type TurnOutcome = { stopReason: string } | { error: unknown };

type LeastTurnEvent =
  | { type: 'prompt'; requestId: string; text: string }
  | { type: 'turn.completed'; requestId: string; stopReason: string }
  | { type: 'turn.failed'; requestId: string; error: unknown };

interface LeastTurnEffects {
  startTurn(requestId: string, text: string): void;
  answer(requestId: string, outcome: TurnOutcome): void;
}

const leastTurnMachine = setup({
  types: { events: {} as LeastTurnEvent, input: {} as LeastTurnEffects, context: {} as LeastTurnEffects },
}).createMachine({
  id: 'leastTurn',
  context: ({ input }) => input,
  initial: 'ready',
  states: {
    ready: {
      on: {
        prompt: { target: 'running', actions: ({ context, event }) => context.startTurn(event.requestId, event.text) },
      },
    },
    running: {
      on: {
        prompt: { actions: ({ context, event }) => context.answer(event.requestId, { error: new Error('a turn is already running on this session') }) },
        'turn.completed': { target: 'ready', actions: ({ context, event }) => context.answer(event.requestId, { stopReason: event.stopReason }) },
        'turn.failed': { target: 'ready', actions: ({ context, event }) => context.answer(event.requestId, { error: event.error }) },
      },
    },
  },
});

/** Callers waiting for their turn's answer, by request id: the routing the floor and its control share. */
function answerRouting() {
  const callers = new Map<string, { resolve: (stopReason: string) => void; reject: (error: unknown) => void }>();
  let requests = 0;
  const routing = {
    /** A new request's id; `settle` with that id answers the promise it returns. */
    open(): { requestId: string; answer: Promise<string> } {
      const requestId = `turn:${++requests}`;
      const answer = new Promise<string>((resolve, reject) => callers.set(requestId, { resolve, reject }));
      return { requestId, answer };
    },
    settle(requestId: string, outcome: TurnOutcome): void {
      const caller = callers.get(requestId);
      if (!caller) return;
      callers.delete(requestId);
      if ('stopReason' in outcome) caller.resolve(outcome.stopReason);
      else caller.reject(outcome.error);
    },
  };
  return routing;
}

/** An UpdateSession that also says how many answers it gave (the floor's: how many its machine gave). */
export interface CountedSession extends UpdateSession {
  answers(): number;
}

/** `inner` with each prompt decided by the least turn machine (see the module comment). */
export function withLeastTurnMachine(inner: UpdateSession): CountedSession {
  const routing = answerRouting();
  let machineAnswers = 0;
  const actor = createActor(leastTurnMachine, {
    input: {
      startTurn: (requestId, text) => {
        inner.prompt(text).then(
          (stopReason) => actor.send({ type: 'turn.completed', requestId, stopReason }),
          (error: unknown) => actor.send({ type: 'turn.failed', requestId, error }),
        );
      },
      answer: (requestId, outcome) => {
        machineAnswers++;
        routing.settle(requestId, outcome);
      },
    },
  });
  actor.start();
  return {
    on: (event, listener) => inner.on(event, listener),
    prompt: (text) => {
      const { requestId, answer } = routing.open();
      actor.send({ type: 'prompt', requestId, text });
      return answer;
    },
    answers: () => machineAnswers,
    close: async () => {
      actor.stop();
      await inner.close();
    },
  };
}

/** The control of {@link withLeastTurnMachine}: the same request ids and answer routing, no machine. */
export function withTurnRouting(inner: UpdateSession): CountedSession {
  const routing = answerRouting();
  let answers = 0;
  const answer = (requestId: string, outcome: TurnOutcome) => {
    answers++;
    routing.settle(requestId, outcome);
  };
  return {
    on: (event, listener) => inner.on(event, listener),
    prompt: (text) => {
      const opened = routing.open();
      inner.prompt(text).then(
        (stopReason) => answer(opened.requestId, { stopReason }),
        (error: unknown) => answer(opened.requestId, { error }),
      );
      return opened.answer;
    },
    answers: () => answers,
    close: () => inner.close(),
  };
}
