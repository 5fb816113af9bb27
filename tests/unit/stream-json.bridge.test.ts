/**
 * The stream-json bridge's JSON-RPC side at its edge: a child played by two PassThrough
 * streams, the client by raw JSON-RPC lines. The whole path with the real ACP client and a
 * real CLI fixture is tests/integration/stream-json.test.ts.
 */
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { promptText } from '../../services/acp-bridge.js';
import { openStreamJsonBridge } from '../../services/stream-json/stream-json.bridge.js';

function harness() {
  const child = { stdin: new PassThrough(), stdout: new PassThrough() };
  const warnings: string[] = [];
  const bridge = openStreamJsonBridge(child, { sessionId: 's-1', onWarning: (message) => warnings.push(message) });
  const fromBridge: Array<Record<string, unknown>> = [];
  const toChild: string[] = [];
  bridge.output.setEncoding('utf8');
  bridge.output.on('data', (chunk: string) => fromBridge.push(...chunk.split('\n').filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>)));
  child.stdin.setEncoding('utf8');
  child.stdin.on('data', (chunk: string) => toChild.push(...chunk.split('\n').filter(Boolean)));
  const request = (id: number, method: string, params: Record<string, unknown> = {}) => bridge.input.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
  const notify = (method: string, params: Record<string, unknown>) => bridge.input.write(`${JSON.stringify({ jsonrpc: '2.0', method, params })}\n`);
  const print = (message: unknown) => child.stdout.write(`${typeof message === 'string' ? message : JSON.stringify(message)}\n`);
  const tick = () => new Promise((resolve) => setImmediate(resolve));
  return { child, bridge, warnings, fromBridge, toChild, request, notify, print, tick };
}

const result = (extra: Record<string, unknown> = {}) => ({ type: 'result', subtype: 'success', is_error: false, result: 'done', session_id: 's-1', ...extra });

describe('stream-json bridge', () => {
  it('answers initialize, one session/new, session/load of its own session only, and method-not-found for the rest', async () => {
    const h = harness();
    h.request(1, 'initialize', { protocolVersion: 1 });
    h.request(2, 'session/new', { cwd: '/', mcpServers: [] });
    h.request(3, 'session/new', { cwd: '/', mcpServers: [] });
    h.request(4, 'session/load', { sessionId: 'other', cwd: '/', mcpServers: [] });
    h.request(5, 'session/load', { sessionId: 's-1', cwd: '/', mcpServers: [] });
    h.request(6, 'session/set_mode', { sessionId: 's-1', modeId: 'x' });
    await h.tick();
    const byId = new Map(h.fromBridge.map((message) => [message.id, message]));
    expect(byId.get(1)).toMatchObject({ result: { protocolVersion: 1, agentCapabilities: { loadSession: true } } });
    expect(byId.get(2)).toMatchObject({ result: { sessionId: 's-1' } });
    expect(byId.get(3)).toMatchObject({ error: { code: -32603 } });
    expect(byId.get(4)).toMatchObject({ error: { code: -32002, data: { sessionId: 'other' } } });
    expect(byId.get(5)).toMatchObject({ result: {} });
    expect(byId.get(6)).toMatchObject({ error: { code: -32601 } });
  });

  it('a prompt becomes a user message line; updates stream as session/update; the result answers it; a second prompt meanwhile is refused', async () => {
    const h = harness();
    h.request(1, 'session/new', { cwd: '/', mcpServers: [] });
    h.request(2, 'session/prompt', { sessionId: 's-1', prompt: [{ type: 'text', text: 'hi\nthere' }, { type: 'resource_link', uri: 'file:///a', name: 'a' }] });
    h.request(3, 'session/prompt', { sessionId: 's-1', prompt: [{ type: 'text', text: 'too soon' }] });
    await h.tick();
    expect(h.toChild).toHaveLength(1);
    expect(JSON.parse(h.toChild[0]!)).toEqual({ type: 'user', message: { role: 'user', content: [{ type: 'text', text: 'hi\nthere\n\nfile:///a' }] } });
    h.print({ type: 'assistant', message: { id: 'm1', role: 'assistant', content: [{ type: 'text', text: 'hello' }] }, parent_tool_use_id: null, session_id: 's-1' });
    h.print(result());
    await h.tick();
    expect(h.fromBridge.find((message) => message.id === 3)).toMatchObject({ error: { message: 'A turn is already running' } });
    expect(h.fromBridge.find((message) => message.method === 'session/update')).toMatchObject({
      params: { sessionId: 's-1', update: { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'hello' } } },
    });
    expect(h.fromBridge.find((message) => message.id === 2)).toMatchObject({ result: { stopReason: 'end_turn' } });
  });

  it('cancel writes an interrupt; the result then answers cancelled; an error result rejects with its text', async () => {
    const h = harness();
    h.request(1, 'session/prompt', { sessionId: 's-1', prompt: [{ type: 'text', text: 'a' }] });
    h.notify('session/cancel', { sessionId: 's-1' });
    h.notify('session/cancel', { sessionId: 's-1' });
    await h.tick();
    expect(h.toChild.slice(1).map((line) => JSON.parse(line) as Record<string, unknown>)).toEqual([
      { type: 'control_request', request_id: 'agentvisor-interrupt-1', request: { subtype: 'interrupt' } },
    ]);
    h.print(result({ subtype: 'error_during_execution', is_error: true }));
    h.request(2, 'session/prompt', { sessionId: 's-1', prompt: [{ type: 'text', text: 'b' }] });
    await h.tick();
    h.print(result({ subtype: 'error_during_execution', is_error: true, result: undefined, errors: ['API Error: 429 rate limit, retry after 30s'] }));
    await h.tick();
    expect(h.fromBridge.find((message) => message.id === 1)).toMatchObject({ result: { stopReason: 'cancelled' } });
    expect(h.fromBridge.find((message) => message.id === 2)).toMatchObject({ error: { code: -32603, message: 'API Error: 429 rate limit, retry after 30s', data: { subtype: 'error_during_execution' } } });
  });

  it('lines it cannot use are warnings; the end of the CLI\'s output ends the client\'s stream; the client\'s end closes the CLI\'s stdin', async () => {
    const h = harness();
    h.print('not json at all');
    h.print({ type: 'mystery' });
    h.print({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } });
    await h.tick();
    expect(h.warnings).toHaveLength(3);
    const ended = new Promise((resolve) => h.bridge.output.once('end', resolve));
    h.child.stdout.end();
    await ended;
    const stdinEnded = new Promise((resolve) => h.child.stdin.once('finish', resolve));
    h.bridge.input.end();
    await stdinEnded;
  });

  it('promptText keeps text, links and embedded text resources, in order', () => {
    expect(
      promptText([
        { type: 'text', text: 'a' },
        { type: 'image', data: 'AA==', mimeType: 'image/png' },
        { type: 'resource', resource: { uri: 'file:///r', text: 'inside' } },
        { type: 'resource', resource: { uri: 'file:///b', blob: 'AA==' } },
      ]),
    ).toBe('a\n\ninside\n\nfile:///b');
  });
});
