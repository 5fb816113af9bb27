/**
 * One ACP session as a statechart: ready ⇄ prompting (running, awaitingPermission,
 * stalled) → completed, failed (resumable with session/load), stopped. A child of its
 * agent's actor. Pure: the prompt turn and session/load are actors referenced by name and
 * provided by the runtime; the stall timer is the named delay `stallTimeout`.
 */
import { assign, emit, fromPromise, setup } from 'xstate';
import type { SessionEmitted, SessionEvent, SessionFailure, SessionMachineInput, SessionStatus, LoadSessionInput, PromptTurnInput, PromptTurnOutput } from './session-events.js';
import type { StopReason } from '../services/acp-client.service.js';

export interface SessionContext extends SessionMachineInput {
  turns: number;
  lastStopReason: StopReason | null;
  lastError: SessionFailure | null;
  pendingPermissions: string[];
}

const notProvided = (name: string) => () => {
  throw new Error(`sessionMachine needs the ${name} actor: use .provide({ actors: { ${name} } })`);
};

/** Reads `{ kind, message }` from whatever an actor rejected with. */
function toFailure(error: unknown): SessionFailure {
  const candidate = error as { kind?: unknown; message?: unknown } | null;
  return {
    kind: typeof candidate?.kind === 'string' ? (candidate.kind as SessionFailure['kind']) : 'protocol_error',
    message: typeof candidate?.message === 'string' ? candidate.message : String(error),
  };
}

export const sessionMachine = setup({
  types: {
    context: {} as SessionContext,
    events: {} as SessionEvent,
    input: {} as SessionMachineInput,
    emitted: {} as SessionEmitted,
  },
  actors: {
    promptTurn: fromPromise<PromptTurnOutput, PromptTurnInput>(notProvided('promptTurn')),
    loadSession: fromPromise<void, LoadSessionInput>(notProvided('loadSession')),
  },
  delays: {
    stallTimeout: ({ context }) => context.stallTimeoutMs,
  },
  guards: {
    /** Decided on the agent's current connection, which may differ from the one the session began on. */
    canResume: ({ event }) => event.type === 'resume' && event.canLoad,
    isLastPendingPermission: ({ context, event }) =>
      event.type === 'permission.settled' && context.pendingPermissions.length === 1 && context.pendingPermissions[0] === event.requestId,
    wasStoppedOnPurpose: ({ event }) => event.type === 'agent.lost' && event.kind === 'stopped',
  },
  actions: {
    reportStatus: emit(({ context }, params: { status: SessionStatus }) => ({
      type: 'status' as const,
      agent: context.agent,
      sessionId: context.sessionId,
      status: params.status,
    })),
    reportStall: emit(({ context }) => ({
      type: 'stall' as const,
      agent: context.agent,
      sessionId: context.sessionId,
      policy: context.onStall,
      stallTimeoutMs: context.stallTimeoutMs,
    })),
    countTurn: assign({ turns: ({ context }) => context.turns + 1, lastError: null }),
    clearFailure: assign({ lastError: null }),
    recordStopReason: assign({
      lastStopReason: ({ event }) => (event as unknown as { output: PromptTurnOutput }).output.stopReason,
      pendingPermissions: [],
    }),
    recordFailure: assign({
      lastError: ({ event }) => toFailure((event as unknown as { error: unknown }).error),
      pendingPermissions: [],
    }),
    recordLoss: assign({
      lastError: ({ event }) => (event.type === 'agent.lost' ? { kind: event.kind, message: event.message } : null),
      pendingPermissions: [],
    }),
    addPendingPermission: assign({
      pendingPermissions: ({ context, event }) =>
        event.type === 'permission.requested' ? [...context.pendingPermissions, event.requestId] : context.pendingPermissions,
    }),
    removePendingPermission: assign({
      pendingPermissions: ({ context, event }) =>
        event.type === 'permission.settled' ? context.pendingPermissions.filter((id) => id !== event.requestId) : context.pendingPermissions,
    }),
  },
}).createMachine({
  id: 'session',
  description: 'One ACP session of an agent: prompt turns, permission requests, stalls.',
  context: ({ input }) => ({ ...input, turns: 0, lastStopReason: null, lastError: null, pendingPermissions: [] }),
  initial: 'ready',
  on: {
    close: { target: '.stopped', description: 'session.close(): cancel any turn, kill its terminals.' },
    'agent.lost': [
      { guard: 'wasStoppedOnPurpose', target: '.stopped', actions: 'recordLoss', description: 'The agent was stopped: the session ends.' },
      { target: '.failed', actions: 'recordLoss', description: 'The agent process died: any turn fails with agent_exited.' },
    ],
  },
  states: {
    ready: {
      description: 'Open, no turn yet.',
      entry: { type: 'reportStatus', params: { status: 'ready' } },
      on: { prompt: { target: 'prompting', actions: 'countTurn', description: 'session.prompt(): send session/prompt.' } },
    },
    prompting: {
      description: 'A prompt turn is in flight; leaving this state cancels it.',
      invoke: {
        id: 'promptTurn',
        src: 'promptTurn',
        input: ({ context, event }) => ({
          agent: context.agent,
          sessionId: context.sessionId,
          prompt: event.type === 'prompt' ? event.prompt : [],
        }),
        onDone: { target: 'completed', actions: 'recordStopReason', description: 'session/prompt answered with a stop reason.' },
        onError: { target: 'failed', actions: 'recordFailure', description: 'session/prompt failed or the connection closed.' },
      },
      initial: 'running',
      states: {
        running: {
          description: 'Updates are flowing (or about to).',
          entry: { type: 'reportStatus', params: { status: 'running' } },
          initial: 'watching',
          states: {
            watching: {
              description: 'The stall timer restarts with every batch of updates.',
              after: { stallTimeout: { target: '#session.prompting.stalled', description: 'No update for stallTimeoutMs.' } },
              on: { activity: { target: 'watching', reenter: true, description: 'An update arrived: restart the stall timer.' } },
            },
          },
          on: {
            'permission.requested': { target: 'awaitingPermission', actions: 'addPendingPermission', description: 'The agent asks for permission.' },
          },
        },
        awaitingPermission: {
          description: 'A permission request is pending; waiting for a person is not a stall.',
          entry: { type: 'reportStatus', params: { status: 'awaiting_permission' } },
          on: {
            'permission.requested': { actions: 'addPendingPermission', description: 'Another request joins the pending ones.' },
            'permission.settled': [
              { guard: 'isLastPendingPermission', target: 'running', actions: 'removePendingPermission', description: 'Every request answered.' },
              { actions: 'removePendingPermission', description: 'One of several answered.' },
            ],
          },
        },
        stalled: {
          description: 'No update for stallTimeoutMs: reported, and the onStall policy applies.',
          entry: [{ type: 'reportStatus', params: { status: 'stalled' } }, 'reportStall'],
          on: {
            activity: { target: 'running', description: 'Updates resumed.' },
            'permission.requested': { target: 'awaitingPermission', actions: 'addPendingPermission', description: 'The agent asks for permission.' },
          },
        },
      },
    },
    completed: {
      description: 'The last turn ended with a stop reason; ready for the next prompt.',
      entry: { type: 'reportStatus', params: { status: 'completed' } },
      on: { prompt: { target: 'prompting', actions: 'countTurn', description: 'The next prompt turn.' } },
    },
    failed: {
      description: 'The turn failed or the agent died; resumable with session/load when the agent supports it.',
      entry: { type: 'reportStatus', params: { status: 'failed' } },
      on: {
        resume: { guard: 'canResume', target: 'resuming', description: 'session.resume() on a reconnected agent that can load sessions.' },
        'agent.lost': [
          { guard: 'wasStoppedOnPurpose', target: 'stopped', actions: 'recordLoss', description: 'The agent was stopped: the session ends.' },
          { description: 'Already failed: keep the first failure.' },
        ],
      },
    },
    resuming: {
      description: 'session/load on the agent\'s new connection.',
      entry: { type: 'reportStatus', params: { status: 'running' } },
      invoke: {
        id: 'loadSession',
        src: 'loadSession',
        input: ({ context }) => ({ agent: context.agent, sessionId: context.sessionId }),
        onDone: { target: 'ready', actions: 'clearFailure', description: 'The agent restored the session.' },
        onError: { target: 'failed', actions: 'recordFailure', description: 'session/load failed.' },
      },
    },
    stopped: {
      type: 'final',
      description: 'Closed, or its agent was stopped.',
      entry: { type: 'reportStatus', params: { status: 'stopped' } },
    },
  },
});
