/**
 * The vocabulary between an agent machine, its process actor, its sessions and its
 * supervisor. Plain JSON only: these events travel through inspectors and snapshots.
 */
import type { InitializeResponse } from '../core/acp-types.js';
import type { ContainmentKind } from '../core/containment-kind.js';
import type { AgentErrorKind, AgentFailure, AuthMethodSummary, CommandResult } from '../core/errors.js';
import type { FailurePattern, FailurePhase } from '../core/failure-class.js';
import type { WorkspaceSpec } from '../core/workspace-spec.js';
import type { RestartWhen } from '../core/restart-spec.js';
import type { RestartPolicy } from './policies/backoff.policy.js';

/** The agent lifecycle's top-level states, which are also its status strings. */
export type AgentStatus =
  | 'idle'
  | 'starting'
  | 'connected'
  | 'disconnected'
  | 'reconnecting'
  /** `restart()`: the stop ladder, then a start. */
  | 'restarting'
  | 'stopping'
  /** The process ended and its restart policy does not start it again (`restart.when`): an outcome. */
  | 'exited'
  | 'needsAuth'
  | 'rateLimited';

/** Statuses in which an agent holds, or is about to hold, a live process. */
export const liveStatuses: ReadonlySet<AgentStatus> = new Set<AgentStatus>(['starting', 'connected', 'reconnecting', 'restarting', 'stopping']);

/** How a process ended: its exit code or signal, and when (the supervisor's clock, epoch ms). */
export interface ProcessExit {
  code: number | null;
  signal: string | null;
  at: number;
}

/** Timing options an agent machine runs with. */
export interface AgentTimings {
  restart: RestartPolicy;
  handshakeTimeoutMs: number;
  shutdownTimeoutMs: number;
  killTimeoutMs: number;
}

/** What an agent machine is created with. */
export interface AgentMachineInput extends AgentTimings {
  name: string;
  displayName: string;
  /** Seed of the agent's jitter rolls (see policies/backoff.policy.ts). */
  jitterSeed: number;
  /** The agent's own failure patterns (its spec's, a preset's), tried before the built-in ones. */
  failurePatterns: FailurePattern[];
  /** The supervisor holds automatic restarts (it is overloaded) since before this agent was added. */
  restartsHeld: boolean;
  /** The names of the agent's credential sets (`spec.credentials`), in failover order; empty without any. */
  credentials: string[];
}

/**
 * Commands a caller (usually the supervisor) sends to an agent. A command with a
 * `requestId` is answered exactly once with `command.settled` carrying that id: a start
 * (`ensure`, `reconnect`) when the agent connects, fails for good or is stopped; a `stop`
 * when the agent is idle.
 */
export type AgentCommand =
  | { type: 'ensure'; requestId?: string }
  | { type: 'reconnect'; requestId?: string }
  | { type: 'stop'; requestId?: string }
  /** restart(): the stop ladder, then a start (its sessions resumed as after a crash); answered once connected again. */
  | { type: 'restart.request'; requestId?: string }
  /** authenticate(): the agent's ACP `authenticate` with one of its auth methods; answered once connected. */
  | { type: 'authenticate'; methodId: string; requestId?: string }
  /** While stopping: skip to the ladder's last rung (SIGKILL) now — a second interrupt. */
  | { type: 'forceStop' }
  /**
   * A session with its own workspace may be opened (the supervisor admitted it): the agent
   * spawns the workspace's hold, actor id `workspace:<hold>`, and answers at once.
   */
  | { type: 'session.admit'; hold: string; workspace: WorkspaceSpec; requestId?: string };

/** A session asks its agent to kill and restart its process (the stall policy `restart`). */
export interface RestartRequest {
  type: 'restart';
  sessionId: string;
}

/**
 * A failure the agent's process survived — `session/new` or `session/load` refused, a prompt
 * turn that failed — reported by the runtime and by sessions, so that the agent machine can
 * classify it: a login or a limit parks the agent; any other class leaves it connected.
 */
export interface AgentFailureReport {
  type: 'agent.failure';
  phase: Extract<FailurePhase, 'session' | 'turn'>;
  kind: AgentErrorKind;
  detail: string;
  rpcCode?: number | null;
  rpcData?: unknown;
  /** When it happened (the supervisor's clock, epoch ms); without it, the last known time. */
  at?: number;
  /** Set by a caller that wants the classification back: the agent emits `failure.classified` with it. */
  requestId?: string;
}

/** The supervisor holds automatic restarts while it is overloaded, and releases them when it is reset. */
export type RestartHold = { type: 'restarts.hold' } | { type: 'restarts.release' };

/** Failure report of a process actor, before the machine words it for people. */
export interface ProcessFailureReport {
  kind: AgentErrorKind;
  /** Technical detail (the spawn error, the JSON-RPC error message). */
  detail: string;
  stderr: string[];
  exitCode?: number | null;
  signal?: string | null;
  /** With kind `not_installed`: the command and how to install it. */
  command?: string;
  installHint?: string;
  /** The JSON-RPC error code, when `initialize` was answered with an error. */
  rpcCode?: number | null;
}

/**
 * What a process actor reports to the agent machine that spawned it. `at` is when (the
 * supervisor's clock, epoch ms): the machine reads no clock, so failure classes' reset times
 * and the restart intensity count from these; without it the last known time stands.
 */
export type ProcessEvent =
  /** The agent runs: its own pid on this host, and the containment it runs in. */
  | { type: 'process.spawned'; pid: number; containment: ContainmentKind | null; at?: number }
  | { type: 'process.initialized'; initialize: InitializeResponse }
  | ({ type: 'process.failed'; at?: number } & ProcessFailureReport)
  /** The ACP stream closed; the exit (or a kill after a grace) follows. */
  | { type: 'process.connectionClosed' }
  /** Sent once, when no process of the agent's group is left (or none ever started). */
  | { type: 'process.exited'; exitCode: number | null; signal: string | null; stderr: string[]; reason: 'exit' | 'stream_closed'; at?: number }
  /** Before its spawn: the agent has a workspace, and the process needs its directory (answered `workspace.ready` or `workspace.failed`). */
  | { type: 'workspace.acquire' };

/** Input of the authenticate actor: which agent, with which of its auth methods. */
export interface AuthenticateInput {
  agent: string;
  methodId: string;
}

/** Input of the process actor: which agent to launch (the spec is looked up by the runtime). */
export interface AgentProcessInput {
  agent: string;
  /** Which of the spec's credential sets the process runs with (its index); none without `spec.credentials`. */
  credential?: number;
}

/** Commands the agent machine sends to its process actor: the rungs of the stop ladder. */
export type ProcessCommand =
  | { type: 'closeInput' }
  | { type: 'terminate' }
  /** SIGKILL; `stream_closed`: because it kept running after closing its ACP stream (its exit says so). */
  | { type: 'kill'; reason?: 'stream_closed' }
  /** The agent's workspace is held: the process runs in `path`. */
  | { type: 'workspace.ready'; path: string }
  /** The agent's workspace could not be made: nothing is spawned (workspace_failed). */
  | { type: 'workspace.failed'; message: string };

/** The answer to one command that carried a `requestId`. */
export interface CommandSettled {
  type: 'command.settled';
  agent: string;
  requestId: string;
  result: CommandResult;
}

/** What an agent machine reports to its parent. */
export type AgentReport =
  | { type: 'agent.status'; agent: string; status: AgentStatus; retrying?: boolean }
  | { type: 'agent.error'; agent: string; failure: AgentFailure }
  | { type: 'agent.settled'; settled: CommandSettled }
  /** An automatic restart begins (counted by the supervisor's intensity). */
  | { type: 'agent.restarting'; agent: string; at: number }
  | AgentParked
  | AgentOutcome;

/**
 * The process ended as an outcome (`exited`: its restart policy does not start it again), or
 * the agent failed over to its next credential set (names only: never a value).
 */
export type AgentOutcome =
  | { type: 'agent.exited'; agent: string; exit: ProcessExit; when: RestartWhen }
  | { type: 'agent.credential'; agent: string; credential: string; previous: string; failure: AgentFailure };

/** The agent parked: it waits for a login (`needsAuth`) or for a limit to reset (`rateLimited`). */
export type AgentParked =
  | { type: 'agent.needsAuth'; agent: string; failure: AgentFailure; authMethods: AuthMethodSummary[] }
  | { type: 'agent.rateLimited'; agent: string; failure: AgentFailure; retryAt: number | null };

/** What an agent machine emits to `actor.on(...)` listeners. */
export type AgentEmitted =
  | { type: 'status'; agent: string; status: AgentStatus }
  | { type: 'error'; agent: string; failure: AgentFailure }
  | AgentParked
  | AgentOutcome
  | CommandSettled
  /** How the agent classified a reported failure (`agent.failure`), for the caller that reported it. */
  | { type: 'failure.classified'; requestId: string | null; failure: AgentFailure };
