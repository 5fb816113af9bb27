/**
 * Opening sessions: `session/new` and `session/load` on a connected agent, then a session
 * child actor on the agent's actor, a sandbox and a terminal set, and the `Session` face.
 */
import { resolve } from 'node:path';
import type { ActorRefFrom } from 'xstate';
import type { agentMachine } from '../machines/agent.machine.js';
import type { StallPolicy } from '../machines/session-events.js';
import { acpMethods, isAuthRequired, type McpServer, type SessionUpdate } from '../services/acp-client.service.js';
import { AgentError } from '../services/errors.js';
import { FsSandbox } from '../services/fs-sandbox.service.js';
import { TerminalSet } from '../services/terminal.service.js';
import { classify } from '../actors/session-turn.actor.js';
import type { EventHub } from './event-hub.js';
import { requirePermissionPolicy, requireStallPolicy, type SessionDefaults } from './options.js';
import type { PermissionPolicy } from './permissions.js';
import { Session } from './session.js';
import { abortable } from './waiting.js';
import type { SessionHub, SessionHubEvents } from './session-hub.js';
import type { AgentHandle } from './supervisor.js';

/** Options of `newSession` and `loadSession`. */
export interface SessionOptions {
  /** The session's working directory and the root of its sandbox (default: process.cwd()). */
  cwd?: string;
  /** MCP servers the agent should connect to. */
  mcpServers?: McpServer[];
  /** More directories the agent may read and write through fs/* and run terminals in. */
  additionalRoots?: string[];
  /** Overrides the supervisor's `permissions` policy for this session. */
  permissions?: PermissionPolicy;
  stallTimeoutMs?: number;
  onStall?: StallPolicy;
  /** Subscribed before the request is sent, so it also sees updates replayed by session/load. */
  onUpdate?: (update: SessionUpdate) => void;
  signal?: AbortSignal;
}

export interface SessionFactoryDependencies {
  hub: SessionHub;
  defaults: SessionDefaults;
  events: EventHub<SessionHubEvents>;
  ensureAgent(agent: string, signal: AbortSignal | undefined): Promise<AgentHandle>;
  agentActor(agent: string): ActorRefFrom<typeof agentMachine> | undefined;
}

export class SessionFactory {
  constructor(private readonly deps: SessionFactoryDependencies) {}

  /** `session/new` on the agent (started if needed). */
  async create(agent: string, options: SessionOptions = {}): Promise<Session> {
    validate(options);
    const handle = await this.deps.ensureAgent(agent, options.signal);
    const cwd = resolve(options.cwd ?? process.cwd());
    const roots = (options.additionalRoots ?? []).map((root) => resolve(root));
    let sessionId: string;
    try {
      const request = handle.connection.agent.request(acpMethods.agent.session.new, {
        cwd,
        mcpServers: options.mcpServers ?? [],
        ...(roots.length > 0 && handle.agentCapabilities.sessionCapabilities?.additionalDirectories ? { additionalDirectories: roots } : {}),
      });
      sessionId = (await abortable(request, options.signal, agent)).sessionId;
    } catch (error) {
      if (error instanceof AgentError) throw error;
      throw this.failure(handle, error, 'session/new');
    }
    return this.open(handle, sessionId, cwd, roots, options);
  }

  /** `session/load` of an earlier session; `not_supported` unless the agent advertises loadSession. */
  async load(agent: string, sessionId: string, options: SessionOptions = {}): Promise<Session> {
    validate(options);
    const handle = await this.deps.ensureAgent(agent, options.signal);
    if (!handle.agentCapabilities.loadSession) {
      throw new AgentError('not_supported', `${handle.displayName} cannot load sessions (no loadSession capability)`, { agent });
    }
    const existing = this.deps.hub.get(agent, sessionId);
    if (existing && existing.status === 'failed') {
      await existing.resume({ signal: options.signal });
      return existing;
    }
    if (existing && existing.status !== 'stopped') return existing;
    const cwd = resolve(options.cwd ?? process.cwd());
    const roots = (options.additionalRoots ?? []).map((root) => resolve(root));
    const session = this.open(handle, sessionId, cwd, roots, options);
    try {
      await handle.connection.agent.request(acpMethods.agent.session.load, { sessionId, cwd, mcpServers: options.mcpServers ?? [] });
    } catch (error) {
      await session.close();
      throw this.failure(handle, error, 'session/load');
    }
    return session;
  }

  private open(handle: AgentHandle, sessionId: string, cwd: string, roots: string[], options: SessionOptions): Session {
    const { defaults, hub, events } = this.deps;
    this.deps.agentActor(handle.name)?.send({
      type: 'session.open',
      session: {
        agent: handle.name,
        sessionId,
        stallTimeoutMs: options.stallTimeoutMs ?? defaults.stallTimeoutMs,
        onStall: options.onStall ?? defaults.onStall,
      },
    });
    const session = new Session(
      handle.name,
      sessionId,
      {
        cwd,
        roots,
        mcpServers: options.mcpServers ?? [],
        sandbox: new FsSandbox([cwd, ...roots]),
        terminals: new TerminalSet(defaults.terminalOutputByteLimit),
        permissions: options.permissions ?? defaults.permissions,
      },
      hub,
    );
    if (options.onUpdate) session.on('update', options.onUpdate);
    session.on('status', ({ status }) => events.emit('session:status', { agent: handle.name, sessionId, status }));
    session.on('stall', ({ policy, stallTimeoutMs }) => events.emit('session:stall', { agent: handle.name, sessionId, policy, stallTimeoutMs }));
    hub.add(session);
    return session;
  }

  private failure(handle: AgentHandle, error: unknown, request: string): AgentError {
    if (isAuthRequired(error)) {
      return new AgentError('auth_required', `${handle.displayName} requires authentication`, {
        agent: handle.name,
        cause: error,
        authMethods: handle.authMethods,
      });
    }
    return classify(handle.name, handle.connection, error, request);
  }
}

function validate(options: SessionOptions): void {
  if (options.permissions !== undefined) requirePermissionPolicy(options.permissions);
  if (options.onStall !== undefined) requireStallPolicy(options.onStall);
  if (options.stallTimeoutMs !== undefined && !(Number.isFinite(options.stallTimeoutMs) && options.stallTimeoutMs >= 0)) {
    throw new AgentError('invalid_options', `Option stallTimeoutMs must be a finite number ≥ 0, got ${String(options.stallTimeoutMs)}`);
  }
}
