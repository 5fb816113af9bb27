/**
 * What a CLI in a pseudo-terminal is doing, inferred from its output and time alone
 * (docs/pty.md): starting → running ⇄ needsInput → stale, and exited with its code. A PTY
 * program has no protocol to say "I am waiting for you", so silence while the process lives
 * is taken to mean it waits for input. Pure: the two timers are the named delays
 * `needsInputTimeout` and `staleTimeout`, computed from context, so a SimulatedClock drives
 * them; every change of state is emitted as `activity`.
 */
import { assertEvent, assign, emit, setup, type StateValue } from 'xstate';

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
  exitCode: number | null;
  signal: string | null;
}

/** How the process ended, from `exited` (named, so each transition stays a literal Stately's parser reads). */
function exitOf({ event }: { event: PtyActivityEvent }) {
  assertEvent(event, 'exited');
  return { exitCode: event.exitCode, signal: event.signal };
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
    /** Emits `activity` on entering a state (a re-armed timer re-enters only running's child, unreported). */
    report: emit(({ context }, params: { state: PtyActivityState }) =>
      params.state === 'exited'
        ? { type: 'activity' as const, state: params.state, exitCode: context.exitCode, signal: context.signal }
        : { type: 'activity' as const, state: params.state },
    ),
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
      initial: 'silent',
      states: {
        silent: {
          description: 'The needsInput timer runs from the spawn.',
          after: {
            needsInputTimeout: { target: '#ptyActivity.needsInput', description: 'Silent since the spawn: waits for input without a prompt (or starts slowly).' },
          },
        },
      },
      on: {
        restarted: {
          target: '.silent',
          actions: 'clearExit',
          description: 'Replaced before it printed anything: the timer restarts (still starting, not reported again).',
        },
        output: { target: 'running', description: 'The first output.' },
        exited: { target: '#ptyActivity.exited', actions: { type: 'recordExit', params: exitOf }, description: 'Exited before printing anything.' },
      },
    },
    running: {
      description: 'Output is flowing: each chunk restarts the needsInput timer. Typing does not (a prompt waits while it is typed at).',
      entry: { type: 'report', params: { state: 'running' } },
      initial: 'flowing',
      states: {
        flowing: {
          description: 'The needsInput timer runs from the last chunk.',
          after: {
            needsInputTimeout: { target: '#ptyActivity.needsInput', description: 'No output for needsInputTimeoutMs while the process lives: it waits for input.' },
          },
          on: {
            output: { target: 'flowing', reenter: true, description: 'More output: restart the needsInput timer (running is not re-entered, nor reported again).' },
          },
        },
      },
      on: {
        exited: { target: '#ptyActivity.exited', actions: { type: 'recordExit', params: exitOf }, description: 'The process exited.' },
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
        exited: { target: '#ptyActivity.exited', actions: { type: 'recordExit', params: exitOf }, description: 'The process exited while silent.' },
      },
    },
    stale: {
      description: 'Waiting for input for staleTimeoutMs more: forgotten, or stuck. No timer runs here.',
      entry: { type: 'report', params: { state: 'stale' } },
      on: {
        output: { target: 'running', description: 'It printed again by itself.' },
        input: { target: 'running', description: 'Someone came back and answered.' },
        exited: { target: '#ptyActivity.exited', actions: { type: 'recordExit', params: exitOf }, description: 'The process exited (or was stopped) while stale.' },
      },
    },
    exited: {
      description: 'The process is gone (its exit code or signal in context); output and input are ignored. restarted starts over.',
      entry: { type: 'report', params: { state: 'exited' } },
    },
  },
});

/** The activity a snapshot's value stands for (`{ running: 'flowing' }` is running). */
export function activityOf(value: StateValue): PtyActivityState {
  return (typeof value === 'string' ? value : Object.keys(value)[0]) as PtyActivityState;
}
