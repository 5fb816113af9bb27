/**
 * What a pty agent's terminal must say its CLI is doing (docs/pty.md, "Activity") as a
 * *model* machine for `createTestModel` from `xstate/graph`. It is not the runtime machine
 * (machines/pty-activity.machine.ts): it has no `invoke` and no `after`, so every outside
 * stimulus — the CLI getting going, a line typed and answered, input the CLI does not
 * answer, output that comes by itself, a timer elapsing on the supervisor's clock, the
 * process exiting, the agent restarted — is an event here.
 * tests/model/pty-activity.model.test.ts causes each event for real on a supervisor with one
 * `protocol: 'pty'` agent running tests/fixtures/interactive-cli.mjs in a real PTY, and
 * checks every state against `supervisor.terminal('cli').activity` and the `pty:activity`
 * events.
 *
 * Each transition names the `pty:activity` events it must produce with `emits`: the states,
 * in order, `exited` written as `exitedWithCode3` (with its exit code and signal).
 *
 * What the real system does and the model therefore says:
 * - A PTY echoes what is typed, so typing always makes output. Typing in `running` changes
 *   nothing visible; typing in `needsInput` or `stale` is input (→ running), and what the CLI
 *   prints back keeps it running. Typing `fail` there reports `running`, then `exited`.
 * - Output without input needs something the CLI does by itself: `later <ms>` typed while
 *   running (SCHEDULES_LATER) prints `later done` ms of real time later (PRINTS_BY_ITSELF).
 *   While it is pending, only the timers and that output happen (`laterPending`), so the
 *   late output cannot interleave with anything else the path types.
 * - `starting` is held by a start gate in front of the CLI (the harness's `--import`
 *   module, `gated`): the CLI prints its banner (BANNER), stays silent (SILENCE_ELAPSES) or
 *   exits before printing anything (EXITS) when the harness says so. A CLI that stays gated
 *   through needsInput and stale is a slow starter: its banner there is output by itself,
 *   and its exit comes without input. Nothing is typed at a gated CLI (the terminal would
 *   echo it and queue it for the CLI).
 * - `exited` lasts while the agent waits out its restart backoff: there, time passing is
 *   RESTARTS (the backoff elapses), and `reconnect()` is RECONNECTS. Both start over in
 *   `starting` (a new process, held by the gate again).
 * - In `stale` no timer runs: STALE_ELAPSES there changes nothing.
 * - After a restart (`restarted`) every state is walked again on the new process.
 */
import { assign, setup } from 'xstate';

export interface PtyActivityModelContext {
  /**
   * The process is held at the start gate: it runs but has not started the CLI, so it prints
   * nothing and reads nothing (typing would only be echoed by the terminal and queued for
   * later, so the model does not type then). Set in `starting`; BANNER clears it.
   */
  gated: boolean;
  /** `later` was typed and has not printed yet: its output comes by itself, in real time. */
  laterPending: boolean;
  /**
   * An earlier process exited and this one replaced it: the activity machine came back
   * through `restarted`, and the scrollback holds a separator. Every state is walked again
   * in this world (once: the flag stays, so the model stays finite).
   */
  restarted: boolean;
}

export type PtyActivityModelEvent =
  | { type: 'BANNER' }
  | { type: 'PRINTS' }
  | { type: 'TYPES_TO_SILENT' }
  | { type: 'SCHEDULES_LATER' }
  | { type: 'PRINTS_BY_ITSELF' }
  | { type: 'SILENCE_ELAPSES' }
  | { type: 'STALE_ELAPSES' }
  | { type: 'EXITS' }
  | { type: 'RESTARTS' }
  | { type: 'RECONNECTS' };

export const ptyActivityModelEvents: Array<PtyActivityModelEvent['type']> = [
  'BANNER', 'PRINTS', 'TYPES_TO_SILENT', 'SCHEDULES_LATER', 'PRINTS_BY_ITSELF', 'SILENCE_ELAPSES', 'STALE_ELAPSES', 'EXITS', 'RESTARTS', 'RECONNECTS',
];

/** The model states, which are also the `activity` the terminal must report in them. */
export const ptyActivityModelStates = ['starting', 'running', 'needsInput', 'stale', 'exited'] as const;

/** How a `pty:activity` event for `exited` is written in traces: exit code 3 (`fail`), no signal. */
export const exitedWithCode3 = 'exited(exitCode 3, signal null)';

/** `emits` action params: the `pty:activity` states, in order. */
const emits = (...trace: string[]) => ({ type: 'emits' as const, params: { trace } });

/** What a needsInput or stale terminal (the CLI silent, the process alive) can be told or do. */
const silentAndAlive = {
  BANNER: {
    guard: 'gated' as const,
    target: '#ptyActivityModel.running',
    actions: ['started' as const, emits('running')],
    description: 'A slow starter gets going: its first output, no input before it, so running.',
  },
  PRINTS: {
    guard: 'answering' as const,
    target: '#ptyActivityModel.running',
    actions: emits('running'),
    description: 'A line typed (input: running) and answered (output keeps it running).',
  },
  TYPES_TO_SILENT: {
    guard: 'answering' as const,
    target: '#ptyActivityModel.running',
    actions: emits('running'),
    description: '`silent` typed: input, so running; only the echo follows, no answer.',
  },
  PRINTS_BY_ITSELF: {
    guard: 'laterPending' as const,
    target: '#ptyActivityModel.running',
    actions: ['laterPrinted' as const, emits('running')],
    description: 'The pending `later` prints by itself, no input before it: output, so running.',
  },
  EXITS: [
    {
      guard: 'gated' as const,
      target: '#ptyActivityModel.exited',
      actions: emits(exitedWithCode3),
      description: 'Exits with code 3 before it ever printed: no input, straight to exited.',
    },
    {
      guard: 'answering' as const,
      target: '#ptyActivityModel.exited',
      actions: emits('running', exitedWithCode3),
      description: '`fail` typed: input (running), then the CLI exits with code 3.',
    },
  ],
};

export const ptyActivityModel = setup({
  types: {
    context: {} as PtyActivityModelContext,
    events: {} as PtyActivityModelEvent,
  },
  guards: {
    gated: ({ context }) => context.gated,
    laterPending: ({ context }) => context.laterPending,
    /** The CLI reads and answers lines, and nothing is pending that could interleave. */
    answering: ({ context }) => !context.gated && !context.laterPending,
  },
  actions: {
    /** Documents the expected `pty:activity` trace; the test reads it with `transition()`. */
    emits: (_, _params: { trace: string[] }) => {},
    started: assign({ gated: false }),
    newProcess: assign({ gated: true, laterPending: false, restarted: true }),
    laterScheduled: assign({ laterPending: true }),
    laterPrinted: assign({ laterPending: false }),
  },
}).createMachine({
  id: 'ptyActivityModel',
  description: 'What the terminal of one pty agent reports, with every outside stimulus as an event.',
  context: { gated: true, laterPending: false, restarted: false },
  initial: 'starting',
  states: {
    starting: {
      description: 'The process runs (the agent is connected) but has printed nothing: held by the start gate.',
      on: {
        BANNER: { target: 'running', actions: ['started', emits('running')], description: 'The CLI gets going: its banner and prompt are the first output.' },
        SILENCE_ELAPSES: {
          target: 'needsInput',
          actions: emits('needsInput'),
          description: 'needsInputTimeoutMs since the spawn without a byte: taken to wait for input.',
        },
        EXITS: { target: 'exited', actions: emits(exitedWithCode3), description: 'Exits with code 3 before printing anything.' },
      },
    },
    running: {
      description: 'Output is flowing (the last output is now).',
      on: {
        PRINTS: { guard: 'answering', actions: emits(), description: 'A line typed and answered: still running (the timer re-armed by the output).' },
        TYPES_TO_SILENT: { guard: 'answering', actions: emits(), description: '`silent` typed: input changes nothing in running (the echo re-arms the timer).' },
        SCHEDULES_LATER: {
          guard: 'answering',
          actions: ['laterScheduled', emits()],
          description: '`later <ms>` typed: still running; its output will come by itself.',
        },
        PRINTS_BY_ITSELF: { guard: 'laterPending', actions: ['laterPrinted', emits()], description: 'The late output while running: still running.' },
        SILENCE_ELAPSES: {
          target: 'needsInput',
          actions: emits('needsInput'),
          description: 'needsInputTimeoutMs without output (and not 1 ms less): needsInput.',
        },
        EXITS: { guard: 'answering', target: 'exited', actions: emits(exitedWithCode3), description: '`fail` typed at the prompt: exits with code 3.' },
      },
    },
    needsInput: {
      description: 'Silent for needsInputTimeoutMs, process alive.',
      on: {
        STALE_ELAPSES: { target: 'stale', actions: emits('stale'), description: 'staleTimeoutMs in needsInput (and not 1 ms less): stale.' },
        ...silentAndAlive,
      },
    },
    stale: {
      description: 'Nobody answered for staleTimeoutMs; no timer runs.',
      on: {
        STALE_ELAPSES: { actions: emits(), description: 'Another staleTimeoutMs: nothing changes (no timer runs in stale).' },
        ...silentAndAlive,
      },
    },
    exited: {
      description: 'The process exited with code 3; the agent waits out its restart backoff.',
      on: {
        RESTARTS: { target: 'starting', actions: ['newProcess', emits('starting')], description: 'The backoff elapses on the same clock: a new process, starting over.' },
        RECONNECTS: { target: 'starting', actions: ['newProcess', emits('starting')], description: 'reconnect() during the backoff: a new process at once.' },
      },
    },
  },
});
