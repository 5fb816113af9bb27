/**
 * The public contract of agentvisor, in one file: every type a user of the package names, and
 * the complete map of the events `supervisor.on()` delivers. index.ts re-exports every export
 * of this file (`export type *`): an export here is public, and every public type but the
 * classes' is exported here.
 *
 * Declared here: the facade's own shapes (handles, summaries, reports, call and prompt options,
 * the events it shapes itself). Declared below and re-exported here under their public names:
 * the types a lower layer needs itself (machines/ and runtime/ may not import api/,
 * docs/architecture.md), and the options api/options.ts infers from its schemas. The classes
 * and functions are values: index.ts exports them from their own modules (`Supervisor`,
 * `Session`, `AgentError`, `createSupervisor`, ...).
 *
 * api/supervisor.ts and api/session.ts take their public types from here; api/options.ts and
 * the layers below never import this file (no cycle).
 */
import type { RestartWhen } from '../core/restart-spec.js';
import type { StoredAgentSpec } from '../core/store.js';
import type { AgentCapabilities, AuthMethod, ClientConnection, Implementation, InitializeResponse, SessionInfo } from '../core/acp-types.js';
import type { ContainmentKind } from '../core/containment-kind.js';
import type { WorkspaceSpec } from '../core/workspace-spec.js';
import type { AgentErrorKind, AgentFailure, FailureClass } from '../core/errors.js';
import type { PermissionRequest } from '../core/permission-policy.js';
import type { AgentStatus } from '../machines/agent-events.js';
import type { RuntimeEvents, SessionChannelEvents } from '../runtime/session-registry.js';
import type { ReadRange } from '../runtime/store-reader.js';

// The supervisor and its options (api/options.ts: the types of its schemas).
export type { SupervisorOptions, SessionOptions, NewSessionOptions, InspectOption, RestartOptions } from './options.js';
export type { Clock } from '../core/clock.js';
export type { ExtensionHandler, ExtensionHandlers } from '../runtime/acp-client-handlers.js';
export type { TerminalLogin, TerminalLoginCommand } from '../runtime/terminal-login.js';
export type { AgentSpec } from '../core/agent-spec.js';
export type { ContainmentKind } from '../core/containment-kind.js';
export type { AgentTerminal, TerminalEvents, PtySettings } from '../runtime/pty-terminals.js';

// Errors and failures (core/errors.ts, core/failure-class.ts; the policies in machines/policies/).
export type { AgentErrorKind, AgentFailure, AuthMethodSummary, FailureClassInfo } from '../core/errors.js';
export type { FailureClass, FailurePattern, FailureEvidence, FailurePhase, Classification } from '../core/failure-class.js';
export type { RestartPolicy } from '../machines/policies/backoff.policy.js';
export type { ClassAction, ClassPolicy, ClassPolicies } from '../machines/policies/class-policy.js';

// Sessions: their events, state, controls, permissions and elicitations.
export type { SessionStatus, StallPolicy, SessionFailure } from '../machines/session-events.js';
export type { ResumeFallback, SessionStateChange } from '../runtime/session-registry.js';
export type { SessionStateFields, SessionUsage } from '../runtime/session-state.js';
export type { ControlOptions } from '../runtime/session-controls.js';
export type { PermissionPolicy, PermissionRequest, PermissionOutcome } from '../core/permission-policy.js';
export type { ElicitationPolicy, ElicitationRequest, ElicitationRequestView, ElicitationAnswer, ElicitationValue } from '../core/elicitation.js';

// The store, and the workspaces.
export type { Store, StoreWrite, StoredSession, StoredAgentSpec, TranscriptEntry, TranscriptKind, LogEntry, EventEntry, Page, Retention, RetentionRule, StoreStats, Awaitable } from '../core/store.js';
export type { WorkspaceSpec, WorkspaceOwner, WorkspaceKind, CleanupStrategy } from '../core/workspace-spec.js';
export type { WorkspaceInfo, PruneOptions, PruneResult, WorkspaceEvents } from '../runtime/workspace-registry.js';

// What an agent's processes cost (`resourceUsage()`).
export type { ResourceUsage } from '../runtime/resource-usage.js';

// The machines, for those who drive or inspect them.
export type { AgentStatus, AgentMachineInput, ProcessEvent, ProcessCommand } from '../machines/agent-events.js';
export type { AgentContext } from '../machines/agent.machine.js';
export type { PtyActivityState } from '../machines/pty-activity.machine.js';

// ACP, as the agents speak it (core/acp-types.ts re-exports the SDK's types).
export type {
  ContentBlock,
  SessionUpdate,
  UnknownSessionUpdate,
  StopReason,
  McpServer,
  AgentCapabilities,
  AuthMethod,
  AvailableCommand,
  Implementation,
  PlanEntry,
  PromptCapabilities,
  SessionConfigOption,
  SessionInfo,
  SessionModeState,
  SessionModelState,
  UsageUpdate,
} from '../core/acp-types.js';

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
  /** When the agent entered its current status (the supervisor's clock, epoch ms); null before its first. */
  since: number | null;
  /** How its last process ended (`{ code, signal, at }`); null when none has ended since it was registered. */
  lastExit: { code: number | null; signal: string | null; at: number } | null;
  /** Its restart policy's `when` (docs/failures.md): 'always', 'on-failure' or 'never'. */
  restart: RestartWhen;
  /** The name of the credential set it runs with (`spec.credentials`); null when it has none. */
  credential: string | null;
  /** Who the agent said it is in its `initialize` answer (name, version); null while it has no connection. */
  agentInfo: Implementation | null;
  /** What the agent advertised (prompt content, session list/resume/close/delete, MCP transports, loadSession); null while it has no connection. */
  agentCapabilities: AgentCapabilities | null;
  /** The login methods the agent offers; null while it has no connection. */
  authMethods: AuthMethod[] | null;
}

/**
 * An agent's spec as `agentSpec()` shows it: what it runs and how, with the names of its
 * environment variables but never their values (they may be secrets).
 */
export interface AgentSpecSummary extends Omit<StoredAgentSpec, 'displayName'> {
  protocol: 'acp' | 'stream-json' | 'pty';
  /** Where it runs: `local`, `sandbox`, `ssh`, `docker`, `kubernetes`. */
  runtime: string;
  /** Its own workspace's spec (docs/workspaces.md); null when it has none. */
  workspace: WorkspaceSpec | null;
  /** Its own timeouts, where it sets them (else the supervisor's apply). */
  handshakeTimeoutMs: number | null;
  shutdownTimeoutMs: number | null;
  killTimeoutMs: number | null;
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

/** `agent:status`: an agent's status changed, from `previous`. */
export interface AgentStatusEvent {
  agent: string;
  status: AgentStatus;
  previous: AgentStatus;
}

/** `error`: an agent failed (its process, handshake or connection); the fields of the `AgentError` it would reject with. */
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

/** Events of one session, as `session.on(type, listener)` delivers them. */
export type SessionEvents = SessionChannelEvents;

/** Options of a prompt turn. */
export interface PromptOptions {
  /** Aborting cancels the turn (`session/cancel`); it then resolves `cancelled`. */
  signal?: AbortSignal;
  /** Attached to the `session/prompt` request as `_meta`. */
  meta?: Record<string, unknown>;
}

/** Where a read of the store starts (`after` an entry's `seq`), how much it returns, and its abort signal. */
export type ReadOptions = ReadRange;

/**
 * Every event `supervisor.on(type, listener)` delivers, by name.
 *
 * Assembled here rather than defined in one place: the runtime emits all but two through its
 * own hub, typed by `RuntimeEvents` (runtime/session-registry.ts), which must stay below api/
 * because the runtime needs it and runtime/ may not import api/. `agent:status` and `error` are
 * the facade's shapes of the supervisor machine's emitted events (api/supervisor.ts `on()`),
 * needed nowhere below, so they are defined here. Extending `RuntimeEvents` keeps the map
 * complete (a new runtime event is a supervisor event with no edit here); the keys restated
 * below add the public docs, and the compiler holds each to the runtime's type.
 */
export interface SupervisorEventMap extends RuntimeEvents {
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
   * what was left alone, with why. Not emitted for a dry run (`{ dryRun: true }` changes
   * nothing: its caller has the listing); emitted for a sweep narrowed by `only`.
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
  /**
   * An agent's process ended as an outcome: its restart policy does not start it again (a
   * clean exit under `restart.when: 'on-failure'`, any exit under 'never'). Status `exited`,
   * `describe(name).lastExit` says how; a caller's start runs it again.
   */
  'agent:exited': RuntimeEvents['agent:exited'];
  /** An auth failure or a usage limit moved an agent to its next credential set (`spec.credentials`; names only). */
  'agent:credential': RuntimeEvents['agent:credential'];
  /** `restart(name, { reason })` was called. */
  'agent:restart': RuntimeEvents['agent:restart'];
  /** The supervisor-wide restart intensity was exceeded: automatic restarts are held until `resetOverload()`. */
  'supervisor:overloaded': RuntimeEvents['supervisor:overloaded'];
  /** `resetOverload()`: automatic restarts resume. */
  'supervisor:overload_reset': RuntimeEvents['supervisor:overload_reset'];
  /** A pty agent's CLI changed what it is doing (docs/pty.md). */
  'pty:activity': RuntimeEvents['pty:activity'];
}

/**
 * What `sweepOrphans()` did: `orphans`, what crashed supervisors left here (found before any
 * kill); `killed`, what was killed (none when `dryRun`); `skipped`, records left alone or with
 * nothing left to kill, with the reason.
 */
export type OrphanSweepResult = RuntimeEvents['orphans:swept'];

/** One leftover of a crashed supervisor as `sweepOrphans()` lists it: pid, agent, start time, command, its container. */
export type OrphanProcess = OrphanSweepResult['orphans'][number];

export type { SweepOrphansOptions } from './sweep-options.js';

export interface CallOptions {
  signal?: AbortSignal;
}
