/**
 * The dashboard's API client without a browser (dashboard/api.js), against a fake `fetch` at
 * its edge: the paths, methods, headers and bodies it sends, history read page by page, the
 * API's errors as ApiError, a prompt's NDJSON answer read as it streams (lines and characters
 * cut anywhere); and the event stream's reconnection backoff (dashboard/event-stream.js).
 */
import { describe, expect, it } from 'vitest';
import { ApiError, LineSplitter, PAGE_LIMIT, createApiClient } from '../../dashboard/api.js';
import { RECONNECT_INITIAL_MS, RECONNECT_MAX_MS, frameMessages, nextReconnectDelay, retryingText, streamUrl } from '../../dashboard/event-stream.js';

const token = 't0ken';

interface Sent {
  path: string;
  method: string;
  headers: Record<string, string>;
  body: unknown;
}

/** A client whose `fetch` records each request and answers with `answer(request)`. */
function clientAnswering(answer: (sent: Sent) => Response | Promise<Response>) {
  const sent: Sent[] = [];
  const fetch: typeof globalThis.fetch = async (input, init) => {
    const request = { path: String(input), method: init?.method ?? 'GET', headers: { ...(init?.headers as Record<string, string>) }, body: typeof init?.body === 'string' ? JSON.parse(init.body) : undefined };
    sent.push(request);
    return answer(request);
  };
  return { api: createApiClient({ token, fetch }), sent };
}

const json = (body: unknown, status = 200) => new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json' } });

/** A streamed answer whose bytes arrive in the pieces given. */
function streamed(pieces: Uint8Array[]): Response {
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const piece of pieces) controller.enqueue(piece);
      controller.close();
    },
  });
  return new Response(body, { status: 200, headers: { 'Content-Type': 'application/x-ndjson' } });
}

describe('requests', () => {
  it('carries the token; a body as JSON with its type; lifecycle calls as POSTs, kill as a forced stop', async () => {
    const { api, sent } = clientAnswering(() => json({ name: 'a b' }));
    await api.agentAction('a b', 'start');
    await api.agentAction('a b', 'kill');
    expect(sent).toEqual([
      { path: '/v1/agents/a%20b/start', method: 'POST', headers: { Authorization: `Bearer ${token}`, Accept: 'application/json' }, body: undefined },
      { path: '/v1/agents/a%20b/stop', method: 'POST', headers: { Authorization: `Bearer ${token}`, Accept: 'application/json', 'Content-Type': 'application/json' }, body: { force: true } },
    ]);
  });

  it('asks for the lists the page shows, and sends its answers', async () => {
    const { api, sent } = clientAnswering(() => json({}));
    await api.agents();
    await api.agent('x');
    await api.sessions('my agent');
    await api.logTail('x', 1000);
    await api.orphans();
    await api.killOrphans([12]);
    await api.killOrphans(null);
    await api.answerPermission('perm/1', 'allow');
    expect(sent.map(({ path, method, body }) => [method, path, body])).toEqual([
      ['GET', '/v1/agents', undefined],
      ['GET', '/v1/agents/x', undefined],
      ['GET', '/v1/sessions?agent=my%20agent', undefined],
      ['GET', '/v1/agents/x/logs?tail=1000', undefined],
      ['GET', '/v1/orphans', undefined],
      ['POST', '/v1/orphans/kill', { pids: [12] }],
      ['POST', '/v1/orphans/kill', {}],
      ['POST', '/v1/permissions/perm%2F1', { optionId: 'allow' }],
    ]);
  });

  it("sends a session's controls, cancel and close, reads its terminals, the lists it re-reads, and the answers to elicitations", async () => {
    const { api, sent } = clientAnswering(() => json({}));
    await api.setMode('s/1', 'plan');
    await api.setModel('s/1', 'large');
    await api.setConfig('s/1', 'fast', true);
    await api.setConfig('s/1', 'model', 'fixture-large');
    await api.cancelSession('s/1');
    await api.closeSession('s/1');
    await api.terminalOutput('s/1', 'term 1');
    await api.permissions();
    await api.elicitations();
    await api.answerElicitation('e/1', { action: 'accept', content: { name: 'Ada', count: 2, ok: true, tags: ['a'] } });
    await api.answerElicitation('e/1', { action: 'decline' });
    expect(sent.map(({ path, method, body }) => [method, path, body])).toEqual([
      ['POST', '/v1/sessions/s%2F1/mode', { modeId: 'plan' }],
      ['POST', '/v1/sessions/s%2F1/model', { modelId: 'large' }],
      ['POST', '/v1/sessions/s%2F1/config', { configId: 'fast', value: true }],
      ['POST', '/v1/sessions/s%2F1/config', { configId: 'model', value: 'fixture-large' }],
      ['POST', '/v1/sessions/s%2F1/cancel', undefined],
      ['POST', '/v1/sessions/s%2F1/close', undefined],
      ['GET', '/v1/sessions/s%2F1/terminals/term%201', undefined],
      ['GET', '/v1/permissions', undefined],
      ['GET', '/v1/elicitations', undefined],
      ['POST', '/v1/elicitations/e%2F1', { action: 'accept', content: { name: 'Ada', count: 2, ok: true, tags: ['a'] } }],
      ['POST', '/v1/elicitations/e%2F1', { action: 'decline' }],
    ]);
  });

  it('restarts with a reason when one is given (none without); logs an agent in with a method', async () => {
    const { api, sent } = clientAnswering(() => json({}));
    await api.agentAction('a', 'restart', { reason: 'new key' });
    await api.agentAction('a', 'restart', { reason: '' });
    await api.agentAction('a', 'restart');
    await api.authenticate('a', 'fixture-token');
    expect(sent.map(({ path, method, body }) => [method, path, body])).toEqual([
      ['POST', '/v1/agents/a/restart', { reason: 'new key' }],
      ['POST', '/v1/agents/a/restart', undefined],
      ['POST', '/v1/agents/a/restart', undefined],
      ['POST', '/v1/agents/a/authenticate', { methodId: 'fixture-token' }],
    ]);
  });

  it('reads a history page by page until its end', async () => {
    const pages: Record<string, unknown> = {
      '0': { entries: [{ seq: 1 }, { seq: 2 }], next: 2 },
      '2': { entries: [{ seq: 3 }], next: null },
    };
    const { api, sent } = clientAnswering(({ path }) => json(pages[new URL(path, 'http://x').searchParams.get('after')!]));
    expect((await api.history('s1')).map((entry) => entry.seq)).toEqual([1, 2, 3]);
    expect(sent.map((request) => request.path)).toEqual([`/v1/sessions/s1/history?after=0&limit=${PAGE_LIMIT}`, `/v1/sessions/s1/history?after=2&limit=${PAGE_LIMIT}`]);
  });

  it('fetches a statechart as SVG text', async () => {
    const { api, sent } = clientAnswering(() => new Response('<svg/>', { status: 200 }));
    expect(await api.machineSvg('agent')).toBe('<svg/>');
    expect(sent[0]).toMatchObject({ path: '/v1/machines/agent.svg', headers: { Accept: 'image/svg+xml' } });
  });
});

describe('failures', () => {
  it("an API error is an ApiError with the body's kind and message", async () => {
    const { api } = clientAnswering(() => json({ error: { kind: 'unknown_agent', message: 'No agent "x"' } }, 404));
    const error = await api.agent('x').catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ApiError);
    expect(error).toMatchObject({ status: 404, kind: 'unknown_agent', message: 'No agent "x"' });
  });

  it('an answer that is not JSON says its status', async () => {
    const { api } = clientAnswering(() => new Response('Bad Gateway', { status: 502 }));
    await expect(api.orphans()).rejects.toMatchObject({ status: 502, kind: 'http', message: 'HTTP 502' });
  });

  it('the token is refused on a 401 only; a daemon that does not answer is not a refusal', async () => {
    expect(await clientAnswering(() => json({ error: { kind: 'unauthorized', message: 'no' } }, 401)).api.tokenRefused()).toBe(true);
    expect(await clientAnswering(() => json({ ok: true })).api.tokenRefused()).toBe(false);
    expect(
      await clientAnswering(() => {
        throw new TypeError('fetch failed');
      }).api.tokenRefused(),
    ).toBe(false);
  });
});

describe("a prompt's streamed answer", () => {
  it('hears each line as it arrives, whatever the pieces the bytes come in', async () => {
    const text = '{"type":"started","sessionId":"s"}\n\n{"type":"update","sessionId":"s","update":{}}\n{"type":"done","sessionId":"s","stopReason":"end_turn","text":"héllo ✓"}';
    const bytes = new TextEncoder().encode(text);
    // Cut every 7 bytes: through lines, and through the two- and three-byte characters.
    const pieces = Array.from({ length: Math.ceil(bytes.length / 7) }, (_, index) => bytes.slice(index * 7, index * 7 + 7));
    const { api, sent } = clientAnswering(() => streamed(pieces));
    const lines: unknown[] = [];
    await api.prompt('/v1/prompt', { agent: 'a', text: 'hi', session: 'default' }, (line) => lines.push(line));
    expect(lines).toEqual([
      { type: 'started', sessionId: 's' },
      { type: 'update', sessionId: 's', update: {} },
      { type: 'done', sessionId: 's', stopReason: 'end_turn', text: 'héllo ✓' },
    ]);
    expect(sent[0]).toMatchObject({ method: 'POST', headers: { Accept: 'application/x-ndjson', 'Content-Type': 'application/json' }, body: { agent: 'a', text: 'hi', session: 'default' } });
  });

  it('a refused prompt is an ApiError, and no line is heard', async () => {
    const { api } = clientAnswering(() => json({ error: { kind: 'invalid_request', message: 'text: required' } }, 400));
    const lines: unknown[] = [];
    await expect(api.prompt('/v1/prompt', { text: '' }, (line) => lines.push(line))).rejects.toMatchObject({ kind: 'invalid_request' });
    expect(lines).toEqual([]);
  });
});

describe('LineSplitter', () => {
  it('keeps an unfinished line for the next piece, skips blank ones, gives the last without its newline', () => {
    const lines = new LineSplitter();
    expect(lines.push('{"a":1}\n{"b"')).toEqual([{ a: 1 }]);
    expect(lines.push(':2}\n  \n{"c":3}')).toEqual([{ b: 2 }]);
    expect(lines.end()).toEqual([{ c: 3 }]);
    expect(lines.end()).toEqual([]);
  });

  it('a line that is not JSON throws', () => {
    expect(() => new LineSplitter().push('not json\n')).toThrow(SyntaxError);
  });
});

describe('the event stream', () => {
  it('asks for every topic in batches; once the page stands somewhere, goes on from there (since, epoch)', () => {
    expect(streamUrl('ws://127.0.0.1:7433', 't k', { epoch: null, lastSeq: null })).toBe('ws://127.0.0.1:7433/v1/events?token=t%20k&batch=1');
    expect(streamUrl('ws://127.0.0.1:7433', 'tk', { epoch: 'e-1', lastSeq: 42 })).toBe('ws://127.0.0.1:7433/v1/events?token=tk&batch=1&since=42&epoch=e-1');
    expect(streamUrl('ws://h:1', 'tk', { epoch: null, lastSeq: 42 })).toBe('ws://h:1/v1/events?token=tk&batch=1');
    expect(streamUrl('ws://h:1', 'tk', { epoch: 'e', lastSeq: 0 })).toBe('ws://h:1/v1/events?token=tk&batch=1&since=0&epoch=e');
  });

  it('a frame is a batch of messages, or one message; one that does not parse is none', () => {
    expect(frameMessages('[{"type":"log","seq":1},{"type":"log","seq":2}]')).toEqual([
      { type: 'log', seq: 1 },
      { type: 'log', seq: 2 },
    ]);
    expect(frameMessages('{"type":"hello","seq":0}')).toEqual([{ type: 'hello', seq: 0 }]);
    expect(frameMessages('not json')).toEqual([]);
  });
});

describe('the event stream backoff', () => {
  it('doubles from its first delay up to its longest, and says when it retries', () => {
    const delays = [RECONNECT_INITIAL_MS];
    for (let step = 0; step < 7; step += 1) delays.push(nextReconnectDelay(delays.at(-1)!));
    expect(delays).toEqual([250, 500, 1000, 2000, 4000, 8000, 8000, 8000]);
    expect(RECONNECT_MAX_MS).toBe(8000);
    expect(retryingText(250)).toBe('disconnected — retrying in 0.3 s');
    expect(retryingText(8000)).toBe('disconnected — retrying in 8.0 s');
  });
});
