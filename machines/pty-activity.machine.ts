/**
 * What a CLI in a pseudo-terminal is doing, inferred from its output and time alone
 * (docs/pty.md): starting → running ⇄ needsInput → stale, and exited with its code. A PTY
 * program has no protocol to say "I am waiting for you", so silence while the process lives
 * is taken to mean it waits for input. Pure: the two timers are the named delays
 * `needsInputTimeout` and `staleTimeout`, computed from context, so a SimulatedClock drives
 * them; every change of state is emitted as `activity`.
 */
import { assign, enqueueActions, setup } from 'xstate';

export const defaultNeedsInputTimeoutMs = 5_000;
export const defaultStaleTimeoutMs = 60_000;

export type PtyActivityState = 'starting' | 'running' | 'needsInput' | 'stale' | 'exited';

export interface PtyActivityInput {
  /** Silence (no output) after which a live process is taken to wait for input. Default 5000. */
  needsInputTimeoutMs?: number;
  /** Time in needsInput after which nobody is taken to be answering. Default 60000. */
  staleTimeoutMs?: number;
}

export type PtyActivityEvent =
  /** The process printed something (any bytes, escape sequences included). */
  | { type: 'output' }
  /** Someone typed into the terminal. */
  | { type: 'input' }
  /** The process exited (and its group is gone). */
  | { type: 'exited'; exitCode: number | null; signal: string | null }
  /** A new process was spawned in its place. */
  | { type: 'restarted' };

/** Emitted on every change of state (not when a timer is merely re-armed). */
export interface PtyActivityEmitted {
  type: 'activity';
  state: PtyActivityState;
  /** With state `exited`: how the process ended. */
  exitCode?: number | null;
  signal?: string | null;
}

export interface PtyActivityContext {
  needsInputTimeoutMs: number;
  staleTimeoutMs: number;
  /** The state last reported; null before the first. */
  reported: PtyActivityState | null;
  exitCode: number | null;
  signal: string | null;
}

export const ptyActivityMachine = setup({
  types: {
    context: {} as PtyActivityContext,
    events: {} as PtyActivityEvent,
    input: {} as PtyActivityInput,
    emitted: {} as PtyActivityEmitted,
  },
  delays: {
    needsInputTimeout: ({ context }) => context.needsInputTimeoutMs,
    staleTimeout: ({ context }) => context.staleTimeoutMs,
  },
  actions: {
    /** Emits `activity` when the state differs from the one last reported (re-entering running does not). */
    report: enqueueActions(({ enqueue, context }, params: { state: PtyActivityState }) => {
      if (context.reported === params.state) return;
      enqueue.assign({ reported: params.state });
      enqueue.emit(
        params.state === 'exited'
          ? { type: 'activity', state: params.state, exitCode: context.exitCode, signal: context.signal }
          : { type: 'activity', state: params.state },
      );
    }),
    recordExit: assign({
      exitCode: (_, params: { exitCode: number | null; signal: string | null }) => params.exitCode,
      signal: (_, params: { exitCode: number | null; signal: string | null }) => params.signal,
    }),
    clearExit: assign({ exitCode: null, signal: null }),
  },
}).createMachine({
  id: 'ptyActivity',
  description: 'What a CLI in a pseudo-terminal is doing, inferred from its output and time.',
  context: ({ input }) => ({
    needsInputTimeoutMs: input.needsInputTimeoutMs ?? defaultNeedsInputTimeoutMs,
    staleTimeoutMs: input.staleTimeoutMs ?? defaultStaleTimeoutMs,
    reported: null,
    exitCode: null,
    signal: null,
  }),
  initial: 'starting',
  on: {
    restarted: {
      target: '.starting',
      actions: 'clearExit',
      description: 'A new process replaced the old one (after its exit, normally): start over; the timer restarts.',
    },
  },
  states: {
    starting: {
      description: 'Spawned, nothing printed yet. Typing here changes nothing: the echo, if any, arrives as output.',
      entry: { type: 'report', params: { state: 'starting' } },
      after: {
        needsInputTimeout: { target: 'needsInput', description: 'Silent since the spawn: waits for input without a prompt (or starts slowly).' },
      },
      on: {
        output: { target: 'running', description: 'The first output.' },
        exited: exit('Exited before printing anything.'),
      },
    },
    running: {
      description: 'Output is flowing: each chunk restarts the needsInput timer. Typing does not (a prompt waits while it is typed at).',
      entry: { type: 'report', params: { state: 'running' } },
      after: {
        needsInputTimeout: { target: 'needsInput', description: 'No output for needsInputTimeoutMs while the process lives: it waits for input.' },
      },
      on: {
        output: { target: 'running', reenter: true, description: 'More output: restart the needsInput timer.' },
        exited: exit('The process exited.'),
      },
    },
    needsInput: {
      description: 'Silent for needsInputTimeoutMs, process alive: presumably waiting for someone to answer.',
      entry: { type: 'report', params: { state: 'needsInput' } },
      after: {
        staleTimeout: { target: 'stale', description: 'Nobody answered for staleTimeoutMs.' },
      },
      on: {
        output: { target: 'running', description: 'It printed again by itself.' },
        input: { target: 'running', description: 'Someone answered: the process is expected to work (needsInput again if it stays silent).' },
        exited: exit('The process exited while silent.'),
      },
    },
    stale: {
      description: 'Waiting for input for staleTimeoutMs more: forgotten, or stuck. No timer runs here.',
      entry: { type: 'report', params: { state: 'stale' } },
      on: {
        output: { target: 'running', description: 'It printed again by itself.' },
        input: { target: 'running', description: 'Someone came back and answered.' },
        exited: exit('The process exited (or was stopped) while stale.'),
      },
    },
    exited: {
      description: 'The process is gone (its exit code or signal in context); output and input are ignored. restarted starts over.',
      entry: { type: 'report', params: { state: 'exited' } },
    },
  },
});

/** `exited` from a live state: record how, report it. */
function exit(description: string) {
  return {
    target: '#ptyActivity.exited',
    actions: {
      type: 'recordExit',
      params: ({ event }: { event: Extract<PtyActivityEvent, { type: 'exited' }> }) => ({ exitCode: event.exitCode, signal: event.signal }),
    },
    description,
  } as const;
}
