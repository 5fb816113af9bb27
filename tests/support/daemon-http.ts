/**
 * A raw HTTP and WebSocket client for the daemon's tests: full control over headers (Host,
 * Origin, Authorization, Content-Type), bodies of any size, and NDJSON lines as they come.
 */
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import fc from 'fast-check';
import { expect } from 'vitest';
import WebSocket from 'ws';
import type { Daemon } from '../../daemon/daemon.js';

/** A JSON value a test reads field by field, of every shape the API answers. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Loose = any;

export interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  /** The body parsed as JSON (undefined when it is not JSON). */
  json: Loose;
}

export interface CallOptions {
  body?: unknown;
  /** A body sent as it is (a string or bytes), with its own content type. */
  rawBody?: string | Buffer;
  headers?: Record<string, string>;
  /** Leave the Authorization header out. */
  noToken?: boolean;
  /** Receive NDJSON: each line is handed to `onLine` as it arrives. */
  onLine?: (line: Loose) => void;
}

/** Sends one request to the daemon and resolves with the whole answer. */
export function call(daemon: Pick<Daemon, 'port' | 'token'>, method: string, path: string, options: CallOptions = {}): Promise<Answer> {
  const payload = options.rawBody ?? (options.body === undefined ? undefined : JSON.stringify(options.body));
  const headers: Record<string, string> = {
    Host: `127.0.0.1:${daemon.port}`,
    ...(options.noToken ? {} : { Authorization: `Bearer ${daemon.token}` }),
    ...(options.body !== undefined ? { 'Content-Type': 'application/json' } : {}),
    ...(options.onLine ? { Accept: 'application/x-ndjson' } : {}),
    ...options.headers,
  };
  return new Promise<Answer>((resolve, reject) => {
    const request = httpRequest({ host: '127.0.0.1', port: daemon.port, method, path, headers, agent: false }, (response) => {
      let text = '';
      let pending = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        text += chunk;
        if (!options.onLine) return;
        pending += chunk;
        let newline: number;
        while ((newline = pending.indexOf('\n')) >= 0) {
          const line = pending.slice(0, newline);
          pending = pending.slice(newline + 1);
          if (line.trim()) options.onLine(JSON.parse(line));
        }
      });
      response.on('end', () => {
        let json: unknown;
        try {
          json = JSON.parse(text);
        } catch {
          json = undefined;
        }
        resolve({ status: response.statusCode ?? 0, headers: response.headers, text, json });
      });
      response.on('error', reject);
    });
    request.on('error', reject);
    request.end(payload);
  });
}

/** Every NDJSON line of a streamed answer. */
export async function streamLines(daemon: Pick<Daemon, 'port' | 'token'>, method: string, path: string, body?: unknown): Promise<Loose[]> {
  const lines: unknown[] = [];
  await call(daemon, method, path, { ...(body === undefined ? {} : { body }), onLine: (line) => lines.push(line) });
  return lines as Loose[];
}

/** A WebSocket client of the event stream that records every message. */
export interface EventClient {
  messages: Loose[];
  socket: WebSocket;
  /** Resolves with the first message (already received or later) that `predicate` accepts. */
  next(predicate: (message: Loose) => boolean, what: string, ms?: number): Promise<Loose>;
  closed: Promise<{ code: number; reason: string }>;
  close(): void;
}

/** Opens the event stream; rejects with the HTTP status when the upgrade is refused. */
export function openEvents(daemon: Pick<Daemon, 'port' | 'token'>, query = '', headers: Record<string, string> = {}): Promise<EventClient> {
  const separator = query ? '&' : '';
  const socket = new WebSocket(`ws://127.0.0.1:${daemon.port}/v1/events?${query}${separator}token=${daemon.token}`, { headers });
  const messages: unknown[] = [];
  const waiters = new Set<() => void>();
  socket.on('message', (data) => {
    messages.push(JSON.parse(data.toString()));
    for (const wake of [...waiters]) wake();
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) => socket.on('close', (code, reason) => resolve({ code, reason: reason.toString() })));
  const client: EventClient = {
    messages: messages as Loose[],
    socket,
    closed,
    close: () => socket.close(),
    next(predicate, what, ms = 10_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const found = messages.find(predicate);
          if (found === undefined) return false;
          waiters.delete(check);
          clearTimeout(timer);
          resolve(found);
          return true;
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`timed out waiting for ${what}; got ${JSON.stringify(messages.map((message: Loose) => message.type))}`));
        }, ms);
        if (!check()) waiters.add(check);
      });
    },
  };
  return new Promise((resolve, reject) => {
    socket.once('open', () => resolve(client));
    socket.once('unexpected-response', (_request, response) => reject(Object.assign(new Error(`upgrade refused: ${response.statusCode}`), { status: response.statusCode })));
    socket.once('error', reject);
  });
}

/**
 * POSTs random bodies (JSON of any shape, strings, objects) to each route: every answer must be
 * a typed 4xx (`{ error: { kind } }`), never a 5xx, and the daemon must still answer after.
 */
export async function expectOnlyTypedRefusals(daemon: Daemon, routes: string[], numRuns: number): Promise<void> {
  await fc.assert(
    fc.asyncProperty(fc.constantFrom(...routes), fc.oneof(fc.json(), fc.string(), fc.object()), async (path, body) => {
      const answer = await call(daemon, 'POST', path, { rawBody: typeof body === 'string' ? body : JSON.stringify(body), headers: { 'Content-Type': 'application/json' } });
      expect(answer.status, `${path} ${JSON.stringify(body)} → ${answer.text}`).toBeGreaterThanOrEqual(400);
      expect(answer.status).toBeLessThan(500);
      expect(typeof answer.json?.error?.kind).toBe('string');
    }),
    { numRuns },
  );
  expect((await call(daemon, 'GET', '/v1/health')).status).toBe(200);
}
