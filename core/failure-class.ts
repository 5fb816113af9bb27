/**
 * Why an agent failed, in a few classes a supervisor can act on: log in again (`auth`), wait
 * for a quota to reset (`usage_limit`), back off briefly (`rate_limited`), fix the setup
 * (`config`), restart (`crash`, `timeout`). The vocabulary only: the classifier is
 * machines/policies/failure-class.policy.ts, the per-agent patterns core/failure-patterns.ts.
 *
 * Plain JSON throughout: patterns and classifications live in XState machine context.
 */

/** What kind of failure an agent had. */
export type FailureClass =
  /** Not logged in, an invalid or expired key or token. */
  | 'auth'
  /** A quota or plan used up: waits hours, until it resets or the plan changes. */
  | 'usage_limit'
  /** Short throttling or an overloaded service: a brief back-off helps. */
  | 'rate_limited'
  /** The agent cannot run as set up: not installed, not executable, a bad option, a bad workspace. */
  | 'config'
  /** The process died (a signal, a non-zero exit) with nothing more telling. */
  | 'crash'
  /** The agent did not answer in time. */
  | 'timeout'
  /** Nothing recognised. */
  | 'unknown';

/** Every {@link FailureClass}, in the order of the type. */
export const failureClasses: readonly FailureClass[] = Object.freeze(['auth', 'usage_limit', 'rate_limited', 'config', 'crash', 'timeout', 'unknown']);

/** A user- or preset-supplied pattern, plain JSON (it lives in XState machine context). */
export interface FailurePattern {
  class: FailureClass;
  /** A RegExp source, matched against each text a failure shows. */
  source: string;
  /** RegExp flags, e.g. 'i' (`g` and `y` are ignored: matching is stateless). */
  flags?: string;
}

/** Where a failure happened. */
export type FailurePhase = 'spawn' | 'handshake' | 'connected' | 'session' | 'turn';

/** What a failure shows: everything the classifier may look at. */
export interface FailureEvidence {
  /**
   * The AgentErrorKind, e.g. 'not_installed', 'spawn_failed', 'handshake_failed', 'handshake_timeout', 'agent_exited',
   * 'auth_required', 'protocol_error', 'turn_failed', 'workspace_failed'.
   */
  kind: string;
  phase: FailurePhase;
  exitCode?: number | null;
  /** The signal that ended the process, e.g. 'SIGSEGV'. */
  signal?: string | null;
  /** The stderr tail, last lines, oldest first. */
  stderr?: readonly string[];
  /** Technical detail: the spawn error text, the JSON-RPC error message. */
  detail?: string;
  /** The JSON-RPC error code when the failure was an error answer (ACP auth_required is -32000). */
  rpcCode?: number | null;
  /** The JSON-RPC error data; may hold JSON with retry hints. */
  rpcData?: unknown;
}

/** The classifier's answer. */
export interface Classification {
  class: FailureClass;
  /** The text that decided (the matched line or a short reason). */
  evidence: string;
  /** Epoch ms when the limit resets, when the text says so (only for `usage_limit` and `rate_limited`). */
  retryAt: number | null;
}
