/**
 * The params of the agent machine's actions that read the event, written once and named, so
 * that each transition in agent.machine.ts stays a literal Stately's parser can read (a
 * transition built by a function is invisible to it; a named params function is not).
 */
import { assertEvent } from 'xstate';
import { exitFailure, handshakeTimeoutFailure, processFailure, type AgentContext, type AgentEvent } from './agent-context.js';

/** The `requestId` a command carries, as an action's params. */
export function requestIdOf({ event }: { event: AgentEvent }): { requestId: string | undefined } {
  return { requestId: 'requestId' in event ? event.requestId : undefined };
}

/** `process.spawned`: the pid, the containment, and the time. */
export function spawnOf({ event }: { event: AgentEvent }) {
  assertEvent(event, 'process.spawned');
  return { pid: event.pid, containment: event.containment, at: event.at };
}

/** `process.initialized`: the agent's initialize answer. */
export function initializeOf({ event }: { event: AgentEvent }) {
  assertEvent(event, 'process.initialized');
  return { initialize: event.initialize };
}

/** `process.failed` during a handshake: the spawn's or initialize's failure. */
export function spawnFailureOf({ context, event }: { context: AgentContext; event: AgentEvent }) {
  assertEvent(event, 'process.failed');
  return { failure: processFailure(context, event), at: event.at };
}

/** `process.exited` before initialize was answered: a handshake failure. */
export function handshakeExitOf({ context, event }: { context: AgentContext; event: AgentEvent }) {
  assertEvent(event, 'process.exited');
  return { failure: exitFailure('handshake_failed', context, event), at: event.at };
}

/** `process.exited` of a connected agent: it was lost. */
export function lossOf({ context, event }: { context: AgentContext; event: AgentEvent }) {
  assertEvent(event, 'process.exited');
  return { failure: exitFailure('agent_exited', context, event), at: event.at };
}

/** `after handshakeTimeout`: initialize unanswered in time. */
export function handshakeTimeoutOf({ context }: { context: AgentContext }) {
  return { failure: handshakeTimeoutFailure(context), at: context.now + context.handshakeTimeoutMs };
}

/** `process.exited`: how it ended, and when, as `lastExit` keeps it. */
export function exitOf({ context, event }: { context: AgentContext; event: AgentEvent }) {
  assertEvent(event, 'process.exited');
  return { exit: { code: event.exitCode, signal: event.signal, at: event.at ?? context.now } };
}
