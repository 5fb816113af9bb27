/**
 * The agent machine's context and events, and the pure functions its actions compute with:
 * whether a failure will be retried, the failure records of each way a process can fail,
 * and answering waiting commands. Split from agent.machine.ts so the statechart reads on
 * its own.
 */
import type { InitializeResponse } from '../core/acp-types.js';
import type { ContainmentKind } from '../core/containment-kind.js';
import { rpcErrorDetails } from '../core/rpc-error.js';
import { describeError, failureMessage, type AgentFailure, type AuthMethodSummary, type CommandResult } from '../core/errors.js';
import type { FailureEvidence, FailurePattern, FailurePhase } from '../core/failure-class.js';
import type {
  AgentCommand,
  AgentEmitted,
  AgentFailureReport,
  AgentReport,
  AgentStatus,
  CommandSettled,
  ProcessEvent,
  ProcessExit,
  RestartHold,
  RestartRequest,
} from './agent-events.js';
import type { RestartPolicy } from './policies/backoff.policy.js';
import { parkedWaitMs, restartsWithin, retriesByItself, type ClassPolicy } from './policies/class-policy.js';
import { classifyFailure } from './policies/failure-class.policy.js';
import { isRetryable } from './policies/retry.policy.js';
import type { SessionOpenEvent } from './session-events.js';
import type { WorkspaceHoldReport } from './workspace.machine.js';

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
  /** The agent's own failure patterns, tried before the built-in ones. */
  failurePatterns: FailurePattern[];
  /** The latest time the process actor or a session reported (the supervisor's clock, epoch ms). */
  now: number;
  /** When the automatic restarts of the current window began (restart intensity). */
  restartTimes: number[];
  /** While `rateLimited`: how long it waits before trying again (null: until a caller's reconnect()). */
  parkedWaitMs: number | null;
  /** An auth method to `authenticate` with once the process being started has answered initialize. */
  pendingAuthMethod: string | null;
  /** The auth methods the agent offered in its last `initialize` answer. */
  authMethods: AuthMethodSummary[];
  /** The supervisor is overloaded: no automatic restart until it is reset. */
  restartsHeld: boolean;
  /**
   * The workspace holds this agent runs (docs/workspaces.md), by actor id: its own
   * (`workspace`, value null) and its sessions' (`workspace:<hold>`, value the key of the
   * session that uses it once it opened). A stop waits until every one is over.
   */
  workspaceHolds: Record<string, string | null>;
  /** The names of the agent's credential sets, in failover order (empty: none given). */
  credentials: string[];
  /** Which set the process runs with (an index of `credentials`); 0 without any. */
  credentialIndex: number;
  /** How its last process ended (null: none has ended since it was added). */
  lastExit: ProcessExit | null;
}

export type AgentEvent =
  | AgentCommand
  | ProcessEvent
  | SessionOpenEvent
  | RestartRequest
  | AgentFailureReport
  | RestartHold
  | { type: 'session.forget'; key: string }
  | WorkspaceHoldReport
  /** authenticate() of a connected agent, run by a child beside the connection (`reauthenticate`): done, or refused. */
  | { type: 'xstate.done.actor.reauthenticate'; output: unknown }
  | { type: 'xstate.error.actor.reauthenticate'; error: unknown }
  /** Raised by the machine itself, on its clock: the stream closed streamClosedGraceMs ago and the process has not exited. */
  | { type: 'process.streamClosedGraceElapsed' }
  /** The invoked `authenticate` of a parked agent was refused or lost its connection. */
  | { type: 'xstate.error.actor.authenticate'; error: unknown };

type EventOf<T extends AgentEvent['type']> = Extract<AgentEvent, { type: T }>;

/** The actor id of a session child, from the key of its opening. */
export const sessionActorId = (key: string) => `session:${key}`;

/** The actor id of the agent's own workspace hold. */
export const ownWorkspaceId = 'workspace';

/** The actor id of a session's workspace hold. */
export const sessionWorkspaceId = (hold: string) => `workspace:${hold}`;

/**
 * Why a workspace must not be cleaned up as its holder stops: the first of `statuses` (a
 * session's id and status) that was running a turn or awaiting a person's answer; else null.
 */
export function busyReason(agent: string, sessions: Array<{ sessionId: string; status: string }>): string | null {
  for (const { sessionId, status } of sessions) {
    if (status === 'awaiting_permission') return `session ${sessionId} of agent "${agent}" is awaiting a permission answer`;
    if (status === 'running' || status === 'stalled') return `session ${sessionId} of agent "${agent}" is running a turn`;
  }
  return null;
}

/** What an agent action's `enqueue` is at run time: it also takes a named action with params. */
type Enqueue = { emit(event: AgentEmitted): void };

/**
 * Enqueues the machine's `notifyParent` action with `report`. enqueueActions() takes a named
 * action with params at run time, but inside setup() its types cannot know the machine's own
 * action names: this is the one place that says so.
 */
export function notifyParent(enqueue: Enqueue, report: AgentReport): void {
  (enqueue as unknown as (action: { type: 'notifyParent'; params: AgentReport }) => void)({ type: 'notifyParent', params: report });
}

/** Emits `command.settled` for each request, and reports it to the parent (the machine's `notifyParent`). */
export function settle(enqueue: Enqueue, context: AgentContext, requestIds: readonly string[], result: CommandResult): void {
  for (const requestId of requestIds) {
    const settled: CommandSettled = { type: 'command.settled', agent: context.name, requestId, result };
    enqueue.emit(settled);
    notifyParent(enqueue, { type: 'agent.settled', settled });
  }
}

/**
 * A loss or a failed automatic attempt may be retried: attempts left, a kind a restart can
 * fix, and a class whose policy is to retry. (Whether the supervisor holds restarts, and the
 * restart intensity, are checked by the machine's guards.)
 */
export function willRetry(context: AgentContext): boolean {
  return (
    context.autoRetry &&
    context.attempt < context.restart.maxAttempts &&
    context.lastError !== null &&
    isRetryable(context.lastError.kind) &&
    policyOf(context, context.lastError)?.action === 'retry'
  );
}

/**
 * The process ended as an outcome, not a loss: its restart policy does not start it again —
 * any exit under `when: 'never'`, a clean one (code 0, no signal, not a stream that closed
 * and hung) under `'on-failure'`.
 */
export function exitIsOutcome(context: AgentContext, exit: EventOf<'process.exited'>): boolean {
  if (context.restart.when === 'never') return true;
  return context.restart.when === 'on-failure' && exit.reason === 'exit' && exit.exitCode === 0 && exit.signal === null;
}

/** Classes that a change of credentials can fix: a refused login, a used-up quota. */
const failoverClasses: ReadonlySet<string> = new Set(['auth', 'usage_limit']);

/** The failure is one that the next credential set may fix, and there is a next set. */
export function failsOver(context: AgentContext, failure: AgentFailure | null): boolean {
  return failure?.class !== undefined && failoverClasses.has(failure.class) && context.credentialIndex + 1 < context.credentials.length;
}

/** The name of the credential set in use (null: the agent has none). */
export function credentialInUse(context: Pick<AgentContext, 'credentials' | 'credentialIndex'>): string | null {
  return context.credentials[context.credentialIndex] ?? null;
}

/** The policy of a failure's class; none for a failure with no class (refusals, restart_intensity). */
export function policyOf(context: AgentContext, failure: AgentFailure | null): ClassPolicy | undefined {
  return failure?.class === undefined ? undefined : context.restart.policies[failure.class];
}

/** One more automatic restart would exceed the restart intensity. */
export function exceedsIntensity(context: AgentContext): boolean {
  return restartsWithin(context.restartTimes, context.restart.periodMs, context.now).length >= context.restart.intensity;
}

/** How long the `rateLimited` agent waits, from its failure's class policy and reset time. */
export function waitForLimit(context: AgentContext): number | null {
  const policy = policyOf(context, context.lastError);
  return policy ? parkedWaitMs(policy, context.lastError?.retryAt ?? null, context.now) : null;
}

/** Failures of spawning: no restart can fix them. */
const spawnKinds: ReadonlySet<string> = new Set(['not_installed', 'spawn_failed', 'workspace_failed']);

/** The failure with its class (read from what it shows), whether it is retried, and when a limit resets. */
export function classified(context: AgentContext, failure: AgentFailure, phase: FailurePhase, at: number, rpc: { code?: number | null; data?: unknown } = {}): AgentFailure {
  const evidence: FailureEvidence = {
    kind: failure.kind,
    phase,
    exitCode: failure.exitCode ?? null,
    signal: failure.signal ?? null,
    stderr: failure.stderr,
    detail: failure.detail ?? failure.message,
    rpcCode: rpc.code ?? null,
    ...(rpc.data !== undefined ? { rpcData: rpc.data } : {}),
  };
  const { class: failureClass, retryAt } = classifyFailure(evidence, context.failurePatterns, at);
  const policy = context.restart.policies[failureClass] ?? { action: 'retry' };
  return {
    ...failure,
    class: failureClass,
    // A kind no restart can fix (not installed, a spawn error, a workspace) is never retried, whatever the text said.
    retryable: !spawnKinds.has(failure.kind) && retriesByItself(policy, retryAt),
    retryAt,
    ...(failureClass === 'auth' ? { authMethods: context.authMethods } : {}),
  };
}

/** The failure a process survived (a session refused, a turn failed), as a session or the runtime reported it. */
export function reportedFailure(context: AgentContext, event: AgentFailureReport): AgentFailure {
  const failure: AgentFailure = { kind: event.kind, message: failureMessage(event.kind, context.displayName), detail: event.detail, stderr: [] };
  return classified(context, failure, event.phase, event.at ?? context.now, { code: event.rpcCode ?? null, data: event.rpcData });
}

/** The failure recorded when the connection closed during authenticate(): the agent was lost. */
export function lostDuringAuthentication(context: AgentContext): AgentFailure {
  const failure: AgentFailure = {
    kind: 'agent_exited',
    message: failureMessage('agent_exited', context.displayName),
    detail: `${context.displayName}'s connection closed during authenticate`,
    stderr: [],
  };
  return classified(context, failure, 'connected', context.now);
}

/** The failure recorded when the agent refused authenticate(): still class auth, still parked. */
export function authRefusal(context: AgentContext, error: unknown): AgentFailure {
  // authenticate() timed out or its caller gave up: not the agent's refusal, said as it is.
  const given = error as { kind?: unknown; message?: unknown } | null;
  if (given?.kind === 'auth_timeout' || given?.kind === 'aborted') {
    return { kind: given.kind, message: String(given.message), stderr: [], class: 'auth', retryable: false, retryAt: null, authMethods: context.authMethods };
  }
  const failure: AgentFailure = {
    kind: 'auth_required',
    message: `${context.displayName} refused authentication with ${context.pendingAuthMethod ?? 'that method'}`,
    detail: describeError(error),
    stderr: [],
  };
  const { rpcCode, rpcData } = rpcErrorDetails(error);
  return classified(context, failure, 'session', context.now, { code: rpcCode, data: rpcData });
}

/** The failure recorded when the agent restarted more than `restart.intensity` times within `restart.periodMs`. */
export function intensityFailure(context: AgentContext): AgentFailure {
  const cause = context.lastError;
  return {
    kind: 'restart_intensity',
    message: failureMessage('restart_intensity', context.displayName),
    detail: `${context.restart.intensity} automatic restarts within ${context.restart.periodMs} ms; the last failure: ${cause?.detail ?? cause?.message ?? 'unknown'}`,
    stderr: cause?.stderr ?? [],
    exitCode: cause?.exitCode ?? null,
    signal: cause?.signal ?? null,
    retryable: false,
    retryAt: null,
  };
}

/** The failure a process actor reported (spawn or handshake), worded for people and classified. */
export function processFailure(context: AgentContext, event: EventOf<'process.failed'>): AgentFailure {
  return classified(context, {
    kind: event.kind,
    message: failureMessage(event.kind, context.displayName, event.detail),
    detail: event.detail,
    stderr: event.stderr,
    exitCode: event.exitCode ?? null,
    signal: event.signal ?? null,
    ...(event.command !== undefined ? { command: event.command } : {}),
    ...(event.installHint !== undefined ? { installHint: event.installHint } : {}),
  }, spawnKinds.has(event.kind) ? 'spawn' : 'handshake', event.at ?? context.now, { code: event.rpcCode ?? null });
}

/**
 * The failure recorded when initialize stays unanswered. Its time is the spawn's plus the
 * timeout: a machine reads no clock, and no event came since the spawn.
 */
export function handshakeTimeoutFailure(context: AgentContext): AgentFailure {
  const failure: AgentFailure = {
    kind: 'handshake_timeout',
    message: failureMessage('handshake_timeout', context.displayName),
    detail: `no answer to initialize within ${context.handshakeTimeoutMs} ms`,
    stderr: [],
  };
  return classified(context, failure, 'handshake', context.now + context.handshakeTimeoutMs);
}

/** The failure recorded when the process exits; `kind` says in which phase it happened. */
export function exitFailure(kind: 'handshake_failed' | 'agent_exited', context: AgentContext, exit: EventOf<'process.exited'>): AgentFailure {
  const how = exit.reason === 'stream_closed' ? 'its ACP stream closed' : exit.signal ? `killed by ${exit.signal}` : `exit code ${exit.exitCode ?? 'unknown'}`;
  const failure: AgentFailure = {
    kind,
    message: failureMessage(kind, context.displayName),
    detail: `${context.displayName} process ended (${how})`,
    stderr: exit.stderr,
    exitCode: exit.exitCode,
    signal: exit.signal,
  };
  return classified(context, failure, kind === 'agent_exited' ? 'connected' : 'handshake', exit.at ?? context.now);
}
