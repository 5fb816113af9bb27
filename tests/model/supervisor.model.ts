/**
 * The supervisor contract (docs/lifecycle.md, "Supervisor") as a model machine for
 * `createTestModel`: three registered agents, `maxAgents` 2, starts that connect or hang
 * in the handshake, crashes that leave an agent reconnecting behind a pending backoff,
 * refusals (`limit_reached`, then `shutting_down`), and shutdown from every mix of agent
 * states. No `invoke`, no `after`: every stimulus is an event.
 *
 * The agents are symmetric, so the model counts them instead of naming them: context
 * holds how many are connected, starting and reconnecting (the live ones; the rest are
 * idle). The test picks the concrete agent for each event (the first idle one, the first
 * connected one). `emits` says what the affected agent reports — or, for `shutdown`, each
 * live agent — and `refuses` the kind a refused start rejects with.
 */
import { assign, setup } from 'xstate';

export const modelAgents = ['alpha', 'beta', 'gamma'] as const;
export const modelMaxAgents = 2;

export interface SupervisorModelContext {
  maxAgents: number;
  connected: number;
  starting: number;
  reconnecting: number;
}

export type SupervisorModelEvent =
  | { type: 'ENSURE' }
  | { type: 'START_HANGS' }
  | { type: 'ENSURE_CONNECTED' }
  | { type: 'CRASH' }
  | { type: 'STOP' }
  | { type: 'SHUTDOWN' };

export type EmitsParams = { trace: string[]; agents: 'one' | 'every live' };

const emits = (agents: EmitsParams['agents'], ...trace: string[]) => ({ type: 'emits' as const, params: { trace, agents } });
const refuses = (kind: 'limit_reached' | 'shutting_down') => ({ type: 'refuses' as const, params: { kind } });
const live = (context: SupervisorModelContext) => context.connected + context.starting + context.reconnecting;

export const supervisorModel = setup({
  types: {
    context: {} as SupervisorModelContext,
    events: {} as SupervisorModelEvent,
  },
  guards: {
    /** One more live agent reaches maxAgents. */
    fillsLastSlot: ({ context }) => live(context) + 1 === context.maxAgents,
    hasConnected: ({ context }) => context.connected > 0,
    /** Stopping one connected agent frees a slot below the limit. */
    hasConnectedAndFreesSlot: ({ context }) => context.connected > 0 && live(context) === context.maxAgents,
  },
  actions: {
    /** Documents what the affected agent(s) report; the test reads it with `transition()`. */
    emits: (_, _params: EmitsParams) => {},
    /** Documents the kind a refused start rejects with. */
    refuses: (_, _params: { kind: string }) => {},
    connectOne: assign({ connected: ({ context }) => context.connected + 1 }),
    startOne: assign({ starting: ({ context }) => context.starting + 1 }),
    crashOne: assign({ connected: ({ context }) => context.connected - 1, reconnecting: ({ context }) => context.reconnecting + 1 }),
    stopOne: assign({ connected: ({ context }) => context.connected - 1 }),
  },
}).createMachine({
  id: 'supervisorModel',
  description: 'Three agents under one supervisor with maxAgents 2.',
  context: { maxAgents: modelMaxAgents, connected: 0, starting: 0, reconnecting: 0 },
  initial: 'running',
  states: {
    running: {
      description: 'Accepting commands.',
      initial: 'belowLimit',
      states: {
        belowLimit: {
          description: 'Fewer than maxAgents agents are live: an idle agent may start.',
          on: {
            ENSURE: [
              {
                guard: 'fillsLastSlot',
                target: 'atLimit',
                actions: ['connectOne', emits('one', 'starting', 'connected')],
                description: 'ensureAgent() on an idle agent; it connects and takes the last slot.',
              },
              { actions: ['connectOne', emits('one', 'starting', 'connected')], description: 'ensureAgent() on an idle agent; it connects.' },
            ],
            START_HANGS: [
              {
                guard: 'fillsLastSlot',
                target: 'atLimit',
                actions: ['startOne', emits('one', 'starting')],
                description: 'ensureAgent() on an idle agent whose handshake never answers; it takes the last slot.',
              },
              { actions: ['startOne', emits('one', 'starting')], description: 'ensureAgent() on an idle agent whose handshake never answers.' },
            ],
          },
        },
        atLimit: {
          description: 'maxAgents agents are live (starting, connected or reconnecting).',
          on: {
            ENSURE: { actions: [refuses('limit_reached'), emits('one')], description: 'A third start is refused with limit_reached; nothing spawns.' },
            START_HANGS: { actions: [refuses('limit_reached'), emits('one')], description: 'Refused with limit_reached; nothing spawns.' },
            ENSURE_CONNECTED: {
              guard: 'hasConnected',
              actions: emits('one'),
              description: 'ensureAgent() on an agent that is already live is never refused: same connection.',
            },
          },
        },
      },
      on: {
        CRASH: {
          guard: 'hasConnected',
          actions: ['crashOne', emits('one', 'disconnected', 'error:agent_exited', 'reconnecting')],
          description: 'A connected agent is lost: it reconnects after a backoff and stays live.',
        },
        STOP: [
          {
            guard: 'hasConnectedAndFreesSlot',
            target: '.belowLimit',
            actions: ['stopOne', emits('one', 'stopping', 'idle')],
            description: 'stop() on a connected agent frees a slot.',
          },
          {
            guard: 'hasConnected',
            actions: ['stopOne', emits('one', 'stopping', 'idle')],
            description: 'stop() on a connected agent.',
          },
        ],
        SHUTDOWN: {
          target: 'stopped',
          actions: emits('every live', 'stopping', 'idle'),
          description: 'shutdown(): every live agent runs its stop ladder in parallel; pending backoffs die with their state.',
        },
      },
    },
    stopped: {
      description: 'Every agent idle, every process gone; the context remembers what shutdown had to stop.',
      on: {
        ENSURE: { actions: [refuses('shutting_down'), emits('one')], description: 'ensureAgent() after shutdown is refused with shutting_down.' },
      },
    },
  },
});
