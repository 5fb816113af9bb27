/**
 * The vocabulary between an agent machine, its process actor, its sessions and its
 * supervisor. Plain JSON only: these events travel through inspectors and snapshots.
 */
import type { InitializeResponse } from '../core/acp-types.js';
import type { ContainmentKind } from '../core/containment-kind.js';
import type { AgentErrorKind, AgentFailure, CommandResult } from '../core/errors.js';
import type { RestartPolicy } from './policies/backoff.policy.js';

/** The agent lifecycle's top-level states, which are also its status strings. */
export type AgentStatus = 'idle' | 'starting' | 'connected' | 'disconnected' | 'reconnecting' | 'stopping';

/** Statuses in which an agent holds, or is about to hold, a live process. */
export const liveStatuses: ReadonlySet<AgentStatus> = new Set<AgentStatus>(['starting', 'connected', 'reconnecting', 'stopping']);

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
  /** While stopping: skip to the ladder's last rung (SIGKILL) now — a second interrupt. */
  | { type: 'forceStop' };

/** A session asks its agent to kill and restart its process (the stall policy `restart`). */
export interface RestartRequest {
  type: 'restart';
  sessionId: string;
}

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
}

/** What a process actor reports to the agent machine that spawned it. */
export type ProcessEvent =
  /** The agent runs: its own pid on this host, and the containment it runs in. */
  | { type: 'process.spawned'; pid: number; containment: ContainmentKind | null }
  | { type: 'process.initialized'; initialize: InitializeResponse }
  | ({ type: 'process.failed' } & ProcessFailureReport)
  /** The ACP stream closed; the exit (or a kill after a grace) follows. */
  | { type: 'process.connectionClosed' }
  /** Sent once, when no process of the agent's group is left (or none ever started). */
  | { type: 'process.exited'; exitCode: number | null; signal: string | null; stderr: string[]; reason: 'exit' | 'stream_closed' };

/** Input of the process actor: which agent to launch (the spec is looked up by the runtime). */
export interface AgentProcessInput {
  agent: string;
}

/** Commands the agent machine sends to its process actor: the rungs of the stop ladder. */
export type ProcessCommand = { type: 'closeInput' } | { type: 'terminate' } | { type: 'kill' };

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
  | { type: 'agent.settled'; settled: CommandSettled };

/** What an agent machine emits to `actor.on(...)` listeners. */
export type AgentEmitted =
  | { type: 'status'; agent: string; status: AgentStatus }
  | { type: 'error'; agent: string; failure: AgentFailure }
  | CommandSettled;
