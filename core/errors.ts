/**
 * Every failure the library reports, in one place: the kinds, the plain-JSON record machines
 * keep in context, the {@link AgentError} every promise rejects with, and the factories that
 * word each failure. Machines and the facade build their failures here, so one kind always
 * comes with one message, wherever it is raised.
 *
 * A face above the library (the daemon) declares its own kinds, their messages and their
 * `new AgentError(` in one file of its own (daemon/daemon-errors.ts), added to
 * {@link AgentErrorKind} through {@link AgentErrorKindExtensions}: one error class, a typed
 * `kind` everywhere.
 *
 * Pure: no I/O, no XState. In the library, `new AgentError(` appears in this file only.
 */
import type { FailureClass } from './failure-class.js';

/** Why an operation on an agent failed. */
export type AgentErrorKind =
  /** The agent's command was not found on PATH (spawn failed with ENOENT). */
  | 'not_installed'
  /** The process could not be spawned for another reason (EACCES, bad cwd, ...). */
  | 'spawn_failed'
  /** `initialize` was rejected, or the process exited before answering it. */
  | 'handshake_failed'
  /** `initialize` was not answered within `handshakeTimeoutMs`. */
  | 'handshake_timeout'
  /** A connected agent's process exited or its ACP stream closed. */
  | 'agent_exited'
  /**
   * The agent's process ended and its restart policy (`restart.when`: a clean exit under
   * 'on-failure', any exit under 'never') does not start it again: an outcome, not a crash.
   */
  | 'agent_ended'
  /** One more live agent would exceed `maxAgents`. */
  | 'limit_reached'
  /** No agent is registered under that name. */
  | 'unknown_agent'
  /** The supervisor is shutting down or has shut down. */
  | 'shutting_down'
  /** The agent was stopped while the operation was waiting for it. */
  | 'stopped'
  /** The caller's AbortSignal fired. */
  | 'aborted'
  /** An option or agent spec is malformed. */
  | 'invalid_options'
  /** The agent requires authentication before it can open a session. */
  | 'auth_required'
  /**
   * `authenticate()` did not finish within its timeout (`authTimeoutMs`): the method most
   * likely waits for a person (a browser login); the message says what the agent asked for.
   */
  | 'auth_timeout'
  /** The agent answered an ACP request with an error. */
  | 'protocol_error'
  /** The agent does not support what was asked (e.g. session/load). */
  | 'not_supported'
  /**
   * The agent did not advertise what was asked (a mode, a config option, a content block
   * type, session/list, resume, delete…): refused before anything was sent.
   */
  | 'unsupported'
  /** A file or content block is larger than the bound it was given. */
  | 'too_large'
  /** A prompt was sent while another turn of the session is in flight. */
  | 'session_busy'
  /** The session is closed, or failed and must be resumed first. */
  | 'session_closed'
  /** No stored session has that id (or no agent of that name has one). */
  | 'session_not_found'
  /**
   * `sweepOrphans({ only })` named a pid that is no leftover of a crashed supervisor here: in
   * no process record, its supervisor alive, or recorded on another host. Nothing was killed.
   */
  | 'orphan_not_found'
  /** The store could not be opened, read or written: a corrupt, foreign or newer database, a full disk. */
  | 'store_failed'
  /**
   * The workspace (git worktree or directory) could not be made or used: git's own message
   * (a missing repository, a branch that exists), or it is already used by another owner.
   * Nothing was spawned; a restart cannot fix it, so it is never retried.
   */
  | 'workspace_failed'
  /**
   * The agent was restarted automatically more than `restart.intensity` times within
   * `restart.periodMs`: it is flapping, and the supervisor stops restarting it.
   */
  | 'restart_intensity'
  /** The agent's runtime host could not be reached (ssh: no route, refused, timed out; a dropped connection during the handshake). */
  | 'runtime_unreachable'
  /** The runtime refused the login (ssh: publickey denied). */
  | 'runtime_auth_failed'
  /** The remote host's key is not the one in knownHostsFile (or unknown there): never accepted blindly. */
  | 'runtime_host_key_changed'
  /** The container, image or pod the spec names does not exist (or the runtime's tool is missing). */
  | 'runtime_missing'
  /** A kind of a face above the library: the daemon's are in daemon/daemon-errors.ts. */
  | Extract<keyof AgentErrorKindExtensions, string>;

/**
 * The kinds a face above the library adds to {@link AgentErrorKind}, one key each, by
 * declaration merging: the daemon adds its own in daemon/daemon-errors.ts. Empty in the
 * library, so a library user's `error.kind` is one of the library's kinds above; code that
 * loads the daemon (the daemon, the CLI, this repository's typecheck) sees the daemon's too.
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- filled by declaration merging
export interface AgentErrorKindExtensions {}

/**
 * Why a failure happened, as the classifier (machines/policies/failure-class.policy.ts) read
 * it from what the failure showed; each class has its own restart policy (docs/failures.md).
 */
export type { FailureClass };

/** What errors, events and `list()` say of a failure's class. */
export interface FailureClassInfo {
  class: FailureClass;
  /** Whether the supervisor retries it by itself (now, after a backoff, or at `retryAt`). */
  retryable: boolean;
  /** When a usage or rate limit resets (epoch ms), when the agent said so. */
  retryAt: number | null;
}

/** An authentication method an agent offers in its `initialize` answer. */
export interface AuthMethodSummary {
  id: string;
  name: string;
  description?: string | null;
}

/** The plain-JSON description of a failure, as the machines keep it in context. */
export interface AgentFailure {
  kind: AgentErrorKind;
  message: string;
  /** Technical detail for logs: the spawn error, the JSON-RPC error, how the process ended. */
  detail?: string;
  /** The last lines the agent wrote to stderr before it failed, oldest first. */
  stderr: string[];
  /** Exit code of the process, when it exited. */
  exitCode?: number | null;
  /** Signal that ended the process, when one did. */
  signal?: string | null;
  /** With kind `not_installed`: the command that was not found. */
  command?: string;
  /** With kind `not_installed`: how to install it, when the spec knows (presets do). */
  installHint?: string;
  /** Why it happened, and whether and when it is retried; failures of an agent carry it. */
  class?: FailureClass;
  retryable?: boolean;
  retryAt?: number | null;
  /** With class `auth`: the methods the agent offers (`supervisor.authenticate(agent, id)`). */
  authMethods?: AuthMethodSummary[];
}

/** What a failed command settles with; `null` failure means success. */
export type CommandResult = { ok: true } | { ok: false; failure: AgentFailure };

interface AgentErrorOptions {
  agent?: string;
  cause?: unknown;
  stderr?: string[];
  authMethods?: AuthMethodSummary[];
  command?: string;
  installHint?: string;
  classInfo?: FailureClassInfo;
}

/**
 * The error every agentvisor promise rejects with.
 *
 * @example
 * try { await supervisor.ensureAgent('codex'); }
 * catch (error) {
 *   if (error instanceof AgentError && error.kind === 'not_installed') console.log(error.message, error.installHint);
 * }
 */
export class AgentError extends Error {
  override readonly name = 'AgentError';
  /** What went wrong, as a stable machine-readable string. */
  readonly kind: AgentErrorKind;
  /** The agent's registered name, when the failure concerns one agent. */
  readonly agent: string | undefined;
  /** The agent's last stderr lines, when it wrote any before failing. */
  readonly stderr: string[];
  /** With kind `auth_required`: the methods the agent offers (`supervisor.authenticate(agent, id)`). */
  readonly authMethods: AuthMethodSummary[] | undefined;
  /** With kind `not_installed`: the command that was not found on PATH. */
  readonly command: string | undefined;
  /** With kind `not_installed`: how to install the command, when known (e.g. `npm install -g …`). */
  readonly installHint: string | undefined;
  /** Why the agent failed (docs/failures.md), when the failure is an agent's. */
  readonly class: FailureClass | undefined;
  /** Whether the supervisor retries it by itself. */
  readonly retryable: boolean | undefined;
  /** When a usage or rate limit resets (epoch ms), when the agent said so. */
  readonly retryAt: number | null | undefined;

  constructor(kind: AgentErrorKind, message: string, options: AgentErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.kind = kind;
    this.agent = options.agent;
    this.stderr = options.stderr ?? [];
    this.authMethods = options.authMethods;
    this.command = options.command;
    this.installHint = options.installHint;
    this.class = options.classInfo?.class;
    this.retryable = options.classInfo?.retryable;
    this.retryAt = options.classInfo?.retryAt;
  }

  /** The same error with the class its agent's classifier gave it. */
  withClass(classInfo: FailureClassInfo): AgentError {
    return new AgentError(this.kind, this.message, {
      agent: this.agent,
      stderr: this.stderr,
      cause: this.cause,
      command: this.command,
      installHint: this.installHint,
      authMethods: this.authMethods,
      classInfo,
    });
  }

  /** Builds the error from the plain failure record a machine keeps in context. */
  static fromFailure(agent: string, failure: AgentFailure): AgentError {
    return new AgentError(failure.kind, failure.message, {
      agent,
      stderr: failure.stderr,
      cause: failure,
      command: failure.command,
      installHint: failure.installHint,
      authMethods: failure.authMethods,
      classInfo: failure.class === undefined ? undefined : { class: failure.class, retryable: failure.retryable ?? false, retryAt: failure.retryAt ?? null },
    });
  }
}

/**
 * The exact user-facing message for a process failure of `kind` of the agent `displayName`.
 * These strings are part of the lifecycle contract (README, docs/lifecycle.md): change them
 * only together with the docs. `detail` is part of the message only for `workspace_failed`
 * (git's own words: the reason is the message), `spawn_failed` (what is wrong: "/opt/agent is
 * a directory", "/opt/agent is not executable", "cwd /x is not a directory") and the runtimes' kinds.
 */
export function failureMessage(kind: AgentErrorKind, displayName: string, detail?: string): string {
  switch (kind) {
    case 'workspace_failed':
      return `Could not prepare the workspace of ${displayName}${detail ? `: ${detail}` : ''}`;
    case 'not_installed':
      return `Could not start ${displayName}. Check that it's installed.`;
    case 'spawn_failed':
      return `Could not start ${displayName}${detail ? `: ${detail}` : ''}`;
    case 'handshake_failed':
    case 'handshake_timeout':
      return `Could not connect to ${displayName}`;
    case 'agent_exited':
      return `${displayName} exited unexpectedly`;
    case 'auth_required':
      return `${displayName} requires authentication`;
    case 'restart_intensity':
      return `${displayName} keeps failing: automatic restarts stopped`;
    case 'runtime_unreachable':
      return `Could not reach the host of ${displayName}${detail ? `: ${detail}` : ''}`;
    case 'runtime_auth_failed':
      return `The host of ${displayName} refused the login${detail ? `: ${detail}` : ''}`;
    case 'runtime_host_key_changed':
      return `The host key of ${displayName}'s host does not match its known_hosts: not connecting${detail ? ` (${detail})` : ''}`;
    case 'runtime_missing':
      return `Where ${displayName} runs is missing${detail ? `: ${detail}` : ''}`;
    default:
      return `${displayName}: ${kind.replace(/_/g, ' ')}`;
  }
}

/** A failure record with no process detail (refusals, stops, session outcomes). */
function failure(kind: AgentErrorKind, message: string): AgentFailure {
  return { kind, message, stderr: [] };
}

/**
 * Failure records for every refusal and outcome that is not a process failure. Machines
 * keep and emit these records; the facade turns them into errors with {@link toError}.
 */
export const failures = {
  unknownAgent: (agent: string) => failure('unknown_agent', `No agent named "${agent}" is registered`),
  limitReached: (agent: string, maxAgents: number) =>
    failure('limit_reached', `Cannot start "${agent}": ${maxAgents} agents are already running (maxAgents)`),
  shuttingDown: (agent: string, what = 'start') => failure('shutting_down', `Cannot ${what} "${agent}": the supervisor is shutting down`),
  stoppedBeforeConnected: (agent: string) => failure('stopped', `Agent "${agent}" was stopped before it connected`),
  notConnected: (agent: string) => failure('agent_exited', `Agent "${agent}" has no live connection`),
  agentStopped: (displayName: string) => failure('stopped', `${displayName} was stopped`),
  agentLost: (displayName: string) => failure('agent_exited', failureMessage('agent_exited', displayName)),
  /** The process ended and `restart.when` does not start it again: what its sessions and waiting callers are told. */
  agentEnded: (displayName: string, exit: { code: number | null; signal: string | null }, when: string) =>
    failure('agent_ended', `${displayName} ended (${exit.signal ? `killed by ${exit.signal}` : `exit code ${exit.code ?? 'unknown'}`}); its restart policy ('${when}') does not start it again`),
  sessionBusy: (sessionId: string) => failure('session_busy', `Session ${sessionId} is already running a turn`),
  sessionFailed: (sessionId: string) => failure('session_closed', `Session ${sessionId} failed; resume() it first`),
  sessionClosed: (sessionId: string) => failure('session_closed', `Session ${sessionId} is closed`),
  closedDuringTurn: (sessionId: string) => failure('session_closed', `Session ${sessionId} was closed during the turn`),
  notAPtyAgent: (agent: string) => failure('not_supported', `Agent "${agent}" has no terminal: only agents with protocol 'pty' do`),
  unsupported: (displayName: string, what: string) => failure('unsupported', `${displayName} does not support ${what}`),
  cannotLoadSessions: (displayName: string) =>
    failure('not_supported', `${displayName} cannot load sessions (it advertises neither loadSession nor session resume): start a new session`),
} as const;

/** Turns a failure record into the error a promise rejects with. */
export function toError(agent: string, record: AgentFailure): AgentError {
  return AgentError.fromFailure(agent, record);
}

/** `invalid_options`: a malformed option, spec or name. */
export function invalidOptions(message: string, agent?: string): AgentError {
  return new AgentError('invalid_options', message, { agent });
}

/** `aborted`: the caller's signal fired while it waited for `what`. */
export function abortedError(what: string, signal: AbortSignal): AgentError {
  return new AgentError('aborted', `Waiting for "${what}" was aborted`, { agent: what, cause: signal.reason });
}

/** `auth_required`, with the methods the agent offers: class `auth`, never retried by itself (docs/failures.md). */
export function authRequired(agent: string, message: string, authMethods: AuthMethodSummary[], cause?: unknown): AgentError {
  return new AgentError('auth_required', message, { agent, cause, authMethods, classInfo: { class: 'auth', retryable: false, retryAt: null } });
}

/** `store_failed`: what failed, naming the file when there is one, with the error that caused it. */
export function storeFailed(message: string, cause?: unknown): AgentError {
  return new AgentError('store_failed', message, { cause });
}

/**
 * `workspace_failed` for a session's workspace (`newSession(agent, { workspace })`): the
 * reason is git's own message, or the owner that already uses the directory.
 */
export function workspaceFailed(agent: string, displayName: string, detail: string, cause?: unknown): AgentError {
  return new AgentError('workspace_failed', failureMessage('workspace_failed', `a session of ${displayName}`, detail), { agent, cause });
}

/** `session_not_found`: no stored session answers to that id. */
export function sessionNotFound(sessionId: string, agent?: string): AgentError {
  return new AgentError('session_not_found', agent ? `Agent "${agent}" has no stored session ${sessionId}` : `No stored session ${sessionId}`, { agent });
}

/** A pid `sweepOrphans({ only })` was given that is no dead supervisor's leftover here, and why. */
export interface OrphanPidRefusal {
  pid: number;
  reason: 'not recorded' | 'owner alive' | 'another host';
  /** The live owner's pid, or the other host's name. */
  detail?: string;
}

/** `orphan_not_found`: each refused pid with why; `recordsDir` is where the records were read (null: none are kept). */
export function orphanNotFound(refused: readonly OrphanPidRefusal[], recordsDir: string | null): AgentError {
  const why = ({ pid, reason, detail }: OrphanPidRefusal) =>
    reason === 'owner alive'
      ? `pid ${pid} belongs to a supervisor that is alive (pid ${detail})`
      : reason === 'another host'
        ? `pid ${pid} was recorded on another host (${detail})`
        : `pid ${pid} is in no process record${recordsDir === null ? ' (stateDir: false keeps none)' : ` in ${recordsDir}`}`;
  return new AgentError('orphan_not_found', `Not a leftover of a crashed supervisor: ${refused.map(why).join('; ')}. Nothing was killed (sweepOrphans({ dryRun: true }) lists the leftovers)`, {
    cause: refused,
  });
}

/** Any other failure of one agent, with the error that caused it. */
export function agentFailure(kind: AgentErrorKind, agent: string, message: string, cause?: unknown): AgentError {
  return new AgentError(kind, message, { agent, cause });
}

/** A readable message from whatever was thrown (an Error, a JSON-RPC error object, anything). */
/**
 * Kinds that say a stored session cannot be resumed (the agent cannot load sessions, does not
 * know it, refused the load, or it is closed): a caller that asked to resume the latest one
 * opens a new session instead, and says so.
 */
export const unresumableKinds: ReadonlySet<AgentErrorKind> = new Set<AgentErrorKind>(['not_supported', 'session_not_found', 'protocol_error', 'session_closed']);

/** Whether `error` says that a stored session cannot be resumed (see {@link unresumableKinds}). */
export function cannotResume(error: unknown): error is AgentError {
  return error instanceof AgentError && unresumableKinds.has(error.kind);
}

export function describeError(error: unknown): string {
  if (error instanceof Error) return error.message;
  if (error && typeof error === 'object' && 'message' in error) return String((error as { message: unknown }).message);
  return String(error);
}
