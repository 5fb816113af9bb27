/**
 * The ACP client side of one agent process: the only module that imports
 * `@agentclientprotocol/sdk`. It wraps the SDK's client app around the child's stdio and
 * performs the `initialize` handshake; what the connection is used for afterwards is the
 * caller's business.
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { pathToFileURL } from 'node:url';
import { AgentError, agentFailure, describeError } from '../core/errors.js';
import { acpErrorCodes, describeRpcError, isAuthRequired } from '../core/rpc-error.js';
import { isPlainTextBlock, isPlainTextChunk } from '../core/text-chunk.js';
import { client, methods, PROTOCOL_VERSION, RequestError } from '@agentclientprotocol/sdk';
import { ndJsonTransport, type UnreadableLine, type WireMessage } from './acp-transport.js';
import type {
  AnyMessage,
  ClientApp,
  ClientCapabilities,
  ClientConnection,
  CreateTerminalRequest,
  CreateTerminalResponse,
  CompleteElicitationNotification,
  ContentBlock,
  CreateElicitationRequest,
  CreateElicitationResponse,
  InitializeResponse,
  KillTerminalRequest,
  ListSessionsResponse,
  LoadSessionResponse,
  NewSessionResponse,
  ResumeSessionResponse,
  SetSessionConfigOptionResponse,
  PromptResponse,
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

/**
 * ACP's own schemas, as the SDK generates them (zod). The package does not export them, so
 * they are loaded from its dist by path, beside the entry point that resolves; the SDK's
 * version is pinned in package.json, and this module fails to load (so does every test) if they move.
 */
interface SchemaResult<T> {
  success: boolean;
  data?: T;
  error?: { issues: Array<{ path: PropertyKey[]; message: string }> };
}
interface Schema<T> {
  safeParse(value: unknown): SchemaResult<T>;
}
const sdkEntry = createRequire(import.meta.url).resolve('@agentclientprotocol/sdk');
const acpSchemas = (await import(pathToFileURL(join(dirname(sdkEntry), '..', 'schema', 'zod.gen.js')).href)) as {
  zInitializeResponse: Schema<InitializeResponse>;
  zNewSessionResponse: Schema<NewSessionResponse>;
  zLoadSessionResponse: Schema<LoadSessionResponse>;
  zResumeSessionResponse: Schema<ResumeSessionResponse>;
  zListSessionsResponse: Schema<ListSessionsResponse>;
  zSetSessionConfigOptionResponse: Schema<SetSessionConfigOptionResponse>;
  zPromptResponse: Schema<PromptResponse>;
  zSessionNotification: Schema<SessionNotification>;
  zContentBlock: Schema<ContentBlock>;
  zCreateElicitationRequest: Schema<CreateElicitationRequest>;
};

/** What an agent sent that breaks the protocol: answered (or dropped) and reported, never delivered. */
export class ProtocolViolation extends Error {
  override readonly name = 'ProtocolViolation';
}

/** The schema's verdict in one line: the first few issues with their paths. */
function describeIssues(result: SchemaResult<unknown>): string {
  const issues = result.error?.issues ?? [];
  return issues
    .slice(0, 3)
    .map((issue) => `${issue.path.length > 0 ? issue.path.join('.') : '(root)'}: ${issue.message}`)
    .join('; ');
}

/** Validates `value` against an ACP schema: the parsed (normalised) value, or a ProtocolViolation. */
function validated<T>(schema: Schema<T>, value: unknown, what: string): T {
  const result = schema.safeParse(value);
  if (!result.success) throw new ProtocolViolation(`${what} is malformed: ${describeIssues(result)}`);
  return result.data as T;
}

/** The agent's `initialize` answer, checked: ACP's schema, and a protocol version this client speaks. */
export function validateInitializeResponse(value: unknown): InitializeResponse {
  // ACP's schema repairs some wrong types with defaults (a string for agentCapabilities reads
  // as {}); a handshake that wrong is refused before it is repaired.
  const raw = value as Record<string, unknown> | null;
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw new ProtocolViolation(`The initialize answer is malformed: expected an object, got ${describeValue(value)}`);
  for (const [field, isRightType] of [
    ['agentCapabilities', (v: unknown) => typeof v === 'object' && !Array.isArray(v)],
    ['authMethods', Array.isArray],
  ] as const) {
    if (raw[field] !== undefined && raw[field] !== null && !isRightType(raw[field])) throw new ProtocolViolation(`The initialize answer is malformed: ${field} is ${describeValue(raw[field])}`);
  }
  const answer = validated(acpSchemas.zInitializeResponse, value, 'The initialize answer');
  if (answer.protocolVersion !== PROTOCOL_VERSION) {
    throw new ProtocolViolation(`The agent chose ACP protocol version ${String(answer.protocolVersion)}; this client speaks version ${PROTOCOL_VERSION}`);
  }
  return answer;
}

/** The agent's `session/new` answer, checked against ACP's schema. */
export function validateNewSessionResponse(value: unknown): NewSessionResponse {
  return validated(acpSchemas.zNewSessionResponse, value, 'The session/new answer');
}

/** The agent's `session/load` answer (its state fields), checked against ACP's schema; an empty answer is `{}`. */
export function validateLoadSessionResponse(value: unknown): LoadSessionResponse {
  return validated(acpSchemas.zLoadSessionResponse, value ?? {}, 'The session/load answer');
}

/** The agent's `session/resume` answer, checked against ACP's schema. */
export function validateResumeSessionResponse(value: unknown): ResumeSessionResponse {
  return validated(acpSchemas.zResumeSessionResponse, value ?? {}, 'The session/resume answer');
}

/** The agent's `session/list` answer, checked against ACP's schema. */
export function validateListSessionsResponse(value: unknown): ListSessionsResponse {
  return validated(acpSchemas.zListSessionsResponse, value, 'The session/list answer');
}

/** The agent's `session/set_config_option` answer; a malformed one is the agent's `protocol_error` for `agent`. */
export function validateSetConfigOptionResponse(value: unknown, agent: string): SetSessionConfigOptionResponse {
  try {
    return validated(acpSchemas.zSetSessionConfigOptionResponse, value, 'The session/set_config_option answer');
  } catch (error) {
    throw agentFailure('protocol_error', agent, (error as Error).message, error);
  }
}

/** A content block checked against ACP's schema: the first issue, or null when it is well formed. */
export function contentBlockIssue(value: unknown): string | null {
  if (isPlainTextBlock(value)) return null; // a prompt's commonest block: the schema would take it as it is (≈3 µs a prompt)
  const result = acpSchemas.zContentBlock.safeParse(value);
  return result.success ? null : describeIssues(result);
}

/** The agent's `elicitation/create` params, checked against ACP's schema. */
export function validateElicitationRequest(value: unknown): CreateElicitationRequest {
  return validated(acpSchemas.zCreateElicitationRequest, value, 'The elicitation/create request');
}

/** The installed ACP JSON schema (the stable one): its `$defs` name every method's params and every update kind. */
export const acpJsonSchema = createRequire(import.meta.url)('@agentclientprotocol/sdk/schema/v1/schema.json') as {
  $defs: Record<string, { oneOf?: Array<{ const?: unknown; properties?: Record<string, { const?: unknown }> }> }>;
};

/** The stop reasons the installed schema knows. */
const knownStopReasons: ReadonlySet<unknown> = new Set((acpJsonSchema.$defs.StopReason?.oneOf ?? []).map((variant) => variant.const).filter((reason) => typeof reason === 'string'));

/** The `sessionUpdate` kinds the installed schema knows; an update of any other kind is passed on as it came. */
export const knownUpdateKinds: ReadonlySet<string> = new Set(
  (acpJsonSchema.$defs.SessionUpdate?.oneOf ?? []).map((variant) => variant.properties?.sessionUpdate?.const).filter((kind): kind is string => typeof kind === 'string'),
);

/** The fields of a session/new, load or resume answer that carry the session's state. */
export interface SessionStateAnswer {
  modes?: NewSessionResponse['modes'];
  configOptions?: NewSessionResponse['configOptions'];
  /** The unstable `models` field (gemini-cli), as the agent sent it: the schema does not know it. */
  models?: unknown;
}

/** The state fields of a checked answer, with the unstable `models` of the raw one (the schema drops it). */
export function withModels(checked: SessionStateAnswer, raw: unknown): SessionStateAnswer {
  const state: SessionStateAnswer = {};
  if (checked.modes !== undefined) state.modes = checked.modes;
  if (checked.configOptions !== undefined) state.configOptions = checked.configOptions;
  if (raw && typeof raw === 'object' && 'models' in raw) state.models = (raw as { models: unknown }).models;
  return state;
}

/**
 * The optional fields a session request carries: `additionalDirectories` when there are
 * some and the agent advertises them, and `_meta` when given.
 */
export function sessionRequestExtras(
  capabilities: NonNullable<InitializeResponse['agentCapabilities']> | undefined,
  roots: string[],
  meta?: Record<string, unknown>,
): { additionalDirectories?: string[]; _meta?: Record<string, unknown> } {
  return {
    ...(roots.length > 0 && capabilities?.sessionCapabilities?.additionalDirectories ? { additionalDirectories: roots } : {}),
    ...(meta ? { _meta: meta } : {}),
  };
}

/** Which request reopens an earlier session on an agent with these capabilities, by preference; null when it can do neither. */
export function reopenMethod(capabilities: NonNullable<InitializeResponse['agentCapabilities']>, prefer: 'load' | 'resume'): 'session/load' | 'session/resume' | null {
  const canLoad = capabilities.loadSession === true;
  const canResume = capabilities.sessionCapabilities?.resume != null;
  if (prefer === 'resume' && canResume) return methods.agent.session.resume;
  if (canLoad) return methods.agent.session.load;
  return canResume ? methods.agent.session.resume : null;
}

/** A session/load or session/resume answer checked against ACP's schema, as state. */
export function validateReopenAnswer(method: 'session/load' | 'session/resume', answer: unknown): SessionStateAnswer {
  return withModels(method === 'session/load' ? validateLoadSessionResponse(answer) : validateResumeSessionResponse(answer), answer);
}

/** The agent's `session/prompt` answer, checked against ACP's schema (a known stop reason). */
export function validatePromptResponse(value: unknown): PromptResponse {
  if (isBareStopReason(value)) return value; // the commonest answer: the schema would take it as it is
  return validated(acpSchemas.zPromptResponse, value, 'The session/prompt answer');
}

/** `{ stopReason }` with a stop reason the schema knows, and no other field. */
function isBareStopReason(value: unknown): value is PromptResponse {
  if (value === null || typeof value !== 'object' || !knownStopReasons.has((value as { stopReason?: unknown }).stopReason)) return false;
  for (const key in value) if (key !== 'stopReason') return false;
  return true;
}

/** A notification carrying a plain text chunk and nothing else: the schema would accept it as it is (the full schema costs ≈5 µs an update). */
function isPlainTextChunkNotification(notification: Record<string, unknown>): boolean {
  if (typeof notification.sessionId !== 'string' || !isPlainTextChunk(notification.update)) return false;
  for (const key in notification) if (key !== 'sessionId' && key !== 'update') return false;
  return true;
}

/** How agentvisor introduces itself in `initialize`. */
export const clientInfo = { name: 'agentvisor', version: '0.1.0' } as const;

/**
 * What the client side serves for the agent. Every handler is optional: a missing one is
 * answered "method not found". A handler that throws an {@link AcpRequestFailure} answers
 * the agent with that JSON-RPC code; anything else becomes an internal error.
 */
export interface AcpClientHandlers {
  /**
   * Every valid `session/update`, in the order the agent sent it, as soon as it is read.
   * Returns true when one of the caller's sessions took it: such an update is not passed on
   * to the SDK, whose session helpers (`connection.agent.buildSession()`) only ever see the
   * sessions they opened themselves.
   */
  sessionUpdate?(notification: SessionNotification): boolean;
  /** Something the agent sent broke the protocol and was dropped: a malformed update, a stray response. */
  protocolWarning?(message: string): void;
  requestPermission?(params: RequestPermissionRequest, signal: AbortSignal): Promise<RequestPermissionResponse>;
  readTextFile?(params: ReadTextFileRequest): Promise<ReadTextFileResponse>;
  writeTextFile?(params: WriteTextFileRequest): Promise<void>;
  createTerminal?(params: CreateTerminalRequest): Promise<CreateTerminalResponse>;
  terminalOutput?(params: TerminalOutputRequest): Promise<TerminalOutputResponse>;
  waitForTerminalExit?(params: WaitForTerminalExitRequest, signal: AbortSignal): Promise<WaitForTerminalExitResponse>;
  killTerminal?(params: KillTerminalRequest): Promise<void>;
  releaseTerminal?(params: ReleaseTerminalRequest): Promise<void>;
  /** `elicitation/create`, its params already checked against ACP's schema. */
  createElicitation?(params: CreateElicitationRequest, signal: AbortSignal): Promise<CreateElicitationResponse>;
  /** `elicitation/complete`: a URL elicitation the agent saw completed. */
  completeElicitation?(params: CompleteElicitationNotification): void;
  /** A request whose method starts with `_` (an extension); any other unknown method is answered "method not found". */
  extensionRequest?(method: string, params: unknown, signal: AbortSignal): Promise<unknown>;
  /** A notification whose method starts with `_`. */
  extensionNotification?(method: string, params: unknown): void;
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
  const connection = app.connect(guardedTransport(stdin, stdout, (message) => options.handlers?.protocolWarning?.(message), options.handlers?.sessionUpdate));
  return {
    connection,
    initialize: async () =>
      validateInitializeResponse(
        await connection.agent.request(methods.agent.initialize, {
          protocolVersion: PROTOCOL_VERSION,
          clientCapabilities: options.clientCapabilities ?? {},
          clientInfo,
        }),
      ),
  };
}

/**
 * The agent's stdio as the SDK's connection reads and writes it (services/acp-transport.ts:
 * writes coalesced per tick, lines read without web streams), with a guard on what is read:
 * it drops, before the SDK sees them, the messages the SDK would only log to the host's
 * stderr — a value that is not a JSON-RPC request, notification or response, a response to a
 * request this client never sent (or already had answered), a malformed `session/update` —
 * and reports each through `warn` instead.
 *
 * A valid `session/update` goes to `deliver` as it is read, and on to the SDK only when
 * `deliver` did not take it. The SDK's client app zod-parses every `session/update` it
 * receives to feed its session helpers (≈5 µs an update, more than the rest of agentvisor's
 * path together); the updates of agentvisor's own sessions need no second parse, having been
 * checked here (a plain text chunk by its exact shape, anything else by ACP's schema).
 */
function guardedTransport(
  stdin: Writable,
  stdout: Readable,
  warn: (message: string) => void,
  deliver: ((notification: SessionNotification) => boolean) | undefined,
) {
  const awaiting = new Set<unknown>();
  const keep = (message: WireMessage): AnyMessage | null => {
    if (Array.isArray(message) || !('method' in message || 'id' in message)) {
      warn(`A message that is not a JSON-RPC request, notification or response was dropped: ${describeValue(message)}`);
      return null;
    }
    if (!('method' in message) && 'id' in message && !awaiting.delete(message.id)) {
      warn(`A response to no pending request (id ${describeValue(message.id)}) was dropped`);
      return null;
    }
    if ('method' in message && message.method === methods.client.session.update && !('id' in message)) {
      const notification = parseSessionNotification(message.params);
      if (notification instanceof ProtocolViolation) {
        warn(notification.message);
        return null;
      }
      if (deliverUpdate(deliver, notification)) return null;
      return (notification === message.params ? message : { ...message, params: notification }) as AnyMessage;
    }
    return message as AnyMessage;
  };
  return ndJsonTransport<AnyMessage>(stdin, stdout, {
    accept: keep,
    answerUnreadable: unreadableAnswer,
    sent: (message) => {
      if ('method' in message && 'id' in message) awaiting.add(message.id);
    },
  });
}

/** JSON-RPC's answer to a line that is no message, as the SDK's own framing gives it. */
function unreadableAnswer(line: UnreadableLine): WireMessage {
  const error =
    line.kind === 'parse'
      ? RequestError.parseError()
      : line.kind === 'batch'
        ? RequestError.invalidRequest(undefined, 'JSON-RPC batches are not supported')
        : RequestError.invalidRequest(line.value);
  return { jsonrpc: '2.0', id: null, error: error.toErrorResponse() };
}

/** Hands an update to `deliver`; true when it was taken. A throw is a bug of the caller's: warned about, never a reason to close the connection. */
function deliverUpdate(deliver: ((notification: SessionNotification) => boolean) | undefined, notification: SessionNotification): boolean {
  if (!deliver) return false;
  try {
    return deliver(notification);
  } catch (error) {
    process.emitWarning(`agentvisor: delivering a session/update failed: ${describeError(error)}`);
    return true;
  }
}

/** A short, safe rendering of an untrusted value for a warning. */
function describeValue(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 80 ? `${text.slice(0, 80)}…` : text;
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
  // session/update is not registered here: guardStream delivers it (see there).
  const { requestPermission, readTextFile, writeTextFile, createTerminal, terminalOutput, waitForTerminalExit, killTerminal, releaseTerminal, createElicitation, completeElicitation, extensionRequest, extensionNotification } = handlers;
  if (requestPermission) app.onRequest(methods.client.session.requestPermission, ({ params, signal }) => answer(() => requestPermission(params, signal)));
  if (readTextFile) app.onRequest(methods.client.fs.readTextFile, ({ params }) => answer(() => readTextFile(params)));
  if (writeTextFile) app.onRequest(methods.client.fs.writeTextFile, ({ params }) => answer(() => writeTextFile(params)));
  if (createTerminal) app.onRequest(methods.client.terminal.create, ({ params }) => answer(() => createTerminal(params)));
  if (terminalOutput) app.onRequest(methods.client.terminal.output, ({ params }) => answer(() => terminalOutput(params)));
  if (waitForTerminalExit) app.onRequest(methods.client.terminal.waitForExit, ({ params, signal }) => answer(() => waitForTerminalExit(params, signal)));
  if (killTerminal) app.onRequest(methods.client.terminal.kill, ({ params }) => answer(() => killTerminal(params)));
  if (releaseTerminal) app.onRequest(methods.client.terminal.release, ({ params }) => answer(() => releaseTerminal(params)));
  if (createElicitation) {
    // Raw params, checked here: the SDK's own parse would answer a malformed request with a bare "invalid params".
    app.onRequest(methods.client.elicitation.create, (value) => value, ({ params, signal }) =>
      answer(async () => {
        let request: CreateElicitationRequest;
        try {
          request = validateElicitationRequest(params);
        } catch (error) {
          throw new AcpRequestFailure(acpErrorCodes.invalidParams, (error as Error).message);
        }
        return createElicitation(request, signal);
      }),
    );
  }
  if (completeElicitation) app.onNotification(methods.client.elicitation.complete, ({ params }) => completeElicitation(params));
  app.onRequest('*', ({ method, params, signal }) => {
    if (!method.startsWith('_') || !extensionRequest) throw RequestError.methodNotFound(method);
    return answer(() => extensionRequest(method, params, signal));
  });
  app.onNotification('*', ({ method, params }) => {
    if (method.startsWith('_')) extensionNotification?.(method, params);
  });
}

/**
 * A `session/update`'s params against ACP's schema (the SDK's, see above), with a fast path
 * for plain text chunks: the normalised notification, or a {@link ProtocolViolation} that
 * the stream guard drops and reports (never thrown: the SDK would log it to the host's stderr).
 */
export function parseSessionNotification(params: unknown): SessionNotification | ProtocolViolation {
  if (params !== null && typeof params === 'object' && isPlainTextChunkNotification(params as Record<string, unknown>)) return params as SessionNotification;
  const wrongList = wronglyTypedList(params);
  if (wrongList) return new ProtocolViolation(`A session/update is malformed: update.${wrongList} is not a list`);
  try {
    return validated(acpSchemas.zSessionNotification, params, 'A session/update');
  } catch (error) {
    return isUnknownKindNotification(params) ? (params as SessionNotification) : (error as ProtocolViolation);
  }
}

/** The list each state update carries: ACP's schema reads a non-list there as an empty one, which would wipe the session's state. */
const listFieldOfKind: Record<string, string> = { plan: 'entries', config_option_update: 'configOptions', available_commands_update: 'availableCommands' };

/** The list field of a state update that holds something other than a list, if any. */
function wronglyTypedList(params: unknown): string | null {
  const update = (params as { update?: Record<string, unknown> | null } | null)?.update;
  if (!update || typeof update !== 'object') return null;
  const field = listFieldOfKind[update.sessionUpdate as string];
  return field !== undefined && !Array.isArray(update[field]) ? field : null;
}

/**
 * A session's update of a kind this schema does not know (an unstable one such as
 * `plan_removed`): not a violation, it is delivered as the agent sent it. A known kind that
 * is malformed still is one.
 */
function isUnknownKindNotification(params: unknown): boolean {
  const notification = params as { sessionId?: unknown; update?: { sessionUpdate?: unknown } | null } | null;
  if (!notification || typeof notification !== 'object' || typeof notification.sessionId !== 'string') return false;
  const update = notification.update;
  if (!update || typeof update !== 'object' || Array.isArray(update)) return false;
  return typeof update.sessionUpdate === 'string' && update.sessionUpdate !== '' && !knownUpdateKinds.has(update.sessionUpdate);
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
  return agentFailure(kind, agent, `${request} failed: ${describeRpcError(error)}`, error);
}
