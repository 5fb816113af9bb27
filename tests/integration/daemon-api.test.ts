/**
 * The daemon's HTTP API on real processes: its gate (token, Host, Origin), bad input of
 * every sort answered 4xx with a typed body (a property test throws random bodies at every
 * route), the agent routes, doctor, the daemon files, and a clean close. Sessions, prompts,
 * permissions, logs and the event stream: daemon-sessions.test.ts.
 */
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDaemon, type Daemon } from '../../daemon/daemon.js';
import { readDaemonFiles } from '../../daemon/daemon-files.js';
import { AgentError } from '../../index.js';
import { call, expectOnlyTypedRefusals, openEvents } from '../support/daemon-http.js';
import { fixtureSpec, isRunning } from '../support/real-agents.js';

let daemon: Daemon;
let stateDir: string;

beforeAll(async () => {
  stateDir = mkdtempSync(join(tmpdir(), 'agentvisor-daemon-api-'));
  daemon = await startDaemon({
    supervisor: {
      agents: {
        fixture: fixtureSpec(),
        missing: { command: 'agentvisor-no-such-agent', displayName: 'Missing', installHint: 'npm install -g no-such-agent' },
      },
      stateDir,
      restart: { initialDelayMs: 50 },
    },
    port: 0,
  });
});

afterAll(async () => {
  await daemon?.close();
  rmSync(stateDir, { recursive: true, force: true });
});

describe('the gate', () => {
  it('asks every request for the token, in the header or the query', async () => {
    const none = await call(daemon, 'GET', '/v1/health', { noToken: true });
    expect(none.status).toBe(401);
    expect(none.json.error.kind).toBe('unauthorized');
    const wrong = await call(daemon, 'GET', '/v1/health', { headers: { Authorization: `Bearer ${'0'.repeat(64)}` } });
    expect(wrong.status).toBe(401);
    const shorter = await call(daemon, 'GET', '/v1/health', { headers: { Authorization: 'Bearer abc' } });
    expect(shorter.status).toBe(401);
    const notBearer = await call(daemon, 'GET', '/v1/health', { headers: { Authorization: `Basic ${daemon.token}` } });
    expect(notBearer.status).toBe(401);
    const viaQuery = await call(daemon, 'GET', `/v1/health?token=${daemon.token}`, { noToken: true });
    expect(viaQuery.status).toBe(200);
    expect(viaQuery.json).toMatchObject({ ok: true, pid: process.pid, agents: 2 });
    expect(viaQuery.headers['cache-control']).toBe('no-store');
    expect(viaQuery.headers['x-content-type-options']).toBe('nosniff');
  });

  it('refuses another Host (DNS rebinding) and a foreign Origin, even with the token', async () => {
    const rebound = await call(daemon, 'GET', '/v1/health', { headers: { Host: `attacker.example:${daemon.port}` } });
    expect(rebound.status).toBe(403);
    expect(rebound.json.error.kind).toBe('forbidden_host');
    const otherPort = await call(daemon, 'GET', '/v1/health', { headers: { Host: `127.0.0.1:${daemon.port + 1}` } });
    expect(otherPort.status).toBe(403);
    const foreign = await call(daemon, 'GET', '/v1/health', { headers: { Origin: 'http://attacker.example' } });
    expect(foreign.status).toBe(403);
    expect(foreign.json.error.kind).toBe('forbidden_origin');
    for (const host of [`localhost:${daemon.port}`, `[::1]:${daemon.port}`]) {
      const own = await call(daemon, 'GET', '/v1/health', { headers: { Host: host, Origin: `http://${host}` } });
      expect(own.status, host).toBe(200);
    }
  });

  it('guards the WebSocket upgrade the same way', async () => {
    await expect(openEvents({ port: daemon.port, token: 'wrong' })).rejects.toMatchObject({ status: 401 });
    await expect(openEvents(daemon, '', { Origin: 'http://attacker.example' })).rejects.toMatchObject({ status: 403 });
    await expect(openEvents(daemon, 'topics=status,nonsense')).rejects.toMatchObject({ status: 400 });
    const client = await openEvents(daemon, 'topics=status', { Origin: `http://127.0.0.1:${daemon.port}` });
    const hello = await client.next((message) => message.type === 'hello', 'hello');
    expect(hello.agents.map((agent: { name: string }) => agent.name).sort()).toEqual(['fixture', 'missing']);
    expect(hello.topics).toEqual(['status']);
    client.close();
  });

  it('serves the dashboard only with the token, under a strict CSP', async () => {
    const refused = await call(daemon, 'GET', '/', { noToken: true });
    expect(refused.status).toBe(401);
    const page = await call(daemon, 'GET', `/?token=${daemon.token}`, { noToken: true });
    expect(page.status).toBe(200);
    const csp = String(page.headers['content-security-policy']);
    const nonce = /script-src 'nonce-([^']+)'/.exec(csp)?.[1];
    expect(nonce).toBeTruthy();
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain(`connect-src 'self' ws://127.0.0.1:${daemon.port}`);
    expect(page.text).toContain(`<script type="module" nonce="${nonce}">`);
    expect(page.text).not.toContain('<!-- agentvisor:script -->');
  });
});

describe('bad input', () => {
  it('answers each kind of bad request with its status and a typed body', async () => {
    const cases: Array<[string, string, Parameters<typeof call>[3], number, string]> = [
      ['GET', '/v1/nowhere', {}, 404, 'not_found'],
      ['DELETE', '/v1/agents', {}, 405, 'method_not_allowed'],
      ['GET', '/v1/agents/nobody', {}, 404, 'unknown_agent'],
      ['GET', '/v1/agents/%E0%A4%A', {}, 400, 'invalid_request'],
      ['POST', '/v1/prompt', { rawBody: '{"agent":', headers: { 'Content-Type': 'application/json' } }, 400, 'invalid_json'],
      ['POST', '/v1/prompt', { rawBody: 'agent=fixture', headers: { 'Content-Type': 'text/plain' } }, 415, 'unsupported_media_type'],
      ['POST', '/v1/prompt', { body: { agent: 'fixture' } }, 400, 'invalid_request'],
      ['POST', '/v1/prompt', { body: { agent: 'fixture', text: 'hi', extra: true } }, 400, 'invalid_request'],
      ['POST', '/v1/prompt', { body: { agent: 'fixture', text: 'a\u0000b' } }, 400, 'invalid_request'],
      ['POST', '/v1/agents/fixture/stop', { body: { force: 'yes' } }, 400, 'invalid_request'],
      ['POST', '/v1/agents/fixture/stop', { body: { now: true } }, 400, 'invalid_request'],
      ['POST', '/v1/agents/fixture/restart', { body: { reason: 7 } }, 400, 'invalid_request'],
      ['GET', '/v1/sessions/nope/history?limit=0', {}, 400, 'invalid_request'],
      ['GET', '/v1/sessions/nope', {}, 404, 'session_not_found'],
      ['POST', '/v1/permissions/nope', { body: { optionId: 'allow' } }, 404, 'permission_not_found'],
      ['POST', '/v1/permissions/nope', { body: { optionId: 'allow', cancel: true } }, 400, 'invalid_request'],
      ['GET', '/v1/machines/secrets.svg', {}, 404, 'not_found'],
      ['GET', '/v1/machines/..%2F..%2Fpackage.json', {}, 404, 'not_found'],
    ];
    for (const [method, path, options, status, kind] of cases) {
      const answer = await call(daemon, method, path, options);
      expect({ path, status: answer.status, kind: answer.json?.error?.kind }).toEqual({ path, status, kind });
      expect(typeof answer.json.error.message).toBe('string');
    }
    const invalid = await call(daemon, 'POST', '/v1/prompt', { body: { agent: 'fixture', text: 7 } });
    expect(invalid.json.error.issues).toEqual([{ path: 'text', message: expect.any(String) }]);
  });

  it('refuses a body over 1 MiB, declared or streamed', async () => {
    const big = await call(daemon, 'POST', '/v1/prompt', { rawBody: JSON.stringify({ agent: 'fixture', text: 'x'.repeat(1024 * 1024 + 10) }), headers: { 'Content-Type': 'application/json' } });
    expect(big.status).toBe(413);
    expect(big.json.error.kind).toBe('payload_too_large');
    expect((await call(daemon, 'GET', '/v1/health')).status).toBe(200);
  });

  it('never answers random bodies with a 5xx, and keeps serving', async () => {
    const routes = ['/v1/prompt', '/v1/sessions', '/v1/permissions/x', '/v1/agents/fixture/authenticate', '/v1/sessions/x/prompt'];
    await expectOnlyTypedRefusals(daemon, routes, 60);
  });
});

describe('agents', () => {
  it('starts, stops and restarts an agent, with rows that say so', async () => {
    const started = await call(daemon, 'POST', '/v1/agents/fixture/start');
    expect(started.status).toBe(200);
    expect(started.json).toMatchObject({ name: 'fixture', status: 'connected', state: expect.stringMatching(/^connected\./), restarts: 0, sessions: 0 });
    expect(isRunning(started.json.pid)).toBe(true);
    expect(started.json.connectedAt).toBeGreaterThan(0);

    const restarted = await call(daemon, 'POST', '/v1/agents/fixture/restart');
    expect(restarted.json).toMatchObject({ status: 'connected', restarts: 1 });
    expect(restarted.json.pid).not.toBe(started.json.pid);
    expect(isRunning(started.json.pid)).toBe(false);

    const stopped = await call(daemon, 'POST', '/v1/agents/fixture/stop');
    expect(stopped.json).toMatchObject({ status: 'idle', state: 'idle', pid: null, connectedAt: null });
    expect(isRunning(restarted.json.pid)).toBe(false);
    const list = await call(daemon, 'GET', '/v1/agents');
    expect(list.json.agents.map((agent: { name: string }) => agent.name)).toEqual(['fixture', 'missing']);
  });

  it('restarts with a reason (in the event log), stops with force, and says since, the restart policy and the last exit', async () => {
    const started = await call(daemon, 'POST', '/v1/agents/fixture/start');
    expect(started.json).toMatchObject({ restart: 'always', credential: null, since: expect.any(Number) });
    const restarted = await call(daemon, 'POST', '/v1/agents/fixture/restart', { body: { reason: 'picked up a new key' } });
    expect(restarted.json).toMatchObject({ status: 'connected', lastExit: { code: 0, signal: null, at: expect.any(Number) } });
    const log = await call(daemon, 'GET', '/v1/events/log');
    expect(JSON.stringify(log.json)).toContain('picked up a new key');
    const killed = await call(daemon, 'POST', '/v1/agents/fixture/stop', { body: { force: true } });
    // The fixture also exits by itself as its stdin closes: SIGKILL or that exit, whichever is first.
    expect(killed.json).toMatchObject({ status: 'idle', lastExit: { at: expect.any(Number) } });
    expect(isRunning(restarted.json.pid)).toBe(false);
  });

  it('passes an agent failure through with its kind and class', async () => {
    const missing = await call(daemon, 'POST', '/v1/agents/missing/start');
    expect(missing.status).toBe(424);
    expect(missing.json.error).toMatchObject({ kind: 'not_installed', agent: 'missing', class: 'config' });
    const row = await call(daemon, 'GET', '/v1/agents/missing');
    expect(row.json.lastError).toMatchObject({ kind: 'not_installed' });
  });

  it('reports what the host offers (doctor)', async () => {
    const doctor = await call(daemon, 'GET', '/v1/doctor');
    expect(doctor.status).toBe(200);
    const byAgent = Object.fromEntries(doctor.json.presets.map((preset: { agent: string }) => [preset.agent, preset]));
    expect(byAgent.fixture).toMatchObject({ command: process.execPath, path: process.execPath });
    expect(byAgent.missing).toMatchObject({ path: null, installHint: 'npm install -g no-such-agent' });
    expect(doctor.json.store).toMatchObject({ kind: 'sqlite', ok: true });
    expect(doctor.json.stateDir).toBe(stateDir);
    expect(doctor.json.containment).toHaveProperty('refused');
  });

  it('serves the statecharts drawn from the machines', async () => {
    const svg = await call(daemon, 'GET', '/v1/machines/agent.svg');
    expect(svg.status).toBe(200);
    expect(svg.headers['content-type']).toContain('image/svg+xml');
    expect(svg.text).toContain('<title>connected_stable</title>');
  });
});

describe('the daemon files and a second daemon', () => {
  it('writes daemon.json and daemon.token readable by their owner only', () => {
    const files = readDaemonFiles(stateDir);
    expect(files?.info).toMatchObject({ pid: process.pid, port: daemon.port, url: daemon.url });
    expect(files?.token).toBe(daemon.token);
    expect(statSync(join(stateDir, 'daemon.token')).mode & 0o777).toBe(0o600);
    expect(statSync(join(stateDir, 'daemon.json')).mode & 0o777).toBe(0o600);
  });

  it('refuses a taken port, typed', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as { port: number }).port;
    const otherState = mkdtempSync(join(tmpdir(), 'agentvisor-daemon-port-'));
    try {
      const error = await startDaemon({ supervisor: { stateDir: otherState }, port }).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(AgentError);
      expect(error).toMatchObject({ kind: 'address_unavailable' });
      expect(existsSync(join(otherState, 'daemon.json'))).toBe(false);
    } finally {
      blocker.close();
      rmSync(otherState, { recursive: true, force: true });
    }
  });

  it('refuses a second daemon on a state directory whose daemon lives', async () => {
    // Written by another process id that is alive: this test's parent.
    const { writeDaemonFiles } = await import('../../daemon/daemon-files.js');
    const otherState = mkdtempSync(join(tmpdir(), 'agentvisor-daemon-twice-'));
    try {
      writeDaemonFiles(otherState, { pid: process.ppid, host: '127.0.0.1', port: 1, url: 'http://127.0.0.1:1', startedAt: 0, version: '0' }, 'x');
      const error = await startDaemon({ supervisor: { stateDir: otherState }, port: 0 }).catch((caught: unknown) => caught);
      expect(error).toMatchObject({ kind: 'daemon_running' });
    } finally {
      rmSync(otherState, { recursive: true, force: true });
    }
  });
});

describe('closing', () => {
  it('POST /v1/shutdown stops every agent, ends the streams and removes the daemon files', async () => {
    const otherState = mkdtempSync(join(tmpdir(), 'agentvisor-daemon-close-'));
    const second = await startDaemon({ supervisor: { agents: { fixture: fixtureSpec() }, stateDir: otherState }, port: 0 });
    try {
      const started = await call(second, 'POST', '/v1/agents/fixture/start');
      const events = await openEvents(second);
      const follow = call(second, 'GET', '/v1/agents/fixture/logs?follow=1', { onLine: () => {} });
      const answer = await call(second, 'POST', '/v1/shutdown');
      expect(answer.status).toBe(202);
      await second.closed;
      expect(isRunning(started.json.pid)).toBe(false);
      expect((await events.closed).code).toBe(1001);
      expect((await follow).status).toBe(200);
      expect(existsSync(join(otherState, 'daemon.json'))).toBe(false);
      expect(existsSync(join(otherState, 'daemon.token'))).toBe(false);
    } finally {
      await second.close();
      rmSync(otherState, { recursive: true, force: true });
    }
  });
});
