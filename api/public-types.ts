/** The public types of the supervisor facade. */
import type { AgentCapabilities, AuthMethod, ClientConnection, Implementation, InitializeResponse, SessionInfo } from '../core/acp-types.js';
import type { ContainmentKind } from '../core/containment-kind.js';
import type { AgentErrorKind, AgentFailure, FailureClass } from '../core/errors.js';
import type { PermissionRequest } from '../core/permission-policy.js';
import type { AgentStatus } from '../machines/agent-events.js';
import type { RuntimeEvents } from '../runtime/session-registry.js';

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
  /**
   * The SDK connection, for direct ACP calls: `handle.connection.agent.request(...)`. A
   * session opened over it with the SDK's helper (`connection.agent.buildSession()`) gets
   * its updates through the SDK; the updates of agentvisor's own sessions come only through
   * their `Session` (docs/robustness.md).
   */
  connection: ClientConnection;
}

/** One row of `list()`. */
export interface AgentSummary {
  name: string;
  displayName: string;
  status: AgentStatus;
  /**
   * The agent machine's current state as a dotted path, e.g. `connected.stable` or
   * `reconnecting.waiting` (the statechart in visualizations/agent.svg); `idle` before its
   * actor exists.
   */
  state: string;
  pid: number | null;
  attempt: number;
  lastError: AgentFailure | null;
  /** The containment the agent's current process runs in; null when it has none or only its process group. */
  containment: ContainmentKind | null;
  /** Who the agent said it is in its `initialize` answer (name, version); null while it has no connection. */
  agentInfo: Implementation | null;
  /** What the agent advertised (prompt content, session list/resume/close/delete, MCP transports, loadSession); null while it has no connection. */
  agentCapabilities: AgentCapabilities | null;
  /** The login methods the agent offers; null while it has no connection. */
  authMethods: AuthMethod[] | null;
}

/** One page of the agent's own sessions (`session/list`). */
export interface AgentSessionPage {
  sessions: SessionInfo[];
  /** Pass it as `cursor` for the next page; null on the last. */
  nextCursor: string | null;
}

/** The containment a supervisor's agents run in (docs/containment.md). */
export interface ContainmentReport {
  /** The mechanism in effect; null: process groups only. */
  kind: ContainmentKind | null;
  /** Stronger mechanisms tried on this host, and why each was refused. */
  refused: Array<{ kind: ContainmentKind; reason: string }>;
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
  /** Why the agent failed (docs/failures.md), whether the supervisor retries it by itself, and when a limit resets (epoch ms). */
  class?: FailureClass;
  retryable?: boolean;
  retryAt?: number | null;
}

export interface SupervisorEventMap {
  'agent:status': AgentStatusEvent;
  error: AgentErrorEvent;
  /** With the `'ask'` policy: answer with `respond(optionId)` or `cancel()`. */
  'permission:request': PermissionRequest;
  /** With the `'ask'` elicitation policy: answer with `respond(action, content?)` (docs/acp.md). */
  'elicitation:request': RuntimeEvents['elicitation:request'];
  /** A URL elicitation the agent saw completed. */
  'elicitation:complete': RuntimeEvents['elicitation:complete'];
  /** A session's modes, config options, commands, plan, usage, title or models changed: `{ agent, sessionId, field, value }`. */
  'session:state': RuntimeEvents['session:state'];
  /** A mode, model or config value set by the user could not be set again after the agent reopened the session. */
  'session:choice_dropped': RuntimeEvents['session:choice_dropped'];
  /** An agent tried to read, write or run outside its session's sandbox; it was refused. */
  'sandbox:violation': RuntimeEvents['sandbox:violation'];
  'session:status': RuntimeEvents['session:status'];
  /** A turn sent no update for `stallTimeoutMs`; `policy` says what was done about it. */
  'session:stall': RuntimeEvents['session:stall'];
  /** A turn's prompt as it is sent, then how the turn ended (`stopReason` or `error`): what the transcript keeps. */
  'session:turn': RuntimeEvents['session:turn'];
  /**
   * Emitted once, right after the supervisor is created, when its agents run under a weaker
   * containment than asked for (or only process groups): which, and why each stronger one was refused.
   */
  'containment:degraded': RuntimeEvents['containment:degraded'];
  /**
   * The orphan sweep's outcome (`sweepOrphans()`, and once by itself before the first spawn
   * unless `sweepOnStart: false`): what crashed supervisors left behind and was killed, and
   * what was left alone, with why.
   */
  'orphans:swept': OrphanSweepResult;
  /** One line an agent wrote to stderr, as it comes (the store keeps them: `logs()`). */
  'agent:stderr': RuntimeEvents['agent:stderr'];
  /**
   * A write to the store failed (a full disk, say): the agents keep running, and
   * `droppedWrites` counts what was lost since the last report (reports come at most once a second).
   */
  'store:error': RuntimeEvents['store:error'];
  /** An agent sent something that breaks ACP; it was dropped (at most one event a second per connection). */
  'protocol:warning': RuntimeEvents['protocol:warning'];
  /**
   * A workspace's changed files, after files changed in it (docs/workspaces.md): at most one per
   * `workspaceStatusIntervalMs` per workspace, only when they differ from the last report.
   */
  'workspace:status': RuntimeEvents['workspace:status'];
  /** A workspace's owner ended and its cleanup strategy was applied: `kept`, `archived` or `removed`. */
  'workspace:cleaned': RuntimeEvents['workspace:cleaned'];
  /**
   * A workspace's owner ended but its cleanup was refused — a session was running a turn or
   * awaiting a permission answer (`busy`), uncommitted changes (`dirty`), git refused
   * (`failed`) — and the workspace is kept for `pruneWorkspaces()`.
   */
  'workspace:cleanup_refused': RuntimeEvents['workspace:cleanup_refused'];
  /**
   * While `authenticate()` runs, the agent wrote a URL to stderr: most likely a browser login
   * waiting for a person (`{ agent, methodId, urls, line }`). Show it; an unfinished login ends
   * `auth_timeout` after `authTimeoutMs`, naming it.
   */
  'agent:auth_prompt': RuntimeEvents['agent:auth_prompt'];
  /** An agent parked in `needsAuth` (docs/failures.md): `authenticate(agent, methodId)` with one of `authMethods`, or `reconnect()` after logging in. */
  'agent:needs_auth': RuntimeEvents['agent:needs_auth'];
  /** An agent parked in `rateLimited`: it tries again by itself at `retryAt` (when known), or on `reconnect()`. */
  'agent:rate_limited': RuntimeEvents['agent:rate_limited'];
  /** The supervisor-wide restart intensity was exceeded: automatic restarts are held until `resetOverload()`. */
  'supervisor:overloaded': RuntimeEvents['supervisor:overloaded'];
  /** `resetOverload()`: automatic restarts resume. */
  'supervisor:overload_reset': RuntimeEvents['supervisor:overload_reset'];
  /** A pty agent's CLI changed what it is doing (docs/pty.md). */
  'pty:activity': RuntimeEvents['pty:activity'];
}

/** What `sweepOrphans()` did: processes killed, and records left alone or dropped with the reason. */
export type OrphanSweepResult = RuntimeEvents['orphans:swept'];

export interface CallOptions {
  signal?: AbortSignal;
}
