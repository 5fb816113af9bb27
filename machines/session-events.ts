/** The vocabulary of a session actor. Plain JSON only. */
import type { ContentBlock, StopReason } from '../services/acp-client.service.js';
import type { AgentErrorKind } from '../services/errors.js';

/** What a session is doing, as `session.status` reports it. */
export type SessionStatus = 'ready' | 'running' | 'awaiting_permission' | 'stalled' | 'completed' | 'failed' | 'stopped';

/** What happens when a turn sends no update for `stallTimeoutMs`. */
export type StallPolicy = 'none' | 'cancel' | 'restart';

export interface SessionMachineInput {
  agent: string;
  sessionId: string;
  stallTimeoutMs: number;
  onStall: StallPolicy;
}

export interface SessionFailure {
  kind: AgentErrorKind;
  message: string;
}

export type SessionEvent =
  | { type: 'prompt'; prompt: ContentBlock[] }
  /** At least one `session/update` arrived (coalesced: one event per batch). */
  | { type: 'activity' }
  | { type: 'permission.requested'; requestId: string }
  | { type: 'permission.settled'; requestId: string }
  /** The agent process is gone: `stopped` when stopped on purpose, else it was lost. */
  | { type: 'agent.lost'; kind: AgentErrorKind; message: string }
  /** `canLoad`: the agent's current connection advertises loadSession. */
  | { type: 'resume'; canLoad: boolean }
  | { type: 'close' };

export interface PromptTurnInput {
  agent: string;
  sessionId: string;
  prompt: ContentBlock[];
}

export interface PromptTurnOutput {
  stopReason: StopReason;
}

export interface LoadSessionInput {
  agent: string;
  sessionId: string;
}

export type SessionEmitted =
  | { type: 'status'; agent: string; sessionId: string; status: SessionStatus }
  | { type: 'stall'; agent: string; sessionId: string; policy: StallPolicy; stallTimeoutMs: number };

/** What an agent machine needs to spawn a session child. */
export interface SessionOpenEvent {
  type: 'session.open';
  session: SessionMachineInput;
}
