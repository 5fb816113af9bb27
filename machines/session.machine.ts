/**
 * One ACP session as a statechart: ready ⇄ prompting (running, awaitingPermission,
 * stalled) → completed, failed (resumable with session/load), stopped. A child of its
 * agent's actor. Pure: the prompt turns and session/load are actors referenced by name and
 * provided by the runtime.
 *
 * The prompt-turn actor lives as long as the session and is told to `start` each turn:
 * invoking an actor per turn (spawned, started, stopped) cost a third of a tiny turn's
 * machine work (docs/performance.md, *turns*). It also times the stall watch — the machine
 * tells it about updates (`activity`), pauses it while a person is asked and resumes it, and
 * hears `turn.stalled` — because a timer scheduled and cancelled by every turn (an `after`)
 * cost about a third of its work (docs/performance.md, *turns*).
 *
 * It decides every outcome a caller sees: each `prompt` and `resume` is answered once with
 * `request.settled` (a busy or closed session refuses at once), and the stall policy is a
 * state of its own — cancel the turn, or ask the agent machine to restart the process.
 */
import { assertEvent, assign, cancel, emit, enqueueActions, fromCallback, fromPromise, sendParent, sendTo, setup, type StateValue } from 'xstate';
import type { StopReason } from '../core/acp-types.js';
import { failures, type AgentFailure } from '../core/errors.js';
import type { AgentFailureReport, RestartRequest } from './agent-events.js';
import type {
  LoadSessionInput,
  PromptTurnCommand,
  PromptTurnInput,
  SessionEmitted,
  SessionEvent,
  SessionFailure,
  SessionMachineInput,
  SessionRequestResult,
  SessionStatus,
  StallPolicy,
} from './session-events.js';

/**
 * The session's context. Its status is not kept here: it is the state (each state reports it
 * with `reportStatus`, and the session's record follows those reports) — an assign per status
 * change cost a copy of the snapshot twice a turn (docs/performance.md, *turns*).
 */
export interface SessionContext extends SessionMachineInput {
  turns: number;
  lastStopReason: StopReason | null;
  lastError: SessionFailure | null;
  pendingPermissions: string[];
  /** The caller waiting for the prompt turn or resume in progress. */
  request: { id: string; kind: 'prompt' | 'resume' } | null;
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

const asAgentFailure = (failure: SessionFailure): AgentFailure => ({ kind: failure.kind, message: failure.message, stderr: [] });

/** The id of a question's timer (a delayed `ask.timedOut`), to cancel it when the question is answered. */
const askTimerId = (requestId: string) => `ask:${requestId}`;

// Params read from the event, named so that every transition below stays a literal Stately's parser reads.
function promptRequestOf({ event }: { event: SessionEvent }) {
  assertEvent(event, 'prompt');
  return { requestId: event.requestId };
}
function canLoadOf({ event }: { event: SessionEvent }) {
  assertEvent(event, ['resume', 'reopen']);
  return { canLoad: event.canLoad };
}
function resumeRequestOf({ event }: { event: SessionEvent }) {
  assertEvent(event, ['resume', 'reopen']);
  return { requestId: event.requestId, kind: 'resume' as const };
}
/** A resume refused at once: the agent's connection advertises neither session/load nor session/resume. */
function cannotLoadAnswer({ context, event }: { context: SessionContext; event: SessionEvent }) {
  assertEvent(event, ['resume', 'reopen']);
  return { requestId: event.requestId, result: { ok: false as const, failure: failures.cannotLoadSessions(context.displayName) } };
}
function turnFailureOf({ event }: { event: SessionEvent }) {
  assertEvent(event, 'turn.failed');
  return { failure: event.failure };
}
/**
 * The completed turn's answer: its caller's prompt resolves with the stop reason — given on the
 * transition (the other outcomes are answered by the state entered, `settleRequest`): a turn's
 * hot path, with nothing to decide. The request is always set while prompting (acceptPrompt).
 */
function turnAnswerOf({ context, event }: { context: SessionContext; event: SessionEvent }) {
  assertEvent(event, 'turn.completed');
  return { requestId: context.request?.id ?? '', result: { ok: true as const, stopReason: event.stopReason } };
}
function stopReasonOf({ event }: { event: SessionEvent }) {
  assertEvent(event, 'turn.completed');
  return { stopReason: event.stopReason };
}
/** A request refused at once: a turn runs (or a resume), session_busy. */
function sessionBusyAnswer({ context, event }: { context: SessionContext; event: SessionEvent }) {
  assertEvent(event, ['prompt', 'resume']);
  return { requestId: event.requestId, result: { ok: false as const, failure: failures.sessionBusy(context.sessionId) } };
}
/** A prompt refused at once: the session failed and must be resumed first. */
function sessionFailedAnswer({ context, event }: { context: SessionContext; event: SessionEvent }) {
  assertEvent(event, ['prompt', 'resume']);
  return { requestId: event.requestId, result: { ok: false as const, failure: failures.sessionFailed(context.sessionId) } };
}

/**
 * The status a session's snapshot stands for: the one its state reported on entry (the
 * statechart's `reportStatus` params), read from the state value, or `stopped` once the actor
 * is done. The context does not keep it (see {@link SessionContext}); the unit tests check
 * after every step that this agrees with the status the machine last emitted.
 */
export function sessionStatusOf(snapshot: { status: string; value: StateValue }): SessionStatus {
  if (snapshot.status !== 'active') return 'stopped';
  const { value } = snapshot;
  if (typeof value === 'string') return value === 'resuming' ? 'running' : (value as Exclude<SessionStatus, 'running' | 'awaiting_permission' | 'stalled'>);
  const prompting = (value as { prompting?: StateValue }).prompting;
  const phase = typeof prompting === 'string' ? prompting : Object.keys(prompting ?? {})[0];
  return phase === 'awaitingPermission' ? 'awaiting_permission' : phase === 'stalled' ? 'stalled' : 'running';
}

export const sessionMachine = setup({
  types: {
    context: {} as SessionContext,
    events: {} as SessionEvent,
    input: {} as SessionMachineInput,
    emitted: {} as SessionEmitted,
  },
  actors: {
    promptTurn: fromCallback<PromptTurnCommand, PromptTurnInput, SessionEvent>(notProvided('promptTurn')),
    loadSession: fromPromise<void, LoadSessionInput>(notProvided('loadSession')),
  },
  delays: {
    /** How long a person may take to answer: the broker's timeout for that kind of question. */
    askTimeout: ({ event }) => {
      assertEvent(event, 'permission.requested');
      return event.timeoutMs;
    },
  },
  guards: {
    /** Decided on the agent's current connection, which may differ from the one the session began on. */
    canResume: (_, params: { canLoad: boolean }) => params.canLoad,
    isLastPendingPermission: ({ context }, params: { requestId: string }) =>
      context.pendingPermissions.length === 1 && context.pendingPermissions[0] === params.requestId,
    wasStoppedOnPurpose: (_, params: { kind: string }) => params.kind === 'stopped',
    /** The agent's process ended as an outcome of its restart policy, not a crash. */
    agentEnded: (_, params: { kind: string }) => params.kind === 'agent_ended',
    /** An error the agent answered with (not a lost connection): the agent machine classifies it. */
    agentClassifiesFailure: (_, params: { failure: SessionFailure }) => params.failure.kind === 'auth_required' || params.failure.kind === 'protocol_error',
    stallPolicyIs: ({ context }, params: { policy: StallPolicy }) => context.onStall === params.policy,
  },
  actions: {
    reportStatus: emit(({ context }, params: { status: SessionStatus }) => ({ type: 'status' as const, agent: context.agent, sessionId: context.sessionId, status: params.status })),
    reportStall: emit(({ context }) => ({
      type: 'stall' as const,
      agent: context.agent,
      sessionId: context.sessionId,
      policy: context.onStall,
      stallTimeoutMs: context.stallTimeoutMs,
    })),
    acceptRequest: assign({ request: (_, params: { requestId: string; kind: 'prompt' | 'resume' }) => ({ id: params.requestId, kind: params.kind }) }),
    /** Answers one request at once, without changing state (a refusal, nothing to do, a completed turn). */
    answerNow: emit((_, params: { requestId: string; result: SessionRequestResult }) => ({
      type: 'request.settled' as const,
      requestId: params.requestId,
      result: params.result,
    })),
    /** Answers the request in progress with the outcome of the state just entered. */
    settleRequest: enqueueActions(({ enqueue, context }, params: { outcome: 'ok' | 'failed' | 'closed' }) => {
      const request = context.request;
      if (!request) return;
      let result: SessionRequestResult;
      // 'ok' answers a resume (ready entered again); a completed turn is answered on its transition (turnAnswerOf).
      if (params.outcome === 'ok') result = { ok: true };
      else if (params.outcome === 'failed') result = { ok: false, failure: asAgentFailure(context.lastError ?? failures.agentLost(context.displayName)) };
      else result = { ok: false, failure: context.lastError ? asAgentFailure(context.lastError) : failures.closedDuringTurn(context.sessionId) };
      enqueue.emit({ type: 'request.settled', requestId: request.id, result });
      enqueue.assign({ request: null });
    }),
    /** A prompt turn begins: counted, the last failure cleared, its caller waiting (one assign: a turn's hot path). */
    acceptPrompt: assign(({ context }, params: { requestId: string }) => ({ turns: context.turns + 1, lastError: null, request: { id: params.requestId, kind: 'prompt' as const } })),
    clearFailure: assign({ lastError: null }),
    /** The turn ended: its stop reason kept, its caller answered (turnAnswerOf). */
    recordTurnEnd: assign((_, params: { stopReason: StopReason }) => ({ lastStopReason: params.stopReason, request: null })),
    recordFailure: assign({ lastError: (_, params: { failure: SessionFailure }) => params.failure }),
    /** Questions still pending when the turn stops waiting for a person (it ended, failed, or the session closed): their timers go. */
    dropPendingAsks: enqueueActions(({ enqueue, context }) => {
      for (const requestId of context.pendingPermissions) enqueue.cancel(askTimerId(requestId));
      enqueue.assign({ pendingPermissions: [] });
    }),
    /** A person is asked: the question expires after askTimeout on this session's clock unless answered first. */
    scheduleAskTimeout: enqueueActions(({ enqueue, event }) => {
      assertEvent(event, 'permission.requested');
      enqueue.raise({ type: 'ask.timedOut', requestId: event.requestId }, { id: askTimerId(event.requestId), delay: 'askTimeout' });
    }),
    cancelAskTimeout: cancel(({ event }) => {
      assertEvent(event, 'permission.settled');
      return askTimerId(event.requestId);
    }),
    /** Nobody answered in time: the broker answers the question `cancelled`, which settles it here too. */
    expireAsk: emit(({ event }) => {
      assertEvent(event, 'ask.timedOut');
      return { type: 'ask.expired' as const, requestId: event.requestId };
    }),
    addPendingPermission: assign({ pendingPermissions: ({ context }, params: { requestId: string }) => [...context.pendingPermissions, params.requestId] }),
    removePendingPermission: assign({
      pendingPermissions: ({ context }, params: { requestId: string }) => context.pendingPermissions.filter((id) => id !== params.requestId),
    }),
    /** session/prompt with the prompt event's content. */
    startTurn: sendTo('promptTurn', ({ event }) => {
      assertEvent(event, 'prompt');
      return (event.meta ? { type: 'start', prompt: event.prompt, meta: event.meta } : { type: 'start', prompt: event.prompt }) satisfies PromptTurnCommand;
    }),
    /** Updates arrived: the turn's stall watch moves its deadline. */
    forwardActivity: sendTo('promptTurn', { type: 'activity' } satisfies PromptTurnCommand),
    /** Waiting for a person is not a stall. */
    pauseStallWatch: sendTo('promptTurn', { type: 'pauseStallWatch' } satisfies PromptTurnCommand),
    /** The turn runs again: watched from now. */
    resumeStallWatch: sendTo('promptTurn', { type: 'resumeStallWatch' } satisfies PromptTurnCommand),
    /** session/cancel for the running turn; it then ends with stop reason `cancelled`. */
    cancelTurn: sendTo('promptTurn', { type: 'cancel' } satisfies PromptTurnCommand),
    /** The turn is abandoned (its agent was lost): cancelled if it still runs, its late answer never reported. */
    releaseTurn: sendTo('promptTurn', { type: 'release' } satisfies PromptTurnCommand),
    /**
     * The agent answered the prompt with an error: its agent classifies it (a login or a limit
     * parks the agent, docs/failures.md). A lost process is the agent's own news, not reported.
     */
    reportTurnFailure: sendParent(({ context }, params: { failure: SessionFailure }) => {
      const { failure } = params;
      return {
        type: 'agent.failure',
        // The prompt's request id: the agent's answer (failure.classified) gives the prompt's error its class.
        ...(context.request ? { requestId: context.request.id } : {}),
        phase: 'turn',
        kind: failure.kind,
        detail: failure.message,
        rpcCode: failure.rpcCode ?? null,
        ...(failure.rpcData !== undefined ? { rpcData: failure.rpcData } : {}),
        ...(failure.at !== undefined ? { at: failure.at } : {}),
      } satisfies AgentFailureReport;
    }),
    /** The agent machine kills the process through its own path; the turn fails with agent_exited. */
    requestAgentRestart: sendParent(({ context }) => ({ type: 'restart', sessionId: context.sessionId }) satisfies RestartRequest),
  },
}).createMachine({
  id: 'session',
  description: 'One ACP session of an agent: prompt turns, permission requests, stalls.',
  context: ({ input }) => ({ ...input, turns: 0, lastStopReason: null, lastError: null, pendingPermissions: [], request: null }),
  initial: 'ready',
  invoke: {
    id: 'promptTurn',
    src: 'promptTurn',
    input: ({ context }) => ({ agent: context.agent, sessionId: context.sessionId, stallTimeoutMs: context.stallTimeoutMs }),
  },
  on: {
    close: { target: '.stopped', description: 'session.close(): cancel any turn, kill its terminals.' },
    'ask.timedOut': { actions: 'expireAsk', description: 'Nobody answered a question within its timeout: its broker answers it cancelled.' },
    reopen: {
      actions: { type: 'answerNow', params: ({ event }) => ({ requestId: event.requestId, result: { ok: true } }) },
      description: 'loadSession() of a session that is open (or resuming): it is returned as it is.',
    },
    'agent.lost': [
      {
        guard: { type: 'wasStoppedOnPurpose', params: ({ event }) => ({ kind: event.kind }) },
        target: '.stopped',
        actions: { type: 'recordFailure', params: ({ event }) => ({ failure: { kind: event.kind, message: event.message } }) },
        description: 'The agent was stopped: the session ends.',
      },
      {
        target: '.failed',
        actions: [{ type: 'recordFailure', params: ({ event }) => ({ failure: { kind: event.kind, message: event.message } }) }, 'releaseTurn'],
        description: 'The agent process died: any turn fails with agent_exited.',
      },
    ],
  },
  states: {
    ready: {
      description: 'Open, no turn yet (or just resumed).',
      entry: [{ type: 'reportStatus', params: { status: 'ready' } }, { type: 'settleRequest', params: { outcome: 'ok' } }],
      on: {
        prompt: { target: '#session.prompting', actions: { type: 'acceptPrompt', params: promptRequestOf }, description: 'session.prompt(): send session/prompt.' },
        resume: { actions: { type: 'answerNow', params: ({ event }) => ({ requestId: event.requestId, result: { ok: true } }) }, description: 'Nothing to resume.' },
      },
    },
    prompting: {
      description: 'A prompt turn is in flight (a closed session cancels it; a lost agent releases it).',
      entry: 'startTurn',
      // The turn's stall watch starts with it (the prompt-turn actor's `start`).
      on: {
        'turn.completed': {
          target: 'completed',
          actions: [
            { type: 'answerNow', params: turnAnswerOf },
            { type: 'recordTurnEnd', params: stopReasonOf },
          ],
          description: 'session/prompt answered with a stop reason: its caller is answered with it.',
        },
        'turn.failed': [
          {
            guard: { type: 'agentClassifiesFailure', params: turnFailureOf },
            target: 'failed',
            actions: [
              { type: 'recordFailure', params: turnFailureOf },
              { type: 'reportTurnFailure', params: turnFailureOf },
            ],
            description: 'session/prompt answered with an error: it goes to the agent to classify (a login or a limit parks the agent, docs/failures.md).',
          },
          {
            target: 'failed',
            actions: { type: 'recordFailure', params: turnFailureOf },
            description: 'The connection closed under the turn (or it timed out): the loss is the agent\'s own news.',
          },
        ],
        cancel: { actions: 'cancelTurn', description: 'session.cancel() or the prompt\'s signal: session/cancel.' },
        prompt: { actions: { type: 'answerNow', params: sessionBusyAnswer }, description: 'A turn is already running: session_busy.' },
        resume: { actions: { type: 'answerNow', params: sessionBusyAnswer }, description: 'A turn is running: nothing to resume.' },
        'permission.requested': {
          target: '.awaitingPermission',
          actions: [{ type: 'addPendingPermission', params: ({ event }) => ({ requestId: event.requestId }) }, 'scheduleAskTimeout'],
          description: 'The agent asks for permission (also while stalled).',
        },
      },
      initial: 'running',
      states: {
        // The watch is resumed by the transitions that come back here, not by an entry action: a
        // turn's `start` already watches, and an entry command would cost every turn a step more.
        running: {
          description: 'Updates are flowing (or about to); the turn is watched for stalls.',
          entry: { type: 'reportStatus', params: { status: 'running' } },
          on: {
            activity: { actions: 'forwardActivity', description: 'An update arrived: the stall watch restarts its timeout.' },
            'turn.stalled': { target: 'stalled', description: 'No update for stallTimeoutMs.' },
          },
        },
        awaitingPermission: {
          description: 'A permission request is pending; waiting for a person is not a stall.',
          entry: [{ type: 'reportStatus', params: { status: 'awaiting_permission' } }, 'pauseStallWatch'],
          exit: 'dropPendingAsks',
          on: {
            'permission.requested': {
              actions: [{ type: 'addPendingPermission', params: ({ event }) => ({ requestId: event.requestId }) }, 'scheduleAskTimeout'],
              description: 'Another request joins the pending ones.',
            },
            'permission.settled': [
              {
                guard: { type: 'isLastPendingPermission', params: ({ event }) => ({ requestId: event.requestId }) },
                target: 'running',
                actions: 'resumeStallWatch',
                description: 'Every request answered (leaving drops its timer); the stall watch resumes.',
              },
              {
                actions: [{ type: 'removePendingPermission', params: ({ event }) => ({ requestId: event.requestId }) }, 'cancelAskTimeout'],
                description: 'One of several answered.',
              },
            ],
          },
        },
        stalled: {
          description: 'No update for stallTimeoutMs: reported, and the onStall policy applies.',
          entry: [{ type: 'reportStatus', params: { status: 'stalled' } }, 'reportStall'],
          on: { activity: { target: 'running', actions: 'resumeStallWatch', description: 'Updates resumed: watched again.' } },
          initial: 'applyingPolicy',
          states: {
            applyingPolicy: {
              description: 'Which onStall policy?',
              always: [
                { guard: { type: 'stallPolicyIs', params: { policy: 'cancel' } }, target: 'cancelling', description: "onStall 'cancel'." },
                { guard: { type: 'stallPolicyIs', params: { policy: 'restart' } }, target: 'restartingAgent', description: "onStall 'restart'." },
                { target: 'reported', description: "onStall 'none'." },
              ],
            },
            reported: { description: 'Only reported (stall event); the turn goes on.' },
            cancelling: { entry: 'cancelTurn', description: 'session/cancel sent; the turn ends with stop reason cancelled.' },
            restartingAgent: {
              entry: 'requestAgentRestart',
              description: 'The agent machine kills the process; the turn fails with agent_exited and the session is resumable.',
            },
          },
        },
      },
    },
    completed: {
      description: 'The last turn ended with a stop reason; ready for the next prompt.',
      entry: { type: 'reportStatus', params: { status: 'completed' } },
      on: {
        prompt: { target: '#session.prompting', actions: { type: 'acceptPrompt', params: promptRequestOf }, description: 'The next prompt turn.' },
        resume: { actions: { type: 'answerNow', params: ({ event }) => ({ requestId: event.requestId, result: { ok: true } }) }, description: 'Nothing to resume.' },
      },
    },
    failed: {
      description: 'The turn failed or the agent died; resumable with session/load when the agent supports it.',
      entry: [{ type: 'reportStatus', params: { status: 'failed' } }, { type: 'settleRequest', params: { outcome: 'failed' } }],
      on: {
        prompt: { actions: { type: 'answerNow', params: sessionFailedAnswer }, description: 'A failed session must be resumed first: session_closed.' },
        resume: [
          {
            guard: { type: 'canResume', params: canLoadOf },
            target: 'resuming',
            actions: { type: 'acceptRequest', params: resumeRequestOf },
            description: 'session.resume() on a reconnected agent that can load sessions.',
          },
          { actions: { type: 'answerNow', params: cannotLoadAnswer }, description: 'The agent cannot load sessions: not_supported, never a silent fresh session.' },
        ],
        reopen: [
          {
            guard: { type: 'canResume', params: canLoadOf },
            target: 'resuming',
            actions: { type: 'acceptRequest', params: resumeRequestOf },
            description: 'loadSession() of this failed session: resumed, as session.resume() does.',
          },
          { actions: { type: 'answerNow', params: cannotLoadAnswer }, description: 'The agent cannot load sessions (any more): not_supported.' },
        ],
        'agent.lost': [
          {
            guard: { type: 'wasStoppedOnPurpose', params: ({ event }) => ({ kind: event.kind }) },
            target: 'stopped',
            actions: { type: 'recordFailure', params: ({ event }) => ({ failure: { kind: event.kind, message: event.message } }) },
            description: 'The agent was stopped: the session ends.',
          },
          {
            guard: { type: 'agentEnded', params: ({ event }) => ({ kind: event.kind }) },
            actions: { type: 'recordFailure', params: ({ event }) => ({ failure: { kind: event.kind, message: event.message } }) },
            description: 'The turn failed as the connection closed; the agent then said its process ended as an outcome (agent_ended): the session records the outcome.',
          },
          { description: 'Already failed: keep the first failure.' },
        ],
      },
    },
    resuming: {
      description: "session/load on the agent's new connection.",
      entry: { type: 'reportStatus', params: { status: 'running' } },
      invoke: {
        id: 'loadSession',
        src: 'loadSession',
        input: ({ context }) => ({ agent: context.agent, sessionId: context.sessionId }),
        onDone: { target: 'ready', actions: 'clearFailure', description: 'The agent restored the session.' },
        onError: {
          target: 'failed',
          actions: { type: 'recordFailure', params: ({ event }) => ({ failure: toFailure(event.error) }) },
          description: 'session/load failed.',
        },
      },
      on: {
        prompt: { actions: { type: 'answerNow', params: sessionBusyAnswer }, description: 'Still resuming: session_busy.' },
        resume: { actions: { type: 'answerNow', params: sessionBusyAnswer }, description: 'Already resuming.' },
      },
    },
    stopped: {
      type: 'final',
      description: 'Closed, or its agent was stopped.',
      entry: [{ type: 'reportStatus', params: { status: 'stopped' } }, { type: 'settleRequest', params: { outcome: 'closed' } }],
    },
  },
});
