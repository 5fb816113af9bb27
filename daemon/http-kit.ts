/**
 * The small HTTP toolkit of the daemon's routes: JSON answers with the API's headers, typed
 * error bodies (an AgentError's kind mapped to its status), bodies read with a size limit,
 * and NDJSON streams that end when the client goes away.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { AgentError } from '../index.js';
import type { ApiErrorBody } from './api-types.js';

/** The largest request body the daemon reads. */
export const MAX_BODY_BYTES = 1024 * 1024;

/** An error a route raises to answer with a status and an API error body. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly kind: string,
    message: string,
    readonly extra: Partial<ApiErrorBody['error']> = {},
  ) {
    super(message);
  }
}

/** The HTTP status of each error kind, the daemon's own and AgentError's (docs/http-api.md, "Errors"). */
const statusByKind: Record<string, number> = {
  invalid_json: 400,
  invalid_request: 400,
  invalid_options: 400,
  unauthorized: 401,
  forbidden_host: 403,
  forbidden_origin: 403,
  not_found: 404,
  unknown_agent: 404,
  session_not_found: 404,
  orphan_not_found: 404,
  permission_not_found: 404,
  elicitation_not_found: 404,
  terminal_not_found: 404,
  method_not_allowed: 405,
  session_busy: 409,
  session_closed: 409,
  auth_required: 409,
  auth_timeout: 409,
  stopped: 409,
  aborted: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  not_supported: 422,
  unsupported: 422,
  too_large: 413,
  limit_reached: 429,
  internal: 500,
  shutting_down: 503,
  store_failed: 503,
};

/** The status an error kind answers with: the table above, else 424 (the agent failed). */
export function statusOfKind(kind: string): number {
  return statusByKind[kind] ?? 424;
}

/** The API error body of anything a route threw. */
export function errorBody(error: unknown): { status: number; body: ApiErrorBody } {
  if (error instanceof ApiError) {
    return { status: error.status, body: { error: { kind: error.kind, message: error.message, ...error.extra } } };
  }
  if (error instanceof AgentError) {
    const body: ApiErrorBody['error'] = { kind: error.kind, message: error.message };
    if (error.agent) body.agent = error.agent;
    if (error.class !== undefined) {
      body.class = error.class;
      body.retryAt = error.retryAt ?? null;
    }
    if (error.authMethods?.length) body.authMethods = error.authMethods.map(({ id, name, description }) => ({ id, name, ...(description ? { description } : {}) }));
    if (error.command) body.command = error.command;
    if (error.installHint) body.installHint = error.installHint;
    return { status: statusOfKind(error.kind), body: { error: body } };
  }
  return { status: 500, body: { error: { kind: 'internal', message: `Internal error: ${error instanceof Error ? error.message : String(error)}` } } };
}

/** Headers every API answer carries. */
export const baseHeaders = {
  'Cache-Control': 'no-store',
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
} as const;

export function sendJson(response: ServerResponse, status: number, body: unknown): void {
  if (response.headersSent) return void response.end();
  const text = JSON.stringify(body);
  response.writeHead(status, { ...baseHeaders, 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(text) });
  response.end(text);
}

/** Answers with the error body of `error`; a 500 is also written to the daemon's stderr. */
export function sendError(response: ServerResponse, error: unknown): void {
  const { status, body } = errorBody(error);
  if (status === 500) process.stderr.write(`agentvisor daemon: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  // A refused body may still be arriving: close the connection rather than read it.
  if (status === 413) response.setHeader('Connection', 'close');
  sendJson(response, status, body);
}

/**
 * The request's JSON body, or undefined when it has none. Refuses a body over
 * {@link MAX_BODY_BYTES} (413), one that is not `application/json` (415) or not JSON (400).
 */
export async function readJsonBody(request: IncomingMessage): Promise<unknown> {
  const declared = Number(request.headers['content-length'] ?? NaN);
  if (declared > MAX_BODY_BYTES) throw new ApiError(413, 'payload_too_large', `The body is larger than ${MAX_BODY_BYTES} bytes`);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new ApiError(413, 'payload_too_large', `The body is larger than ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk);
  }
  if (size === 0) return undefined;
  const type = (request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/json') throw new ApiError(415, 'unsupported_media_type', 'The body must be application/json');
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch (error) {
    throw new ApiError(400, 'invalid_json', `The body is not JSON: ${(error as Error).message}`);
  }
}

/** An NDJSON answer: `write` one object per line; `closed` tells when the client has gone. */
export interface NdjsonStream {
  write(line: unknown): void;
  end(): void;
  readonly closed: boolean;
  /** Aborts when the client goes away (or the stream ends). */
  readonly signal: AbortSignal;
}

export function startNdjson(response: ServerResponse, status = 200): NdjsonStream {
  response.writeHead(status, { ...baseHeaders, 'Content-Type': 'application/x-ndjson; charset=utf-8' });
  const controller = new AbortController();
  const abort = () => controller.abort();
  response.once('close', abort);
  let ended = false;
  return {
    write(line) {
      if (!ended && !response.destroyed) response.write(`${JSON.stringify(line)}\n`);
    },
    end() {
      if (ended) return;
      ended = true;
      response.end();
      response.off('close', abort);
      controller.abort();
    },
    get closed() {
      return ended || response.destroyed;
    },
    signal: controller.signal,
  };
}

/** Whether the client asked for a stream. */
export function wantsNdjson(request: IncomingMessage): boolean {
  return (request.headers.accept ?? '').toLowerCase().includes('application/x-ndjson');
}
