/**
 * The vocabulary between an agent machine, its process actor and its supervisor.
 * Plain JSON only: these events travel through inspectors and snapshots.
 */
import type { InitializeResponse } from '../services/acp-client.service.js';
import type { AgentErrorKind, AgentFailure } from '../services/errors.js';
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

/** Commands a caller (usually the supervisor) sends to an agent. */
export type AgentCommand = { type: 'ensure' } | { type: 'reconnect' } | { type: 'stop' };

/** Failure report of a process actor, before the machine words it for people. */
export interface ProcessFailureReport {
  kind: AgentErrorKind;
  /** Technical detail (the spawn error, the JSON-RPC error message). */
  detail: string;
  stderr: string[];
  exitCode?: number | null;
  signal?: string | null;
}

/** What a process actor reports to the agent machine that spawned it. */
export type ProcessEvent =
  | { type: 'process.spawned'; pid: number }
  | { type: 'process.initialized'; initialize: InitializeResponse }
  | ({ type: 'process.failed' } & ProcessFailureReport)
  /** Sent once, when no process of the agent's group is left (or none ever started). */
  | { type: 'process.exited'; exitCode: number | null; signal: string | null; stderr: string[]; reason: 'exit' | 'stream_closed' };

/** Input of the process actor: which agent to launch (the spec is looked up by the runtime). */
export interface AgentProcessInput {
  agent: string;
}

/** Commands the agent machine sends to its process actor: the rungs of the stop ladder. */
export type ProcessCommand = { type: 'closeInput' } | { type: 'terminate' } | { type: 'kill' };

/** What an agent machine reports to its parent. */
export type AgentReport =
  | { type: 'agent.status'; agent: string; status: AgentStatus; retrying?: boolean }
  | { type: 'agent.error'; agent: string; failure: AgentFailure };

/** What an agent machine emits to `actor.on(...)` listeners. */
export type AgentEmitted =
  | { type: 'status'; agent: string; status: AgentStatus }
  | { type: 'error'; agent: string; failure: AgentFailure };
