/**
 * Example statechart used as the fixture for the visualization tooling
 * (`scripts/visualize/render.ts`) and its unit tests.
 *
 * It deliberately exercises every feature the renderers handle: named delays,
 * named guards combined with `not(...)`/`and(...)`, `always` transitions,
 * invoked actors with explicit ids, a parallel state with nested compound
 * regions, two nested states sharing the key `settling`, final states,
 * descriptions on states and transitions, and entry/exit actions.
 */
import { and, assign, fromCallback, fromPromise, not, setup, type AnyStateMachine } from 'xstate';

interface ExampleContext {
  attempts: number;
  maxAttempts: number;
  pending: number;
}

type ExampleEvent =
  | { type: 'start' }
  | { type: 'cancel' }
  | { type: 'stop' }
  | { type: 'crash'; fatal: boolean }
  | { type: 'prompt' }
  | { type: 'turn.done' }
  | { type: 'heartbeat' }
  | { type: 'heartbeat.missed' };

/** A nested statechart modelling a supervised process with retries. */
export const exampleMachine = setup({
  types: {
    context: {} as ExampleContext,
    events: {} as ExampleEvent,
  },
  actors: {
    spawnProcess: fromPromise(async () => ({ pid: 42 })),
    terminateProcess: fromPromise(async () => undefined),
    heartbeat: fromCallback(() => () => undefined),
  },
  guards: {
    canRetry: ({ context }) => context.attempts < context.maxAttempts,
    isFatal: ({ event }) => event.type === 'crash' && event.fatal,
    hasPendingWork: ({ context }) => context.pending > 0,
  },
  delays: {
    backoff: ({ context }) => 100 * 2 ** context.attempts,
    settleTime: 250,
    heartbeatTimeout: 30_000,
  },
  actions: {
    incrementAttempts: assign({ attempts: ({ context }) => context.attempts + 1 }),
    resetAttempts: assign({ attempts: 0 }),
    takeWork: assign({ pending: ({ context }) => Math.max(0, context.pending - 1) }),
    logTransition: () => undefined,
    releaseResources: () => undefined,
  },
}).createMachine({
  id: 'example',
  description: 'Example supervised process: spawn, retry with backoff, run, stop.',
  initial: 'idle',
  context: { attempts: 0, maxAttempts: 3, pending: 0 },
  states: {
    idle: {
      description: 'Nothing running; waiting for a start request.',
      on: { start: { target: 'starting', description: 'User asked to start the process.' } },
    },
    starting: {
      description: 'Spawning the process, then letting it settle.',
      entry: 'incrementAttempts',
      initial: 'spawning',
      states: {
        spawning: {
          invoke: {
            id: 'spawner',
            src: 'spawnProcess',
            onDone: { target: 'settling' },
            onError: [
              { guard: 'canRetry', target: '#example.backingOff', description: 'Spawn failed; retry later.' },
              { target: '#example.failed' },
            ],
          },
        },
        settling: {
          description: 'Give the process a moment before talking to it.',
          after: { settleTime: { target: '#example.connected' } },
        },
      },
      on: { cancel: 'stopped' },
    },
    backingOff: {
      description: 'Waiting before the next spawn attempt.',
      after: { backoff: { target: 'starting', description: 'Exponential backoff elapsed.' } },
      on: { cancel: 'stopped' },
    },
    connected: {
      type: 'parallel',
      description: 'Process is up: work and health are tracked independently.',
      entry: ['resetAttempts', 'logTransition'],
      exit: 'releaseResources',
      invoke: { id: 'heartbeatMonitor', src: 'heartbeat' },
      states: {
        work: {
          initial: 'settling',
          states: {
            settling: {
              description: 'Waiting for the first prompt.',
              on: { prompt: { target: 'busy', guard: not('isFatal') } },
            },
            busy: {
              on: { 'turn.done': 'idle' },
            },
            idle: {
              always: {
                target: 'busy',
                guard: and(['hasPendingWork', not('isFatal')]),
                actions: 'takeWork',
                description: 'Pick up queued work immediately.',
              },
              on: { prompt: 'busy' },
            },
          },
        },
        health: {
          initial: 'healthy',
          states: {
            healthy: { on: { 'heartbeat.missed': 'degraded' } },
            degraded: {
              description: 'A heartbeat was missed.',
              on: { heartbeat: 'healthy' },
              after: { heartbeatTimeout: { target: '#example.backingOff', guard: 'canRetry' } },
            },
          },
        },
      },
      on: {
        crash: [
          { guard: 'isFatal', target: 'failed', description: 'Unrecoverable crash.' },
          { guard: 'canRetry', target: 'backingOff' },
          { target: 'failed' },
        ],
        stop: 'stopping',
      },
    },
    stopping: {
      invoke: { id: 'terminator', src: 'terminateProcess', onDone: 'stopped', onError: 'stopped' },
    },
    failed: { type: 'final', description: 'Gave up: fatal crash or retries exhausted.' },
    stopped: { type: 'final' },
  },
});

/** Registry in the same shape as `machines/index.ts` exports, for `scripts/viz.ts --module`. */
export const visualizedMachines: Record<string, AnyStateMachine> = { example: exampleMachine };
