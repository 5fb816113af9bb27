/**
 * What agentvisor serves to an agent over ACP: its session updates, permission requests,
 * and the sandboxed `fs/*` and `terminal/*` calls, each answered inside the calling
 * session's sandbox. The process actor installs one set of these handlers per connection.
 */
import type { ClientCapabilities, CreateElicitationResponse } from '../core/acp-types.js';
import type { ElicitationPolicy } from '../core/elicitation.js';
import type { Clock } from '../core/clock.js';
import { acpErrorCodes } from '../core/rpc-error.js';
import { AcpRequestFailure, type AcpClientHandlers } from '../services/acp-client.service.js';
import { FsRequestError, SandboxViolation } from '../services/fs-sandbox.service.js';
import { TerminalFailure, TerminalsClosed, UnknownTerminal } from '../services/terminals/terminal-errors.js';
import type { EventHub } from '../util/event-hub.js';
import type { ElicitationBroker } from './elicitation-broker.js';
import type { PermissionBroker } from './permission-broker.js';
import type { SessionRecord, SessionRegistry, RuntimeEvents } from './session-registry.js';

export interface ClientHandlerDependencies {
  capabilities: { fs: boolean; terminal: boolean };
  sessions: SessionRegistry;
  broker: PermissionBroker;
  elicitations: ElicitationBroker;
  /** The supervisor-wide elicitation policy ('decline': none is advertised, so none should come). */
  elicitation: ElicitationPolicy;
  /** The embedder's answers to the agent's extension requests and notifications, by method (`_`-prefixed). */
  extensions: ExtensionHandlers;
  events: EventHub<RuntimeEvents>;
  /** The supervisor's clock (a SimulatedClock in tests). */
  clock: Clock;
}

/**
 * An embedder's handler of an agent's extension method (`_`-prefixed): a request's answer is
 * what it returns (a throw answers an internal error); a notification's return is ignored.
 */
export type ExtensionHandler = (params: unknown, context: { agent: string; notification: boolean }) => unknown;
export type ExtensionHandlers = Record<string, ExtensionHandler>;

/**
 * The capabilities advertised in `initialize`: only what is served — fs and terminals as
 * enabled, boolean config options, elicitation (form and url) unless the policy declines
 * every one, and terminal logins when the embedder runs them.
 */
export function clientCapabilities({ fs, terminal }: { fs: boolean; terminal: boolean }, elicitation: ElicitationPolicy = 'decline', terminalLogin = false): ClientCapabilities {
  return {
    fs: { readTextFile: fs, writeTextFile: fs },
    terminal,
    // setConfigOption takes boolean options: ACP lets an agent offer them only to a client that says so.
    session: { configOptions: { boolean: {} } },
    ...(elicitation !== 'decline' ? { elicitation: { form: {}, url: {} } } : {}),
    ...(terminalLogin ? { auth: { terminal: true } } : {}),
  };
}

/** `protocol:warning` events are at most this often per connection; the ones in between are counted. */
const warningEveryMs = 1_000;

/**
 * Reports what an agent sent that broke the protocol (and was dropped), rate-limited on the
 * supervisor's clock: one event, then a window in which the rest are counted and reported
 * (`suppressed`) with the next event after it.
 */
function protocolWarnings(agent: string, events: EventHub<RuntimeEvents>, clock: Clock): (message: string) => void {
  let windowOpen = false;
  let suppressed = 0;
  return (message) => {
    if (windowOpen) {
      suppressed++;
      return;
    }
    events.emit('protocol:warning', { agent, message, suppressed });
    suppressed = 0;
    windowOpen = true;
    const timer: unknown = clock.setTimeout(() => (windowOpen = false), warningEveryMs);
    // Only resets a flag: a real timer must not keep the host alive after shutdown.
    (timer as { unref?: () => void } | null)?.unref?.();
  };
}

/** The handlers for one agent's connection. */
export function createClientHandlers(agent: string, deps: ClientHandlerDependencies): AcpClientHandlers {
  const sessionFor = (sessionId: string): SessionRecord => {
    const session = deps.sessions.get(agent, sessionId);
    if (!session) throw new AcpRequestFailure(acpErrorCodes.resourceNotFound, `Unknown session ${sessionId}`);
    return session;
  };
  /** Runs one fs/terminal request; a refusal is answered to the agent and reported as a violation. */
  const guarded = async <T>(sessionId: string, operation: 'read' | 'write' | 'terminal', work: (session: SessionRecord) => Promise<T>): Promise<T> => {
    const session = sessionFor(sessionId);
    try {
      return await work(session);
    } catch (error) {
      if (error instanceof SandboxViolation) {
        deps.events.emit('sandbox:violation', { agent, sessionId, operation, path: error.path, message: error.message });
        throw new AcpRequestFailure(acpErrorCodes.invalidParams, error.message);
      }
      if (error instanceof UnknownTerminal) throw new AcpRequestFailure(acpErrorCodes.resourceNotFound, error.message);
      if (error instanceof TerminalsClosed) throw new AcpRequestFailure(acpErrorCodes.invalidParams, error.message);
      // The terminal limit, a spawn that failed (EMFILE, EAGAIN...), a timeout: the agent hears why.
      if (error instanceof TerminalFailure) throw new AcpRequestFailure(acpErrorCodes.internalError, error.message, { reason: error.reason });
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw new AcpRequestFailure(acpErrorCodes.resourceNotFound, `No such file: ${(error as Error).message}`);
      // Any other fs failure (a directory, EACCES, the request's timeout): the agent hears why.
      if (error instanceof FsRequestError) throw new AcpRequestFailure(acpErrorCodes.internalError, error.message, { code: error.code });
      throw error;
    }
  };
  const handlers: AcpClientHandlers = {
    sessionUpdate: (notification) => deps.sessions.route(agent, notification),
    protocolWarning: protocolWarnings(agent, deps.events, deps.clock),
    requestPermission: async (params, signal) => deps.broker.request(agent, params, sessionFor(params.sessionId).resources.permissions, signal),
    createElicitation: async (params, signal) => {
      const sessionId = (params as { sessionId?: unknown }).sessionId;
      // A session's elicitation follows the session's policy; a request-scoped one the supervisor's.
      const policy = typeof sessionId === 'string' ? sessionFor(sessionId).resources.elicitation : deps.elicitation;
      return (await deps.elicitations.request(agent, params, policy, signal)) as CreateElicitationResponse;
    },
    completeElicitation: (params) => deps.events.emit('elicitation:complete', { agent, elicitationId: params.elicitationId }),
    extensionRequest: async (method, params) => {
      const handler = Object.hasOwn(deps.extensions, method) ? deps.extensions[method] : undefined;
      if (!handler) throw new AcpRequestFailure(acpErrorCodes.methodNotFound, `Method not found: ${method}`);
      try {
        return (await handler(params, { agent, notification: false })) ?? {};
      } catch (error) {
        throw new AcpRequestFailure(acpErrorCodes.internalError, error instanceof Error ? error.message : String(error));
      }
    },
    extensionNotification: (method, params) => {
      const handler = Object.hasOwn(deps.extensions, method) ? deps.extensions[method] : undefined;
      if (!handler) return;
      try {
        void Promise.resolve(handler(params, { agent, notification: true })).catch((error: unknown) => process.emitWarning(`agentvisor: the ${method} extension handler failed: ${String(error)}`));
      } catch (error) {
        process.emitWarning(`agentvisor: the ${method} extension handler failed: ${String(error)}`);
      }
    },
  };
  if (deps.capabilities.fs) {
    handlers.readTextFile = (params) =>
      guarded(params.sessionId, 'read', async (session) => ({
        content: await session.resources.sandbox.readTextFile(params.path, { line: params.line, limit: params.limit }),
      }));
    handlers.writeTextFile = (params) => guarded(params.sessionId, 'write', (session) => session.resources.sandbox.writeTextFile(params.path, params.content));
  }
  if (deps.capabilities.terminal) {
    handlers.createTerminal = (params) =>
      guarded(params.sessionId, 'terminal', async (session) => {
        // The cwd is opened and checked inside create, under its limit and its timeout, and the
        // command runs in the directory that was opened: a path swapped meanwhile changes nothing.
        const cwd = () => session.resources.sandbox.openWorkingDirectory('read', params.cwd ?? session.resources.cwd);
        return { terminalId: await session.resources.terminals.create({ ...params, cwd }) };
      });
    handlers.terminalOutput = (params) => guarded(params.sessionId, 'terminal', async (session) => session.resources.terminals.output(params.terminalId));
    handlers.waitForTerminalExit = (params) => guarded(params.sessionId, 'terminal', (session) => session.resources.terminals.waitForExit(params.terminalId));
    handlers.killTerminal = (params) => guarded(params.sessionId, 'terminal', async (session) => session.resources.terminals.kill(params.terminalId));
    handlers.releaseTerminal = (params) => guarded(params.sessionId, 'terminal', async (session) => session.resources.terminals.release(params.terminalId));
  }
  return handlers;
}
