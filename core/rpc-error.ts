/**
 * JSON-RPC errors as ACP uses them: the codes agentvisor answers with, and what an agent's
 * error answer carries — its code, its data, its message with what the data says. Pure: read
 * by services, actors and the runtime alike.
 */
import { describeError } from './errors.js';

/** The JSON-RPC and ACP error codes agentvisor answers with (the client's handlers, the protocol bridges). */
export const acpErrorCodes = {
  methodNotFound: -32601,
  invalidParams: -32602,
  internalError: -32603,
  authRequired: -32000,
  resourceNotFound: -32002,
} as const;

/** What a failure report keeps of an error answer (core/failure-class.ts's evidence). */
export interface RpcErrorDetails {
  /** The JSON-RPC error code; null when the error was not an error answer (a closed stream, a thrown Error). */
  rpcCode: number | null;
  /** The error's `data`, when it has one. */
  rpcData?: unknown;
}

/** The code and data of a JSON-RPC error answer; `rpcData` is left out when the error has none. */
export function rpcErrorDetails(error: unknown): RpcErrorDetails {
  const rpc = error as { code?: unknown; data?: unknown } | null | undefined;
  const code = rpc?.code;
  const data = rpc?.data;
  return { rpcCode: typeof code === 'number' ? code : null, ...(data !== undefined ? { rpcData: data } : {}) };
}

/** True when `error` is the agent's "authentication required" answer. */
export function isAuthRequired(error: unknown): boolean {
  return rpcErrorDetails(error).rpcCode === acpErrorCodes.authRequired;
}

/**
 * A JSON-RPC error's message with what its `data` says, when that is text: agents put the
 * real reason there ("Internal error" + `data.details`: "Claude Code process exited with code 1").
 */
export function describeRpcError(error: unknown): string {
  const message = describeError(error);
  const data = rpcErrorDetails(error).rpcData;
  const said = typeof data === 'string' ? data : textField(data, 'details') ?? textField(data, 'message') ?? textField(data, 'error');
  if (!said || message.includes(said)) return message;
  return `${message}: ${said.length > 500 ? `${said.slice(0, 500)}…` : said}`;
}

function textField(value: unknown, key: string): string | undefined {
  if (!value || typeof value !== 'object') return undefined;
  const field = (value as Record<string, unknown>)[key];
  return typeof field === 'string' && field.trim() ? field.trim() : undefined;
}
