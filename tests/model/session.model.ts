/**
 * The session contract (docs/sessions.md, docs/permissions.md) as a *model* machine for
 * `createTestModel` from `xstate/graph`. It is not the runtime machine
 * (machines/session.machine.ts): it has no `invoke` and no `after`, so every outside
 * stimulus — a caller's prompt, cancel, resume or close, an agent that asks for
 * permission, sends an update, ends its turn, dies or reconnects, a timer that elapses —
 * is an event here. tests/model/session.model.test.ts causes each event for real on a
 * real supervisor with one real fixture agent and checks every state against it.
 *
 * Each transition names what the session must report with `emits` (the `status` events
 * as bare statuses, a `stall` event as `stall`, in order), what happens to the turn's
 * `prompt()` promise with `resolves` / `rejects(kind)`, and, with `refuses(kind)`, the kind
 * a refused call rejects with.
 *
 * Context, kept small so the state space stays finite:
 * - `canLoad` (input): the agent advertises loadSession. The model runs twice, with and
 *   without it; only a resume of a failed session tells the two apart.
 * - `agentBack` (only in `failed`): the agent has reconnected since the session failed.
 * - `stopReason`: the stop reason of the current turn once the agent has decided it
 *   (`running.finishing`), or of the last turn (`completed`); null otherwise.
 */
import { assign, setup } from 'xstate';
import type { AgentErrorKind } from '../../index.js';

export interface SessionModelInput {
  canLoad: boolean;
}

export interface SessionModelContext {
  canLoad: boolean;
  agentBack: boolean;
  stopReason: 'end_turn' | 'cancelled' | null;
}

export type SessionModelEvent =
  | { type: 'PROMPT' }
  | { type: 'END_TURN' }
  | { type: 'UPDATE_ARRIVES' }
  | { type: 'PERMISSION_REQUESTED' }
  | { type: 'PERMISSION_ANSWERED' }
  | { type: 'PERMISSION_TIMES_OUT' }
  | { type: 'STALL_TIMEOUT' }
  | { type: 'CANCEL' }
  | { type: 'AGENT_DIES' }
  | { type: 'AGENT_RECONNECTS' }
  | { type: 'RESUME' }
  | { type: 'CLOSE' }
  | { type: 'AGENT_STOPPED' };

export const sessionModelEvents: Array<SessionModelEvent['type']> = [
  'PROMPT', 'END_TURN', 'UPDATE_ARRIVES', 'PERMISSION_REQUESTED', 'PERMISSION_ANSWERED', 'PERMISSION_TIMES_OUT',
  'STALL_TIMEOUT', 'CANCEL', 'AGENT_DIES', 'AGENT_RECONNECTS', 'RESUME', 'CLOSE', 'AGENT_STOPPED',
];

/** How the turn's `prompt()` settles on a transition: with the model's `stopReason`, or rejected. */
export type TurnSettlement = { outcome: 'resolved' } | { outcome: 'rejected'; kind: AgentErrorKind };

/** `emits` action params: the session's `status` (bare) and `stall` events, in order. */
const emits = (...trace: string[]) => ({ type: 'emits' as const, params: { trace } });
/** The turn's prompt() resolves with the stop reason in the target state's context. */
const resolves = () => ({ type: 'settles' as const, params: { outcome: 'resolved' } satisfies TurnSettlement });
/** The turn's prompt() rejects with an AgentError of this kind. */
const rejects = (kind: AgentErrorKind) => ({ type: 'settles' as const, params: { outcome: 'rejected', kind } satisfies TurnSettlement });
/** The call that is the event (prompt() or resume()) rejects at once with this kind; nothing changes. */
const refuses = (kind: AgentErrorKind) => ({ type: 'refuses' as const, params: { kind } });

/** How a session with no turn in flight (ready, completed) ends or fails. */
const withoutTurn = {
  AGENT_DIES: {
    target: '#sessionModel.failed',
    actions: ['forgetTurn' as const, emits('failed')],
    description: 'The agent process died: every session of the agent fails, even one with no turn.',
  },
  CLOSE: { target: '#sessionModel.stopped', actions: ['forgetTurn' as const, emits('stopped')], description: 'session.close().' },
  AGENT_STOPPED: {
    target: '#sessionModel.stopped',
    actions: ['forgetTurn' as const, emits('stopped')],
    description: 'supervisor.stop(agent): the agent\'s sessions end.',
  },
};

/** How a turn in flight (running, awaitingPermission, stalled) ends when the session does. */
const turnEnds = {
  AGENT_DIES: {
    target: '#sessionModel.failed',
    actions: ['forgetTurn' as const, emits('failed'), rejects('agent_exited')],
    description: 'The agent died mid-turn: the turn rejects with agent_exited (it never hangs) and the session fails.',
  },
  CLOSE: {
    target: '#sessionModel.stopped',
    actions: ['forgetTurn' as const, emits('stopped'), rejects('session_closed')],
    description: 'session.close() mid-turn: the turn is cancelled and rejects with session_closed.',
  },
  AGENT_STOPPED: {
    target: '#sessionModel.stopped',
    actions: ['forgetTurn' as const, emits('stopped'), rejects('stopped')],
    description: 'supervisor.stop(agent) mid-turn: the session ends and the turn rejects with stopped.',
  },
};

/** prompt() and resume() during a turn are refused; the turn goes on. */
const busy = {
  PROMPT: { actions: [refuses('session_busy'), emits()], description: 'prompt() during a turn: session_busy.' },
  RESUME: { actions: [refuses('session_busy'), emits()], description: 'resume() during a turn: session_busy.' },
};

/** What a session between turns (ready, completed) accepts. */
const betweenTurns = {
  PROMPT: {
    target: '#sessionModel.running',
    actions: ['forgetTurn' as const, emits('running')],
    description: 'session.prompt(): session/prompt is sent, the turn runs.',
  },
  RESUME: { actions: emits(), description: 'resume() on a session that has not failed resolves at once (no session/load).' },
  ...withoutTurn,
};

export const sessionModel = setup({
  types: {
    context: {} as SessionModelContext,
    events: {} as SessionModelEvent,
    input: {} as SessionModelInput,
  },
  guards: {
    /** The agent reconnected and advertises loadSession: session/load restores the session. */
    canResume: ({ context }) => context.agentBack && context.canLoad,
    agentBack: ({ context }) => context.agentBack,
    agentDown: ({ context }) => !context.agentBack,
  },
  actions: {
    /** Documents the expected trace; the test reads it with `transition()`. */
    emits: (_, _params: { trace: string[] }) => {},
    /** Documents how the turn's prompt() settles. */
    settles: (_, _params: TurnSettlement) => {},
    /** Documents the kind a refused call rejects with. */
    refuses: (_, _params: { kind: AgentErrorKind }) => {},
    forgetTurn: assign({ stopReason: null, agentBack: false }),
    endsTurn: assign({ stopReason: 'end_turn' }),
    cancelsTurn: assign({ stopReason: 'cancelled' }),
    agentReconnected: assign({ agentBack: true }),
    agentLost: assign({ agentBack: false }),
  },
}).createMachine({
  id: 'sessionModel',
  description: 'One ACP session of a supervised agent, with every outside stimulus as an event.',
  context: ({ input }) => ({ canLoad: input.canLoad, agentBack: false, stopReason: null }),
  initial: 'ready',
  states: {
    ready: {
      description: 'Open (newSession, or resumed with session/load); no turn.',
      on: betweenTurns,
    },
    running: {
      description: 'A turn is in flight and the session hears from the agent (status running).',
      initial: 'open',
      states: {
        open: {
          description: 'The agent has not decided how the turn ends: it may ask, stall, end, or be told to stop.',
          on: {
            END_TURN: {
              target: '#sessionModel.completed',
              actions: ['endsTurn', emits('completed'), resolves()],
              description: 'The agent answers session/prompt: the turn resolves with its stop reason.',
            },
            PERMISSION_REQUESTED: {
              target: '#sessionModel.awaitingPermission',
              actions: emits('awaiting_permission'),
              description: 'session/request_permission; the ask policy holds it for the application.',
            },
            STALL_TIMEOUT: {
              target: '#sessionModel.stalled',
              actions: emits('stalled', 'stall'),
              description: 'No update for stallTimeoutMs: stalled, and a stall event (onStall none).',
            },
            CANCEL: {
              target: '#sessionModel.completed',
              actions: ['cancelsTurn', emits('completed'), resolves()],
              description: 'session.cancel(): session/cancel; the turn resolves cancelled.',
            },
            ...busy,
            ...turnEnds,
          },
        },
        finishing: {
          description:
            'The agent got what it waited for (a permission answer, or it sends its last updates) and ends the turn without another stimulus; the fixture does so at once, so only END_TURN follows.',
          on: {
            END_TURN: {
              target: '#sessionModel.completed',
              actions: [emits('completed'), resolves()],
              description: 'The agent answers session/prompt with the stop reason it decided.',
            },
          },
        },
      },
    },
    awaitingPermission: {
      description: 'A permission request is pending; waiting for a person is not a stall.',
      on: {
        PERMISSION_ANSWERED: {
          target: 'running.finishing',
          actions: ['endsTurn', emits('running')],
          description: 'request.respond(allow): the session runs again; the agent goes on and ends its turn end_turn.',
        },
        PERMISSION_TIMES_OUT: {
          target: 'running.finishing',
          actions: ['cancelsTurn', emits('running')],
          description: 'Nobody answered within permissionTimeoutMs: answered cancelled; the agent ends its turn cancelled.',
        },
        STALL_TIMEOUT: { actions: emits(), description: 'stallTimeoutMs elapses while awaiting permission: no stall.' },
        CANCEL: {
          target: '#sessionModel.completed',
          actions: ['cancelsTurn', emits('running', 'completed'), resolves()],
          description: 'session.cancel(): the pending request is answered cancelled (running again), then the turn ends cancelled.',
        },
        ...busy,
        ...turnEnds,
      },
    },
    stalled: {
      description: 'No update for stallTimeoutMs; reported once. The turn is still in flight.',
      on: {
        UPDATE_ARRIVES: {
          target: 'running.finishing',
          actions: ['endsTurn', emits('running')],
          description: 'An update arrives: running again at once (the agent then finishes its turn).',
        },
        CANCEL: {
          target: 'completed',
          actions: ['cancelsTurn', emits('completed'), resolves()],
          description: 'session.cancel() on a stalled turn: it resolves cancelled.',
        },
        ...busy,
        ...turnEnds,
      },
    },
    completed: {
      description: 'The last turn ended with a stop reason; ready for the next prompt.',
      on: betweenTurns,
    },
    failed: {
      description: 'The agent died; the session keeps its id and can be resumed once the agent is back.',
      on: {
        AGENT_RECONNECTS: {
          guard: 'agentDown',
          actions: ['agentReconnected', emits()],
          description: 'The backoff elapses and the agent reconnects; the session stays failed until resume().',
        },
        AGENT_DIES: {
          guard: 'agentBack',
          actions: ['agentLost', emits()],
          description: 'The reconnected agent dies again: already failed, the first failure is kept.',
        },
        RESUME: [
          {
            guard: 'canResume',
            target: 'ready',
            actions: ['forgetTurn', emits('running', 'ready')],
            description: 'resume(): session/load on the new connection (status running meanwhile), then ready.',
          },
          {
            guard: 'agentBack',
            actions: [refuses('not_supported'), emits()],
            description: 'resume() on an agent without loadSession: not_supported, never a silent fresh session.',
          },
        ],
        PROMPT: { actions: [refuses('session_closed'), emits()], description: 'prompt() on a failed session: session_closed.' },
        CLOSE: { target: 'stopped', actions: ['forgetTurn', emits('stopped')], description: 'session.close() on a failed session.' },
        AGENT_STOPPED: {
          target: 'stopped',
          actions: ['forgetTurn', emits('stopped')],
          description: 'supervisor.stop(agent), reconnecting or reconnected: the failed session ends.',
        },
      },
    },
    stopped: {
      description: 'Closed, or its agent was stopped (final in the real machine); calls are refused.',
      on: {
        PROMPT: { actions: [refuses('session_closed'), emits()], description: 'prompt() on a closed session: session_closed.' },
        RESUME: { actions: [refuses('session_closed'), emits()], description: 'resume() on a closed session: session_closed.' },
      },
    },
  },
});
