/**
 * The CLI's HTTP client against a stand-in server (node:http): the token and JSON bodies it
 * sends, the API errors it turns into ApiError, NDJSON read line by line across chunks, and
 * exit 6 when there is no daemon or nothing answers.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CliError } from '../../cli/cli-error.js';
import { ApiError, DaemonClient } from '../../cli/daemon-client.js';
import { ExitCode } from '../../cli/exit-codes.js';
import { writeDaemonFiles } from '../../daemon/daemon-files.js';

let dir: string;
let server: Server;
let url: string;
const seen: Array<{ method: string; url: string; headers: IncomingMessage['headers']; body: string }> = [];
let answer: (request: IncomingMessage, response: ServerResponse) => void = () => {};

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'agentvisor-cli-client-'));
  server = createServer((request, response) => {
    let body = '';
    request.setEncoding('utf8');
    request.on('data', (chunk: string) => (body += chunk));
    request.on('end', () => {
      seen.push({ method: request.method!, url: request.url!, headers: request.headers, body });
      answer(request, response);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  writeDaemonFiles(dir, { pid: process.pid, host: '127.0.0.1', port: (server.address() as AddressInfo).port, url, startedAt: Date.now(), version: '0.0.0' }, 'secret-token');
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
  rmSync(dir, { recursive: true, force: true });
});

const json = (status: number, body: unknown) => (_request: IncomingMessage, response: ServerResponse) => {
  response.writeHead(status, { 'content-type': 'application/json' });
  response.end(JSON.stringify(body));
};

describe('DaemonClient', () => {
  it('sends the token and a JSON body on a connection of its own, and parses the answer', async () => {
    answer = json(200, { ok: true });
    const client = DaemonClient.connect(dir);
    expect(await client.request('POST', '/v1/prompt', { body: { agent: 'echo', text: 'hi' } })).toEqual({ ok: true });
    const request = seen.at(-1)!;
    expect(request).toMatchObject({ method: 'POST', url: '/v1/prompt', body: '{"agent":"echo","text":"hi"}' });
    expect(request.headers).toMatchObject({ authorization: 'Bearer secret-token', 'content-type': 'application/json', accept: 'application/json', connection: 'close' });
  });

  it('turns an error body into an ApiError with its kind, class and issues', async () => {
    answer = json(424, { error: { kind: 'not_installed', message: 'Could not start Codex.', agent: 'codex', class: 'config', issues: [{ path: 'agent', message: 'x' }] } });
    const error = await DaemonClient.connect(dir).request('POST', '/v1/agents/codex/start').catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ApiError);
    expect(error).toMatchObject({ status: 424, kind: 'not_installed', class: 'config', agent: 'codex', message: 'Could not start Codex.', issues: [{ path: 'agent', message: 'x' }] });
  });

  it('an error without a body is still an ApiError', async () => {
    answer = (_request, response) => response.writeHead(502).end('bad gateway');
    const error = await DaemonClient.connect(dir).request('GET', '/v1/agents').catch((caught: unknown) => caught);
    expect(error).toMatchObject({ status: 502, kind: 'internal', message: 'The daemon answered 502: bad gateway' });
  });

  it('reads an NDJSON stream line by line, also when lines are split across chunks', async () => {
    answer = (_request, response) => {
      response.writeHead(200, { 'content-type': 'application/x-ndjson' });
      response.write('{"type":"session","n":1}\n{"type":"upd');
      setImmediate(() => {
        response.write('ate","n":2}\n\n');
        setImmediate(() => response.end('{"type":"done","n":3}\n'));
      });
    };
    const lines: unknown[] = [];
    for await (const line of DaemonClient.connect(dir).stream('POST', '/v1/prompt', { body: {} })) lines.push(line);
    expect(lines).toEqual([{ type: 'session', n: 1 }, { type: 'update', n: 2 }, { type: 'done', n: 3 }]);
    expect(seen.at(-1)!.headers.accept).toBe('application/x-ndjson');
  });

  it('a stream ends quietly when its signal aborts', async () => {
    answer = (_request, response) => {
      response.writeHead(200, { 'content-type': 'application/x-ndjson' });
      response.write('{"n":1}\n'); // and never ends
    };
    const controller = new AbortController();
    const lines: unknown[] = [];
    for await (const line of DaemonClient.connect(dir).stream('GET', '/v1/agents/echo/logs?follow=1', { signal: controller.signal })) {
      lines.push(line);
      controller.abort();
    }
    expect(lines).toEqual([{ n: 1 }]);
  });

  it('builds the dashboard address with the token', () => {
    expect(DaemonClient.connect(dir).dashboardUrl).toBe(`${url}/?token=secret-token`);
  });

  it('no daemon files: exit 6, saying how to start one', () => {
    const empty = mkdtempSync(join(tmpdir(), 'agentvisor-cli-client-'));
    try {
      const error = (() => {
        try {
          DaemonClient.connect(empty);
        } catch (caught) {
          return caught;
        }
      })();
      expect(error).toBeInstanceOf(CliError);
      expect(error).toMatchObject({ exitCode: ExitCode.noDaemon, message: `no daemon running for state dir ${empty}; start one with \`agentvisor serve\`` });
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });

  it('files left by a daemon that is gone: exit 6 too', async () => {
    const stale = mkdtempSync(join(tmpdir(), 'agentvisor-cli-client-'));
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    writeDaemonFiles(stale, { pid: 999_999, host: '127.0.0.1', port, url: `http://127.0.0.1:${port}`, startedAt: 0, version: '0.0.0' }, 'token');
    try {
      const error = await DaemonClient.connect(stale).request('GET', '/v1/agents').catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(CliError);
      expect(error).toMatchObject({ exitCode: ExitCode.noDaemon });
      expect((error as CliError).hint).toContain('nothing answers there');
    } finally {
      rmSync(stale, { recursive: true, force: true });
    }
  });
});
