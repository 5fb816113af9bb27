/**
 * The requests a caller makes of a connected agent outside any session: its own session
 * list and deletions, extension methods both ways, and terminal logins. The facade validates
 * and shapes; the ACP calls, their errors (always an `AgentError` with a kind) and the
 * capability checks live here.
 */
import type { ClientConnection, InitializeResponse, SessionInfo } from '../core/acp-types.js';
import type { Clock } from '../core/clock.js';
import type { AgentSpec } from '../core/agent-spec.js';
import { agentFailure, authRequired, failures, toError } from '../core/errors.js';
import { acpMethods, toRequestError, validateListSessionsResponse } from '../services/acp-client.service.js';
import { abortable } from '../util/abort.js';
import { deadline } from '../util/deadline.js';
import type { TerminalLogin } from './terminal-login.js';

/** A connected agent, as these requests need it (the facade's handle is one). */
export interface RequestTarget {
  name: string;
  displayName: string;
  connection: ClientConnection;
  agentCapabilities: NonNullable<InitializeResponse['agentCapabilities']>;
}

export class AgentRequests {
  constructor(
    private readonly deps: {
      clock: Clock;
      /** How long a terminal login may take unless the caller says. */
      authTimeoutMs: number;
      terminalLogin?: TerminalLogin | undefined;
    },
  ) {}

  /** `session/list`, one page; `unsupported` when the agent does not list its sessions. */
  async listSessions(target: RequestTarget, params: { cwd?: string; cursor?: string }, signal?: AbortSignal): Promise<{ sessions: SessionInfo[]; nextCursor: string | null }> {
    if (target.agentCapabilities.sessionCapabilities?.list == null) throw toError(target.name, failures.unsupported(target.displayName, 'listing its sessions (session/list)'));
    const answer = await this.request(target, acpMethods.agent.session.list, params, signal);
    try {
      const page = validateListSessionsResponse(answer);
      return { sessions: page.sessions, nextCursor: page.nextCursor ?? null };
    } catch (error) {
      throw agentFailure('protocol_error', target.name, (error as Error).message, error);
    }
  }

  /** `session/delete`; `unsupported` when the agent does not delete sessions. */
  async deleteSession(target: RequestTarget, sessionId: string, signal?: AbortSignal): Promise<void> {
    if (target.agentCapabilities.sessionCapabilities?.delete == null) throw toError(target.name, failures.unsupported(target.displayName, 'deleting its sessions (session/delete)'));
    await this.request(target, acpMethods.agent.session.delete, { sessionId }, signal);
  }

  /** One request of the agent's, its failure an `AgentError` (`protocol_error`, `agent_exited`, `aborted`). */
  async request(target: RequestTarget, method: string, params: unknown, signal?: AbortSignal): Promise<unknown> {
    try {
      return await abortable(target.connection.agent.request(method, params), signal, target.name);
    } catch (error) {
      throw toRequestError(target.name, target.connection, error, method);
    }
  }

  /** One notification to the agent. */
  async notify(target: RequestTarget, method: string, params: unknown): Promise<void> {
    try {
      await target.connection.agent.notify(method, params);
    } catch (error) {
      throw toRequestError(target.name, target.connection, error, method);
    }
  }

  /**
   * Runs a `terminal` auth method through the embedder's `terminalLogin`: the agent's command
   * with the method's arguments and environment, on this host — so only for an agent that
   * runs here (`unsupported` in another runtime: log in where it runs). Bounded like
   * `authenticate()`: `auth_timeout` after `timeoutMs` and `aborted` by the signal, both
   * passed to the embedder as `login.signal` to end its terminal. Resolves on exit 0; another
   * exit, a signal or a throw of the embedder's is `auth_required`.
   */
  async terminalLogin(agent: string, spec: AgentSpec, method: { id: string; args?: string[]; env?: Record<string, string> }, options: { signal?: AbortSignal; timeoutMs?: number }): Promise<void> {
    const name = spec.displayName ?? agent;
    const run = this.deps.terminalLogin;
    if (!run) throw toError(agent, failures.unsupported('agentvisor', `the terminal login "${method.id}" of ${name} without a terminalLogin option`));
    if (spec.runtime) throw toError(agent, failures.unsupported(name, `a terminal login on this host: it runs in the ${spec.runtime.kind} runtime, log in there`));
    const timeoutMs = options.timeoutMs ?? this.deps.authTimeoutMs;
    const cancel = deadline(this.deps.clock, timeoutMs, () => agentFailure('auth_timeout', agent, `The terminal login "${method.id}" of ${name} did not finish within ${timeoutMs} ms`), [
      { signal: options.signal, reason: () => agentFailure('aborted', agent, `The terminal login "${method.id}" of ${name} was aborted by its caller`) },
    ]);
    const login = { agent, methodId: method.id, command: spec.command, args: [...(spec.args ?? []), ...(method.args ?? [])], env: { ...spec.env, ...method.env }, cwd: spec.cwd, signal: cancel.signal };
    let exitCode: number | null;
    try {
      cancel.signal.throwIfAborted();
      exitCode = await new Promise<number | null>((resolve, reject) => {
        cancel.signal.addEventListener('abort', () => reject(cancel.signal.reason), { once: true });
        Promise.resolve()
          .then(() => run(login))
          .then(resolve, (error: unknown) => reject(authRequired(agent, `The terminal login "${method.id}" of ${name} failed: ${error instanceof Error ? error.message : String(error)}`, [], error)));
      });
    } finally {
      cancel.clear();
    }
    if (exitCode !== 0) throw authRequired(agent, `The terminal login "${method.id}" of ${name} ended with ${exitCode === null ? 'a signal' : `exit code ${exitCode}`}`, []);
  }
}
