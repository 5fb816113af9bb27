/**
 * Transition configs the agent machine uses in more than one state, written once: the
 * handshake (`starting` and `reconnecting.spawning`), the stop, and joining a start in
 * flight. Plain config objects; the machine's setup() checks their action names.
 */
import { exitFailure, handshakeTimeoutFailure, processFailure, type AgentContext, type AgentEvent, type EventOf } from './agent-context.js';

/** The `requestId` a command carries, as an action's params. */
export function requestIdOf({ event }: { event: AgentEvent }): { requestId: string | undefined } {
  return { requestId: 'requestId' in event ? event.requestId : undefined };
}

/** `stop` from a live state: into the ladder, answered once idle. */
export function stopTransition(description: string) {
  return { target: '#agent.stopping', actions: { type: 'addStopRequest', params: requestIdOf }, description } as const;
}

/** `ensure`/`reconnect`/`authenticate` while a start is in flight: the caller joins it (an authenticate() authenticates once connected). */
export function joinStart(description: string) {
  const join = { actions: { type: 'addStartRequest', params: requestIdOf }, description } as const;
  return {
    ensure: join,
    reconnect: join,
    authenticate: { actions: [{ type: 'addStartRequest', params: requestIdOf }, 'setPendingAuth'], description: `${description} Authenticate once initialize is answered.` },
  } as const;
}

/**
 * authenticate() on an agent that may hold a process: over its open connection, else after a
 * fresh start (the old process, if one is still there, killed first).
 */
export function authenticateTransitions(description: string) {
  const queue = [{ type: 'addStartRequest', params: requestIdOf }, 'setPendingAuth'] as const;
  return [
    { guard: 'connectionIsOpen', target: '#agent.needsAuth.authenticating', actions: queue, description: `${description} Over the open connection.` },
    {
      guard: 'hasNoProcess',
      target: '#agent.starting',
      actions: [...queue, 'beginCallerStart'],
      description: `${description} No process: start one, authenticate once initialize is answered.`,
    },
    {
      target: '#agent.reconnecting.replacing',
      actions: [...queue, 'beginCallerStart'],
      description: `${description} Its connection is closing: replace the process, then authenticate.`,
    },
  ] as const;
}

/** reconnect() of a parked agent: a fresh process (the old one, if still there, killed first). */
export function parkedReconnect(description: string) {
  const start = [{ type: 'addStartRequest', params: requestIdOf }, 'beginCallerStart'] as const;
  return [
    { guard: 'hasNoProcess', target: '#agent.reconnecting.spawning', actions: start, description: `${description} Spawn now.` },
    { target: '#agent.reconnecting.replacing', actions: start, description: `${description} Kill its process, then spawn afresh.` },
  ] as const;
}

/** The handshake, written once for `starting` and `reconnecting.spawning`. */
export function handshakeTransitions() {
  return {
    'process.spawned': recordSpawnTransition(),
    'process.initialized': [
      {
        guard: 'hasPendingAuth',
        target: '#agent.needsAuth.authenticating',
        actions: { type: 'recordConnection', params: ({ event }: { event: EventOf<'process.initialized'> }) => ({ initialize: event.initialize }) },
        description: 'initialize answered, and authenticate() is waiting: authenticate before the agent counts as connected.',
      },
      {
        target: '#agent.connected',
        actions: { type: 'recordConnection', params: ({ event }: { event: EventOf<'process.initialized'> }) => ({ initialize: event.initialize }) },
        description: 'initialize answered.',
      },
    ],
    'process.failed': {
      target: '#agent.disconnected',
      actions: [
        {
          type: 'recordFailure',
          params: ({ context, event }: { context: AgentContext; event: EventOf<'process.failed'> }) => ({ failure: processFailure(context, event), at: event.at }),
        },
        'releaseProcess',
      ],
      description: 'Spawn failed (not_installed, spawn_failed, workspace_failed) or initialize was rejected (handshake_failed).',
    },
    'process.exited': {
      target: '#agent.disconnected',
      actions: [
        {
          type: 'recordFailure',
          params: ({ context, event }: { context: AgentContext; event: EventOf<'process.exited'> }) => ({ failure: exitFailure('handshake_failed', context, event), at: event.at }),
        },
        'releaseProcess',
      ],
      description: 'The process exited before answering initialize.',
    },
  } as const;
}

/** `process.spawned`: the pid, the containment, and the time. */
export function recordSpawnTransition() {
  return {
    actions: {
      type: 'recordSpawn',
      params: ({ event }: { event: EventOf<'process.spawned'> }) => ({ pid: event.pid, containment: event.containment, at: event.at }),
    },
  } as const;
}

/** `process.exited` while parked: the process is gone, the agent stays parked (its sessions fail). */
export function parkedProcessExit(description: string) {
  return { actions: ['releaseProcess', 'failSessions'], description } as const;
}

/** `after handshakeTimeout`, written once for both handshakes. */
export function handshakeTimeoutTransition() {
  return {
    handshakeTimeout: {
      target: '#agent.disconnected',
      actions: [
        {
          type: 'recordFailure',
          params: ({ context }: { context: AgentContext }) => ({ failure: handshakeTimeoutFailure(context), at: context.now + context.handshakeTimeoutMs }),
        },
        'releaseProcess',
      ],
      description: 'initialize unanswered for handshakeTimeoutMs: kill the process group.',
    },
  } as const;
}
