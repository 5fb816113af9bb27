/**
 * The daemon's API over the whole protocol, on real fixture agents: what the handshake said
 * (agentInfo, capabilities, auth methods), session rows with the session's state (modes,
 * config options, commands, plan, usage, title, models), the controls (mode, config option,
 * model) and their refusals, prompts of content blocks checked against the agent's
 * `promptCapabilities`, and the agent's own sessions (session/list, resume or load,
 * session/delete). Elicitations, per-session inputs, the new event topics and terminals:
 * daemon-protocol-asks.test.ts.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDaemon, type Daemon } from '../../daemon/daemon.js';
import { createSupervisor } from '../../index.js';
import { call, expectOnlyTypedRefusals, openEvents, streamLines, type Loose } from '../support/daemon-http.js';
import { command, fixtureSpec } from '../support/real-agents.js';

let daemon: Daemon;
let stateDir: string;
let agentState: string;

beforeAll(async () => {
  stateDir = mkdtempSync(join(tmpdir(), 'agentvisor-daemon-protocol-'));
  agentState = join(stateDir, 'features-sessions.json');
  daemon = await startDaemon({
    supervisor: {
      agents: {
        features: fixtureSpec(['--acp-features', '--state-file', agentState]),
        models: fixtureSpec(['--acp-features', '--unstable-models']),
        plain: fixtureSpec(),
      },
      stateDir,
    },
    port: 0,
  });
});

afterAll(async () => {
  await daemon?.close();
  rmSync(stateDir, { recursive: true, force: true });
});

/** Opens an unnamed session of `agent` and answers its row. */
async function openSession(agent: string, body: Record<string, unknown> = {}): Promise<Loose> {
  const opened = await call(daemon, 'POST', '/v1/sessions', { body: { agent, ...body } });
  expect(opened.status, opened.text).toBe(201);
  return opened.json;
}

/** Every refusal a case list expects: the status and the typed kind. */
async function expectRefusals(cases: Array<[string, string, unknown, number, string]>): Promise<void> {
  for (const [method, path, body, status, kind] of cases) {
    const answer = await call(daemon, method, path, body === undefined ? {} : { body });
    expect({ path, body, status: answer.status, kind: answer.json?.error?.kind }).toEqual({ path, body, status, kind });
    expect(typeof answer.json.error.message).toBe('string');
  }
}

describe('bad input on the new routes', () => {
  it('never answers random bodies with a 5xx, and keeps serving', async () => {
    const id = (await openSession('features')).sessionId;
    const routes = [
      `/v1/sessions/${id}/mode`,
      `/v1/sessions/${id}/config`,
      `/v1/sessions/${id}/model`,
      `/v1/sessions/${id}/prompt`,
      '/v1/prompt',
      '/v1/sessions',
      '/v1/elicitations/x',
      '/v1/agents/features/sessions/x/resume',
      // Not .../delete: `{}` is a good body there, and the agent deletes an unknown id without complaint.
    ];
    await expectOnlyTypedRefusals(daemon, routes, 80);
  });

  it('answers a huge body 413 and a wrong type 400 with its issues on each new route', async () => {
    const id = (await openSession('features')).sessionId;
    const huge = 'x'.repeat(1024 * 1024);
    const routes: Array<[string, Record<string, unknown>, string]> = [
      [`/v1/sessions/${id}/mode`, { modeId: 1 }, 'modeId'],
      [`/v1/sessions/${id}/config`, { configId: 'fast', value: null }, 'value'],
      [`/v1/sessions/${id}/model`, { modelId: [] }, 'modelId'],
      ['/v1/agents/features/sessions/x/resume', { cwd: 5 }, 'cwd'],
      ['/v1/elicitations/x', { action: 'accept', content: { a: null } }, 'content.a'],
    ];
    for (const [path, wrong, issue] of routes) {
      const big = await call(daemon, 'POST', path, { body: { padding: huge } });
      expect({ path, status: big.status, kind: big.json.error.kind }).toEqual({ path, status: 413, kind: 'payload_too_large' });
      const typed = await call(daemon, 'POST', path, { body: wrong });
      expect({ path, status: typed.status, kind: typed.json.error.kind }).toEqual({ path, status: 400, kind: 'invalid_request' });
      expect(typed.json.error.issues.map((entry: { path: string }) => entry.path)).toContain(issue);
    }
  });
});

describe('what the handshake said', () => {
  it('GET /v1/agents/:name carries agentInfo, agentCapabilities and authMethods once connected, null before', async () => {
    const idle = await call(daemon, 'GET', '/v1/agents/plain');
    expect(idle.json).toMatchObject({ name: 'plain', status: 'idle', agentInfo: null, agentCapabilities: null, authMethods: null });
    await call(daemon, 'POST', '/v1/agents/features/start');
    const row = await call(daemon, 'GET', '/v1/agents/features');
    expect(row.json.agentInfo).toMatchObject({ name: 'fixture-agent', version: '0.1.0' });
    expect(row.json.agentCapabilities).toMatchObject({
      loadSession: true,
      promptCapabilities: { image: true, audio: true, embeddedContext: true },
      mcpCapabilities: { http: true, sse: false },
      sessionCapabilities: { list: {}, resume: {}, close: {}, delete: {}, additionalDirectories: {} },
    });
    expect(row.json.authMethods).toEqual([]);
    const described = await call(daemon, 'GET', '/v1/agents/features/describe');
    expect(described.json.agent.agentInfo).toEqual(row.json.agentInfo);
  });
});

describe('session rows with the session state', () => {
  it('a new session shows its modes, config options and commands; state updates fill plan, usage, title; a closed one falls back to the store', async () => {
    const events = await openEvents(daemon, 'topics=sessions');
    const row = await openSession('features');
    expect(row).toMatchObject({
      agent: 'features',
      live: true,
      modes: { currentModeId: 'default', availableModes: expect.arrayContaining([expect.objectContaining({ id: 'plan' })]) },
      plan: null,
      usage: null,
      title: null,
      models: null,
    });
    expect(row.configOptions.map((option: { id: string }) => option.id)).toEqual(['mode', 'model', 'fast']);
    const id = row.sessionId;
    // The agent sends its commands right after the session/new answer.
    await expect.poll(async () => (await call(daemon, 'GET', `/v1/sessions/${id}`)).json.commands.map((c: { name: string }) => c.name)).toEqual(['review', 'explain']);

    const turn = await call(daemon, 'POST', `/v1/sessions/${id}/prompt`, { body: { text: command({ op: 'state-updates' }) } });
    expect(turn.json.text).toBe('state:done');
    const updated = (await call(daemon, 'GET', `/v1/sessions/${id}`)).json;
    expect(updated).toMatchObject({
      title: 'Fixture title',
      plan: [expect.objectContaining({ content: 'Outline the change', status: 'completed' }), expect.objectContaining({ content: 'Apply the change' })],
      usage: { used: 1200, size: 200000, cost: { amount: 0.25, currency: 'USD' } },
      commands: [expect.objectContaining({ name: 'later' })],
      modes: { currentModeId: 'plan' },
    });
    expect(updated.configOptions.find((option: { id: string }) => option.id === 'model').currentValue).toBe('fixture-large');
    // Lists carry the same fields.
    const listed = (await call(daemon, 'GET', '/v1/sessions?agent=features')).json.sessions.find((session: { sessionId: string }) => session.sessionId === id);
    expect(listed).toMatchObject({ title: 'Fixture title', usage: { used: 1200 }, modes: { currentModeId: 'plan' } });

    // Each change is a session:state message on topic `sessions`.
    await expect
      .poll(() => events.messages.filter((message) => message.type === 'session:state' && message.sessionId === id).map((message) => message.field))
      .toEqual(expect.arrayContaining(['modes', 'configOptions', 'commands', 'plan', 'usage', 'title']));
    const usage = events.messages.find((message) => message.type === 'session:state' && message.sessionId === id && message.field === 'usage');
    expect(usage).toMatchObject({ agent: 'features', value: { used: 1200, size: 200000 } });
    events.close();

    // ?open=1: the open ones only, with the same fields.
    const open = (await call(daemon, 'GET', '/v1/sessions?agent=features&open=1')).json.sessions;
    expect(open.find((session: { sessionId: string }) => session.sessionId === id)).toMatchObject({ live: true, title: 'Fixture title', usage: { used: 1200 } });
    expect(open.every((session: { live: boolean; agent: string }) => session.live && session.agent === 'features')).toBe(true);

    const closed = await call(daemon, 'POST', `/v1/sessions/${id}/close`);
    expect(closed.json).toMatchObject({ live: false, modes: null, configOptions: [], commands: [], plan: null, usage: null, models: null, title: 'Fixture title' });
    expect((await call(daemon, 'GET', '/v1/sessions?open=1')).json.sessions.map((session: { sessionId: string }) => session.sessionId)).not.toContain(id);
    expect((await call(daemon, 'GET', '/v1/sessions?agent=features')).json.sessions.map((session: { sessionId: string }) => session.sessionId)).toContain(id);
    expect((await call(daemon, 'GET', '/v1/sessions?open=yes')).status).toBe(400);
  });

  it('a session of an agent with the unstable models shows them', async () => {
    const row = await openSession('models');
    expect(row.models).toMatchObject({ currentModelId: 'fixture-small', availableModels: [expect.objectContaining({ modelId: 'fixture-small' }), expect.objectContaining({ modelId: 'fixture-large' })] });
  });
});

describe('controls', () => {
  it('sets the mode, a config option (select and boolean) and the model, answering the updated row', async () => {
    const id = (await openSession('features')).sessionId;
    const mode = await call(daemon, 'POST', `/v1/sessions/${id}/mode`, { body: { modeId: 'plan' } });
    expect(mode.status).toBe(200);
    expect(mode.json).toMatchObject({ sessionId: id, modes: { currentModeId: 'plan' } });
    const fast = await call(daemon, 'POST', `/v1/sessions/${id}/config`, { body: { configId: 'fast', value: true } });
    expect(fast.json.configOptions.find((option: { id: string }) => option.id === 'fast').currentValue).toBe(true);
    const model = await call(daemon, 'POST', `/v1/sessions/${id}/model`, { body: { modelId: 'fixture-large' } });
    expect(model.json.configOptions.find((option: { id: string }) => option.id === 'model').currentValue).toBe('fixture-large');
    const select = await call(daemon, 'POST', `/v1/sessions/${id}/config`, { body: { configId: 'mode', value: 'yolo' } });
    expect(select.json.modes.currentModeId).toBe('yolo');
    // What the agent received, in order.
    const received = await call(daemon, 'POST', `/v1/sessions/${id}/prompt`, { body: { text: command({ op: 'controls-received' }) } });
    expect(received.json.text).toContain('"set_mode plan","set_config_option fast=true","set_config_option model=fixture-large","set_config_option mode=yolo"');

    const unstable = (await openSession('models')).sessionId;
    const chosen = await call(daemon, 'POST', `/v1/sessions/${unstable}/model`, { body: { modelId: 'fixture-large' } });
    expect(chosen.json.models.currentModelId).toBe('fixture-large');
  });

  it('refuses what the session does not offer, what the agent refuses, bad bodies and unknown sessions, typed', async () => {
    const id = (await openSession('features')).sessionId;
    const plainId = (await openSession('plain')).sessionId;
    const unstable = (await openSession('models')).sessionId;
    await expectRefusals([
      ['POST', `/v1/sessions/${id}/mode`, { modeId: 'nope' }, 400, 'invalid_options'],
      ['POST', `/v1/sessions/${id}/mode`, { modeId: 'locked' }, 424, 'protocol_error'], // the agent refuses
      ['POST', `/v1/sessions/${id}/mode`, { modeId: 7 }, 400, 'invalid_request'],
      ['POST', `/v1/sessions/${id}/mode`, { modeId: 'plan', extra: 1 }, 400, 'invalid_request'],
      ['POST', `/v1/sessions/${id}/mode`, undefined, 400, 'invalid_request'],
      ['POST', `/v1/sessions/${id}/config`, { configId: 'fast', value: 'yes' }, 400, 'invalid_options'],
      ['POST', `/v1/sessions/${id}/config`, { configId: 'model', value: 'fixture-huge' }, 400, 'invalid_options'],
      ['POST', `/v1/sessions/${id}/config`, { configId: 'nope', value: true }, 400, 'invalid_options'],
      ['POST', `/v1/sessions/${id}/config`, { configId: 'model', value: 'fixture-forbidden' }, 424, 'protocol_error'],
      ['POST', `/v1/sessions/${id}/config`, { configId: 'fast', value: 3 }, 400, 'invalid_request'],
      ['POST', `/v1/sessions/${id}/config`, { configId: 'fast' }, 400, 'invalid_request'],
      ['POST', `/v1/sessions/${id}/model`, { modelId: 'fixture-huge' }, 400, 'invalid_options'],
      ['POST', `/v1/sessions/${id}/model`, { model: 'fixture-large' }, 400, 'invalid_request'],
      ['POST', `/v1/sessions/${unstable}/model`, { modelId: 'fixture-huge' }, 400, 'invalid_options'],
      ['POST', `/v1/sessions/${plainId}/mode`, { modeId: 'plan' }, 422, 'unsupported'],
      ['POST', `/v1/sessions/${plainId}/config`, { configId: 'fast', value: true }, 422, 'unsupported'],
      ['POST', `/v1/sessions/${plainId}/model`, { modelId: 'x' }, 422, 'unsupported'],
      ['POST', '/v1/sessions/no-such-session/mode', { modeId: 'plan' }, 404, 'session_not_found'],
      ['POST', '/v1/sessions/no-such-session/config', { configId: 'fast', value: true }, 404, 'session_not_found'],
      ['POST', '/v1/sessions/no-such-session/model', { modelId: 'x' }, 404, 'session_not_found'],
    ]);
    // Nothing was changed by the refusals.
    const row = (await call(daemon, 'GET', `/v1/sessions/${id}`)).json;
    expect(row.modes.currentModeId).toBe('default');
    expect(row.configOptions.find((option: { id: string }) => option.id === 'model').currentValue).toBe('fixture-small');
  });
});

/** `count` bytes as base64. */
const base64Of = (count: number) => Buffer.alloc(count, 7).toString('base64');

describe('prompts of content blocks', () => {
  const blocks = [
    { type: 'text', text: command({ op: 'describe-prompt' }) },
    { type: 'image', data: base64Of(10), mimeType: 'image/png' },
    { type: 'audio', data: base64Of(6), mimeType: 'audio/wav' },
    { type: 'resource', resource: { uri: 'file:///notes.txt', text: 'hello', mimeType: 'text/plain' } },
    { type: 'resource', resource: { uri: 'file:///blob.bin', blob: base64Of(3) } },
    { type: 'resource_link', uri: 'file:///big.log', name: 'big.log', mimeType: 'text/plain', size: 5 },
  ];
  const described = [
    { type: 'image', mimeType: 'image/png', bytes: 10 },
    { type: 'audio', mimeType: 'audio/wav', bytes: 6 },
    { type: 'resource', mimeType: 'text/plain', uri: 'file:///notes.txt', bytes: 5 },
    { type: 'resource', uri: 'file:///blob.bin', bytes: 3 },
    { type: 'resource_link', mimeType: 'text/plain', uri: 'file:///big.log' },
  ];

  it('sends every block type to an agent that takes them, plain and streamed', async () => {
    const id = (await openSession('features')).sessionId;
    const plain = await call(daemon, 'POST', `/v1/sessions/${id}/prompt`, { body: { content: blocks } });
    expect(plain.status, plain.text).toBe(200);
    const said = JSON.parse(/prompt:(\[.*\])meta:/s.exec(plain.json.text)![1]!);
    expect(said).toEqual(described.map((block) => expect.objectContaining(block)));
    const streamed = await streamLines(daemon, 'POST', '/v1/prompt', { agent: 'features', session: 'blocks', content: blocks });
    expect(streamed.map((line) => line.type)).toEqual(expect.arrayContaining(['session', 'started', 'done']));
    expect(streamed.at(-1).text).toContain('"type":"image"');
    // The transcript keeps the prompt as sent.
    const history = await call(daemon, 'GET', `/v1/sessions/${id}/history?limit=1000`);
    const prompt = history.json.entries.find((entry: { kind: string }) => entry.kind === 'prompt');
    expect(prompt.data.prompt.map((block: { type: string }) => block.type)).toEqual(blocks.map((block) => block.type));
  });

  it('refuses blocks the agent does not take before anything is opened or sent (422), and takes text and links', async () => {
    const before = (await call(daemon, 'GET', '/v1/sessions?agent=plain')).json.sessions.length;
    for (const block of blocks.slice(1, 5)) {
      const refused = await call(daemon, 'POST', '/v1/prompt', { body: { agent: 'plain', session: 'refused', content: [{ type: 'text', text: 'look' }, block] } });
      expect({ type: block.type, status: refused.status, kind: refused.json.error.kind }).toEqual({ type: block.type, status: 422, kind: 'unsupported' });
      const streamed = await call(daemon, 'POST', '/v1/prompt', { body: { agent: 'plain', session: 'refused', content: [block] }, onLine: () => {} });
      expect(streamed.status).toBe(422);
    }
    // Nothing was opened for the refused prompts.
    expect((await call(daemon, 'GET', '/v1/sessions?agent=plain')).json.sessions.length).toBe(before);
    const id = (await openSession('plain')).sessionId;
    const refused = await call(daemon, 'POST', `/v1/sessions/${id}/prompt`, { body: { content: [blocks[1]] } });
    expect(refused.status).toBe(422);
    expect((await call(daemon, 'GET', `/v1/sessions/${id}/history?limit=1000`)).json.entries.filter((entry: { kind: string }) => entry.kind === 'prompt')).toEqual([]);
    const taken = await call(daemon, 'POST', `/v1/sessions/${id}/prompt`, { body: { content: [{ type: 'text', text: 'see ' }, blocks[5]] } });
    expect(taken.json).toMatchObject({ stopReason: 'end_turn', text: 'see ' });
  });

  it('refuses malformed content with the issues, a body with both or neither of text and content, and a body over 1 MiB', async () => {
    const id = (await openSession('features')).sessionId;
    const cases: Array<[unknown, string]> = [
      [{ text: 'hi', content: [{ type: 'text', text: 'hi' }] }, 'content'],
      [{}, '(root)'],
      [{ content: [] }, 'content'],
      [{ content: [{ type: 'image', data: 'not base64!', mimeType: 'image/png' }] }, 'content.0.data'],
      [{ content: [{ type: 'image', data: 'QQ=', mimeType: 'image/png' }] }, 'content.0.data'],
      [{ content: [{ type: 'image', data: base64Of(3) }] }, 'content.0.mimeType'],
      [{ content: [{ type: 'image', data: base64Of(3), mimeType: 'png' }] }, 'content.0.mimeType'],
      [{ content: [{ type: 'video', data: base64Of(3), mimeType: 'video/mp4' }] }, 'content.0.type'],
      [{ content: [{ type: 'text', text: 'hi', colour: 'red' }] }, 'content.0'],
      [{ content: [{ type: 'resource', resource: { uri: 'file:///x', text: 'a', blob: 'QUJD' } }] }, 'content.0.resource'],
      [{ content: [{ type: 'resource_link', uri: 'file:///x' }] }, 'content.0.name'],
      [{ content: [{ type: 'resource_link', uri: 'file:///x', name: 'x', size: -1 }] }, 'content.0.size'],
      [{ content: { type: 'text', text: 'hi' } }, 'content'],
    ];
    for (const [body, path] of cases) {
      const answer = await call(daemon, 'POST', `/v1/sessions/${id}/prompt`, { body });
      expect({ body, status: answer.status, kind: answer.json.error.kind }).toEqual({ body, status: 400, kind: 'invalid_request' });
      expect(answer.json.error.issues.map((issue: { path: string }) => issue.path), JSON.stringify(body)).toContain(path);
      const global = await call(daemon, 'POST', '/v1/prompt', { body: { agent: 'features', ...(body as object) } });
      expect(global.status).toBe(400);
    }
    const big = await call(daemon, 'POST', `/v1/sessions/${id}/prompt`, { body: { content: [{ type: 'image', data: base64Of(800 * 1024), mimeType: 'image/png' }] } });
    expect(big.status).toBe(413);
    expect(big.json.error.kind).toBe('payload_too_large');
    // Nothing of it reached the agent: the session takes the next prompt.
    expect((await call(daemon, 'POST', `/v1/sessions/${id}/prompt`, { body: { text: 'still here' } })).json.text).toBe('still here');
  });
});

describe("the agent's own sessions", () => {
  it('lists them page by page (session/list), filtered by cwd', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'agentvisor-listed-'));
    try {
      const ids = [];
      for (let index = 0; index < 3; index++) ids.push((await openSession('features', { cwd: dir })).sessionId);
      const first = await call(daemon, 'GET', `/v1/agents/features/sessions?cwd=${encodeURIComponent(dir)}`);
      expect(first.status).toBe(200);
      expect(first.json.sessions).toHaveLength(2);
      expect(first.json.nextCursor).toEqual(expect.any(String));
      const second = await call(daemon, 'GET', `/v1/agents/features/sessions?cwd=${encodeURIComponent(dir)}&cursor=${encodeURIComponent(first.json.nextCursor)}`);
      expect(second.json).toMatchObject({ sessions: [expect.objectContaining({ cwd: dir })], nextCursor: null });
      expect([...first.json.sessions, ...second.json.sessions].map((info: { sessionId: string }) => info.sessionId).sort()).toEqual(ids.sort());
      const all = await call(daemon, 'GET', '/v1/agents/features/sessions');
      expect(all.json.sessions.length).toBe(2);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    await expectRefusals([
      ['GET', '/v1/agents/plain/sessions', undefined, 422, 'unsupported'],
      ['GET', '/v1/agents/nobody/sessions', undefined, 404, 'unknown_agent'],
      ['GET', '/v1/agents/features/sessions?cwd=relative/dir', undefined, 400, 'invalid_options'],
      ['GET', '/v1/agents/features/sessions?colour=red', undefined, 400, 'invalid_request'],
      ['GET', '/v1/agents/features/sessions?cursor=made-up', undefined, 424, 'protocol_error'], // the agent refuses a cursor it did not hand out
      ['POST', '/v1/agents/features/sessions', {}, 405, 'method_not_allowed'],
    ]);
  });

  it('opens one the daemon never saw (session/load, in the cwd given), under a name; one it stores, in its own directory', async () => {
    // A session the agent keeps (its state file) that another client made: not in the daemon's store.
    const dir = mkdtempSync(join(tmpdir(), 'agentvisor-foreign-'));
    const other = createSupervisor({ agents: { features: fixtureSpec(['--acp-features', '--state-file', agentState]) }, stateDir: false, handleSignals: false });
    let foreign: string;
    try {
      const session = await other.newSession('features', { cwd: dir });
      foreign = session.id;
      await session.prompt('made elsewhere');
    } finally {
      await other.shutdown();
    }
    await expectRefusals([
      ['POST', `/v1/agents/features/sessions/${foreign}/resume`, {}, 400, 'invalid_options'], // not stored here: its cwd is needed
      ['POST', `/v1/agents/features/sessions/${foreign}/resume`, { cwd: 'relative' }, 400, 'invalid_options'],
      ['POST', `/v1/agents/features/sessions/${foreign}/resume`, { cwd: dir, colour: 'red' }, 400, 'invalid_request'],
      ['POST', `/v1/agents/features/sessions/${foreign}/resume`, { name: 7 }, 400, 'invalid_request'],
      ['POST', `/v1/agents/nobody/sessions/${foreign}/resume`, { cwd: dir }, 404, 'unknown_agent'],
      ['POST', '/v1/agents/features/sessions/fixture-unknown/resume', { cwd: dir }, 404, 'session_not_found'],
      ['POST', '/v1/agents/plain/sessions/anything/resume', { cwd: dir }, 422, 'not_supported'],
    ]);
    const adopted = await call(daemon, 'POST', `/v1/agents/features/sessions/${foreign}/resume`, { body: { cwd: dir, name: 'adopted' } });
    expect(adopted.status, adopted.text).toBe(201);
    expect(adopted.json).toMatchObject({ agent: 'features', sessionId: foreign, cwd: dir, name: 'adopted', live: true, modes: { currentModeId: 'default' } });
    // Its history was replayed into the daemon's store.
    const history = await call(daemon, 'GET', `/v1/sessions/${foreign}/history?limit=1000`);
    expect(JSON.stringify(history.json.entries)).toContain('made elsewhere');
    // The name holds it, as `prompt -s adopted` would.
    const prompted = await streamLines(daemon, 'POST', '/v1/prompt', { agent: 'features', session: 'adopted', text: 'and here' });
    expect(prompted[0]).toMatchObject({ sessionId: foreign, opened: 'existing' });
    const again = await call(daemon, 'POST', `/v1/agents/features/sessions/${foreign}/resume`, { body: {} });
    expect(again.status).toBe(200);
    rmSync(dir, { recursive: true, force: true });

    // One the daemon stores, closed: resumed in its stored directory without a cwd.
    const stored = (await openSession('features')).sessionId;
    await call(daemon, 'POST', `/v1/sessions/${stored}/close`);
    const resumed = await call(daemon, 'POST', `/v1/agents/features/sessions/${stored}/resume`);
    expect(resumed.status).toBe(201);
    expect(resumed.json).toMatchObject({ sessionId: stored, live: true, name: null });
  });

  it('deletes one (session/delete): the daemon lets it go and the agent no longer lists it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'agentvisor-deleted-'));
    try {
      const id = (await openSession('features', { cwd: dir })).sessionId;
      const deleted = await call(daemon, 'POST', `/v1/agents/features/sessions/${id}/delete`);
      expect(deleted.status).toBe(200);
      expect(deleted.json).toEqual({ agent: 'features', sessionId: id, deleted: true });
      expect((await call(daemon, 'GET', `/v1/sessions/${id}`)).json).toMatchObject({ live: false });
      const listed = await call(daemon, 'GET', `/v1/agents/features/sessions?cwd=${encodeURIComponent(dir)}`);
      expect(listed.json.sessions).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('forgets the name a deleted session was held under: the next open under it is a new session, with no notice', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'agentvisor-deleted-named-'));
    try {
      const named = await openSession('features', { cwd: dir, name: 'to-delete' });
      expect(named.name).toBe('to-delete');
      expect((await call(daemon, 'POST', `/v1/agents/features/sessions/${named.sessionId}/delete`)).status).toBe(200);
      expect((await call(daemon, 'GET', `/v1/sessions/${named.sessionId}`)).json).toMatchObject({ name: null });
      const again = await openSession('features', { cwd: dir, name: 'to-delete' });
      expect(again.sessionId).not.toBe(named.sessionId);
      expect(again).toMatchObject({ name: 'to-delete', live: true });
      expect(again.notice).toBeUndefined();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    await expectRefusals([
      ['POST', '/v1/agents/plain/sessions/anything/delete', undefined, 422, 'unsupported'],
      ['POST', '/v1/agents/nobody/sessions/anything/delete', undefined, 404, 'unknown_agent'],
      ['POST', '/v1/agents/features/sessions/anything/delete', { force: true }, 400, 'invalid_request'],
      ['GET', '/v1/agents/features/sessions/anything/delete', undefined, 405, 'method_not_allowed'],
    ]);
  });
});
