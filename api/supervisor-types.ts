/** The public types of the supervisor facade. */
import type { AgentStatus } from '../machines/agent-events.js';
import type { ClientConnection, InitializeResponse } from '../services/acp-client.service.js';
import type { AgentErrorKind, AgentFailure } from '../services/errors.js';
import type { PermissionRequest } from './permissions.js';
import type { SessionHubEvents } from './session-hub.js';

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
}

export interface SupervisorEventMap {
  'agent:status': AgentStatusEvent;
  error: AgentErrorEvent;
  /** With the `'ask'` policy: answer with `respond(optionId)` or `cancel()`. */
  'permission:request': PermissionRequest;
  /** An agent tried to read, write or run outside its session's sandbox; it was refused. */
  'sandbox:violation': SessionHubEvents['sandbox:violation'];
  'session:status': SessionHubEvents['session:status'];
  /** A turn sent no update for `stallTimeoutMs`; `policy` says what was done about it. */
  'session:stall': SessionHubEvents['session:stall'];
}

export interface CallOptions {
  signal?: AbortSignal;
}
