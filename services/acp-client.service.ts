/**
 * The ACP client side of one agent process: the only module that imports
 * `@agentclientprotocol/sdk`. It wraps the SDK's client app around the child's stdio and
 * performs the `initialize` handshake; what the connection is used for afterwards is the
 * caller's business.
 */
import { Readable, Writable } from 'node:stream';
import { AgentError, agentFailure, describeError } from '../core/errors.js';
import { client, ndJsonStream, methods, PROTOCOL_VERSION, RequestError } from '@agentclientprotocol/sdk';
import type {
  ClientApp,
  ClientCapabilities,
  ClientConnection,
  CreateTerminalRequest,
  CreateTerminalResponse,
  InitializeResponse,
  KillTerminalRequest,
  ReadTextFileRequest,
  ReadTextFileResponse,
  ReleaseTerminalRequest,
  RequestPermissionRequest,
  RequestPermissionResponse,
  SessionNotification,
  TerminalOutputRequest,
  TerminalOutputResponse,
  WaitForTerminalExitRequest,
  WaitForTerminalExitResponse,
  WriteTextFileRequest,
} from '@agentclientprotocol/sdk';

export { methods as acpMethods, PROTOCOL_VERSION, RequestError };

/** How agentvisor introduces itself in `initialize`. */
export const clientInfo = { name: 'agentvisor', version: '0.1.0' } as const;

/**
 * What the client side serves for the agent. Every handler is optional: a missing one is
 * answered "method not found". A handler that throws an {@link AcpRequestFailure} answers
 * the agent with that JSON-RPC code; anything else becomes an internal error.
 */
export interface AcpClientHandlers {
  sessionUpdate?(notification: SessionNotification): void;
  requestPermission?(params: RequestPermissionRequest, signal: AbortSignal): Promise<RequestPermissionResponse>;
  readTextFile?(params: ReadTextFileRequest): Promise<ReadTextFileResponse>;
  writeTextFile?(params: WriteTextFileRequest): Promise<void>;
  createTerminal?(params: CreateTerminalRequest): Promise<CreateTerminalResponse>;
  terminalOutput?(params: TerminalOutputRequest): Promise<TerminalOutputResponse>;
  waitForTerminalExit?(params: WaitForTerminalExitRequest, signal: AbortSignal): Promise<WaitForTerminalExitResponse>;
  killTerminal?(params: KillTerminalRequest): Promise<void>;
  releaseTerminal?(params: ReleaseTerminalRequest): Promise<void>;
}

/** A failure to answer the agent with, as a JSON-RPC error. */
export class AcpRequestFailure extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
  }
}

/** JSON-RPC codes agentvisor answers with. */
export const acpErrorCodes = {
  invalidParams: -32602,
  internalError: -32603,
  authRequired: -32000,
  resourceNotFound: -32002,
} as const;

export interface AcpClientOptions {
  /** Capabilities advertised in `initialize`; none by default. */
  clientCapabilities?: ClientCapabilities;
  /** Handlers for the agent's requests and notifications. */
  handlers?: AcpClientHandlers;
}

/** An open ACP connection over a child's stdio, not yet initialized. */
export interface AcpClientConnection {
  connection: ClientConnection;
  /** Sends `initialize`; rejects with the agent's JSON-RPC error or when the stream closes. */
  initialize(): Promise<InitializeResponse>;
}

/** Opens an ACP client connection on a child process's stdin/stdout. */
export function openAcpConnection(stdin: Writable, stdout: Readable, options: AcpClientOptions = {}): AcpClientConnection {
  const app = client({ name: clientInfo.name });
  registerHandlers(app, options.handlers ?? {});
  const stream = ndJsonStream(Writable.toWeb(stdin) as WritableStream<Uint8Array>, Readable.toWeb(stdout) as ReadableStream<Uint8Array>);
  const connection = app.connect(stream);
  return {
    connection,
    initialize: () =>
      connection.agent.request(methods.agent.initialize, {
        protocolVersion: PROTOCOL_VERSION,
        clientCapabilities: options.clientCapabilities ?? {},
        clientInfo,
      }),
  };
}

function registerHandlers(app: ClientApp, handlers: AcpClientHandlers): void {
  const answer = async <T>(work: () => Promise<T>): Promise<T> => {
    try {
      return await work();
    } catch (error) {
      if (error instanceof AcpRequestFailure) throw new RequestError(error.code, error.message, error.data);
      throw error;
    }
  };
  const { sessionUpdate, requestPermission, readTextFile, writeTextFile, createTerminal, terminalOutput, waitForTerminalExit, killTerminal, releaseTerminal } = handlers;
  if (sessionUpdate) app.onNotification(methods.client.session.update, parseSessionNotification, ({ params }) => sessionUpdate(params));
  if (requestPermission) app.onRequest(methods.client.session.requestPermission, ({ params, signal }) => answer(() => requestPermission(params, signal)));
  if (readTextFile) app.onRequest(methods.client.fs.readTextFile, ({ params }) => answer(() => readTextFile(params)));
  if (writeTextFile) app.onRequest(methods.client.fs.writeTextFile, ({ params }) => answer(() => writeTextFile(params)));
  if (createTerminal) app.onRequest(methods.client.terminal.create, ({ params }) => answer(() => createTerminal(params)));
  if (terminalOutput) app.onRequest(methods.client.terminal.output, ({ params }) => answer(() => terminalOutput(params)));
  if (waitForTerminalExit) app.onRequest(methods.client.terminal.waitForExit, ({ params, signal }) => answer(() => waitForTerminalExit(params, signal)));
  if (killTerminal) app.onRequest(methods.client.terminal.kill, ({ params }) => answer(() => killTerminal(params)));
  if (releaseTerminal) app.onRequest(methods.client.terminal.release, ({ params }) => answer(() => releaseTerminal(params)));
}

/**
 * The params parser for `session/update`. The SDK's client app already validates every
 * `session/update` against the schema in its own session router before our handler runs;
 * parsing it a second time doubled the cost of the hot path (a stream of updates), so this
 * only re-checks what routing relies on.
 */
export function parseSessionNotification(params: unknown): SessionNotification {
  const candidate = params as { sessionId?: unknown; update?: { sessionUpdate?: unknown } } | null;
  if (
    candidate === null ||
    typeof candidate !== 'object' ||
    typeof candidate.sessionId !== 'string' ||
    candidate.update === null ||
    typeof candidate.update !== 'object' ||
    typeof candidate.update.sessionUpdate !== 'string'
  ) {
    throw RequestError.invalidParams(params, 'session/update needs a sessionId and an update with a sessionUpdate kind');
  }
  return candidate as SessionNotification;
}

/** True when `error` is the agent's "authentication required" answer. */
export function isAuthRequired(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === acpErrorCodes.authRequired;
}

/**
 * The error a failed ACP request of `agent` rejects with: `agent_exited` when the connection
 * closed under it (the agent died), `auth_required` for the agent's auth error code, else
 * `protocol_error` with the agent's own message.
 */
export function toRequestError(agent: string, connection: ClientConnection, error: unknown, request: string): AgentError {
  if (error instanceof AgentError) return error;
  if (connection.signal.aborted) return agentFailure('agent_exited', agent, `Agent "${agent}" exited during ${request}`, error);
  const kind = isAuthRequired(error) ? 'auth_required' : 'protocol_error';
  return agentFailure(kind, agent, `${request} failed: ${describeError(error)}`, error);
}
