/** The vocabulary of a session actor. Plain JSON only. */
import type { ContentBlock, StopReason } from '../core/acp-types.js';
import type { AgentErrorKind, AgentFailure } from '../core/errors.js';

/** What a session is doing, as `session.status` reports it. */
export type SessionStatus = 'ready' | 'running' | 'awaiting_permission' | 'stalled' | 'completed' | 'failed' | 'stopped';

/** What happens when a turn sends no update for `stallTimeoutMs`. */
export type StallPolicy = 'none' | 'cancel' | 'restart';

export interface SessionMachineInput {
  agent: string;
  /** The agent's display name, for the messages of the session's failures. */
  displayName: string;
  sessionId: string;
  /**
   * Names this opening of the session (its actor id is `session:<key>`): a restarted agent
   * may hand out the same session id again, and the two sessions must stay apart.
   */
  key: string;
  stallTimeoutMs: number;
  onStall: StallPolicy;
}

export interface SessionFailure {
  kind: AgentErrorKind;
  message: string;
  /** When the agent answered the request with an error: its JSON-RPC code and data (for the failure classes). */
  rpcCode?: number | null;
  rpcData?: unknown;
  /** When it failed (the supervisor's clock, epoch ms). */
  at?: number;
}

export type SessionEvent =
  /** session.prompt(): answered with `request.settled` carrying `requestId`; `meta` goes on the request as `_meta`. */
  | { type: 'prompt'; requestId: string; prompt: ContentBlock[]; meta?: Record<string, unknown> }
  /** session.resume(); `canLoad`: the agent's current connection advertises loadSession or session resume. */
  | { type: 'resume'; requestId: string; canLoad: boolean }
  /** loadSession() of a session of that id that is already here: resumed if it failed, else answered at once. */
  | { type: 'reopen'; requestId: string; canLoad: boolean }
  /** session.cancel() or the prompt's AbortSignal: session/cancel for the running turn. */
  | { type: 'cancel' }
  | { type: 'close' }
  /** At least one `session/update` arrived (coalesced: one event per batch). */
  | { type: 'activity' }
  /** A person is asked (a permission, an elicitation): answered, or expired after `timeoutMs` on the session's clock. */
  | { type: 'permission.requested'; requestId: string; timeoutMs: number }
  | { type: 'permission.settled'; requestId: string }
  /** The agent process is gone: `stopped` when stopped on purpose, else it was lost. */
  | { type: 'agent.lost'; kind: AgentErrorKind; message: string }
  /** What the prompt turn actor reports: how the turn ended, or that it sent no update for stallTimeoutMs. */
  | { type: 'turn.completed'; stopReason: StopReason }
  | { type: 'turn.stalled' }
  | { type: 'turn.failed'; failure: SessionFailure }
  /** Raised by the machine itself: nobody answered a question within its timeout. */
  | { type: 'ask.timedOut'; requestId: string };

/** The session's prompt-turn actor, which lives as long as the session and runs its turns one at a time. */
export interface PromptTurnInput {
  agent: string;
  sessionId: string;
  /** A turn watched this long without an update is reported `turn.stalled` (once). */
  stallTimeoutMs: number;
}

/**
 * Commands the session machine sends to its prompt-turn actor: `start` a turn (session/prompt;
 * `meta` goes on the request as `_meta`; the turn is watched for stalls from then on),
 * `cancel` the running one (session/cancel), or `release` it (cancelled if it still runs, and
 * whatever it answers later is not reported). The stall watch hears the turn's `activity`
 * (updates arrived: its deadline moves), is paused while a person is asked, and resumed —
 * watching from now — when the turn runs again.
 */
export type PromptTurnCommand =
  | { type: 'start'; prompt: ContentBlock[]; meta?: Record<string, unknown> }
  | { type: 'cancel' }
  | { type: 'release' }
  | { type: 'activity' }
  | { type: 'pauseStallWatch' }
  | { type: 'resumeStallWatch' };

export interface LoadSessionInput {
  agent: string;
  sessionId: string;
}

/** The outcome of a prompt or resume request. */
export type SessionRequestResult = { ok: true; stopReason?: StopReason } | { ok: false; failure: AgentFailure };

export type SessionEmitted =
  | { type: 'status'; agent: string; sessionId: string; status: SessionStatus }
  | { type: 'stall'; agent: string; sessionId: string; policy: StallPolicy; stallTimeoutMs: number }
  | { type: 'request.settled'; requestId: string; result: SessionRequestResult }
  /** Nobody answered the question `requestId` in time: its broker answers it `cancelled`. */
  | { type: 'ask.expired'; requestId: string };

/** What an agent machine needs to spawn a session child. */
export interface SessionOpenEvent {
  type: 'session.open';
  session: SessionMachineInput;
  /** The actor id of the session's own workspace hold (`newSession(agent, { workspace })`), if it has one. */
  workspaceHold?: string;
}
