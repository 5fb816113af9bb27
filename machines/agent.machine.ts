/**
 * The agent lifecycle as a statechart: idle → starting → connected ⇄ disconnected →
 * reconnecting, and stopping from any live state. Pure: the process actor is referenced
 * by name (`agentProcess`) and plugged in with `.provide()` by the runtime; every delay is
 * named and computed from context, so a SimulatedClock drives it in tests.
 *
 * The live process is a spawned child with the stable id `process`: it outlives the
 * `starting` state (it is the same process once `connected`) and is released with
 * `stopChild`, whose cleanup kills the process group if it is still there.
 */
import { assign, enqueueActions, fromCallback, sendTo, setup, stopChild } from 'xstate';
import type { AgentFailure } from '../services/errors.js';
import type { AgentCommand, AgentEmitted, AgentMachineInput, AgentProcessInput, AgentReport, AgentStatus, ProcessCommand, ProcessEvent } from './agent-events.js';
import type { InitializeResponse } from '../services/acp-client.service.js';
import { backoffDelay, jitterRoll, type RestartPolicy } from './policies/backoff.policy.js';
import { failureMessage, isRetryable } from './policies/failure.policy.js';
import type { SessionOpenEvent } from './session-events.js';
import { sessionMachine } from './session.machine.js';

export interface AgentContext {
  name: string;
  displayName: string;
  restart: RestartPolicy;
  handshakeTimeoutMs: number;
  shutdownTimeoutMs: number;
  killTimeoutMs: number;
  jitterSeed: number;
  /** Automatic attempts made in the current streak of failures. */
  attempt: number;
  /** Whether a failure now may be retried in the background (see `canRetry`). */
  autoRetry: boolean;
  /** True from spawning the process actor until it is released. */
  processRunning: boolean;
  pid: number | null;
  /** The agent's `initialize` answer while connected. */
  initialize: InitializeResponse | null;
  lastError: AgentFailure | null;
  /** Ids of the session children (actor id `session:<id>`). */
  sessionIds: string[];
}

export type AgentEvent = AgentCommand | ProcessEvent | SessionOpenEvent | { type: 'session.forget'; sessionId: string };

/** The actor id of a session child. */
export const sessionActorId = (sessionId: string) => `session:${sessionId}`;

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
  },
  actions: {
    reportStatus: enqueueActions(({ enqueue, context, self }, params: { status: AgentStatus }) => {
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
    spawnProcess: enqueueActions(({ enqueue, context }) => {
      enqueue.spawnChild('agentProcess', { id: 'process', input: { agent: context.name } });
      enqueue.assign({ processRunning: true, pid: null });
    }),
    /** Stops the process actor; its cleanup kills whatever is left of the process group. */
    releaseProcess: enqueueActions(({ enqueue }) => {
      enqueue(stopChild('process'));
      enqueue.assign({ processRunning: false, pid: null, initialize: null });
    }),
    recordPid: assign({ pid: ({ event }) => (event.type === 'process.spawned' ? event.pid : null) }),
    recordConnection: assign({
      initialize: ({ event }) => (event.type === 'process.initialized' ? event.initialize : null),
      lastError: null,
    }),
    recordProcessFailure: assign({
      lastError: ({ context, event }) => {
        if (event.type !== 'process.failed') return context.lastError;
        return {
          kind: event.kind,
          message: failureMessage(event.kind, context.displayName),
          detail: event.detail,
          stderr: event.stderr,
          exitCode: event.exitCode ?? null,
          signal: event.signal ?? null,
        };
      },
    }),
    recordExitDuringHandshake: assign({
      lastError: ({ context, event }) => exitFailure('handshake_failed', context, event),
    }),
    recordHandshakeTimeout: assign({
      lastError: ({ context }) => ({
        kind: 'handshake_timeout' as const,
        message: failureMessage('handshake_timeout', context.displayName),
        detail: `no answer to initialize within ${context.handshakeTimeoutMs} ms`,
        stderr: [],
      }),
    }),
    recordLoss: assign({
      lastError: ({ context, event }) => exitFailure('agent_exited', context, event),
    }),
    countAttempt: assign({ attempt: ({ context }) => context.attempt + 1 }),
    /** Stopped agents start afresh: no error, no attempts counted. */
    forgetFailures: assign({ attempt: 0, lastError: null }),
    resetAttempts: assign({ attempt: 0 }),
    allowAutoRetry: assign({ autoRetry: true }),
    /** Starts requested by a caller report their failure to that caller instead. */
    forbidAutoRetry: assign({ autoRetry: false }),
    spawnSession: enqueueActions(({ enqueue, context, event }) => {
      if (event.type !== 'session.open' || context.sessionIds.includes(event.session.sessionId)) return;
      enqueue.spawnChild('session', { id: sessionActorId(event.session.sessionId), input: event.session });
      enqueue.assign({ sessionIds: [...context.sessionIds, event.session.sessionId] });
    }),
    forgetSession: enqueueActions(({ enqueue, context, event }) => {
      if (event.type !== 'session.forget' || !context.sessionIds.includes(event.sessionId)) return;
      enqueue(stopChild(sessionActorId(event.sessionId)));
      enqueue.assign({ sessionIds: context.sessionIds.filter((id) => id !== event.sessionId) });
    }),
    /** The process died: every session's turn fails with agent_exited; they stay resumable. */
    failSessions: enqueueActions(({ enqueue, context }) => {
      for (const sessionId of context.sessionIds) {
        enqueue.sendTo(sessionActorId(sessionId), { type: 'agent.lost', kind: 'agent_exited', message: failureMessage('agent_exited', context.displayName) });
      }
    }),
    /** The agent is being stopped: its sessions end (stopped) and are forgotten. */
    endSessions: enqueueActions(({ enqueue, context }) => {
      for (const sessionId of context.sessionIds) {
        enqueue.sendTo(sessionActorId(sessionId), { type: 'agent.lost', kind: 'stopped', message: `${context.displayName} was stopped` });
        enqueue(stopChild(sessionActorId(sessionId)));
      }
      enqueue.assign({ sessionIds: [] });
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
    attempt: 0,
    autoRetry: false,
    processRunning: false,
    pid: null,
    initialize: null,
    lastError: null,
    sessionIds: [],
  }),
  initial: 'idle',
  on: {
    'session.forget': { actions: 'forgetSession', description: 'A session was closed: drop its actor.' },
  },
  states: {
    idle: {
      description: 'No process, a clean slate (no error, attempt 0). Waits for ensureAgent().',
      entry: [{ type: 'reportStatus', params: { status: 'idle' } }, 'forgetFailures'],
      on: {
        ensure: {
          target: 'starting',
          actions: ['resetAttempts', 'forbidAutoRetry'],
          description: 'ensureAgent(): spawn the process and open ACP.',
        },
      },
    },
    starting: {
      description: 'A first start requested by a caller: spawn, then the initialize handshake.',
      entry: [{ type: 'reportStatus', params: { status: 'starting' } }, 'spawnProcess'],
      on: {
        'process.spawned': { actions: 'recordPid' },
        'process.initialized': { target: 'connected', actions: 'recordConnection', description: 'initialize answered.' },
        'process.failed': {
          target: 'disconnected',
          actions: ['recordProcessFailure', 'releaseProcess'],
          description: 'Spawn failed (not_installed) or initialize was rejected (handshake_failed).',
        },
        'process.exited': {
          target: 'disconnected',
          actions: ['recordExitDuringHandshake', 'releaseProcess'],
          description: 'The process exited before answering initialize.',
        },
        stop: { target: 'stopping', description: 'stop() or shutdown during the handshake.' },
      },
      after: {
        handshakeTimeout: {
          target: 'disconnected',
          actions: ['recordHandshakeTimeout', 'releaseProcess'],
          description: 'initialize unanswered for handshakeTimeoutMs: kill the process group.',
        },
      },
    },
    connected: {
      description: 'The agent answered initialize; its connection is in use.',
      entry: { type: 'reportStatus', params: { status: 'connected' } },
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
        'process.exited': {
          target: 'disconnected',
          actions: ['recordLoss', 'releaseProcess', 'allowAutoRetry', 'failSessions'],
          description: 'The process exited or its ACP stream closed: the agent was lost.',
        },
        'session.open': { actions: 'spawnSession', description: 'session/new or session/load succeeded: a session child.' },
        stop: { target: 'stopping', description: 'stop() or shutdown.' },
      },
    },
    disconnected: {
      description: 'No process. Retries automatically after a loss while attempts remain; otherwise waits for a caller.',
      entry: [{ type: 'reportStatus', params: { status: 'disconnected' } }, 'reportFailure'],
      always: {
        guard: 'canRetry',
        target: 'reconnecting',
        actions: 'countAttempt',
        description: 'Lost after connecting, or an automatic attempt failed, with attempts left and a retryable error.',
      },
      on: {
        ensure: {
          target: 'starting',
          actions: ['resetAttempts', 'forbidAutoRetry'],
          description: 'ensureAgent(): a fresh start, reported to the caller.',
        },
        reconnect: {
          target: 'reconnecting.spawning',
          actions: ['resetAttempts', 'forbidAutoRetry'],
          description: 'reconnect(): reset the attempt counter and spawn now.',
        },
        stop: { target: 'stopping', description: 'stop() clears the error and goes idle.' },
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
              actions: ['resetAttempts', 'forbidAutoRetry'],
              description: 'reconnect(): cancel the timer, reset the count, spawn now.',
            },
          },
        },
        spawning: {
          description: 'Spawned again; waiting for initialize.',
          entry: 'spawnProcess',
          on: {
            'process.spawned': { actions: 'recordPid' },
            'process.initialized': { target: '#agent.connected', actions: 'recordConnection', description: 'Reconnected.' },
            'process.failed': {
              target: '#agent.disconnected',
              actions: ['recordProcessFailure', 'releaseProcess'],
              description: 'The attempt failed: retry again or give up.',
            },
            'process.exited': {
              target: '#agent.disconnected',
              actions: ['recordExitDuringHandshake', 'releaseProcess'],
              description: 'The process exited before answering initialize.',
            },
          },
          after: {
            handshakeTimeout: {
              target: '#agent.disconnected',
              actions: ['recordHandshakeTimeout', 'releaseProcess'],
              description: 'initialize unanswered for handshakeTimeoutMs.',
            },
          },
        },
      },
      on: {
        stop: { target: 'stopping', description: 'stop() or shutdown; leaving cancels the backoff timer.' },
      },
    },
    stopping: {
      description: 'The graceful stop ladder: close ACP and stdin, SIGTERM the group, SIGKILL the group.',
      entry: [{ type: 'reportStatus', params: { status: 'stopping' } }, 'endSessions'],
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
        'process.spawned': { actions: 'recordPid' },
        'process.exited': { target: 'idle', actions: 'releaseProcess', description: 'No process of the group is left.' },
      },
    },
  },
});

/** A loss or a failed automatic attempt may be retried: attempts left and a retryable error. */
function willRetry(context: AgentContext): boolean {
  return (
    context.autoRetry &&
    context.attempt < context.restart.maxAttempts &&
    context.lastError !== null &&
    isRetryable(context.lastError.kind)
  );
}

/** The failure recorded when the process exits; `kind` says in which phase it happened. */
function exitFailure(kind: 'handshake_failed' | 'agent_exited', context: AgentContext, event: AgentEvent): AgentFailure {
  const exit = event.type === 'process.exited' ? event : null;
  const how = exit?.reason === 'stream_closed'
    ? 'its ACP stream closed'
    : exit?.signal ? `killed by ${exit.signal}` : `exit code ${exit?.exitCode ?? 'unknown'}`;
  return {
    kind,
    message: failureMessage(kind, context.displayName),
    detail: `${context.displayName} process ended (${how})`,
    stderr: exit?.stderr ?? [],
    exitCode: exit?.exitCode ?? null,
    signal: exit?.signal ?? null,
  };
}
