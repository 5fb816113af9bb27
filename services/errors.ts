/**
 * Typed failures. Every promise agentvisor returns rejects with an {@link AgentError},
 * never a bare string, and every `error` event carries the same `kind` and message.
 */

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
  /** The agent answered an ACP request with an error. */
  | 'protocol_error'
  /** The agent does not support what was asked (e.g. session/load). */
  | 'not_supported'
  /** A prompt was sent while another turn of the session is in flight. */
  | 'session_busy'
  /** The session is closed, or failed and must be resumed first. */
  | 'session_closed';

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
}

/**
 * The error every agentvisor promise rejects with.
 *
 * @example
 * try { await supervisor.ensureAgent('codex'); }
 * catch (error) {
 *   if (error instanceof AgentError && error.kind === 'not_installed') console.log(error.message);
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
  readonly authMethods: Array<{ id: string; name: string; description?: string | null }> | undefined;

  constructor(
    kind: AgentErrorKind,
    message: string,
    options: { agent?: string; cause?: unknown; stderr?: string[]; authMethods?: AgentError['authMethods'] } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.kind = kind;
    this.agent = options.agent;
    this.stderr = options.stderr ?? [];
    this.authMethods = options.authMethods;
  }

  /** Builds the error from the plain failure record a machine keeps in context. */
  static fromFailure(agent: string, failure: AgentFailure): AgentError {
    return new AgentError(failure.kind, failure.message, { agent, stderr: failure.stderr, cause: failure });
  }
}

