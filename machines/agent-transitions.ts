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

/** `ensure`/`reconnect` while a start is in flight: the caller joins it. */
export function joinStart(description: string) {
  const join = { actions: { type: 'addStartRequest', params: requestIdOf }, description } as const;
  return { ensure: join, reconnect: join };
}

/** The handshake, written once for `starting` and `reconnecting.spawning`. */
export function handshakeTransitions() {
  return {
    'process.spawned': {
      actions: { type: 'recordSpawn', params: ({ event }: { event: EventOf<'process.spawned'> }) => ({ pid: event.pid, containment: event.containment }) },
    },
    'process.initialized': {
      target: '#agent.connected',
      actions: { type: 'recordConnection', params: ({ event }: { event: EventOf<'process.initialized'> }) => ({ initialize: event.initialize }) },
      description: 'initialize answered.',
    },
    'process.failed': {
      target: '#agent.disconnected',
      actions: [
        { type: 'recordFailure', params: ({ context, event }: { context: AgentContext; event: EventOf<'process.failed'> }) => ({ failure: processFailure(context, event) }) },
        'releaseProcess',
      ],
      description: 'Spawn failed (not_installed, spawn_failed, workspace_failed) or initialize was rejected (handshake_failed).',
    },
    'process.exited': {
      target: '#agent.disconnected',
      actions: [
        { type: 'recordFailure', params: ({ context, event }: { context: AgentContext; event: EventOf<'process.exited'> }) => ({ failure: exitFailure('handshake_failed', context, event) }) },
        'releaseProcess',
      ],
      description: 'The process exited before answering initialize.',
    },
  } as const;
}

/** `after handshakeTimeout`, written once for both handshakes. */
export function handshakeTimeoutTransition() {
  return {
    handshakeTimeout: {
      target: '#agent.disconnected',
      actions: [{ type: 'recordFailure', params: ({ context }: { context: AgentContext }) => ({ failure: handshakeTimeoutFailure(context) }) }, 'releaseProcess'],
      description: 'initialize unanswered for handshakeTimeoutMs: kill the process group.',
    },
  } as const;
}
