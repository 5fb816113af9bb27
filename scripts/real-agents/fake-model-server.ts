/**
 * A fake model upstream for real agents run offline (scripts/real-agents/overhead.ts): a
 * node:http server on 127.0.0.1 (port 0) that answers three model APIs with a short text,
 * streamed word by word — "Hello from the fake model on 127.0.0.1. You said: <last user text>".
 *
 * - Anthropic Messages (Claude Code): `POST /v1/messages[?beta=true]` — SSE when `stream` is
 *   true, else one JSON message; `POST /v1/messages/count_tokens`; `HEAD /` (a reachability
 *   check) → 200.
 * - OpenAI Responses (codex): `POST /v1/responses` — SSE `response.created` …
 *   `response.completed`; a WebSocket upgrade is refused with 404 (codex then falls back to
 *   HTTP); `GET /v1/models` → an empty list.
 * - Gemini (gemini-cli): `POST /v1beta/models/{model}:streamGenerateContent?alt=sse`,
 *   `:generateContent` (its side calls — routing, next-speaker checks — ask for JSON and get a
 *   small object built from their response schema), `:countTokens`.
 *
 * It is also the agents' HTTP(S) proxy (overhead.ts sets HTTPS_PROXY to it, NO_PROXY for
 * 127.0.0.1): a `CONNECT` or an absolute-URL request for any other host is refused and
 * recorded as `CONNECT host:port` / `PROXY url`, so an attempt to leave the machine shows up
 * in `requests` instead of going out. Every request is recorded as `METHOD path`.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export interface FakeModelServer {
  /** `http://127.0.0.1:<port>` */
  url: string;
  /** Every request, in order: `METHOD path` (`UPGRADE path`, `CONNECT host:port`, `PROXY url` for refused ones). */
  requests: string[];
  close(): Promise<void>;
}

const GREETING = 'Hello from the fake model on 127.0.0.1.';
/** Delay between two streamed chunks (ms): enough to be a stream, small next to an agent's own work. */
const CHUNK_DELAY_MS = 2;

const delay = (ms: number) => new Promise<void>((done) => setTimeout(done, ms));

export async function startFakeModelServer(): Promise<FakeModelServer> {
  const requests: string[] = [];
  const sockets = new Set<Socket>();
  let seq = 0;
  const server = createServer((req, res) => {
    void handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) sendJson(res, 500, { error: { type: 'api_error', message: String(error) } });
      else res.destroy();
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const method = req.method ?? '?';
    const rawUrl = req.url ?? '/';
    if (!rawUrl.startsWith('/')) {
      // A proxied plain-HTTP request for some other host: refused, never forwarded.
      requests.push(`PROXY ${method} ${rawUrl}`);
      req.resume();
      sendJson(res, 403, { error: { message: 'the fake model server forwards nothing' } });
      return;
    }
    requests.push(`${method} ${rawUrl}`);
    const url = new URL(rawUrl, 'http://127.0.0.1');
    const path = url.pathname.replace(/\/+$/, '') || '/';
    const body = method === 'POST' || method === 'PUT' ? await readJson(req) : (req.resume(), undefined);
    const id = `${Date.now().toString(36)}${(++seq).toString(36)}`;

    if (method === 'HEAD' || (method === 'GET' && path === '/')) {
      res.writeHead(200, { 'content-length': '0' });
      res.end();
      return;
    }
    // ---- Anthropic Messages API ----
    if (method === 'POST' && path === '/v1/messages/count_tokens') {
      sendJson(res, 200, { input_tokens: estimateTokens(body) });
      return;
    }
    if (method === 'POST' && path === '/v1/messages') {
      await anthropicMessage(res, body, id);
      return;
    }
    // ---- OpenAI Responses API ----
    if (method === 'POST' && path === '/v1/responses') {
      await openaiResponse(res, body, id);
      return;
    }
    if (method === 'GET' && path === '/v1/models') {
      sendJson(res, 200, { object: 'list', data: [], models: [] });
      return;
    }
    // ---- Gemini API ----
    const gemini = /^\/(?:v1beta|v1|v1alpha)\/models\/([^/:]+):(streamGenerateContent|generateContent|countTokens)$/.exec(path);
    if (method === 'POST' && gemini) {
      const [, model = 'gemini', action] = gemini;
      if (action === 'countTokens') sendJson(res, 200, { totalTokens: estimateTokens(body) });
      else if (action === 'generateContent') sendJson(res, 200, geminiChunk(geminiAnswer(body), model, true, body));
      else await geminiStream(res, body, model);
      return;
    }
    sendJson(res, 404, { error: { type: 'not_found_error', code: 404, status: 'NOT_FOUND', message: `the fake model server has no ${method} ${path}` } });
  }

  // A WebSocket (codex tries one on /v1/responses first): refused, so the agent uses HTTP.
  server.on('upgrade', (req: IncomingMessage, socket: Socket) => {
    requests.push(`UPGRADE ${req.url ?? '?'}`);
    const text = JSON.stringify({ error: { message: 'no websocket here' } });
    socket.end(`HTTP/1.1 404 Not Found\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(text)}\r\nconnection: close\r\n\r\n${text}`);
  });
  // An HTTPS tunnel to anywhere: refused (this is where escaping traffic would show).
  server.on('connect', (req: IncomingMessage, socket: Socket) => {
    requests.push(`CONNECT ${req.url ?? '?'}`);
    socket.end('HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\nconnection: close\r\n\r\n');
  });
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  server.on('clientError', (_error, socket: Socket) => socket.destroy());

  await new Promise<void>((done, fail) => {
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', fail);
      done();
    });
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((done) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => done());
      }),
  };
}

// ---------------------------------------------------------------------------------------
// Anthropic

async function anthropicMessage(res: ServerResponse, body: unknown, id: string): Promise<void> {
  const request = asRecord(body);
  const model = typeof request.model === 'string' ? request.model : 'claude-fake';
  const text = answerFor(lastAnthropicUserText(request.messages));
  const words = splitWords(text);
  const inputTokens = estimateTokens(body);
  const usage = { input_tokens: inputTokens, output_tokens: words.length, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
  if (request.stream !== true) {
    sendJson(res, 200, { id: `msg_${id}`, type: 'message', role: 'assistant', model, content: [{ type: 'text', text }], stop_reason: 'end_turn', stop_sequence: null, usage });
    return;
  }
  const sse = openSse(res);
  sse.event('message_start', {
    type: 'message_start',
    message: { id: `msg_${id}`, type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage: { ...usage, output_tokens: 1 } },
  });
  sse.event('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } });
  for (const word of words) {
    await delay(CHUNK_DELAY_MS);
    sse.event('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: word } });
  }
  sse.event('content_block_stop', { type: 'content_block_stop', index: 0 });
  sse.event('message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: words.length } });
  sse.event('message_stop', { type: 'message_stop' });
  sse.end();
}

/** The text of the last user message, past Claude Code's `<system-reminder>` blocks. */
function lastAnthropicUserText(messages: unknown): string {
  if (!Array.isArray(messages)) return '';
  for (const message of [...messages].reverse()) {
    const { role, content } = asRecord(message);
    if (role !== 'user') continue;
    if (typeof content === 'string') return content;
    if (!Array.isArray(content)) return '';
    const texts = content.map((block) => asRecord(block)).filter((block) => block.type === 'text' && typeof block.text === 'string').map((block) => block.text as string);
    const plain = texts.filter((text) => !text.trimStart().startsWith('<'));
    return (plain.at(-1) ?? texts.at(-1) ?? '').trim();
  }
  return '';
}

// ---------------------------------------------------------------------------------------
// OpenAI Responses

async function openaiResponse(res: ServerResponse, body: unknown, id: string): Promise<void> {
  const request = asRecord(body);
  const model = typeof request.model === 'string' ? request.model : 'gpt-fake';
  const text = answerFor(lastOpenAiUserText(request.input));
  const words = splitWords(text);
  const created = Math.floor(Date.now() / 1000);
  const inputTokens = estimateTokens(body);
  const usage = { input_tokens: inputTokens, input_tokens_details: { cached_tokens: 0 }, output_tokens: words.length, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: inputTokens + words.length };
  const itemId = `msg_${id}`;
  const part = (full: string) => ({ type: 'output_text', text: full, annotations: [] });
  const item = (status: string, content: unknown[]) => ({ id: itemId, type: 'message', status, role: 'assistant', content });
  const response = (status: string, output: unknown[], extra: Record<string, unknown> = {}) => ({
    id: `resp_${id}`,
    object: 'response',
    created_at: created,
    status,
    model,
    output,
    ...extra,
  });
  if (request.stream !== true) {
    sendJson(res, 200, response('completed', [item('completed', [part(text)])], { usage, output_text: text }));
    return;
  }
  const sse = openSse(res);
  let n = 0;
  const send = (type: string, data: Record<string, unknown>) => sse.event(type, { type, sequence_number: n++, ...data });
  send('response.created', { response: response('in_progress', []) });
  send('response.in_progress', { response: response('in_progress', []) });
  send('response.output_item.added', { output_index: 0, item: item('in_progress', []) });
  send('response.content_part.added', { item_id: itemId, output_index: 0, content_index: 0, part: part('') });
  for (const word of words) {
    await delay(CHUNK_DELAY_MS);
    send('response.output_text.delta', { item_id: itemId, output_index: 0, content_index: 0, delta: word, logprobs: [] });
  }
  send('response.output_text.done', { item_id: itemId, output_index: 0, content_index: 0, text, logprobs: [] });
  send('response.content_part.done', { item_id: itemId, output_index: 0, content_index: 0, part: part(text) });
  send('response.output_item.done', { output_index: 0, item: item('completed', [part(text)]) });
  send('response.completed', { response: response('completed', [item('completed', [part(text)])], { usage }) });
  sse.end();
}

/** The text of the last user input item (codex sends its context as earlier user items). */
function lastOpenAiUserText(input: unknown): string {
  if (typeof input === 'string') return input;
  if (!Array.isArray(input)) return '';
  for (const entry of [...input].reverse()) {
    const { role, content, type } = asRecord(entry);
    if (role !== 'user' || (type !== undefined && type !== 'message')) continue;
    if (typeof content === 'string') return content;
    if (!Array.isArray(content)) continue;
    const texts = content.map((block) => asRecord(block)).filter((block) => typeof block.text === 'string').map((block) => block.text as string);
    const text = (texts.at(-1) ?? '').trim();
    if (text !== '') return text;
  }
  return '';
}

// ---------------------------------------------------------------------------------------
// Gemini

async function geminiStream(res: ServerResponse, body: unknown, model: string): Promise<void> {
  const words = splitWords(geminiAnswer(body));
  const sse = openSse(res);
  for (const [index, word] of words.entries()) {
    if (index > 0) await delay(CHUNK_DELAY_MS);
    sse.data(geminiChunk(word, model, index === words.length - 1, body));
  }
  sse.end();
}

function geminiChunk(text: string, model: string, last: boolean, body: unknown) {
  const prompt = estimateTokens(body);
  const out = splitWords(text).length;
  return {
    candidates: [{ content: { role: 'model', parts: [{ text }] }, index: 0, ...(last ? { finishReason: 'STOP' } : {}) }],
    ...(last ? { usageMetadata: { promptTokenCount: prompt, candidatesTokenCount: out, totalTokenCount: prompt + out } } : {}),
    modelVersion: model,
    responseId: `fake-${Date.now().toString(36)}`,
  };
}

/** The answer to a Gemini request: JSON from the response schema when JSON is asked for, else the greeting. */
function geminiAnswer(body: unknown): string {
  const request = asRecord(body);
  const config = asRecord(request.generationConfig ?? request.config);
  if (config.responseMimeType === 'application/json') {
    return JSON.stringify(jsonFromSchema(config.responseJsonSchema ?? config.responseSchema ?? config._responseJsonSchema));
  }
  return answerFor(lastGeminiUserText(request.contents));
}

function lastGeminiUserText(contents: unknown): string {
  if (!Array.isArray(contents)) return '';
  for (const entry of [...contents].reverse()) {
    const { role, parts } = asRecord(entry);
    if (role !== undefined && role !== 'user') continue;
    if (!Array.isArray(parts)) continue;
    const texts = parts.map((part) => asRecord(part)).filter((part) => typeof part.text === 'string' && part.thought !== true).map((part) => part.text as string);
    const plain = texts.filter((text) => !text.trimStart().startsWith('<'));
    const text = (plain.at(-1) ?? texts.at(-1) ?? '').trim();
    if (text !== '') return text;
  }
  return '';
}

/**
 * A small object that satisfies a (JSON or OpenAPI-style) response schema: the known
 * side calls of gemini-cli get their expected answers (the next-speaker check: the user; the
 * routers: flash, complexity 10 of 1–100), any other field a plausible value.
 */
function jsonFromSchema(schema: unknown): Record<string, unknown> {
  const known: Record<string, unknown> = { next_speaker: 'user', reasoning: 'done', model_choice: 'flash', complexity_score: 10, complexity_reasoning: 'A trivial request.' };
  const props = asRecord(asRecord(schema).properties);
  const out: Record<string, unknown> = Object.keys(props).length === 0 ? { next_speaker: 'user', reasoning: 'done' } : {};
  for (const [key, value] of Object.entries(props)) {
    const prop = asRecord(value);
    const options = Array.isArray(prop.enum) ? prop.enum : undefined;
    if (key in known && (!options || options.includes(known[key]))) out[key] = known[key];
    else if (options && options.length > 0) out[key] = options[0];
    else {
      const type = String(prop.type ?? 'string').toLowerCase();
      const least = typeof prop.minimum === 'number' ? prop.minimum : 1;
      out[key] = type === 'boolean' ? false : type === 'number' || type === 'integer' ? least : type === 'array' ? [] : type === 'object' ? {} : 'done';
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------

function answerFor(userText: string): string {
  const said = userText.replace(/\s+/g, ' ').trim();
  return said === '' ? GREETING : `${GREETING} You said: ${said.length > 200 ? `${said.slice(0, 200)}…` : said}`;
}

/** Words with their following space, so that the chunks join to the text. */
function splitWords(text: string): string[] {
  return text.match(/\S+\s*/g) ?? [text];
}

function estimateTokens(body: unknown): number {
  return Math.max(1, Math.ceil(JSON.stringify(body ?? '').length / 4));
}

function asRecord(value: unknown): Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  if (text === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function sendJson(res: ServerResponse, status: number, value: unknown): void {
  const text = JSON.stringify(value);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function openSse(res: ServerResponse) {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
  res.flushHeaders();
  return {
    event: (type: string, data: unknown) => res.write(`event: ${type}\ndata: ${JSON.stringify(data)}\n\n`),
    data: (data: unknown) => res.write(`data: ${JSON.stringify(data)}\n\n`),
    end: () => res.end(),
  };
}
