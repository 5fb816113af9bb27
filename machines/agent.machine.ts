/**
 * The agent lifecycle as a statechart: idle → starting → connected ⇄ disconnected →
 * reconnecting, and stopping from any live state. Pure: the process actor is referenced
 * by name (`agentProcess`) and plugged in with `.provide()` by the runtime; every delay is
 * named and computed from context, so a SimulatedClock drives it in tests.
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
import { assign, enqueueActions, fromCallback, sendTo, setup, stopChild } from 'xstate';
import type { InitializeResponse } from '../core/acp-types.js';
import type { ContainmentKind } from '../core/containment-kind.js';
import { failures, type AgentFailure } from '../core/errors.js';
import { exitFailure, sessionActorId, settle, willRetry, type AgentContext, type AgentEvent } from './agent-context.js';
import type { AgentEmitted, AgentMachineInput, AgentProcessInput, AgentReport, AgentStatus, ProcessCommand, ProcessEvent } from './agent-events.js';
import { handshakeTimeoutTransition, handshakeTransitions, joinStart, requestIdOf, stopTransition } from './agent-transitions.js';
import { backoffDelay, jitterRoll } from './policies/backoff.policy.js';
import type { SessionMachineInput } from './session-events.js';
import { sessionMachine } from './session.machine.js';

export { sessionActorId, type AgentContext, type AgentEvent };

/** Placeholder for the process actor; the runtime provides the real one. */
const processActorPlaceholder = fromCallback<ProcessCommand, AgentProcessInput, ProcessEvent>(() => {
  throw new Error('agentMachine needs the agentProcess actor: use .provide({ actors: { agentProcess } })');
});

export const agentMachine = setup({
  types: {
    context: {} as AgentContext,
    events: {} as AgentEvent,
    input: {} as AgentMachineInput,
    emitted: {} as AgentEmitted,
  },
  actors: { agentProcess: processActorPlaceholder, session: sessionMachine },
  delays: {
    backoff: ({ context }) => backoffDelay(context.attempt, context.restart, context.restart.jitter > 0 ? jitterRoll(context.jitterSeed, context.attempt) : 0),
    handshakeTimeout: ({ context }) => context.handshakeTimeoutMs,
    stableUptime: ({ context }) => context.restart.stableAfterMs,
    shutdownTimeout: ({ context }) => context.shutdownTimeoutMs,
    killTimeout: ({ context }) => context.killTimeoutMs,
  },
  guards: {
    /** A loss or a failed automatic attempt may be retried: attempts left, retryable kind. */
    canRetry: ({ context }) => willRetry(context),
    hasNoProcess: ({ context }) => !context.processRunning,
    /** Somebody asked for a start while the agent was stopping. */
    hasStartRequests: ({ context }) => context.startRequests.length > 0,
    connectionIsOpen: ({ context }) => context.connectionOpen,
  },
  actions: {
    reportStatus: enqueueActions(({ enqueue, context, self }, params: { status: AgentStatus }) => {
      enqueue.assign({ status: params.status });
      enqueue.emit({ type: 'status', agent: context.name, status: params.status });
      // `retrying`: this disconnected agent is about to reconnect (the parent counts it as live).
      const retrying = params.status === 'disconnected' && willRetry(context);
      if (self._parent) enqueue.sendParent({ type: 'agent.status', agent: context.name, status: params.status, retrying } satisfies AgentReport);
    }),
    /** Every way into `disconnected` is a failure: report the one just recorded. */
    reportFailure: enqueueActions(({ enqueue, context, self }) => {
      const failure = context.lastError;
      if (!failure) return;
      enqueue.emit({ type: 'error', agent: context.name, failure });
      if (self._parent) enqueue.sendParent({ type: 'agent.error', agent: context.name, failure } satisfies AgentReport);
    }),
    addStartRequest: assign({
      startRequests: ({ context }, params: { requestId: string | undefined }) =>
        params.requestId === undefined ? context.startRequests : [...context.startRequests, params.requestId],
    }),
    addStopRequest: assign({
      stopRequests: ({ context }, params: { requestId: string | undefined }) =>
        params.requestId === undefined ? context.stopRequests : [...context.stopRequests, params.requestId],
    }),
    /** Answers one command at once (ensure on a connected agent, stop on an idle one). */
    answerNow: enqueueActions(({ enqueue, context, self }, params: { requestId: string | undefined }) => {
      if (params.requestId !== undefined) settle(enqueue, context, self, [params.requestId], { ok: true });
    }),
    /** The waiting starts connected: answer them. */
    settleStartsConnected: enqueueActions(({ enqueue, context, self }) => {
      settle(enqueue, context, self, context.startRequests, { ok: true });
      enqueue.assign({ startRequests: [] });
    }),
    /** The agent is being stopped: the waiting starts end with kind `stopped`. */
    settleStartsStopped: enqueueActions(({ enqueue, context, self }) => {
      settle(enqueue, context, self, context.startRequests, { ok: false, failure: failures.stoppedBeforeConnected(context.name) });
      enqueue.assign({ startRequests: [] });
    }),
    /** Disconnected for good (no automatic retry follows): the waiting starts fail with its error. */
    settleStartsIfGivingUp: enqueueActions(({ enqueue, context, self }) => {
      if (willRetry(context) || !context.lastError) return;
      settle(enqueue, context, self, context.startRequests, { ok: false, failure: context.lastError });
      enqueue.assign({ startRequests: [] });
    }),
    settleStops: enqueueActions(({ enqueue, context, self }) => {
      settle(enqueue, context, self, context.stopRequests, { ok: true });
      enqueue.assign({ stopRequests: [] });
    }),
    spawnProcess: enqueueActions(({ enqueue, context }) => {
      enqueue.spawnChild('agentProcess', { id: 'process', input: { agent: context.name } });
      enqueue.assign({ processRunning: true, connectionOpen: true, pid: null });
    }),
    /** Stops the process actor; its cleanup kills whatever is left of the process group. */
    releaseProcess: enqueueActions(({ enqueue }) => {
      enqueue(stopChild('process'));
      enqueue.assign({ processRunning: false, connectionOpen: false, pid: null, containment: null, initialize: null });
    }),
    recordSpawn: assign((_, params: { pid: number; containment: ContainmentKind | null }) => ({ pid: params.pid, containment: params.containment })),
    recordConnection: assign({ initialize: (_, params: { initialize: InitializeResponse }) => params.initialize, lastError: null }),
    markConnectionClosed: assign({ connectionOpen: false }),
    recordFailure: assign({ lastError: (_, params: { failure: AgentFailure }) => params.failure }),
    countAttempt: assign({ attempt: ({ context }) => context.attempt + 1 }),
    /** Stopped agents start afresh: no error, no attempts counted. */
    forgetFailures: assign({ attempt: 0, lastError: null }),
    resetAttempts: assign({ attempt: 0 }),
    allowAutoRetry: assign({ autoRetry: true }),
    /** A start a caller asked for: a fresh attempt count, and its failure goes to that caller, not to a retry. */
    beginCallerStart: assign({ attempt: 0, autoRetry: false }),
    spawnSession: enqueueActions(({ enqueue, context }, params: { session: SessionMachineInput }) => {
      if (context.sessionKeys.includes(params.session.key)) return;
      enqueue.spawnChild('session', { id: sessionActorId(params.session.key), input: params.session });
      enqueue.assign({ sessionKeys: [...context.sessionKeys, params.session.key] });
    }),
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
  }),
  initial: 'idle',
  on: {
    'session.forget': {
      actions: { type: 'forgetSession', params: ({ event }) => ({ key: event.key }) },
      description: 'A session was closed: drop its actor.',
    },
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
        stop: { actions: { type: 'answerNow', params: requestIdOf }, description: 'Already stopped.' },
      },
    },
    starting: {
      description: 'A first start requested by a caller: spawn, then the initialize handshake.',
      entry: [{ type: 'reportStatus', params: { status: 'starting' } }, 'spawnProcess'],
      on: {
        ...handshakeTransitions(),
        ...joinStart('A start is already in flight: wait for its outcome.'),
        stop: stopTransition('stop() or shutdown during the handshake.'),
      },
      after: handshakeTimeoutTransition(),
    },
    connected: {
      description: 'The agent answered initialize; its connection is in use.',
      entry: [{ type: 'reportStatus', params: { status: 'connected' } }, 'settleStartsConnected'],
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
        'process.connectionClosed': { actions: 'markConnectionClosed', description: 'The ACP stream closed; the exit is on its way.' },
        'process.exited': {
          target: 'disconnected',
          actions: [{ type: 'recordFailure', params: ({ context, event }) => ({ failure: exitFailure('agent_exited', context, event) }) }, 'releaseProcess', 'allowAutoRetry', 'failSessions'],
          description: 'The process exited or its ACP stream closed: the agent was lost.',
        },
        ensure: [
          { guard: 'connectionIsOpen', actions: { type: 'answerNow', params: requestIdOf }, description: 'Already connected: the same connection.' },
          { actions: { type: 'addStartRequest', params: requestIdOf }, description: 'Its stream just closed: wait for the loss and what follows it.' },
        ],
        reconnect: [
          { guard: 'connectionIsOpen', actions: { type: 'answerNow', params: requestIdOf }, description: 'Already connected: the same connection.' },
          { actions: { type: 'addStartRequest', params: requestIdOf }, description: 'Its stream just closed: wait for the loss and what follows it.' },
        ],
        'session.open': {
          actions: { type: 'spawnSession', params: ({ event }) => ({ session: event.session }) },
          description: 'session/new or session/load succeeded: a session child.',
        },
        restart: {
          actions: 'killProcess',
          description: 'A session stalled with onStall restart: kill the process group; the restart policy brings the agent back.',
        },
        stop: stopTransition('stop() or shutdown.'),
      },
    },
    disconnected: {
      description: 'No process. Retries automatically after a loss while attempts remain; otherwise waits for a caller.',
      entry: [{ type: 'reportStatus', params: { status: 'disconnected' } }, 'reportFailure', 'settleStartsIfGivingUp'],
      always: {
        guard: 'canRetry',
        target: 'reconnecting',
        actions: 'countAttempt',
        description: 'Lost after connecting, or an automatic attempt failed, with attempts left and a retryable error.',
      },
      on: {
        ensure: {
          target: 'starting',
          actions: [{ type: 'addStartRequest', params: requestIdOf }, 'beginCallerStart'],
          description: 'ensureAgent(): a fresh start, reported to the caller.',
        },
        reconnect: {
          target: 'reconnecting.spawning',
          actions: [{ type: 'addStartRequest', params: requestIdOf }, 'beginCallerStart'],
          description: 'reconnect(): reset the attempt counter and spawn now.',
        },
        stop: stopTransition('stop() clears the error and goes idle.'),
      },
    },
    reconnecting: {
      description: 'Waiting out the backoff delay, then spawning again.',
      entry: { type: 'reportStatus', params: { status: 'reconnecting' } },
      initial: 'waiting',
      states: {
        waiting: {
          description: 'Backoff timer pending: min(initialDelayMs · factor^(attempt−1), maxDelayMs).',
          after: { backoff: { target: 'spawning', description: 'The backoff delay elapsed.' } },
          on: {
            reconnect: {
              target: 'spawning',
              actions: [{ type: 'addStartRequest', params: requestIdOf }, 'beginCallerStart'],
              description: 'reconnect(): cancel the timer, reset the count, spawn now.',
            },
          },
        },
        spawning: {
          description: 'Spawned again; waiting for initialize.',
          entry: 'spawnProcess',
          on: handshakeTransitions(),
          after: handshakeTimeoutTransition(),
        },
      },
      on: {
        ...joinStart('A reconnect is under way: wait for its outcome.'),
        stop: stopTransition('stop() or shutdown; leaving cancels the backoff timer.'),
      },
    },
    stopping: {
      description: 'The graceful stop ladder: close ACP and stdin, SIGTERM the group, SIGKILL the group.',
      entry: [{ type: 'reportStatus', params: { status: 'stopping' } }, 'endSessions', 'settleStartsStopped'],
      initial: 'checking',
      states: {
        checking: {
          description: 'Is there a process to stop?',
          always: [
            { guard: 'hasNoProcess', target: '#agent.idle', description: 'No process (disconnected, or waiting out a backoff): nothing to stop.' },
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
              target: '#agent.idle',
              actions: 'releaseProcess',
              description: 'Not even SIGKILL ended it within killTimeoutMs (stuck in the kernel): stop waiting, release it.',
            },
          },
        },
      },
      on: {
        'process.spawned': { actions: { type: 'recordSpawn', params: ({ event }) => ({ pid: event.pid, containment: event.containment }) } },
        'process.exited': { target: 'idle', actions: 'releaseProcess', description: 'No process of the group is left.' },
        forceStop: { target: '.killing', description: 'A forced shutdown (a second signal): SIGKILL now, without waiting out the earlier rungs.' },
        ensure: { actions: { type: 'addStartRequest', params: requestIdOf }, description: 'A start while stopping: it begins once the agent is idle.' },
        reconnect: { actions: { type: 'addStartRequest', params: requestIdOf }, description: 'A start while stopping: it begins once the agent is idle.' },
        stop: { actions: { type: 'addStopRequest', params: requestIdOf }, description: 'Already stopping: answered once idle.' },
      },
    },
  },
});
