/**
 * Routes what an agent sends about its sessions — updates, permission requests, fs and
 * terminal calls — to the right `Session`, and serves them inside that session's sandbox.
 * One hub per supervisor; the process actor installs `handlersFor(agent)` on every
 * connection it opens.
 */
import type { ActorRefFrom } from 'xstate';
import { sessionActorId, type agentMachine } from '../machines/agent.machine.js';
import {
  AcpRequestFailure,
  acpErrorCodes,
  acpMethods,
  type AcpClientHandlers,
  type ClientCapabilities,
  type ClientConnection,
  type SessionNotification,
} from '../services/acp-client.service.js';
import { SandboxViolation } from '../services/fs-sandbox.service.js';
import { TerminalsClosed, UnknownTerminal } from '../services/terminal.service.js';
import { signalGroup } from '../services/process-group.service.js';
import type { EventHub } from './event-hub.js';
import { PermissionBroker, type PermissionRequest } from './permissions.js';
import type { Clock } from './options.js';
import type { Session, SessionActorRef, SessionHost } from './session.js';

/** Supervisor-level events about sessions. */
export interface SessionHubEvents {
  [key: string]: unknown;
  'permission:request': PermissionRequest;
  'sandbox:violation': { agent: string; sessionId: string; operation: 'read' | 'write' | 'terminal'; path: string; message: string };
  'session:status': { agent: string; sessionId: string; status: string };
  'session:stall': { agent: string; sessionId: string; policy: string; stallTimeoutMs: number };
}

export interface SessionHubDependencies {
  clock: Clock;
  permissionTimeoutMs: number;
  capabilities: { fs: boolean; terminal: boolean };
  events: EventHub<SessionHubEvents>;
  agentActor(agent: string): ActorRefFrom<typeof agentMachine> | undefined;
  connection(agent: string): ClientConnection | undefined;
  ensureConnected(agent: string, signal?: AbortSignal): Promise<{ canLoad: boolean }>;
}

/** Updates for a session not registered yet (sent right after session/new) wait here. */
const earlyUpdateLimit = 256;

export class SessionHub implements SessionHost {
  private readonly sessions = new Map<string, Session>();
  private readonly early = new Map<string, SessionNotification[]>();
  readonly broker: PermissionBroker;

  constructor(private readonly deps: SessionHubDependencies) {
    this.broker = new PermissionBroker({
      clock: deps.clock,
      timeoutMs: deps.permissionTimeoutMs,
      ask: (request) => {
        const heardBySession = this.sessions.get(key(request.agent, request.sessionId))?.ask(request) ?? false;
        const heardBySupervisor = deps.events.listenerCount('permission:request') > 0;
        if (heardBySupervisor) deps.events.emit('permission:request', request);
        return heardBySession || heardBySupervisor;
      },
      pending: (agent, sessionId, requestId) => this.sessionActor(agent, sessionId)?.send({ type: 'permission.requested', requestId }),
      settled: (agent, sessionId, requestId) => {
        // A request answered because the connection closed is not the turn going on: the
        // agent is gone, and the session is about to fail (agent.lost clears the request).
        const connection = deps.connection(agent);
        if (!connection || connection.signal.aborted) return;
        this.sessionActor(agent, sessionId)?.send({ type: 'permission.settled', requestId });
      },
    });
  }

  /** The capabilities advertised in `initialize`: only what is enabled. */
  clientCapabilities(): ClientCapabilities {
    const { fs, terminal } = this.deps.capabilities;
    return { fs: { readTextFile: fs, writeTextFile: fs }, terminal };
  }

  add(session: Session): void {
    this.sessions.set(key(session.agent, session.id), session);
    const waiting = this.early.get(session.agent);
    if (!waiting) return;
    const mine = waiting.filter((notification) => notification.sessionId === session.id);
    this.early.set(session.agent, waiting.filter((notification) => notification.sessionId !== session.id));
    for (const notification of mine) session.deliver(notification);
  }

  get(agent: string, sessionId: string): Session | undefined {
    return this.sessions.get(key(agent, sessionId));
  }

  all(): Session[] {
    return [...this.sessions.values()];
  }

  // --- SessionHost -------------------------------------------------------------------

  sessionActor(agent: string, sessionId: string): SessionActorRef | undefined {
    return this.deps.agentActor(agent)?.getSnapshot().children[sessionActorId(sessionId)] as SessionActorRef | undefined;
  }

  cancelTurn(agent: string, sessionId: string): void {
    const connection = this.deps.connection(agent);
    if (connection && !connection.signal.aborted) {
      connection.agent.notify(acpMethods.agent.session.cancel, { sessionId }).catch(() => {});
    }
    this.broker.cancelSession(agent, sessionId);
  }

  restartAgent(agent: string): void {
    const pid = this.deps.agentActor(agent)?.getSnapshot().context.pid;
    if (pid) signalGroup(pid, 'SIGKILL');
  }

  async reconnectForResume(agent: string, signal?: AbortSignal): Promise<boolean> {
    return (await this.deps.ensureConnected(agent, signal)).canLoad;
  }

  async closeOnAgent(agent: string, sessionId: string): Promise<void> {
    const connection = this.deps.connection(agent);
    const live = this.deps.agentActor(agent)?.getSnapshot().context.initialize;
    if (!connection || connection.signal.aborted || !live?.agentCapabilities?.sessionCapabilities?.close) return;
    // Not awaited: an unresponsive agent must not hold up close() (and shutdown with it).
    connection.agent.request(acpMethods.agent.session.close, { sessionId }).catch(() => {});
  }

  forget(session: Session): void {
    if (this.sessions.get(key(session.agent, session.id)) !== session) return;
    this.sessions.delete(key(session.agent, session.id));
    this.deps.agentActor(session.agent)?.send({ type: 'session.forget', sessionId: session.id });
  }

  // --- What the agent calls ------------------------------------------------------------

  handlersFor(agent: string): AcpClientHandlers {
    const sessionFor = (sessionId: string): Session => {
      const session = this.get(agent, sessionId);
      if (!session) throw new AcpRequestFailure(acpErrorCodes.resourceNotFound, `Unknown session ${sessionId}`);
      return session;
    };
    const guarded = async <T>(sessionId: string, operation: 'read' | 'write' | 'terminal', work: (session: Session) => Promise<T>): Promise<T> => {
      const session = sessionFor(sessionId);
      try {
        return await work(session);
      } catch (error) {
        if (error instanceof SandboxViolation) {
          this.deps.events.emit('sandbox:violation', { agent, sessionId, operation, path: error.path, message: error.message });
          throw new AcpRequestFailure(acpErrorCodes.invalidParams, error.message);
        }
        if (error instanceof UnknownTerminal) throw new AcpRequestFailure(acpErrorCodes.resourceNotFound, error.message);
        if (error instanceof TerminalsClosed) throw new AcpRequestFailure(acpErrorCodes.invalidParams, error.message);
        const code = (error as NodeJS.ErrnoException).code;
        if (code === 'ENOENT') throw new AcpRequestFailure(acpErrorCodes.resourceNotFound, `No such file: ${(error as Error).message}`);
        throw error;
      }
    };
    const handlers: AcpClientHandlers = {
      sessionUpdate: (notification) => {
        const session = this.get(agent, notification.sessionId);
        if (session) return session.deliver(notification);
        const waiting = this.early.get(agent) ?? [];
        waiting.push(notification);
        if (waiting.length > earlyUpdateLimit) waiting.shift();
        this.early.set(agent, waiting);
      },
      requestPermission: async (params, signal) => this.broker.request(agent, params, sessionFor(params.sessionId).resources.permissions, signal),
    };
    if (this.deps.capabilities.fs) {
      handlers.readTextFile = (params) =>
        guarded(params.sessionId, 'read', async (session) => ({
          content: await session.resources.sandbox.readTextFile(params.path, { line: params.line, limit: params.limit }),
        }));
      handlers.writeTextFile = (params) =>
        guarded(params.sessionId, 'write', (session) => session.resources.sandbox.writeTextFile(params.path, params.content));
    }
    if (this.deps.capabilities.terminal) {
      handlers.createTerminal = (params) =>
        guarded(params.sessionId, 'terminal', async (session) => {
          const cwd = await session.resources.sandbox.check('read', params.cwd ?? session.resources.cwd, false);
          return { terminalId: session.resources.terminals.create({ ...params, cwd }) };
        });
      handlers.terminalOutput = (params) =>
        guarded(params.sessionId, 'terminal', async (session) => session.resources.terminals.output(params.terminalId));
      handlers.waitForTerminalExit = (params) =>
        guarded(params.sessionId, 'terminal', (session) => session.resources.terminals.waitForExit(params.terminalId));
      handlers.killTerminal = (params) =>
        guarded(params.sessionId, 'terminal', async (session) => session.resources.terminals.kill(params.terminalId));
      handlers.releaseTerminal = (params) =>
        guarded(params.sessionId, 'terminal', async (session) => session.resources.terminals.release(params.terminalId));
    }
    return handlers;
  }
}

function key(agent: string, sessionId: string): string {
  return `${agent}\u0000${sessionId}`;
}
