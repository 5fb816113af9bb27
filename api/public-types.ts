/** The public types of the supervisor facade. */
import type { ClientConnection, InitializeResponse } from '../core/acp-types.js';
import type { AgentErrorKind, AgentFailure } from '../core/errors.js';
import type { PermissionRequest } from '../core/permission-policy.js';
import type { AgentStatus } from '../machines/agent-events.js';
import type { SessionRuntimeEvents } from '../runtime/session-registry.js';

/** A connected agent, as `ensureAgent` resolves it. */
export interface AgentHandle {
  name: string;
  displayName: string;
  pid: number;
  /** The agent's whole `initialize` answer. */
  initialize: InitializeResponse;
  protocolVersion: InitializeResponse['protocolVersion'];
  agentCapabilities: NonNullable<InitializeResponse['agentCapabilities']>;
  authMethods: NonNullable<InitializeResponse['authMethods']>;
  agentInfo: InitializeResponse['agentInfo'];
  /** The SDK connection, for direct ACP calls: `handle.connection.agent.request(...)`. */
  connection: ClientConnection;
}

/** One row of `list()`. */
export interface AgentSummary {
  name: string;
  displayName: string;
  status: AgentStatus;
  pid: number | null;
  attempt: number;
  lastError: AgentFailure | null;
}

export interface AgentStatusEvent {
  agent: string;
  status: AgentStatus;
  previous: AgentStatus;
}

export interface AgentErrorEvent {
  agent: string;
  kind: AgentErrorKind;
  message: string;
  detail?: string;
  stderr: string[];
  /** With kind `not_installed`: the command and how to install it. */
  command?: string;
  installHint?: string;
}

export interface SupervisorEventMap {
  'agent:status': AgentStatusEvent;
  error: AgentErrorEvent;
  /** With the `'ask'` policy: answer with `respond(optionId)` or `cancel()`. */
  'permission:request': PermissionRequest;
  /** An agent tried to read, write or run outside its session's sandbox; it was refused. */
  'sandbox:violation': SessionRuntimeEvents['sandbox:violation'];
  'session:status': SessionRuntimeEvents['session:status'];
  /** A turn sent no update for `stallTimeoutMs`; `policy` says what was done about it. */
  'session:stall': SessionRuntimeEvents['session:stall'];
}

export interface CallOptions {
  signal?: AbortSignal;
}
