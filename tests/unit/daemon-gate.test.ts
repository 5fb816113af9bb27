/**
 * The daemon's pure parts: the gate's decisions (Host, Origin, token), the status of each
 * error kind, and topic parsing (the event feed's delivery: event-feed.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { parseTopics } from '../../daemon/event-feed.js';
import { ApiError, errorBody, statusOfKind } from '../../daemon/http-kit.js';
import { createGate } from '../../daemon/request-gate.js';
import { AgentError } from '../../index.js';

const token = 'a'.repeat(64);
const url = (query = '') => new URL(`http://x/v1/health${query}`);

describe('the gate', () => {
  const gate = createGate('127.0.0.1', 7433, token);
  const bearer = { authorization: `Bearer ${token}` };

  it('lets the daemon\'s own names through, in any case', () => {
    for (const host of ['127.0.0.1:7433', 'localhost:7433', 'LOCALHOST:7433', '[::1]:7433']) {
      expect(gate.check({ host, ...bearer }, url()), host).toBeNull();
    }
  });

  it('refuses other names and ports, and a missing Host', () => {
    for (const host of ['evil.example:7433', '127.0.0.1:80', '127.0.0.1', '127.0.0.2:7433', undefined]) {
      expect(gate.check({ host, ...bearer }, url())?.kind, String(host)).toBe('forbidden_host');
    }
  });

  it('checks a browser\'s Origin against its own', () => {
    expect(gate.check({ host: '127.0.0.1:7433', origin: 'http://127.0.0.1:7433', ...bearer }, url())).toBeNull();
    expect(gate.check({ host: '127.0.0.1:7433', origin: 'http://localhost:7433', ...bearer }, url())).toBeNull();
    for (const origin of ['http://evil.example', 'https://127.0.0.1:7433', 'null', 'http://127.0.0.1:7434']) {
      expect(gate.check({ host: '127.0.0.1:7433', origin, ...bearer }, url())?.kind, origin).toBe('forbidden_origin');
    }
  });

  it('wants the token in the header, else in the query; a malformed header is not rescued by the query', () => {
    const host = '127.0.0.1:7433';
    expect(gate.check({ host }, url(`?token=${token}`))).toBeNull();
    expect(gate.check({ host }, url())?.kind).toBe('unauthorized');
    expect(gate.check({ host }, url('?token=abc'))?.kind).toBe('unauthorized');
    expect(gate.check({ host, authorization: `Bearer ${token.slice(1)}b` }, url())?.kind).toBe('unauthorized');
    expect(gate.check({ host, authorization: token }, url(`?token=${token}`))?.kind).toBe('unauthorized');
  });

  it('accepts the host it listens on besides loopback, IPv6 in brackets', () => {
    const wide = createGate('::', 9000, token);
    expect(wide.hosts.has('[::]:9000')).toBe(true);
    expect(wide.check({ host: '[::]:9000', ...bearer }, url())).toBeNull();
  });
});

describe('errors', () => {
  it('maps every kind to its status; an agent failure is 424', () => {
    expect(statusOfKind('unknown_agent')).toBe(404);
    expect(statusOfKind('session_busy')).toBe(409);
    expect(statusOfKind('payload_too_large')).toBe(413);
    expect(statusOfKind('not_installed')).toBe(424);
    expect(statusOfKind('handshake_timeout')).toBe(424);
    expect(statusOfKind('shutting_down')).toBe(503);
  });

  it('shapes an AgentError, an ApiError and anything else', () => {
    const agentError = errorBody(new AgentError('unknown_agent', 'No agent named "x" is registered', { agent: 'x' }));
    expect(agentError).toEqual({ status: 404, body: { error: { kind: 'unknown_agent', message: 'No agent named "x" is registered', agent: 'x' } } });
    expect(errorBody(new ApiError(400, 'invalid_json', 'nope'))).toEqual({ status: 400, body: { error: { kind: 'invalid_json', message: 'nope' } } });
    expect(errorBody(new TypeError('boom'))).toMatchObject({ status: 500, body: { error: { kind: 'internal' } } });
  });
});

describe('topics', () => {
  it('parses a list, all by default, and names the unknown ones', () => {
    expect(parseTopics(null)).toEqual({ topics: ['status', 'state', 'errors', 'updates', 'permissions', 'elicitations', 'logs', 'sessions', 'orphans', 'restore', 'workspaces', 'pty', 'terminals'] });
    expect(parseTopics('status, logs')).toEqual({ topics: ['status', 'logs'] });
    expect(parseTopics('status,bogus')).toEqual({ error: expect.stringContaining('bogus') });
  });
});
