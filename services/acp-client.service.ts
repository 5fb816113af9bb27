/**
 * The ACP client side of one agent process: the only module that imports
 * `@agentclientprotocol/sdk`. It wraps the SDK's client app around the child's stdio and
 * performs the `initialize` handshake; what the connection is used for afterwards is the
 * caller's business.
 */
import { Readable, Writable } from 'node:stream';
import { client, ndJsonStream, methods, PROTOCOL_VERSION, RequestError } from '@agentclientprotocol/sdk';
import type { ClientApp, ClientCapabilities, ClientConnection, InitializeResponse } from '@agentclientprotocol/sdk';

export type {
  ClientApp,
  ClientCapabilities,
  ClientConnection,
  ClientContext,
  ContentBlock,
  InitializeResponse,
  McpServer,
  PromptResponse,
  RequestPermissionRequest,
  RequestPermissionResponse,
  SessionNotification,
  SessionUpdate,
  StopReason,
  NewSessionResponse,
  LoadSessionResponse,
  AuthMethod,
} from '@agentclientprotocol/sdk';
export { methods as acpMethods, PROTOCOL_VERSION, RequestError };

/** How agentvisor introduces itself in `initialize`. */
export const clientInfo = { name: 'agentvisor', version: '0.1.0' } as const;

export interface AcpClientOptions {
  /** Capabilities advertised in `initialize`; none by default. */
  clientCapabilities?: ClientCapabilities;
  /** Registers request/notification handlers on the client app before it connects. */
  configure?: (app: ClientApp) => void;
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
  options.configure?.(app);
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
