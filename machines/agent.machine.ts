/**
 * The agent lifecycle as a statechart: idle → starting → connected ⇄ disconnected →
 * reconnecting, and stopping from any live state; a failure whose class (docs/failures.md)
 * a restart cannot fix parks the agent in `needsAuth` (a login) or `rateLimited` (a usage or
 * rate limit, until it resets), and restarts beyond the restart intensity give up. Pure: the
 * process actor is referenced by name (`agentProcess`) and plugged in with `.provide()` by
 * the runtime; every delay is named and computed from context, so a SimulatedClock drives it
 * in tests.
 *
 * It decides every outcome a caller sees: each command that carries a `requestId` is
 * answered once with `command.settled` — a start when the agent connects, fails for good
 * or is stopped; a stop when the agent is idle. A start asked for while stopping waits in
 * `startRequests` and begins once the agent is idle.
 *
 * The live process is a spawned child with the stable id `process`: it outlives the
 * `starting` state (it is the same process once `connected`) and is released with
 * `stopChild`, whose cleanup kills the process group if it is still there.
 */
import { assertEvent, assign, cancel, emit, enqueueActions, fromCallback, fromPromise, raise, sendParent, sendTo, setup, stopChild, type StateValue } from 'xstate';
import type { InitializeResponse } from '../core/acp-types.js';
import type { ContainmentKind } from '../core/containment-kind.js';
import { failures, type AgentFailure, type CommandResult } from '../core/errors.js';
import {
  authRefusal,
  busyReason,
  credentialInUse,
  exceedsIntensity,
  exitIsOutcome,
  failsOver,
  lostDuringAuthentication,
  notifyParent,
  intensityFailure,
  ownWorkspaceId,
  policyOf,
  reportedFailure,
  sessionActorId,
  sessionWorkspaceId,
  settle,
  waitForLimit,
  willRetry,
  type AgentContext,
  type AgentEvent,
} from './agent-context.js';
import type {
  AgentEmitted,
  AgentMachineInput,
  AgentProcessInput,
  AgentReport,
  AgentStatus,
  AuthenticateInput,
  ProcessCommand,
  ProcessEvent,
  ProcessExit,
} from './agent-events.js';
import { exitOf, handshakeExitOf, handshakeTimeoutOf, initializeOf, lossOf, requestIdOf, spawnFailureOf, spawnOf } from './agent-action-params.js';
import { restartsWithin, type ClassAction } from './policies/class-policy.js';
import { backoffDelay, jitterRoll } from './policies/backoff.policy.js';
import type { SessionMachineInput } from './session-events.js';
import { sessionMachine, sessionStatusOf } from './session.machine.js';
import { workspaceMachine, type WorkspaceHoldInput } from './workspace.machine.js';

export { sessionActorId, type AgentContext, type AgentEvent };

/** Placeholder for the process actor; the runtime provides the real one. */
const processActorPlaceholder = fromCallback<ProcessCommand, AgentProcessInput, ProcessEvent>(() => {
  throw new Error('agentMachine needs the agentProcess actor: use .provide({ actors: { agentProcess } })');
});

/** Placeholder for the authenticate actor (ACP `authenticate` over the live connection). */
const authenticatePlaceholder = fromPromise<void, AuthenticateInput>(() => {
  throw new Error('agentMachine needs the authenticate actor: use .provide({ actors: { authenticate } })');
});

/**
 * How long a process whose ACP stream closed (outside a stop) may take to exit before it is
 * killed: stdout closing usually means the process is exiting; one that closed its stream but
 * keeps running is useless without it.
 */
export const streamClosedGraceMs = 1_000;

/** Whether a session's or a turn's failure parks the agent (`action`), by its class's policy. */
const failureParks = (context: AgentContext, event: AgentEvent, action: ClassAction) =>
  event.type === 'agent.failure' && policyOf(context, reportedFailure(context, event))?.action === action;

/** The failure a session or the runtime reported, as the action's params. */
const reportedFailureParams = ({ context, event }: { context: AgentContext; event: AgentEvent }) => {
  assertEvent(event, 'agent.failure');
  return { failure: reportedFailure(context, event), at: event.at };
};

/** The id of the child a done event (`xstate.done.actor.<id>`) is about. */
const doneActorId = (event: AgentEvent): string | undefined => (event as { actorId?: unknown }).actorId as string | undefined;

/** What the waiting starts are answered with (`settleStarts`). */
type StartOutcome = 'connected' | 'stopped' | 'lastError' | 'authRefusal' | 'lostDuringAuthentication' | 'ended';

/** A start refused with the failure the agent waits on (or gave up with). */
const lastErrorResult = (context: AgentContext): CommandResult => ({ ok: false, failure: context.lastError ?? failures.agentLost(context.displayName) });

function startResult(context: AgentContext, event: AgentEvent, outcome: StartOutcome): CommandResult {
  switch (outcome) {
    case 'connected':
      return { ok: true };
    case 'stopped':
      return { ok: false, failure: failures.stoppedBeforeConnected(context.name) };
    case 'lastError':
      return lastErrorResult(context);
    case 'authRefusal':
      return { ok: false, failure: authRefusal(context, 'error' in event ? event.error : undefined) };
    case 'lostDuringAuthentication':
      return { ok: false, failure: lostDuringAuthentication(context) };
    case 'ended':
      return { ok: false, failure: endedFailure(context) };
  }
}

/** What callers and sessions are told when the process ended as an outcome (`exited`). */
const endedFailure = (context: AgentContext) => failures.agentEnded(context.displayName, context.lastExit ?? { code: null, signal: null }, context.restart.when);

export const agentMachine = setup({
  types: {
    context: {} as AgentContext,
    events: {} as AgentEvent,
    input: {} as AgentMachineInput,
    emitted: {} as AgentEmitted,
  },
  actors: { agentProcess: processActorPlaceholder, session: sessionMachine, authenticate: authenticatePlaceholder, workspace: workspaceMachine },
  delays: {
    backoff: ({ context }) => backoffDelay(context.attempt, context.restart, context.restart.jitter > 0 ? jitterRoll(context.jitterSeed, context.attempt) : 0),
    handshakeTimeout: ({ context }) => context.handshakeTimeoutMs,
    stableUptime: ({ context }) => context.restart.stableAfterMs,
    shutdownTimeout: ({ context }) => context.shutdownTimeoutMs,
    killTimeout: ({ context }) => context.killTimeoutMs,
    limitWait: ({ context }) => context.parkedWaitMs ?? 0,
    streamClosedGrace: streamClosedGraceMs,
  },
  guards: {
    /** A loss or a failed automatic attempt may be retried: attempts left, a class that retries, restarts not held. */
    canRetry: ({ context }) => willRetry(context) && !context.restartsHeld,
    /** It would be retried, but one more restart exceeds the restart intensity. */
    exceedsIntensity: ({ context }) => willRetry(context) && !context.restartsHeld && exceedsIntensity(context),
    /** The failure just recorded is of a class that waits for a login. */
    parksForAuth: ({ context }) => policyOf(context, context.lastError)?.action === 'needsAuth',
    /** The failure just recorded is of a class that waits for a limit to reset. */
    parksForLimit: ({ context }) => policyOf(context, context.lastError)?.action === 'rateLimited',
    failureParksForAuth: ({ context, event }) => failureParks(context, event, 'needsAuth'),
    failureParksForLimit: ({ context, event }) => failureParks(context, event, 'rateLimited'),
    /** authenticate() waits for initialize, or runs over the connection (connected: beside it). */
    hasPendingAuth: ({ context }) => context.pendingAuthMethod !== null,
    /** The limit's reset time (or the class's wait) is known: wait it out. */
    hasLimitWait: ({ context }) => context.parkedWaitMs !== null,
    restartsHeld: ({ context }) => context.restartsHeld,
    /** authenticate failed because the connection closed (agent_exited), not because the agent refused. */
    connectionLost: ({ event }) => {
      assertEvent(event, ['xstate.error.actor.authenticate', 'xstate.error.actor.reauthenticate']);
      return (event.error as { kind?: unknown } | undefined)?.kind === 'agent_exited';
    },
    hasNoProcess: ({ context }) => !context.processRunning,
    /** Somebody asked for a start while the agent was stopping. */
    hasStartRequests: ({ context }) => context.startRequests.length > 0,
    connectionIsOpen: ({ context }) => context.connectionOpen,
    /** The agent's own workspace hold is running (made, being made, or being cleaned up). */
    holdsOwnWorkspace: ({ context }) => Object.hasOwn(context.workspaceHolds, ownWorkspaceId),
    /** No workspace hold of the agent or its sessions is left. */
    holdsNoWorkspace: ({ context }) => Object.keys(context.workspaceHolds).length === 0,
    /** A child that finished is one of the agent's workspace holds. */
    isWorkspaceHold: ({ context, event }) => {
      const id = doneActorId(event);
      return id !== undefined && Object.hasOwn(context.workspaceHolds, id);
    },
    /** The agent's own hold answered, and a process waits for its directory. */
    processWaitsForOwnWorkspace: ({ context, event }) => {
      assertEvent(event, ['workspace.held', 'workspace.failed']);
      return event.id === ownWorkspaceId && context.processRunning;
    },
    /** The process ended as an outcome: its restart policy (`restart.when`) does not start it again. */
    exitIsOutcome: ({ context, event }) => {
      assertEvent(event, 'process.exited');
      return exitIsOutcome(context, event);
    },
    /** The failure just recorded is a login or a quota that the next credential set may fix. */
    failsOver: ({ context }) => failsOver(context, context.lastError),
    /** A session or a turn failed for a login or a quota, and the agent has another credential set. */
    failureFailsOver: ({ context, event }) => event.type === 'agent.failure' && failsOver(context, reportedFailure(context, event)),
    /**
     * It would retry by itself, but the supervisor holds restarts, and callers wait: their
     * start runs as a caller's start (never held), so no call waits on the hold.
     */
    heldWithWaitingStarts: ({ context }) => willRetry(context) && context.restartsHeld && context.startRequests.length > 0,
    /**
     * Callers joined the attempt that just failed (or the loss), and the policy retries after a
     * backoff: they are answered now by that failure — a caller never waits out a backoff; its
     * next call during the backoff starts the agent at once. Not under `retryFirstStart`,
     * whose callers are answered by the final outcome.
     */
    answersWaitingCallers: ({ context }) =>
      context.startRequests.length > 0 && willRetry(context) && !context.restartsHeld && !(context.restart.retryFirstStart && context.restart.when !== 'never'),
    /** Disconnected for good (no automatic retry follows) with starts, or an authenticate(), still waiting. */
    givesUpWithWaitingStarts: ({ context }) => !willRetry(context) && (context.startRequests.length > 0 || context.pendingAuthMethod !== null),
  },
  actions: {
    reportStatus: enqueueActions(({ enqueue, context }, params: { status: AgentStatus }) => {
      enqueue.assign({ status: params.status });
      enqueue.emit({ type: 'status', agent: context.name, status: params.status });
      // `retrying`: this agent is about to start a process by itself (the parent counts it as live).
      const retrying =
        (params.status === 'disconnected' && willRetry(context) && !context.restartsHeld) ||
        ((params.status === 'needsAuth' || params.status === 'rateLimited') && context.processRunning) ||
        (params.status === 'rateLimited' && context.parkedWaitMs !== null);
      notifyParent(enqueue, { type: 'agent.status', agent: context.name, status: params.status, retrying });
    }),
    /** Every way into `disconnected` is a failure: report the one just recorded. */
    reportFailure: enqueueActions(({ enqueue, context }) => {
      const failure = context.lastError;
      if (!failure) return;
      enqueue.emit({ type: 'error', agent: context.name, failure });
      notifyParent(enqueue, { type: 'agent.error', agent: context.name, failure });
    }),
    /** The agent parked: tell listeners what it waits for. */
    reportParked: enqueueActions(({ enqueue, context }, params: { status: 'needsAuth' | 'rateLimited' }) => {
      const failure = context.lastError;
      if (!failure) return;
      const parked: AgentReport =
        params.status === 'needsAuth'
          ? { type: 'agent.needsAuth', agent: context.name, failure, authMethods: context.authMethods }
          : { type: 'agent.rateLimited', agent: context.name, failure, retryAt: failure.retryAt ?? null };
      enqueue.emit(parked as AgentEmitted);
      notifyParent(enqueue, parked);
    }),
    /** A start on a parked agent is answered at once with what it waits for. */
    refuseWithLastError: enqueueActions(({ enqueue, context }, params: { requestId: string | undefined }) => {
      if (params.requestId !== undefined) settle(enqueue, context, [params.requestId], lastErrorResult(context));
    }),
    /** authenticate() of a connected agent: the agent's ACP authenticate, by a child beside the connection. */
    spawnReauthentication: enqueueActions(({ enqueue, context }) => {
      enqueue.spawnChild('authenticate', { id: 'reauthenticate', input: { agent: context.name, methodId: context.pendingAuthMethod ?? '' } });
    }),
    /** Leaving `connected`: authenticate() beside the connection, if it runs, stops (its callers are answered by the transition out). */
    stopReauthentication: stopChild('reauthenticate'),
    /**
     * Answers every waiting start (an authenticate() among them) with `outcome`, and forgets
     * them; the pending login method goes too unless the agent connected.
     */
    settleStarts: enqueueActions(({ enqueue, context, event }, params: { outcome: StartOutcome }) => {
      settle(enqueue, context, context.startRequests, startResult(context, event, params.outcome));
      enqueue.assign(params.outcome === 'connected' ? { startRequests: [] } : { startRequests: [], pendingAuthMethod: null });
    }),
    /** Too many automatic restarts in the window: give up with kind restart_intensity. */
    giveUpForIntensity: assign(({ context }) => ({ lastError: intensityFailure(context), autoRetry: false })),
    /** An automatic restart begins: counted for the restart intensity, here and by the supervisor. */
    recordRestart: enqueueActions(({ enqueue, context }) => {
      enqueue.assign({ restartTimes: [...restartsWithin(context.restartTimes, context.restart.periodMs, context.now), context.now] });
      notifyParent(enqueue, { type: 'agent.restarting', agent: context.name, at: context.now });
    }),
    holdRestarts: assign({ restartsHeld: true }),
    releaseRestarts: assign({ restartsHeld: false }),
    setPendingAuth: assign({ pendingAuthMethod: ({ event }) => (event.type === 'authenticate' ? event.methodId : null) }),
    clearPendingAuth: assign({ pendingAuthMethod: null }),
    clearFailure: assign({ lastError: null }),
    /** How long the rateLimited agent waits, from its failure's reset time and class policy. */
    computeLimitWait: assign({ parkedWaitMs: ({ context }) => waitForLimit(context) }),
    addStartRequest: assign({
      startRequests: ({ context }, params: { requestId: string | undefined }) =>
        params.requestId === undefined ? context.startRequests : [...context.startRequests, params.requestId],
    }),
    addStopRequest: assign({
      stopRequests: ({ context }, params: { requestId: string | undefined }) =>
        params.requestId === undefined ? context.stopRequests : [...context.stopRequests, params.requestId],
    }),
    /** The reported failure as this agent's classifier and patterns see it, to whoever reported it (`failure.classified`). */
    answerClassification: emit(({ context, event }) => {
      assertEvent(event, 'agent.failure');
      return { type: 'failure.classified' as const, requestId: event.requestId ?? null, failure: reportedFailure(context, event) };
    }),
    /** Answers one command at once (ensure on a connected agent, stop on an idle one). */
    answerNow: enqueueActions(({ enqueue, context }, params: { requestId: string | undefined }) => {
      if (params.requestId !== undefined) settle(enqueue, context, [params.requestId], { ok: true });
    }),
    settleStops: enqueueActions(({ enqueue, context }) => {
      settle(enqueue, context, context.stopRequests, { ok: true });
      enqueue.assign({ stopRequests: [] });
    }),
    spawnProcess: enqueueActions(({ enqueue, context }) => {
      const input: AgentProcessInput = context.credentials.length > 0 ? { agent: context.name, credential: context.credentialIndex } : { agent: context.name };
      enqueue.spawnChild('agentProcess', { id: 'process', input });
      enqueue.assign({ processRunning: true, connectionOpen: true, pid: null });
    }),
    /** Stops the process actor; its cleanup kills whatever is left of the process group. */
    releaseProcess: enqueueActions(({ enqueue }) => {
      enqueue(stopChild('process'));
      enqueue(cancel('streamClosedGrace'));
      enqueue.assign({ processRunning: false, connectionOpen: false, pid: null, containment: null, initialize: null });
    }),
    recordSpawn: assign(({ context }, params: { pid: number; containment: ContainmentKind | null; at: number | undefined }) => ({
      pid: params.pid,
      containment: params.containment,
      now: params.at ?? context.now,
    })),
    recordConnection: assign((_, params: { initialize: InitializeResponse }) => ({
      initialize: params.initialize,
      lastError: null,
      authMethods: (params.initialize.authMethods ?? []).map((method) => ({ id: method.id, name: method.name, description: method.description ?? null })),
    })),
    markConnectionClosed: assign({ connectionOpen: false }),
    recordFailure: assign(({ context }, params: { failure: AgentFailure; at?: number }) => ({ lastError: params.failure, now: params.at ?? context.now })),
    countAttempt: assign({ attempt: ({ context }) => context.attempt + 1 }),
    /** Stopped agents start afresh: no error, no attempts counted. */
    forgetFailures: assign({ attempt: 0, lastError: null, credentialIndex: 0 }),
    resetAttempts: assign({ attempt: 0 }),
    allowAutoRetry: assign({ autoRetry: true }),
    /**
     * A start a caller asked for: a fresh attempt count, and its failure goes to that caller,
     * not to a retry — unless `restart.retryFirstStart` (never under `when: 'never'`): then a
     * failure a restart can fix is retried under the backoff, and the caller is answered with
     * the final outcome.
     */
    beginCallerStart: assign({ attempt: 0, autoRetry: ({ context }) => context.restart.retryFirstStart && context.restart.when !== 'never' }),
    /** The supervisor holds restarts, so the waiting callers' start runs as theirs: its failure answers them. */
    startForWaitingCallers: assign({ autoRetry: false }),
    recordExit: assign((_, params: { exit: ProcessExit }) => ({ lastExit: params.exit })),
    /** The process ended as an outcome: listeners and the supervisor hear how. */
    reportExited: enqueueActions(({ enqueue, context }) => {
      if (!context.lastExit) return;
      enqueue.emit({ type: 'agent.exited', agent: context.name, exit: context.lastExit, when: context.restart.when });
      notifyParent(enqueue, { type: 'agent.exited', agent: context.name, exit: context.lastExit, when: context.restart.when });
    }),
    /** The next credential set, after a login or a quota failed with this one: a fresh streak of attempts. */
    useNextCredential: enqueueActions(({ enqueue, context }) => {
      const previous = credentialInUse(context) ?? '';
      const next = { ...context, credentialIndex: context.credentialIndex + 1 };
      enqueue.assign({ credentialIndex: next.credentialIndex, attempt: 0, autoRetry: true });
      const failure = context.lastError ?? failures.agentLost(context.displayName);
      const report = { type: 'agent.credential' as const, agent: context.name, credential: credentialInUse(next) ?? '', previous, failure };
      enqueue.emit(report);
      notifyParent(enqueue, report);
    }),
    /** The process ended as an outcome: every session's turn fails with agent_ended; they stay resumable once the agent is started again. */
    failSessionsWithOutcome: enqueueActions(({ enqueue, context }) => {
      const ended = endedFailure(context);
      for (const key of context.sessionKeys) enqueue.sendTo(sessionActorId(key), { type: 'agent.lost', kind: ended.kind, message: ended.message });
    }),
    spawnSession: enqueueActions(({ enqueue, context }, params: { session: SessionMachineInput; workspaceHold: string | undefined }) => {
      if (context.sessionKeys.includes(params.session.key)) return;
      enqueue.spawnChild('session', { id: sessionActorId(params.session.key), input: params.session });
      enqueue.assign({ sessionKeys: [...context.sessionKeys, params.session.key] });
      // The session's own workspace is its from now on: a stop asks whether this session was busy.
      if (params.workspaceHold !== undefined && Object.hasOwn(context.workspaceHolds, params.workspaceHold)) {
        enqueue.assign({ workspaceHolds: { ...context.workspaceHolds, [params.workspaceHold]: params.session.key } });
      }
    }),
    /** The first spawn of a life: the agent's workspace hold, which makes the workspace. */
    holdOwnWorkspace: enqueueActions(({ enqueue, context }) => {
      const input: WorkspaceHoldInput = { actorId: ownWorkspaceId, agent: context.name, spec: null };
      enqueue.spawnChild('workspace', { id: ownWorkspaceId, input });
      enqueue.assign({ workspaceHolds: { ...context.workspaceHolds, [ownWorkspaceId]: null } });
    }),
    /** A restart: the hold checks that the workspace is still there (and makes it again if not). */
    checkOwnWorkspace: sendTo(ownWorkspaceId, { type: 'workspace.acquire' }),
    /** A session with its own workspace is admitted: its hold makes it; the caller waits for it by the hold's id. */
    holdSessionWorkspace: enqueueActions(({ enqueue, context, event }) => {
      assertEvent(event, 'session.admit');
      const id = sessionWorkspaceId(event.hold);
      const input: WorkspaceHoldInput = { actorId: id, agent: context.name, spec: event.workspace };
      enqueue.spawnChild('workspace', { id, input });
      enqueue.assign({ workspaceHolds: { ...context.workspaceHolds, [id]: null } });
    }),
    /** A hold is over (cleaned up, kept, or never made). */
    forgetWorkspaceHold: enqueueActions(({ enqueue, context, event }) => {
      const id = doneActorId(event)!; // the guard isWorkspaceHold checked it
      const left = Object.fromEntries(Object.entries(context.workspaceHolds).filter(([held]) => held !== id));
      enqueue(stopChild(id));
      enqueue.assign({ workspaceHolds: left });
    }),
    passWorkspaceToProcess: sendTo('process', ({ event }) => {
      assertEvent(event, 'workspace.held');
      return { type: 'workspace.ready', path: event.path } satisfies ProcessCommand;
    }),
    failProcessWorkspace: sendTo('process', ({ event }) => {
      assertEvent(event, 'workspace.failed');
      return { type: 'workspace.failed', message: event.message } satisfies ProcessCommand;
    }),
    /**
     * A stop begins: every workspace hold hears that its holder is ending, and whether a
     * session was busy (a turn running, a person's answer awaited) — then its cleanup is
     * refused. The agent's own workspace asks all its sessions; a session's, that session.
     */
    markWorkspacesEnding: enqueueActions(({ enqueue, context, self }) => {
      const children = self.getSnapshot().children as Record<string, { getSnapshot(): { status: string; value: StateValue; context?: { sessionId?: string } } } | undefined>;
      const statusOf = (key: string) => {
        const session = children[sessionActorId(key)]?.getSnapshot();
        return { sessionId: session?.context?.sessionId ?? key, status: session ? sessionStatusOf(session) : 'stopped' };
      };
      const all = context.sessionKeys.map(statusOf);
      for (const [id, key] of Object.entries(context.workspaceHolds)) {
        const busy = id === ownWorkspaceId ? busyReason(context.name, all) : key === null ? null : busyReason(context.name, [statusOf(key)]);
        enqueue.sendTo(id, { type: 'workspace.end', busy });
      }
    }),
    releaseOwnWorkspace: sendTo(ownWorkspaceId, { type: 'workspace.release' }),
    forgetSession: enqueueActions(({ enqueue, context }, params: { key: string }) => {
      if (!context.sessionKeys.includes(params.key)) return;
      enqueue(stopChild(sessionActorId(params.key)));
      enqueue.assign({ sessionKeys: context.sessionKeys.filter((key) => key !== params.key) });
    }),
    /** The process died: every session's turn fails with agent_exited; they stay resumable. */
    failSessions: enqueueActions(({ enqueue, context }) => {
      const lost = failures.agentLost(context.displayName);
      for (const key of context.sessionKeys) enqueue.sendTo(sessionActorId(key), { type: 'agent.lost', kind: lost.kind, message: lost.message });
    }),
    /** The agent is being stopped: its sessions end (stopped) and are forgotten. */
    endSessions: enqueueActions(({ enqueue, context }) => {
      const stopped = failures.agentStopped(context.displayName);
      for (const key of context.sessionKeys) {
        enqueue.sendTo(sessionActorId(key), { type: 'agent.lost', kind: stopped.kind, message: stopped.message });
        enqueue(stopChild(sessionActorId(key)));
      }
      enqueue.assign({ sessionKeys: [] });
    }),
    closeProcessInput: sendTo('process', { type: 'closeInput' } satisfies ProcessCommand),
    terminateProcess: sendTo('process', { type: 'terminate' } satisfies ProcessCommand),
    killProcess: sendTo('process', { type: 'kill' } satisfies ProcessCommand),
    /** The stream closed outside a stop: the process gets streamClosedGraceMs to exit by itself (a timer on the actor's clock). */
    awaitExitAfterClosedStream: raise({ type: 'process.streamClosedGraceElapsed' }, { delay: 'streamClosedGrace', id: 'streamClosedGrace' }),
    /** A stop's ladder decides from here: a grace timer from before the stop is moot. */
    cancelClosedStreamGrace: cancel('streamClosedGrace'),
    /** Still running streamClosedGraceMs after its stream closed: killed, and its exit says why. */
    killForClosedStream: sendTo('process', { type: 'kill', reason: 'stream_closed' } satisfies ProcessCommand),
    /**
     * Reports to the supervisor machine that owns this agent. An agent machine run on its own
     * (a test) provides a replacement: it has no parent to tell.
     */
    notifyParent: sendParent((_, report: AgentReport) => report),
  },
}).createMachine({
  id: 'agent',
  description: 'One supervised agent process and its ACP connection.',
  context: ({ input }) => ({
    ...input,
    status: 'idle',
    attempt: 0,
    autoRetry: false,
    processRunning: false,
    connectionOpen: false,
    pid: null,
    containment: null,
    initialize: null,
    lastError: null,
    sessionKeys: [],
    startRequests: [],
    stopRequests: [],
    now: 0,
    restartTimes: [],
    parkedWaitMs: null,
    pendingAuthMethod: null,
    authMethods: [],
    workspaceHolds: {},
    credentialIndex: 0,
    lastExit: null,
  }),
  initial: 'idle',
  on: {
    'workspace.acquire': [
      { guard: 'holdsOwnWorkspace', actions: 'checkOwnWorkspace', description: 'A restart: its workspace is checked (made again if it went missing).' },
      { actions: 'holdOwnWorkspace', description: 'The first spawn since idle (or since the workspace failed): its workspace is made.' },
    ],
    'workspace.held': [
      { guard: 'processWaitsForOwnWorkspace', actions: 'passWorkspaceToProcess', description: 'The agent\'s workspace is there: the process spawns in it.' },
      { description: 'A session\'s workspace is there (its caller opens the session in it), or no process waits any more.' },
    ],
    'workspace.failed': [
      { guard: 'processWaitsForOwnWorkspace', actions: 'failProcessWorkspace', description: 'The agent\'s workspace could not be made: nothing is spawned (workspace_failed).' },
      { description: 'A session\'s workspace could not be made (its caller fails with workspace_failed).' },
    ],
    'xstate.done.actor.*': {
      guard: 'isWorkspaceHold',
      actions: 'forgetWorkspaceHold',
      description: 'A workspace hold is over (cleaned up, kept, left to its other holders, or never made): its done event, sent once it has finished.',
    },
    'session.admit': {
      actions: ['holdSessionWorkspace', { type: 'answerNow', params: requestIdOf }],
      description: 'A session with its own workspace may open: its hold makes the workspace.',
    },
    'session.forget': {
      actions: { type: 'forgetSession', params: ({ event }) => ({ key: event.key }) },
      description: 'A session was closed: drop its actor.',
    },
    'process.connectionClosed': {
      actions: ['markConnectionClosed', 'awaitExitAfterClosedStream'],
      description: 'The ACP stream closed (connected, or parked with its process): the exit is on its way, or the process is killed after streamClosedGrace.',
    },
    'agent.failure': {
      actions: 'answerClassification',
      description: 'A failure reported while not connected (a session refused as the agent went away): classified for its reporter, nothing parks.',
    },
    'process.streamClosedGraceElapsed': {
      actions: 'killForClosedStream',
      description: 'It closed its stream and kept running for streamClosedGraceMs: kill its process group (its exit is reported as stream_closed).',
    },
    'restarts.hold': { actions: 'holdRestarts', description: 'The supervisor is overloaded: no automatic restart until it is reset.' },
    'restarts.release': { actions: 'releaseRestarts', description: 'The supervisor was reset: automatic restarts resume.' },
  },
  states: {
    idle: {
      description: 'No process, a clean slate (no error, attempt 0). Waits for ensureAgent().',
      // Stops are answered before the status goes out: the idle report may be what lets a
      // shutting-down supervisor reach its final state, after which it relays nothing.
      entry: ['settleStops', { type: 'reportStatus', params: { status: 'idle' } }, 'forgetFailures'],
      always: {
        guard: 'hasStartRequests',
        target: 'starting',
        actions: 'beginCallerStart',
        description: 'A start was asked for while the agent was stopping: begin it now that the stop is done.',
      },
      on: {
        ensure: {
          target: 'starting',
          actions: [{ type: 'addStartRequest', params: requestIdOf }, 'beginCallerStart'],
          description: 'ensureAgent(): spawn the process and open ACP.',
        },
        reconnect: {
          target: 'starting',
          actions: [{ type: 'addStartRequest', params: requestIdOf }, 'beginCallerStart'],
          description: 'reconnect() of an idle agent starts it, as ensureAgent() does.',
        },
        authenticate: {
          target: 'starting',
          actions: [{ type: 'addStartRequest', params: requestIdOf }, 'beginCallerStart', 'setPendingAuth'],
          description: 'authenticate(): start the agent, then authenticate once initialize is answered.',
        },
        'restart.request': {
          target: 'starting',
          actions: [{ type: 'addStartRequest', params: requestIdOf }, 'beginCallerStart'],
          description: 'restart() of a stopped agent: nothing to stop, start it.',
        },
        stop: { actions: { type: 'answerNow', params: requestIdOf }, description: 'Already stopped.' },
      },
    },
    starting: {
      description: 'A first start requested by a caller: spawn, then the initialize handshake.',
      entry: [{ type: 'reportStatus', params: { status: 'starting' } }, 'spawnProcess'],
      on: {
        'process.spawned': { actions: { type: 'recordSpawn', params: spawnOf } },
        'process.initialized': [
          {
            guard: 'hasPendingAuth',
            target: '#agent.needsAuth.authenticating',
            actions: { type: 'recordConnection', params: initializeOf },
            description: 'initialize answered, and authenticate() is waiting: authenticate before the agent counts as connected.',
          },
          { target: '#agent.connected', actions: { type: 'recordConnection', params: initializeOf }, description: 'initialize answered.' },
        ],
        'process.failed': {
          target: '#agent.disconnected',
          actions: [{ type: 'recordFailure', params: spawnFailureOf }, 'releaseProcess'],
          description: 'Spawn failed (not_installed, spawn_failed, workspace_failed) or initialize was rejected (handshake_failed).',
        },
        'process.exited': {
          target: '#agent.disconnected',
          actions: [{ type: 'recordFailure', params: handshakeExitOf }, { type: 'recordExit', params: exitOf }, 'releaseProcess'],
          description: 'The process exited before answering initialize.',
        },
        ensure: { actions: { type: 'addStartRequest', params: requestIdOf }, description: 'A start is already in flight: wait for its outcome.' },
        reconnect: { actions: { type: 'addStartRequest', params: requestIdOf }, description: 'A start is already in flight: wait for its outcome.' },
        authenticate: {
          actions: [{ type: 'addStartRequest', params: requestIdOf }, 'setPendingAuth'],
          description: 'A start is already in flight: wait for its outcome. Authenticate once initialize is answered.',
        },
        'restart.request': {
          target: '#agent.restarting',
          actions: { type: 'addStartRequest', params: requestIdOf },
          description: 'restart() during the handshake: this process goes down the stop ladder, a new one starts.',
        },
        stop: { target: '#agent.stopping', actions: { type: 'addStopRequest', params: requestIdOf }, description: 'stop() or shutdown during the handshake.' },
      },
      after: {
        handshakeTimeout: {
          target: '#agent.disconnected',
          actions: [{ type: 'recordFailure', params: handshakeTimeoutOf }, 'releaseProcess'],
          description: 'initialize unanswered for handshakeTimeoutMs: kill the process group.',
        },
      },
    },
    connected: {
      description: 'The agent answered initialize; its connection is in use.',
      entry: [{ type: 'reportStatus', params: { status: 'connected' } }, { type: 'settleStarts', params: { outcome: 'connected' } }],
      exit: 'stopReauthentication',
      initial: 'settling',
      states: {
        settling: {
          description: 'Connected, but not yet long enough to forget earlier failures.',
          after: {
            stableUptime: { target: 'stable', actions: 'resetAttempts', description: 'Up for stableAfterMs: reset the attempt counter.' },
          },
        },
        stable: { description: 'Up for stableAfterMs; the attempt counter is back at 0.' },
      },
      on: {
        'process.exited': [
          {
            guard: 'exitIsOutcome',
            target: 'exited',
            actions: [{ type: 'recordExit', params: exitOf }, 'releaseProcess', 'failSessionsWithOutcome'],
            description: 'It ended, and its restart policy does not start it again (a clean exit under on-failure, any exit under never): an outcome, not a loss.',
          },
          {
            guard: 'hasPendingAuth',
            target: 'disconnected',
            actions: [
              { type: 'recordFailure', params: lossOf },
              { type: 'recordExit', params: exitOf },
              'releaseProcess',
              'allowAutoRetry',
              'failSessions',
              { type: 'settleStarts', params: { outcome: 'lostDuringAuthentication' } },
            ],
            description: 'Lost while authenticate() ran beside the connection: its callers fail with the loss now (a restart would not log in).',
          },
          {
            guard: 'hasStartRequests',
            target: '#agent.reconnecting.spawning',
            actions: [{ type: 'recordFailure', params: lossOf }, { type: 'recordExit', params: exitOf }, 'releaseProcess', 'reportFailure', 'failSessions', 'beginCallerStart'],
            description: 'Lost while callers waited on its closing stream: their start runs now, not after a backoff, and its outcome is theirs.',
          },
          {
            target: 'disconnected',
            actions: [{ type: 'recordFailure', params: lossOf }, { type: 'recordExit', params: exitOf }, 'releaseProcess', 'allowAutoRetry', 'failSessions'],
            description: 'The process exited or its ACP stream closed: the agent was lost.',
          },
        ],
        'agent.failure': [
          {
            guard: 'hasPendingAuth',
            actions: 'answerClassification',
            description: 'authenticate() runs beside the connection: its outcome decides (a refusal rejects its callers; a later failure parks).',
          },
          {
            guard: 'failureFailsOver',
            target: '#agent.reconnecting.replacing',
            actions: ['answerClassification', { type: 'recordFailure', params: reportedFailureParams }, 'reportFailure', 'useNextCredential', 'failSessions'],
            description: 'A login or a quota failed, and the agent has another credential set: replace the process with one that runs with the next set.',
          },
          {
            guard: 'failureParksForAuth',
            target: 'needsAuth',
            actions: ['answerClassification', { type: 'recordFailure', params: reportedFailureParams }, 'reportFailure'],
            description: 'A session or a turn was refused for want of a login: park (the process stays, for authenticate()).',
          },
          {
            guard: 'failureParksForLimit',
            target: 'rateLimited',
            actions: ['answerClassification', { type: 'recordFailure', params: reportedFailureParams }, 'reportFailure'],
            description: 'A session or a turn hit a usage or rate limit: park until it resets (the process stays).',
          },
          { actions: 'answerClassification', description: 'Any other class: the session that failed reports it; the agent stays connected.' },
        ],
        authenticate: [
          {
            guard: 'hasPendingAuth',
            actions: { type: 'addStartRequest', params: requestIdOf },
            description: 'authenticate() while one runs over this connection: answered with its outcome.',
          },
          {
            guard: 'connectionIsOpen',
            actions: [{ type: 'addStartRequest', params: requestIdOf }, 'setPendingAuth', 'spawnReauthentication'],
            description: 'authenticate() on a connected agent: over its connection, beside it. The agent stays connected (no status change) and its sessions go on.',
          },
          {
            target: '#agent.reconnecting.replacing',
            actions: [{ type: 'addStartRequest', params: requestIdOf }, 'setPendingAuth', 'beginCallerStart', 'failSessions'],
            description: 'authenticate() as its stream just closed: the process is lost to its sessions; replace it, then authenticate.',
          },
        ],
        'xstate.done.actor.reauthenticate': {
          actions: ['clearPendingAuth', 'clearFailure', { type: 'settleStarts', params: { outcome: 'connected' } }],
          description: 'Authenticated: its callers are answered; still connected.',
        },
        'xstate.error.actor.reauthenticate': [
          {
            guard: 'connectionLost',
            description: 'The connection closed under it: the loss follows (process.exited), and fails its callers.',
          },
          {
            actions: { type: 'settleStarts', params: { outcome: 'authRefusal' } },
            description: 'The agent refused the login: its callers get auth_required; the agent stays connected on the login it had.',
          },
        ],
        ensure: [
          { guard: 'connectionIsOpen', actions: { type: 'answerNow', params: requestIdOf }, description: 'Already connected: the same connection.' },
          { actions: { type: 'addStartRequest', params: requestIdOf }, description: 'Its stream just closed: wait for the loss and what follows it.' },
        ],
        reconnect: [
          { guard: 'connectionIsOpen', actions: { type: 'answerNow', params: requestIdOf }, description: 'Already connected: the same connection.' },
          { actions: { type: 'addStartRequest', params: requestIdOf }, description: 'Its stream just closed: wait for the loss and what follows it.' },
        ],
        'session.open': {
          actions: { type: 'spawnSession', params: ({ event }) => ({ session: event.session, workspaceHold: event.workspaceHold }) },
          description: 'session/new or session/load succeeded: a session child.',
        },
        restart: {
          actions: 'killProcess',
          description: 'A session stalled with onStall restart: kill the process group; the restart policy brings the agent back.',
        },
        'restart.request': {
          target: 'restarting',
          actions: [{ type: 'addStartRequest', params: requestIdOf }, 'beginCallerStart'],
          description: 'restart(): the stop ladder, then a start; its sessions are resumed as after a crash.',
        },
        stop: { target: '#agent.stopping', actions: { type: 'addStopRequest', params: requestIdOf }, description: 'stop() or shutdown.' },
      },
    },
    disconnected: {
      description: 'No process. Retries automatically after a loss while attempts remain; otherwise waits for a caller.',
      entry: [{ type: 'reportStatus', params: { status: 'disconnected' } }, 'reportFailure'],
      always: [
        {
          guard: 'exceedsIntensity',
          actions: ['giveUpForIntensity', 'reportFailure', { type: 'settleStarts', params: { outcome: 'lastError' } }],
          description: 'It would restart, but more than restart.intensity automatic restarts within periodMs: give up (restart_intensity).',
        },
        {
          guard: 'answersWaitingCallers',
          actions: { type: 'settleStarts', params: { outcome: 'lastError' } },
          description: 'Callers waited on the attempt that failed (or on the loss): they are answered by it now, not after a backoff; the policy goes on without them.',
        },
        {
          guard: 'canRetry',
          target: 'reconnecting',
          actions: ['countAttempt', 'recordRestart'],
          description: 'Lost after connecting, or an automatic attempt failed, with attempts left and a class that retries.',
        },
        {
          guard: 'heldWithWaitingStarts',
          target: 'reconnecting.spawning',
          actions: 'startForWaitingCallers',
          description: 'It would retry, but the supervisor holds restarts, and callers wait: a caller\'s start is never held, so it runs now and answers them.',
        },
        {
          guard: 'failsOver',
          target: 'reconnecting.spawning',
          actions: 'useNextCredential',
          description: 'A login or a quota failed, and the agent has another credential set: start again with the next set.',
        },
        { guard: 'parksForAuth', target: 'needsAuth', description: 'A failure of class auth: wait for a login.' },
        { guard: 'parksForLimit', target: 'rateLimited', description: 'A usage or rate limit: wait for it to reset.' },
        {
          guard: 'givesUpWithWaitingStarts',
          actions: { type: 'settleStarts', params: { outcome: 'lastError' } },
          description: 'No automatic retry follows: the waiting starts (an authenticate() among them) fail with its error; a later start begins afresh.',
        },
      ],
      on: {
        ensure: {
          target: 'starting',
          actions: [{ type: 'addStartRequest', params: requestIdOf }, 'beginCallerStart'],
          description: 'ensureAgent(): a fresh start, reported to the caller.',
        },
        authenticate: {
          target: 'starting',
          actions: [{ type: 'addStartRequest', params: requestIdOf }, 'beginCallerStart', 'setPendingAuth'],
          description: 'authenticate(): start afresh, then authenticate once initialize is answered.',
        },
        reconnect: {
          target: 'reconnecting.spawning',
          actions: [{ type: 'addStartRequest', params: requestIdOf }, 'beginCallerStart'],
          description: 'reconnect(): reset the attempt counter and spawn now.',
        },
        'restart.request': {
          target: 'reconnecting.spawning',
          actions: [{ type: 'addStartRequest', params: requestIdOf }, 'beginCallerStart'],
          description: 'restart() with no process: start it now, as reconnect() does.',
        },
        stop: { target: '#agent.stopping', actions: { type: 'addStopRequest', params: requestIdOf }, description: 'stop() clears the error and goes idle.' },
      },
    },
    reconnecting: {
      description: 'Waiting out the backoff delay, then spawning again.',
      entry: { type: 'reportStatus', params: { status: 'reconnecting' } },
      initial: 'waiting',
      states: {
        waiting: {
          description: 'Backoff timer pending: min(initialDelayMs · factor^(attempt−1), maxDelayMs).',
          after: {
            backoff: [
              { guard: 'restartsHeld', target: 'held', description: 'The delay elapsed, but the supervisor holds automatic restarts.' },
              { target: 'spawning', description: 'The backoff delay elapsed.' },
            ],
          },
          on: {
            reconnect: {
              target: 'spawning',
              actions: [{ type: 'addStartRequest', params: requestIdOf }, 'beginCallerStart'],
              description: 'reconnect(): cancel the timer, reset the count, spawn now.',
            },
            ensure: {
              target: 'spawning',
              actions: [{ type: 'addStartRequest', params: requestIdOf }, 'beginCallerStart'],
              description: 'ensureAgent() (a session, a prompt): a caller does not wait out the backoff — its start runs now, and its outcome is the caller\'s.',
            },
          },
        },
        held: {
          description: 'The supervisor is overloaded: this automatic restart waits until it is reset (or a caller reconnects).',
          always: {
            guard: 'hasStartRequests',
            target: 'spawning',
            actions: 'beginCallerStart',
            description: 'A caller waits (ensureAgent, a session, a prompt): a caller\'s start is never held, so it runs now.',
          },
          on: {
            'restarts.release': { target: 'spawning', actions: 'releaseRestarts', description: 'The supervisor was reset: restart now.' },
            reconnect: {
              target: 'spawning',
              actions: [{ type: 'addStartRequest', params: requestIdOf }, 'beginCallerStart'],
              description: 'reconnect(): a caller\'s start is not held.',
            },
          },
        },
        replacing: {
          description: 'reconnect() or authenticate() of a parked agent whose process still runs: kill it, then spawn afresh.',
          entry: 'killProcess',
          on: {
            'process.exited': { target: 'spawning', actions: [{ type: 'recordExit', params: exitOf }, 'releaseProcess'], description: 'The old process is gone.' },
          },
          after: {
            killTimeout: { target: 'spawning', actions: 'releaseProcess', description: 'Not gone within killTimeoutMs: release it and spawn anyway.' },
          },
        },
        spawning: {
          description: 'Spawned again; waiting for initialize.',
          entry: 'spawnProcess',
          on: {
            'process.spawned': { actions: { type: 'recordSpawn', params: spawnOf } },
            'process.initialized': [
              {
                guard: 'hasPendingAuth',
                target: '#agent.needsAuth.authenticating',
                actions: { type: 'recordConnection', params: initializeOf },
                description: 'initialize answered, and authenticate() is waiting: authenticate before the agent counts as connected.',
              },
              { target: '#agent.connected', actions: { type: 'recordConnection', params: initializeOf }, description: 'initialize answered.' },
            ],
            'process.failed': {
              target: '#agent.disconnected',
              actions: [{ type: 'recordFailure', params: spawnFailureOf }, 'releaseProcess'],
              description: 'Spawn failed (not_installed, spawn_failed, workspace_failed) or initialize was rejected (handshake_failed).',
            },
            'process.exited': {
              target: '#agent.disconnected',
              actions: [{ type: 'recordFailure', params: handshakeExitOf }, { type: 'recordExit', params: exitOf }, 'releaseProcess'],
              description: 'The process exited before answering initialize.',
            },
          },
          after: {
            handshakeTimeout: {
              target: '#agent.disconnected',
              actions: [{ type: 'recordFailure', params: handshakeTimeoutOf }, 'releaseProcess'],
              description: 'initialize unanswered for handshakeTimeoutMs: kill the process group.',
            },
          },
        },
      },
      on: {
        ensure: { actions: { type: 'addStartRequest', params: requestIdOf }, description: 'A reconnect is under way: wait for its outcome.' },
        reconnect: { actions: { type: 'addStartRequest', params: requestIdOf }, description: 'A reconnect is under way: wait for its outcome.' },
        authenticate: {
          actions: [{ type: 'addStartRequest', params: requestIdOf }, 'setPendingAuth'],
          description: 'A reconnect is under way: wait for its outcome. Authenticate once initialize is answered.',
        },
        'restart.request': [
          {
            guard: 'hasNoProcess',
            target: '.spawning',
            actions: [{ type: 'addStartRequest', params: requestIdOf }, 'beginCallerStart'],
            description: 'restart() while waiting out a backoff (or held): no process to stop, spawn now.',
          },
          {
            target: '#agent.restarting',
            actions: [{ type: 'addStartRequest', params: requestIdOf }, 'beginCallerStart'],
            description: 'restart() while a process is spawning or being replaced: the stop ladder, then a start.',
          },
        ],
        stop: { target: '#agent.stopping', actions: { type: 'addStopRequest', params: requestIdOf }, description: 'stop() or shutdown; leaving cancels the backoff timer.' },
      },
    },
    // The same rungs as stopping's ladder, written out again on purpose: Stately's parser reads
    // state nodes only as literals here, so a shared object would hide them from the visualizer.
    restarting: {
      description: 'restart(): the graceful stop ladder (close ACP and stdin, SIGTERM, SIGKILL the group), then a start; the sessions stay, to be resumed as after a crash, and the workspace stays held.',
      entry: [{ type: 'reportStatus', params: { status: 'restarting' } }, 'cancelClosedStreamGrace', 'failSessions'],
      initial: 'closing',
      states: {
        closing: {
          description: 'ACP connection and stdin closed; waiting for the agent to exit on its own.',
          entry: 'closeProcessInput',
          after: { shutdownTimeout: { target: 'terminating', description: 'Still running after shutdownTimeoutMs.' } },
        },
        terminating: {
          description: 'SIGTERM sent to the process group.',
          entry: 'terminateProcess',
          after: { killTimeout: { target: 'killing', description: 'Still running after killTimeoutMs.' } },
        },
        killing: {
          description: 'SIGKILL sent to the process group.',
          entry: 'killProcess',
          after: {
            killTimeout: {
              target: '#agent.reconnecting.spawning',
              actions: 'releaseProcess',
              description: 'Not even SIGKILL ended it within killTimeoutMs: release it and start anyway.',
            },
          },
        },
      },
      on: {
        'process.exited': {
          target: '#agent.reconnecting.spawning',
          actions: [{ type: 'recordExit', params: exitOf }, 'releaseProcess'],
          description: 'The old process is gone: start the new one.',
        },
        'process.connectionClosed': { actions: 'markConnectionClosed', description: 'The ladder closed the stream: the ladder goes on, no other timer.' },
        ensure: { actions: { type: 'addStartRequest', params: requestIdOf }, description: 'A restart is under way: wait for its outcome.' },
        reconnect: { actions: { type: 'addStartRequest', params: requestIdOf }, description: 'A restart is under way: wait for its outcome.' },
        'restart.request': { actions: { type: 'addStartRequest', params: requestIdOf }, description: 'A restart is under way: wait for its outcome.' },
        authenticate: {
          actions: [{ type: 'addStartRequest', params: requestIdOf }, 'setPendingAuth'],
          description: 'A restart is under way: wait for its outcome. Authenticate once initialize is answered.',
        },
        stop: { target: '#agent.stopping', actions: { type: 'addStopRequest', params: requestIdOf }, description: 'stop() during a restart: the stop wins (the restart\'s callers are answered stopped).' },
      },
    },
    exited: {
      description: 'The process ended and its restart policy does not start it again (restart.when): an outcome, not a crash. No process; sessions failed with agent_ended; the workspace stays held until a stop.',
      entry: [{ type: 'reportStatus', params: { status: 'exited' } }, 'reportExited', { type: 'settleStarts', params: { outcome: 'ended' } }],
      on: {
        ensure: {
          target: 'starting',
          actions: [{ type: 'addStartRequest', params: requestIdOf }, 'beginCallerStart'],
          description: 'ensureAgent(): a caller starts it again.',
        },
        reconnect: {
          target: 'starting',
          actions: [{ type: 'addStartRequest', params: requestIdOf }, 'beginCallerStart'],
          description: 'reconnect(): a caller starts it again.',
        },
        'restart.request': {
          target: 'starting',
          actions: [{ type: 'addStartRequest', params: requestIdOf }, 'beginCallerStart'],
          description: 'restart(): nothing to stop, start it.',
        },
        authenticate: {
          target: 'starting',
          actions: [{ type: 'addStartRequest', params: requestIdOf }, 'beginCallerStart', 'setPendingAuth'],
          description: 'authenticate(): start it, then authenticate once initialize is answered.',
        },
        stop: { target: '#agent.stopping', actions: { type: 'addStopRequest', params: requestIdOf }, description: 'stop(): its workspaces are released, then idle.' },
      },
    },
    stopping: {
      description: 'The graceful stop ladder: close ACP and stdin, SIGTERM the group, SIGKILL the group.',
      entry: [{ type: 'reportStatus', params: { status: 'stopping' } }, 'cancelClosedStreamGrace', 'markWorkspacesEnding', 'endSessions', { type: 'settleStarts', params: { outcome: 'stopped' } }],
      initial: 'checking',
      states: {
        checking: {
          description: 'Is there a process to stop?',
          always: [
            { guard: 'hasNoProcess', target: 'releasingWorkspaces', description: 'No process (disconnected, or waiting out a backoff): nothing to stop.' },
            { target: 'closing' },
          ],
        },
        closing: {
          description: 'ACP connection and stdin closed; waiting for the agent to exit on its own.',
          entry: 'closeProcessInput',
          after: { shutdownTimeout: { target: 'terminating', description: 'Still running after shutdownTimeoutMs.' } },
        },
        terminating: {
          description: 'SIGTERM sent to the process group.',
          entry: 'terminateProcess',
          after: { killTimeout: { target: 'killing', description: 'Still running after killTimeoutMs.' } },
        },
        killing: {
          description: 'SIGKILL sent to the process group.',
          entry: 'killProcess',
          on: { forceStop: { description: 'Already at the last rung.' } },
          after: {
            killTimeout: {
              target: 'releasingWorkspaces',
              actions: 'releaseProcess',
              description: 'Not even SIGKILL ended it within killTimeoutMs (stuck in the kernel): stop waiting, release it.',
            },
          },
        },
        releasingWorkspaces: {
          description: 'No process is left: the workspace holds are cleaned up (or kept) by their strategies before the agent is idle, so a stop answers after the cleanup.',
          initial: 'checking',
          always: { guard: 'holdsNoWorkspace', target: '#agent.idle', description: 'Every workspace hold of the agent and its sessions is over.' },
          on: {
            forceStop: { description: 'No process to kill: the cleanup under way finishes (a git command is never cut halfway).' },
          },
          states: {
            checking: {
              description: 'Does the agent hold a workspace of its own?',
              always: [{ guard: 'holdsOwnWorkspace', target: 'releasingOwn' }, { target: 'awaitingSessions' }],
            },
            releasingOwn: {
              description: 'Its own workspace is released now; its sessions\' are released by their sessions, once their terminals are gone.',
              entry: 'releaseOwnWorkspace',
            },
            awaitingSessions: {
              description: 'Its sessions\' workspaces are released by their sessions, once their terminals are gone.',
            },
          },
        },
      },
      on: {
        'process.spawned': { actions: { type: 'recordSpawn', params: spawnOf } },
        'process.exited': { target: '.releasingWorkspaces', actions: [{ type: 'recordExit', params: exitOf }, 'releaseProcess'], description: 'No process of the group is left.' },
        'process.connectionClosed': { actions: 'markConnectionClosed', description: 'The ladder closed the stream (or the agent did): the ladder goes on, no other timer.' },
        forceStop: { target: '.killing', description: 'A forced shutdown (a second signal): SIGKILL now, without waiting out the earlier rungs.' },
        ensure: { actions: { type: 'addStartRequest', params: requestIdOf }, description: 'A start while stopping: it begins once the agent is idle.' },
        reconnect: { actions: { type: 'addStartRequest', params: requestIdOf }, description: 'A start while stopping: it begins once the agent is idle.' },
        authenticate: {
          actions: [{ type: 'addStartRequest', params: requestIdOf }, 'setPendingAuth'],
          description: 'authenticate() while stopping: the start begins once the agent is idle, then authenticates.',
        },
        'restart.request': { actions: { type: 'addStartRequest', params: requestIdOf }, description: 'restart() while stopping: the stop finishes, then the start begins.' },
        stop: { actions: { type: 'addStopRequest', params: requestIdOf }, description: 'Already stopping: answered once idle.' },
      },
    },
    needsAuth: {
      description: 'Parked: the agent needs a login. No automatic retry; authenticate() or reconnect() leaves.',
      entry: { type: 'reportStatus', params: { status: 'needsAuth' } },
      initial: 'waiting',
      states: {
        waiting: {
          description: 'Waiting for authenticate() or reconnect() (after logging in outside, e.g. `claude /login`).',
          entry: [{ type: 'settleStarts', params: { outcome: 'lastError' } }, { type: 'reportParked', params: { status: 'needsAuth' } }],
          on: {
            authenticate: [
              {
                guard: 'connectionIsOpen',
                target: '#agent.needsAuth.authenticating',
                actions: [{ type: 'addStartRequest', params: requestIdOf }, 'setPendingAuth'],
                description: 'authenticate(): Over the open connection.',
              },
              {
                guard: 'hasNoProcess',
                target: '#agent.starting',
                actions: [{ type: 'addStartRequest', params: requestIdOf }, 'setPendingAuth', 'beginCallerStart'],
                description: 'authenticate(): No process: start one, authenticate once initialize is answered.',
              },
              {
                target: '#agent.reconnecting.replacing',
                actions: [{ type: 'addStartRequest', params: requestIdOf }, 'setPendingAuth', 'beginCallerStart'],
                description: 'authenticate(): Its connection is closing: replace the process, then authenticate.',
              },
            ],
            reconnect: [
              {
                guard: 'hasNoProcess',
                target: '#agent.reconnecting.spawning',
                actions: [{ type: 'addStartRequest', params: requestIdOf }, 'beginCallerStart'],
                description: 'reconnect(): the login was made outside. Spawn now.',
              },
              {
                target: '#agent.reconnecting.replacing',
                actions: [{ type: 'addStartRequest', params: requestIdOf }, 'beginCallerStart'],
                description: 'reconnect(): the login was made outside. Kill its process, then spawn afresh.',
              },
            ],
            ensure: { actions: { type: 'refuseWithLastError', params: requestIdOf }, description: 'ensureAgent(): refused at once with the auth failure.' },
            'restart.request': [
              {
                guard: 'hasNoProcess',
                target: '#agent.reconnecting.spawning',
                actions: [{ type: 'addStartRequest', params: requestIdOf }, 'beginCallerStart'],
                description: 'restart() (after logging in outside): no process, spawn now.',
              },
              {
                target: '#agent.restarting',
                actions: [{ type: 'addStartRequest', params: requestIdOf }, 'beginCallerStart'],
                description: 'restart() (after logging in outside): the stop ladder for its process, then a start.',
              },
            ],
            'process.exited': { actions: ['releaseProcess', 'failSessions'], description: 'The process ended while parked: stay parked.' },
          },
        },
        authenticating: {
          description: 'The agent\'s ACP authenticate with the chosen method, over its connection.',
          invoke: {
            id: 'authenticate',
            src: 'authenticate',
            input: ({ context }) => ({ agent: context.name, methodId: context.pendingAuthMethod ?? '' }),
            onDone: { target: '#agent.connected', actions: ['clearPendingAuth', 'clearFailure'], description: 'Authenticated: connected.' },
            onError: [
              {
                guard: 'connectionLost',
                target: '#agent.disconnected',
                actions: [
                  { type: 'recordFailure', params: ({ context }) => ({ failure: lostDuringAuthentication(context) }) },
                  'releaseProcess',
                  'allowAutoRetry',
                  'failSessions',
                  { type: 'settleStarts', params: { outcome: 'lastError' } },
                ],
                // The one way a lost process leaves authenticating: its connection closes (the
                // process actor closes it at the exit at the latest), failing the request. An exit
                // reported a moment earlier is not handled here, so the outcome never depends on
                // which of the two comes first.
                description: 'The connection closed during authenticate: the agent was lost; its callers learn it now, the restart policy goes on without the login.',
              },
              {
                target: 'waiting',
                actions: [
                  'clearPendingAuth',
                  { type: 'recordFailure', params: ({ context, event }) => ({ failure: authRefusal(context, event.error) }) },
                  'reportFailure',
                ],
                description: 'The agent refused the login: still parked.',
              },
            ],
          },
          on: {
            ensure: { actions: { type: 'addStartRequest', params: requestIdOf }, description: 'authenticate() is under way: wait for its outcome.' },
            reconnect: { actions: { type: 'addStartRequest', params: requestIdOf }, description: 'authenticate() is under way: wait for its outcome.' },
            authenticate: {
              actions: [{ type: 'addStartRequest', params: requestIdOf }, 'setPendingAuth'],
              description: 'authenticate() is under way: wait for its outcome. Authenticate once initialize is answered.',
            },
          },
        },
      },
      on: {
        stop: { target: '#agent.stopping', actions: { type: 'addStopRequest', params: requestIdOf }, description: 'stop(): leaves the parked state, goes idle.' },
      },
    },
    rateLimited: {
      description: 'Parked: a usage or rate limit. Waits until it resets (a delay from the reset time, capped), or for reconnect().',
      entry: ['computeLimitWait', { type: 'reportStatus', params: { status: 'rateLimited' } }, { type: 'settleStarts', params: { outcome: 'lastError' } }, { type: 'reportParked', params: { status: 'rateLimited' } }],
      initial: 'choosing',
      states: {
        choosing: {
          description: 'Is the reset time (or the class\'s wait) known?',
          always: [{ guard: 'hasLimitWait', target: 'waiting' }, { target: 'held' }],
        },
        waiting: {
          description: 'Until the limit resets: parkedWaitMs from its reset time, capped by the class\'s maxWaitMs.',
          after: {
            limitWait: [
              { guard: 'connectionIsOpen', target: '#agent.connected', description: 'The limit reset; the process is still there: connected again.' },
              { guard: 'restartsHeld', target: '#agent.reconnecting.held', actions: 'allowAutoRetry', description: 'The limit reset, but the supervisor holds restarts.' },
              {
                guard: 'hasNoProcess',
                target: '#agent.reconnecting.spawning',
                actions: ['allowAutoRetry', 'recordRestart'],
                description: 'The limit reset: start the agent again.',
              },
              { target: '#agent.reconnecting.replacing', actions: ['allowAutoRetry', 'recordRestart'], description: 'The limit reset; its old process is ending: replace it.' },
            ],
          },
        },
        held: { description: 'No reset time known and no wait in the class\'s policy: waits for reconnect().' },
      },
      on: {
        reconnect: [
          {
            guard: 'connectionIsOpen',
            target: 'connected',
            actions: [{ type: 'addStartRequest', params: requestIdOf }, 'beginCallerStart'],
            description: 'reconnect(): stop waiting; the process is still there.',
          },
          {
            guard: 'hasNoProcess',
            target: '#agent.reconnecting.spawning',
            actions: [{ type: 'addStartRequest', params: requestIdOf }, 'beginCallerStart'],
            description: 'reconnect(): stop waiting. Spawn now.',
          },
          {
            target: '#agent.reconnecting.replacing',
            actions: [{ type: 'addStartRequest', params: requestIdOf }, 'beginCallerStart'],
            description: 'reconnect(): stop waiting. Kill its process, then spawn afresh.',
          },
        ],
        authenticate: [
          {
            guard: 'connectionIsOpen',
            target: '#agent.needsAuth.authenticating',
            actions: [{ type: 'addStartRequest', params: requestIdOf }, 'setPendingAuth'],
            description: 'authenticate() of a rate-limited agent: Over the open connection.',
          },
          {
            guard: 'hasNoProcess',
            target: '#agent.starting',
            actions: [{ type: 'addStartRequest', params: requestIdOf }, 'setPendingAuth', 'beginCallerStart'],
            description: 'authenticate() of a rate-limited agent: No process: start one, authenticate once initialize is answered.',
          },
          {
            target: '#agent.reconnecting.replacing',
            actions: [{ type: 'addStartRequest', params: requestIdOf }, 'setPendingAuth', 'beginCallerStart'],
            description: 'authenticate() of a rate-limited agent: Its connection is closing: replace the process, then authenticate.',
          },
        ],
        ensure: { actions: { type: 'refuseWithLastError', params: requestIdOf }, description: 'ensureAgent(): refused at once with the limit (and retryAt).' },
        'restart.request': [
          {
            guard: 'hasNoProcess',
            target: '#agent.reconnecting.spawning',
            actions: [{ type: 'addStartRequest', params: requestIdOf }, 'beginCallerStart'],
            description: 'restart(): stop waiting; no process, spawn now.',
          },
          {
            target: '#agent.restarting',
            actions: [{ type: 'addStartRequest', params: requestIdOf }, 'beginCallerStart'],
            description: 'restart(): stop waiting; the stop ladder for its process, then a start.',
          },
        ],
        'process.exited': { actions: ['releaseProcess', 'failSessions'], description: 'The process ended while parked: stay parked.' },
        stop: { target: '#agent.stopping', actions: { type: 'addStopRequest', params: requestIdOf }, description: 'stop(): leaves the parked state, goes idle.' },
      },
    },
  },
});
