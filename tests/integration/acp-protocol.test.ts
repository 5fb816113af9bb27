/**
 * The rest of the protocol on real fixture-agent processes: rich prompts and files, the
 * agent's own session history (list, resume, close, delete), elicitation supervised like
 * permissions, extensions both ways, `_meta`, update kinds the schema does not know, and
 * the detail of tool calls (diffs, terminal output). On an agent that advertises all of it
 * (`--acp-features`) and one that advertises none.
 */
import { writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { SimulatedClock } from 'xstate';
import { AgentError, createSupervisor, type ElicitationRequest, type Session, type SessionUpdate, type SupervisorOptions } from '../../index.js';
import { collectChunks, command, eventually, fixtureSpec, useRealAgentEnvironment } from '../support/real-agents.js';

const env = useRealAgentEnvironment();
const fullAgent = (flags: string[] = []) => fixtureSpec(['--acp-features', ...flags]);

async function fullSession(options: SupervisorOptions = {}, flags: string[] = []): Promise<Session> {
  env.supervisor = createSupervisor({ agents: { full: fullAgent(flags) }, stateDir: env.files.path('state'), ...options });
  return env.supervisor.newSession('full', { cwd: env.files.dir });
}

async function kindOf(promise: Promise<unknown>): Promise<string> {
  return promise.then(
    () => 'resolved',
    (error: unknown) => (error instanceof AgentError ? error.kind : `not an AgentError: ${String(error)}`),
  );
}

/** The text of one prompt turn's chunks. */
async function reply(session: Session, prompt: Parameters<Session['prompt']>[0], options?: Parameters<Session['prompt']>[1]): Promise<string> {
  const received = collectChunks(session);
  await session.prompt(prompt, options);
  return received.text();
}

const png = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex');

describe('rich prompts', () => {
  it('sends every content block type the agent advertises, with _meta on the request', async () => {
    const session = await fullSession();
    const text = await reply(
      session,
      [
        { type: 'text', text: command({ op: 'describe-prompt' }) },
        { type: 'image', mimeType: 'image/png', data: png.toString('base64') },
        { type: 'audio', mimeType: 'audio/wav', data: Buffer.from('RIFF').toString('base64') },
        { type: 'resource', resource: { uri: 'file:///notes.md', mimeType: 'text/markdown', text: 'hello' } },
        { type: 'resource_link', uri: 'file:///big.log', name: 'big.log' },
      ],
      { meta: { trace: 'abc' } },
    );
    const [prompt, meta] = text.split('meta:');
    expect(JSON.parse(prompt!.replace(/^prompt:/, ''))).toEqual([
      { type: 'image', mimeType: 'image/png', bytes: png.length },
      { type: 'audio', mimeType: 'audio/wav', bytes: 4 },
      { type: 'resource', mimeType: 'text/markdown', uri: 'file:///notes.md', bytes: 5 },
      { type: 'resource_link', uri: 'file:///big.log' },
    ]);
    expect(JSON.parse(meta!)).toEqual({ trace: 'abc' });
  });

  it('refuses what the agent did not advertise, and malformed blocks, before anything is sent; the session stays usable', async () => {
    env.supervisor = createSupervisor({ agents: { plain: fixtureSpec() }, stateDir: false });
    const session = await env.supervisor.newSession('plain', { cwd: env.files.dir });
    const turns: unknown[] = [];
    env.supervisor.on('session:turn', (turn) => turns.push(turn));
    expect(await kindOf(session.prompt([{ type: 'image', mimeType: 'image/png', data: png.toString('base64') }]))).toBe('unsupported');
    expect(await kindOf(session.prompt([{ type: 'audio', mimeType: 'audio/wav', data: 'UklGRg==' }]))).toBe('unsupported');
    expect(await kindOf(session.prompt([{ type: 'resource', resource: { uri: 'file:///a', text: 'a' } }]))).toBe('unsupported');
    expect(await kindOf(session.prompt([{ type: 'text' } as never]))).toBe('invalid_options');
    expect(await kindOf(session.prompt([{ type: 'video', data: 'x' } as never]))).toBe('invalid_options');
    expect(await kindOf(session.prompt([]))).toBe('invalid_options');
    expect(turns).toEqual([]);
    expect(await reply(session, [{ type: 'text', text: 'linked' }, { type: 'resource_link', uri: 'file:///x', name: 'x' }])).toBe('linked');
  });

  it('fileBlock() makes the block that suits the agent, bounded in size', async () => {
    const session = await fullSession();
    writeFileSync(env.files.path('shot.png'), png);
    writeFileSync(env.files.path('notes.md'), '# notes\n');
    writeFileSync(env.files.path('blob.bin'), Buffer.from([0, 1, 2, 3]));
    const image = await session.fileBlock(env.files.path('shot.png'));
    expect(image).toMatchObject({ type: 'image', mimeType: 'image/png', data: png.toString('base64') });
    expect(await session.fileBlock(env.files.path('notes.md'))).toMatchObject({ type: 'resource', resource: { mimeType: 'text/markdown', text: '# notes\n' } });
    expect(await session.fileBlock(env.files.path('blob.bin'))).toMatchObject({ type: 'resource', resource: { mimeType: 'application/octet-stream', blob: 'AAECAw==' } });
    expect(await kindOf(session.fileBlock(env.files.path('notes.md'), { maxBytes: 4 }))).toBe('too_large');
    expect(await kindOf(session.fileBlock(env.files.path('missing.txt')))).toBe('invalid_options');
    expect(await kindOf(session.fileBlock(env.files.dir))).toBe('invalid_options');
    const described = await reply(session, [{ type: 'text', text: command({ op: 'describe-prompt' }) }, image]);
    expect(described).toContain(`"bytes":${png.length}`);

    await env.supervisor!.shutdown();
    env.supervisor = createSupervisor({ agents: { plain: fixtureSpec() }, stateDir: false });
    const plain = await env.supervisor.newSession('plain', { cwd: env.files.dir });
    expect(await plain.fileBlock(env.files.path('notes.md'))).toMatchObject({ type: 'resource_link', name: 'notes.md', mimeType: 'text/markdown', size: 8 });
    expect(await kindOf(plain.fileBlock(env.files.path('shot.png')))).toBe('unsupported');
  });
});

describe("the agent's own session history", () => {
  it('listAgentSessions pages through session/list; unsupported on an agent that does not list', async () => {
    env.supervisor = createSupervisor({ agents: { full: fullAgent(), plain: fixtureSpec() }, stateDir: false });
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await env.supervisor.newSession('full', { cwd: env.files.dir })).id);
    const seen: string[] = [];
    let cursor: string | null | undefined;
    let pages = 0;
    do {
      const page = await env.supervisor.listAgentSessions('full', { cwd: env.files.dir, cursor });
      seen.push(...page.sessions.map((info) => info.sessionId));
      cursor = page.nextCursor;
      pages++;
    } while (cursor !== null);
    expect(pages).toBe(2);
    expect(seen.sort()).toEqual([...ids].sort());
    expect((await env.supervisor.listAgentSessions('full', { cwd: '/nowhere-else' })).sessions).toEqual([]);
    expect(await kindOf(env.supervisor.listAgentSessions('full', { cursor: 'made-up' }))).toBe('protocol_error');
    expect(await kindOf(env.supervisor.listAgentSessions('plain'))).toBe('unsupported');
  });

  it('resumeSession reopens a stored session with session/resume (nothing replayed), loadSession with session/load (history replayed)', async () => {
    const state = env.files.path('agent-state.json');
    const options = { agents: { full: fullAgent(['--state-file', state]) }, stateDir: env.files.path('state') };
    env.supervisor = createSupervisor(options);
    const first = await env.supervisor.newSession('full', { cwd: env.files.dir });
    await first.prompt('remember this');
    await env.supervisor.shutdown();

    env.supervisor = createSupervisor(options);
    const resumedUpdates: SessionUpdate[] = [];
    const resumed = await env.supervisor.resumeSession(first.id, { onUpdate: (update) => resumedUpdates.push(update) });
    expect(resumed.modes?.currentModeId).toBe('default');
    expect(resumedUpdates.filter((update) => update.sessionUpdate.endsWith('message_chunk'))).toEqual([]);
    expect(await resumed.prompt('and more')).toBe('end_turn');
    await resumed.close();

    const loadedUpdates: SessionUpdate[] = [];
    const loaded = await env.supervisor.loadSession('full', first.id, { cwd: env.files.dir, onUpdate: (update) => loadedUpdates.push(update) });
    expect(loadedUpdates.filter((update) => update.sessionUpdate === 'user_message_chunk').length).toBeGreaterThan(0);
    expect(loaded.configOptions.length).toBe(3);
  });

  it('close() sends session/close, deleteAgentSession sends session/delete: the agent no longer lists it', async () => {
    env.supervisor = createSupervisor({ agents: { full: fullAgent(), plain: fixtureSpec() }, stateDir: false });
    const session = await env.supervisor.newSession('full', { cwd: env.files.dir });
    await session.close();
    // Closed on the agent (session/close is not awaited by close(): wait for the agent to have it): a prompt there is refused.
    const handle = await env.supervisor.ensureAgent('full');
    const promptThere = () => handle.connection.agent.request('session/prompt', { sessionId: session.id, prompt: [{ type: 'text', text: 'x' }] }).then(() => 'answered', (error: { code?: number }) => error.code);
    let answer: unknown = 'answered';
    for (let tries = 0; tries < 100 && answer !== -32002; tries++) answer = await promptThere();
    expect(answer).toBe(-32002);
    // It is still listed (closed, not deleted).
    const listed = async () => (await env.supervisor!.listAgentSessions('full')).sessions.map((info) => info.sessionId);
    expect(await listed()).toContain(session.id);
    const other = await env.supervisor.newSession('full', { cwd: env.files.dir });
    await env.supervisor.deleteAgentSession('full', other.id);
    expect(other.status).toBe('stopped');
    expect(await listed()).not.toContain(other.id);
    // Idempotent, as ACP's SDK makes it: the agent's "not found" for a session already gone is no failure.
    expect(await kindOf(env.supervisor.deleteAgentSession('full', 'no-such-session'))).toBe('resolved');
    expect(await kindOf(env.supervisor.deleteAgentSession('plain', 'x'))).toBe('unsupported');
  });
});

describe('elicitation', () => {
  const elicit = (extra: Record<string, unknown> = {}) => command({ op: 'elicit', ...extra });

  it("'decline' by default: nothing advertised, and an agent that asks anyway is declined", async () => {
    const session = await fullSession();
    expect(await reply(session, elicit())).toBe('elicitation:{"action":"decline"}');
  });

  it("'ask': the request reaches the session and the supervisor; the answer is checked against the schema, then sent", async () => {
    const session = await fullSession({ elicitation: 'ask' });
    const statuses: string[] = [];
    session.on('status', ({ status }) => statuses.push(status));
    let bySupervisor: ElicitationRequest | undefined;
    env.supervisor!.on('elicitation:request', (request) => (bySupervisor = request));
    session.on('elicitation:request', (request) => {
      expect(request).toMatchObject({ agent: 'full', sessionId: session.id, mode: 'form', message: expect.any(String) as unknown });
      expect(() => request.respond('accept', { count: 3 })).toThrow(/"name" is required/);
      expect(() => request.respond('accept', { name: 'Ada', count: 9 })).toThrow(/at most 5/);
      expect(() => request.respond('accept', { name: 'Ada', color: 'blue' })).toThrow(/one of red, green/);
      expect(() => request.respond('accept', { name: 'Ada', extra: 1 })).toThrow(/no field "extra"/);
      request.respond('accept', { name: 'Ada', count: 2, color: 'red', ok: true });
    });
    const text = await reply(session, elicit());
    expect(JSON.parse(text.replace(/^elicitation:/, ''))).toEqual({ action: 'accept', content: { name: 'Ada', count: 2, color: 'red', ok: true } });
    expect(bySupervisor?.sessionId).toBe(session.id);
    expect(await bySupervisor!.settled).toMatchObject({ action: 'accept' });
    expect(statuses).toEqual(['running', 'awaiting_permission', 'running', 'completed']);
    // The transcript keeps the request and the action with the fields' names — never what was typed.
    const stored = [];
    for await (const entry of env.supervisor!.history(session.id)) stored.push(entry);
    expect(stored.find((entry) => entry.kind === 'elicitation')?.data).toMatchObject({ mode: 'form', requestedSchema: { required: ['name'] } });
    const outcome = stored.find((entry) => entry.kind === 'elicitation_outcome');
    expect(outcome?.data).toMatchObject({ action: 'accept', fields: ['name', 'count', 'color', 'ok'] });
    // (the fixture repeats the answer in its own message; the outcome entry itself holds no value)
    expect(JSON.stringify(stored.filter((entry) => entry.kind.startsWith('elicitation')))).not.toContain('Ada');
  });

  it('a function policy answers; a url elicitation completes; a request-scoped one follows the supervisor policy', async () => {
    const seen: string[] = [];
    const session = await fullSession({
      elicitation: (request) => {
        seen.push(`${request.mode}:${request.sessionId ?? 'request'}`);
        return request.mode === 'url' ? { action: 'accept' } : { action: 'accept', content: { name: 'Grace' } };
      },
    });
    const completed: string[] = [];
    env.supervisor!.on('elicitation:complete', ({ elicitationId }) => completed.push(elicitationId));
    expect(await reply(session, elicit())).toBe('elicitation:{"action":"accept","content":{"name":"Grace"}}');
    expect(await reply(session, elicit({ mode: 'url', elicitationId: 'login-1' }))).toBe('elicitation:{"action":"accept"}');
    await eventually(() => completed.length === 1, 'elicitation/complete');
    expect(completed).toEqual(['login-1']);
    expect(await reply(session, elicit({ scope: 'request' }))).toBe('elicitation:{"action":"accept","content":{"name":"Grace"}}');
    expect(seen).toEqual([`form:${session.id}`, `url:${session.id}`, 'form:request']);
  });

  it('a policy answer that does not fit the schema is answered cancel, with a warning; nobody listening declines', async () => {
    const session = await fullSession({ elicitation: () => ({ action: 'accept', content: { name: 42 as unknown as string } }) });
    const warnings: string[] = [];
    env.supervisor!.on('protocol:warning', ({ message }) => warnings.push(message));
    expect(await reply(session, elicit())).toBe('elicitation:{"action":"cancel"}');
    expect(warnings.join()).toMatch(/must be a string/);
    await env.supervisor!.shutdown();
    const asking = await fullSession({ elicitation: 'ask' });
    expect(await reply(asking, elicit())).toBe('elicitation:{"action":"decline"}');
  });

  it('unanswered, it is cancelled after elicitationTimeoutMs on the supervisor clock, and with its turn', async () => {
    const clock = new SimulatedClock();
    const session = await fullSession({ elicitation: 'ask', elicitationTimeoutMs: 60_000, clock });
    let pending: ElicitationRequest | undefined;
    session.on('elicitation:request', (request) => (pending = request));
    const timedOut = reply(session, elicit());
    await eventually(() => pending !== undefined, 'the elicitation');
    clock.increment(60_000);
    expect(await timedOut).toBe('elicitation:{"action":"cancel"}');
    pending = undefined;
    const turn = session.prompt(elicit());
    await eventually(() => pending !== undefined, 'the second elicitation');
    session.cancel();
    expect(await turn).toBe('cancelled');
    expect(await pending!.settled).toEqual({ action: 'cancel' });
  });
});

describe('extensions, _meta and update kinds the schema does not know', () => {
  it("the embedder answers the agent's _ requests and hears its notifications; calls the agent's own", async () => {
    const notes: unknown[] = [];
    const session = await fullSession({
      extensions: {
        '_fixture/ask': (params, { agent }) => ({ answered: true, params, agent }),
        '_fixture/fail': () => {
          throw new Error('no way');
        },
        '_fixture/note': (params) => void notes.push(params),
      },
    });
    expect(await reply(session, command({ op: 'ext', params: { q: 1 } }))).toBe('ext:{"answered":true,"params":{"q":1},"agent":"full"}');
    expect(await reply(session, command({ op: 'ext', method: '_fixture/fail' }))).toMatch(/^error:.*no way/);
    expect(await reply(session, command({ op: 'ext', method: '_fixture/unknown' }))).toMatch(/^error:.*[Mm]ethod not found/);
    expect(await reply(session, command({ op: 'ext', method: '_fixture/note', params: { n: 2 }, notify: true }))).toBe('ext:sent');
    await eventually(() => notes.length === 1, 'the extension notification');
    expect(notes).toEqual([{ n: 2 }]);
    expect(await env.supervisor!.callAgent('full', '_fixture/echo', { x: 1 })).toEqual({ echo: { x: 1 } });
    expect(await kindOf(env.supervisor!.callAgent('full', '_fixture/nothing'))).toBe('protocol_error');
    expect(await kindOf(env.supervisor!.callAgent('full', 'session/new'))).toBe('invalid_options');
    await env.supervisor!.notifyAgent('full', '_fixture/note', { hello: 'agent' });
    expect(await reply(session, command({ op: 'ext-received' }))).toBe('ext-received:[{"method":"_fixture/note","params":{"hello":"agent"}}]');
  });

  it('_meta goes on session/new; updates keep theirs; an unknown update kind is delivered, not warned about', async () => {
    env.supervisor = createSupervisor({ agents: { full: fullAgent() }, stateDir: false });
    const session = await env.supervisor.newSession('full', { cwd: env.files.dir, meta: { origin: 'test' } });
    // The fixture echoes the request's _meta in its answer's.
    expect(session.meta).toEqual({ echo: { origin: 'test' } });
    await eventually(() => session.commands.length > 0, 'the commands sent after session/new');
    const updates: SessionUpdate[] = [];
    session.on('update', (update) => updates.push(update));
    const warnings: string[] = [];
    env.supervisor.on('protocol:warning', ({ message }) => warnings.push(message));
    await session.prompt(command({ op: 'unknown-update' }));
    expect(updates.map((update) => update.sessionUpdate)).toEqual(['plan_removed', 'agent_message_chunk', 'agent_message_chunk']);
    expect(updates[0]).toEqual({ sessionUpdate: 'plan_removed', _meta: { fixture: true } });
    expect(updates[1]).toMatchObject({ _meta: { trace: 'abc' } });
    expect(warnings).toEqual([]);
  });
});

describe('tool-call detail', () => {
  it('diffs and terminal content stay structured in updates and the store; terminalOutput() reads the terminal, also after release', async () => {
    const session = await fullSession();
    const updates: SessionUpdate[] = [];
    session.on('update', (update) => updates.push(update));
    const text = await reply(session, command({ op: 'tool-detail', release: true }));
    const terminalId = text.replace(/^tool:/, '');
    expect(terminalId).toMatch(/^term-/);
    const toolCall = updates.find((update) => update.sessionUpdate === 'tool_call');
    expect(toolCall).toMatchObject({ content: [{ type: 'diff', oldText: 'old line\n', newText: 'new line\n' }] });
    expect(updates.find((update) => update.sessionUpdate === 'tool_call_update')).toMatchObject({ content: [{ type: 'terminal', terminalId }] });
    expect(session.terminalOutput(terminalId)).toMatchObject({ output: 'terminal-detail\n', exitStatus: { exitCode: 0 } });
    expect(() => session.terminalOutput('term-unknown')).toThrow(expect.objectContaining({ kind: 'invalid_options' }) as Error);
    const stored = [];
    for await (const entry of env.supervisor!.history(session.id)) stored.push(entry);
    const storedDiff = stored.find((entry) => entry.kind === 'update' && (entry.data as SessionUpdate).sessionUpdate === 'tool_call');
    expect(storedDiff?.data).toMatchObject({ content: [{ type: 'diff', path: expect.stringMatching(/fixture\.txt$/) as unknown, newText: 'new line\n' }] });
  });
});
