/**
 * Opening sessions on a connected agent: `session/new` or `session/load`, then a session
 * record (the agent machine spawns the session child) with its sandbox and terminal set.
 */
import type { ClientConnection, InitializeResponse, McpServer, SessionUpdate } from '../core/acp-types.js';
import { authRequired, failures, toError, type AgentError } from '../core/errors.js';
import { isAuthRequired } from '../core/rpc-error.js';
import type { ElicitationPolicy } from '../core/elicitation.js';
import type { PermissionPolicy } from '../core/permission-policy.js';
import type { StallPolicy } from '../machines/session-events.js';
import type { WorkspaceSpec } from '../core/workspace-spec.js';
import {
  acpMethods,
  reopenMethod,
  sessionRequestExtras,
  toRequestError,
  validateLoadSessionResponse,
  validateNewSessionResponse,
  validateResumeSessionResponse,
  withModels,
} from '../services/acp-client.service.js';
import type { Containment, ContainmentMechanism } from '../services/containment/containment.js';
import { FsSandbox } from '../services/fs-sandbox.service.js';
import type { ProcessRecord } from '../services/terminals/terminal.js';
import { TerminalSet } from '../services/terminals/terminal-set.js';
import { abortable } from '../util/abort.js';
import type { SessionRecord, SessionRegistry } from './session-registry.js';
import type { Clock } from '../core/clock.js';
import type { SessionWorkspace } from './workspace-holds.js';

/** A connected agent, as far as opening a session needs it. */
export interface ConnectedAgent {
  name: string;
  displayName: string;
  connection: ClientConnection;
  agentCapabilities: NonNullable<InitializeResponse['agentCapabilities']>;
  authMethods: NonNullable<InitializeResponse['authMethods']>;
}

/** A session's settings, resolved and validated by the facade. */
export interface SessionSettings {
  cwd: string;
  roots: string[];
  mcpServers: McpServer[];
  permissions: PermissionPolicy;
  elicitation: ElicitationPolicy;
  stallTimeoutMs: number;
  onStall: StallPolicy;
  /** Subscribed before the request is sent, so it also sees updates replayed by session/load. */
  onUpdate?: (update: SessionUpdate) => void;
  /** With session/load: the store already holds this session's transcript, so its replay is not kept again. */
  stored?: boolean;
  /** False when the caller gave no `cwd`: a session of an agent with a workspace then works in it. */
  cwdGiven: boolean;
  /** The session's own workspace, as the caller asked for it (docs/workspaces.md). */
  workspace?: WorkspaceSpec;
  /** That workspace, once made: `cwd` is its path, and it is the session's until it is released. */
  heldWorkspace?: SessionWorkspace;
  /** `_meta` attached to session/new, load or resume. */
  meta?: Record<string, unknown>;
  /**
   * How an earlier session is reopened: `'load'` replays its history (session/load, else
   * session/resume when the agent can only resume); `'resume'` replays nothing
   * (session/resume, else session/load when the agent can only load).
   */
  reopen?: 'load' | 'resume';
}


export class SessionOpener {
  constructor(
    private readonly deps: {
      sessions: SessionRegistry;
      terminalOutputByteLimit: number;
      /** The supervisor's containment mechanism (its agents'), for every terminal; null: process groups. */
      containment: () => ContainmentMechanism | null;
      /** The supervisor's clock, for the terminals' request timeouts. */
      clock: Clock;
      /** Records a terminal's command for the orphan sweep, like the agents' own processes (null: no records). */
      recordTerminal?: (agent: string, command: string, pid: number, contained: Containment | null) => ProcessRecord | null;
      /** A session's workspace now belongs to the session (its id is known). */
      claimWorkspace: (workspace: SessionWorkspace, agent: string, sessionId: string) => void;
      /** The agent answered session/new or session/load with an error: its agent machine classifies it (a login, a limit). */
      refused?: (agent: string, error: AgentError, cause: unknown) => AgentError | void;
    },
  ) {}

  /** `session/new` on the agent; the session's state comes from its answer. */
  async create(agent: ConnectedAgent, settings: SessionSettings, signal: AbortSignal | undefined): Promise<SessionRecord> {
    // Before session/new: the session is registered at once when the answer comes, before any request of the agent's for it.
    const sandbox = await sandboxOf(settings);
    let raw: unknown;
    let checked: ReturnType<typeof validateNewSessionResponse>;
    try {
      const request = agent.connection.agent.request(acpMethods.agent.session.new, {
        cwd: settings.cwd,
        mcpServers: settings.mcpServers,
        ...sessionRequestExtras(agent.agentCapabilities, settings.roots, settings.meta),
      });
      raw = await abortable(request, signal, agent.name);
      checked = validateNewSessionResponse(raw);
    } catch (error) {
      throw this.failure(agent, error, 'session/new');
    }
    // The answer's state first, then the updates that came before the session was known (they are newer).
    return this.open(agent, checked.sessionId, settings, sandbox, false, (record) => answered(record, checked, raw));
  }

  /**
   * Reopens an earlier session: `session/load` (its history replayed) or `session/resume`
   * (nothing replayed), as `settings.reopen` prefers and the agent can (`not_supported`
   * when it can do neither). A session already open under that id is returned as it is.
   */
  async load(agent: ConnectedAgent, sessionId: string, settings: SessionSettings): Promise<SessionRecord> {
    const method = reopenMethod(agent.agentCapabilities, settings.reopen ?? 'load');
    if (!method) throw toError(agent.name, failures.cannotLoadSessions(agent.displayName));
    const sandbox = await sandboxOf(settings);
    const existing = this.deps.sessions.get(agent.name, sessionId);
    if (existing && existing.status() !== 'stopped') return existing;
    const record = this.open(agent, sessionId, settings, sandbox, method === acpMethods.agent.session.load);
    record.stored = settings.stored === true;
    try {
      const answer = await agent.connection.agent.request(method, {
        sessionId,
        cwd: settings.cwd,
        mcpServers: settings.mcpServers,
        ...sessionRequestExtras(agent.agentCapabilities, settings.roots, settings.meta),
      });
      answered(record, method === acpMethods.agent.session.load ? validateLoadSessionResponse(answer) : validateResumeSessionResponse(answer), answer);
    } catch (error) {
      await this.deps.sessions.close(record);
      throw this.failure(agent, error, method);
    } finally {
      record.replaying = false;
    }
    return record;
  }

  private open(agent: ConnectedAgent, sessionId: string, settings: SessionSettings, sandbox: FsSandbox, replaying = false, prepare?: (record: SessionRecord) => void): SessionRecord {
    const record = this.deps.sessions.open(
      { agent: agent.name, displayName: agent.displayName, sessionId, stallTimeoutMs: settings.stallTimeoutMs, onStall: settings.onStall },
      {
        cwd: settings.cwd,
        roots: settings.roots,
        mcpServers: settings.mcpServers,
        sandbox,
        terminals: new TerminalSet(this.deps.terminalOutputByteLimit, {
          containment: this.deps.containment(),
          clock: this.deps.clock,
          recordProcess: (command, pid, contained) => this.deps.recordTerminal?.(agent.name, command, pid, contained) ?? null,
        }),
        permissions: settings.permissions,
        elicitation: settings.elicitation,
        ...(settings.meta ? { meta: settings.meta } : {}),
        workspace: settings.heldWorkspace ?? null,
      },
      settings.onUpdate,
      replaying,
      prepare,
    );
    if (settings.heldWorkspace) this.deps.claimWorkspace(settings.heldWorkspace, agent.name, sessionId);
    return record;
  }

  private failure(agent: ConnectedAgent, error: unknown, request: string): AgentError {
    const failure = isAuthRequired(error)
      ? authRequired(agent.name, `${agent.displayName} requires authentication`, agent.authMethods, error)
      : toRequestError(agent.name, agent.connection, error, request);
    if (failure.kind === 'auth_required' || failure.kind === 'protocol_error') return this.deps.refused?.(agent.name, failure, error) ?? failure;
    return failure;
  }
}


/** A session's sandbox, its roots resolved off the event loop: a session opening on a slow disk does not stall the other agents. */
function sandboxOf(settings: SessionSettings): Promise<FsSandbox> {
  return FsSandbox.open([settings.cwd, ...settings.roots]);
}

/** A session/new, load or resume answer, checked: the session's state from it, and its `_meta`. */
function answered(record: SessionRecord, checked: { _meta?: Record<string, unknown> | null } & Parameters<typeof withModels>[0], raw: unknown): void {
  record.state.fromAnswer(withModels(checked, raw));
  record.answerMeta = checked._meta ?? null;
}
