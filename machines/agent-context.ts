/**
 * The agent machine's context and events, and the pure functions its actions compute with:
 * whether a failure will be retried, the failure records of each way a process can fail,
 * and answering waiting commands. Split from agent.machine.ts so the statechart reads on
 * its own.
 */
import type { InitializeResponse } from '../core/acp-types.js';
import type { ContainmentKind } from '../core/containment-kind.js';
import { failureMessage, type AgentFailure, type CommandResult } from '../core/errors.js';
import type { AgentCommand, AgentEmitted, AgentReport, AgentStatus, CommandSettled, ProcessEvent, RestartRequest } from './agent-events.js';
import type { RestartPolicy } from './policies/backoff.policy.js';
import { isRetryable } from './policies/retry.policy.js';
import type { SessionOpenEvent } from './session-events.js';

export interface AgentContext {
  name: string;
  displayName: string;
  restart: RestartPolicy;
  handshakeTimeoutMs: number;
  shutdownTimeoutMs: number;
  killTimeoutMs: number;
  jitterSeed: number;
  /** The top-level state, as the status string it reports. */
  status: AgentStatus;
  /** Automatic attempts made in the current streak of failures. */
  attempt: number;
  /** Whether a failure now may be retried in the background (see `canRetry`). */
  autoRetry: boolean;
  /** True from spawning the process actor until it is released. */
  processRunning: boolean;
  /** False once the ACP stream of the current process closed (its exit is on its way). */
  connectionOpen: boolean;
  pid: number | null;
  /** The containment the current process runs in (null: its process group only). */
  containment: ContainmentKind | null;
  /** The agent's `initialize` answer while connected. */
  initialize: InitializeResponse | null;
  lastError: AgentFailure | null;
  /** Keys of the session children (actor id `session:<key>`; see SessionMachineInput.key). */
  sessionKeys: string[];
  /** Callers waiting for a start (ensure, reconnect) to connect, fail or be stopped. */
  startRequests: string[];
  /** Callers waiting for a stop to reach idle. */
  stopRequests: string[];
}

export type AgentEvent = AgentCommand | ProcessEvent | SessionOpenEvent | RestartRequest | { type: 'session.forget'; key: string };

export type EventOf<T extends AgentEvent['type']> = Extract<AgentEvent, { type: T }>;

/** The actor id of a session child, from the key of its opening. */
export const sessionActorId = (key: string) => `session:${key}`;

/** Emits `command.settled` for each request, and reports it to the parent. */
export function settle(
  enqueue: { emit(event: AgentEmitted): void; sendParent(event: AgentReport): void },
  context: AgentContext,
  self: { _parent?: unknown },
  requestIds: readonly string[],
  result: CommandResult,
): void {
  for (const requestId of requestIds) {
    const settled: CommandSettled = { type: 'command.settled', agent: context.name, requestId, result };
    enqueue.emit(settled);
    if (self._parent) enqueue.sendParent({ type: 'agent.settled', settled });
  }
}

/** A loss or a failed automatic attempt may be retried: attempts left and a retryable error. */
export function willRetry(context: AgentContext): boolean {
  return (
    context.autoRetry &&
    context.attempt < context.restart.maxAttempts &&
    context.lastError !== null &&
    isRetryable(context.lastError.kind)
  );
}

/** The failure a process actor reported (spawn or handshake), worded for people. */
export function processFailure(context: AgentContext, event: EventOf<'process.failed'>): AgentFailure {
  return {
    kind: event.kind,
    message: failureMessage(event.kind, context.displayName, event.detail),
    detail: event.detail,
    stderr: event.stderr,
    exitCode: event.exitCode ?? null,
    signal: event.signal ?? null,
    ...(event.command !== undefined ? { command: event.command } : {}),
    ...(event.installHint !== undefined ? { installHint: event.installHint } : {}),
  };
}

/** The failure recorded when initialize stays unanswered. */
export function handshakeTimeoutFailure(context: AgentContext): AgentFailure {
  return {
    kind: 'handshake_timeout',
    message: failureMessage('handshake_timeout', context.displayName),
    detail: `no answer to initialize within ${context.handshakeTimeoutMs} ms`,
    stderr: [],
  };
}

/** The failure recorded when the process exits; `kind` says in which phase it happened. */
export function exitFailure(kind: 'handshake_failed' | 'agent_exited', context: AgentContext, exit: EventOf<'process.exited'>): AgentFailure {
  const how = exit.reason === 'stream_closed' ? 'its ACP stream closed' : exit.signal ? `killed by ${exit.signal}` : `exit code ${exit.exitCode ?? 'unknown'}`;
  return {
    kind,
    message: failureMessage(kind, context.displayName),
    detail: `${context.displayName} process ended (${how})`,
    stderr: exit.stderr,
    exitCode: exit.exitCode,
    signal: exit.signal,
  };
}
