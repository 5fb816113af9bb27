/**
 * The whole ACP session on real fixture-agent processes: what the handshake described, the
 * session's live state (modes, config options, commands, plan, usage, title, models), its
 * controls (setMode, setConfigOption, setModel), and the choices kept across a restart. On
 * an agent that advertises all of it (`--acp-features`) and on one that advertises none.
 */
import { describe, expect, it } from 'vitest';
import { AgentError, createSupervisor, type Session, type SessionUpdate } from '../../index.js';
import { collectChunks, command, eventually, fixtureSpec, useRealAgentEnvironment, waitForStatus } from '../support/real-agents.js';

const env = useRealAgentEnvironment();
const fullAgent = (flags: string[] = []) => fixtureSpec(['--acp-features', ...flags]);

async function fullSession(flags: string[] = [], options: Parameters<typeof createSupervisor>[0] = {}): Promise<Session> {
  env.supervisor = createSupervisor({ agents: { full: fullAgent(flags) }, stateDir: env.files.path('state'), ...options });
  return env.supervisor.newSession('full', { cwd: env.files.dir });
}

/** The text of one prompt turn. */
async function replyOf(session: Session, prompt: string): Promise<string> {
  const received = collectChunks(session);
  await session.prompt(prompt);
  return received.text();
}

/** The JSON list of a `controls-received` reply. */
const collected = (text: string): string[] => JSON.parse(text.replace(/^controls:/, '')) as string[];

/** Rejects with an AgentError of `kind`. */
async function refused(promise: Promise<unknown>, kind: string): Promise<AgentError> {
  const error = await promise.then(
    () => {
      throw new Error(`expected a ${kind} refusal`);
    },
    (error: unknown) => error,
  );
  expect(error).toBeInstanceOf(AgentError);
  expect((error as AgentError).kind).toBe(kind);
  return error as AgentError;
}

describe('the agent as its handshake described it', () => {
  it('describe() and list() carry agentInfo, agentCapabilities and authMethods once connected, null before', async () => {
    env.supervisor = createSupervisor({ agents: { full: fullAgent(), plain: fixtureSpec() }, stateDir: false });
    expect(env.supervisor.describe('full')).toMatchObject({ agentInfo: null, agentCapabilities: null, authMethods: null });
    await env.supervisor.ensureAgent('full');
    await env.supervisor.ensureAgent('plain');
    const full = env.supervisor.describe('full');
    expect(full.agentInfo).toMatchObject({ name: 'fixture-agent' });
    expect(full.agentCapabilities).toMatchObject({
      loadSession: true,
      promptCapabilities: { image: true, audio: true, embeddedContext: true },
      sessionCapabilities: { list: {}, resume: {}, close: {}, delete: {} },
    });
    expect(full.authMethods).toEqual([]);
    const plain = env.supervisor.list().find((row) => row.name === 'plain')?.agentCapabilities;
    expect(plain).toMatchObject({ loadSession: false, promptCapabilities: { image: false, audio: false, embeddedContext: false } });
    expect(plain?.sessionCapabilities?.list ?? null).toBeNull();
    await env.supervisor.stop('full');
    expect(env.supervisor.describe('full').agentCapabilities).toBeNull();
  });

  it('advertises what it serves: fs and terminals as enabled; elicitation only when its policy answers; auth.terminal only with a terminal login', async () => {
    const capabilitiesOf = async (options: Parameters<typeof createSupervisor>[0]) => {
      env.supervisor = createSupervisor({ agents: { full: fullAgent() }, stateDir: false, ...options });
      const session = await env.supervisor.newSession('full', { cwd: env.files.dir });
      const received = collectChunks(session);
      await session.prompt(command({ op: 'client-capabilities' }));
      await env.supervisor.shutdown();
      return JSON.parse(received.text().replace(/^capabilities:/, '')) as Record<string, unknown>;
    };
    const byDefault = await capabilitiesOf({});
    const booleanOptions = { configOptions: { boolean: {} } };
    expect(byDefault).toEqual({ fs: { readTextFile: true, writeTextFile: true }, terminal: true, session: booleanOptions });
    const asking = await capabilitiesOf({ elicitation: 'ask', capabilities: { terminal: false }, terminalLogin: async () => 0 });
    expect(asking).toEqual({ fs: { readTextFile: true, writeTextFile: true }, terminal: false, session: booleanOptions, elicitation: { form: {}, url: {} }, auth: { terminal: true } });
  });
});

describe('terminal logins (auth.terminal)', () => {
  it('a terminal method is offered only to a client with a terminalLogin, run by it (never sent to authenticate), and a zero exit reconnects', async () => {
    const logins: Array<{ command: string; args: string[]; env: Record<string, string> }> = [];
    let exitCode: number | null = 0;
    env.supervisor = createSupervisor({
      agents: { full: fixtureSpec(['--terminal-auth'], { env: { SPEC_VAR: 'spec' } }), without: fixtureSpec(['--terminal-auth']) },
      stateDir: false,
      terminalLogin: async (login) => {
        logins.push({ command: login.command, args: login.args, env: login.env });
        return exitCode;
      },
    });
    await env.supervisor.ensureAgent('full');
    expect(env.supervisor.describe('full').authMethods).toEqual([expect.objectContaining({ id: 'fixture-terminal', type: 'terminal' })]);
    const handle = await env.supervisor.authenticate('full', 'fixture-terminal');
    expect(handle.name).toBe('full');
    expect(logins).toEqual([{ command: process.execPath, args: [expect.stringMatching(/fixture-agent\.js$/) as unknown as string, '--terminal-auth', '--login'], env: { SPEC_VAR: 'spec', FIXTURE_LOGIN: '1' } }]);
    exitCode = 1;
    await expect(env.supervisor.authenticate('full', 'fixture-terminal')).rejects.toMatchObject({ kind: 'auth_required', message: expect.stringContaining('exit code 1') as unknown });
    exitCode = null;
    await expect(env.supervisor.authenticate('full', 'fixture-terminal')).rejects.toMatchObject({ kind: 'auth_required', message: expect.stringContaining('a signal') as unknown });
    expect(env.supervisor.getStatus('full')).toBe('connected');
    await env.supervisor.shutdown();

    env.supervisor = createSupervisor({ agents: { without: fixtureSpec(['--terminal-auth']) }, stateDir: false });
    await env.supervisor.ensureAgent('without');
    expect(env.supervisor.describe('without').authMethods).toEqual([]);
  });
});

describe('session state, live', () => {
  it('is filled from the session/new answer and kept current from every state update, with an event for each change', async () => {
    const session = await fullSession();
    expect(session.modes).toEqual({ currentModeId: 'default', availableModes: expect.arrayContaining([expect.objectContaining({ id: 'plan' })]) as unknown });
    expect(session.configOptions.map((option) => [option.id, option.category ?? null, option.currentValue])).toEqual([
      ['mode', 'mode', 'default'],
      ['model', 'model', 'fixture-small'],
      ['fast', null, false],
    ]);
    expect(session.models).toBeNull();
    await eventually(() => session.commands.length === 2, 'the commands sent after session/new');
    expect(session.commands.map((entry) => entry.name)).toEqual(['review', 'explain']);
    expect(session.plan).toBeNull();
    expect(session.usage).toBeNull();
    expect(session.title).toBeNull();

    const changes: string[] = [];
    for (const field of ['modes', 'configOptions', 'commands', 'plan', 'usage', 'title'] as const) session.on(field, () => changes.push(field));
    const supervisorChanges: string[] = [];
    env.supervisor!.on('session:state', ({ sessionId, field }) => sessionId === session.id && supervisorChanges.push(field));
    await session.prompt(command({ op: 'state-updates' }));
    expect(session.plan?.map((entry) => entry.status)).toEqual(['completed', 'in_progress']);
    expect(session.usage).toMatchObject({ used: 1200, size: 200000, cost: { amount: 0.25, currency: 'USD' } });
    expect(session.title).toBe('Fixture title');
    expect(session.commands.map((entry) => entry.name)).toEqual(['later']);
    expect(session.configOptions.find((option) => option.id === 'model')?.currentValue).toBe('fixture-large');
    expect(session.modes?.currentModeId).toBe('plan');
    // The mode option follows the mode at once (the last configOptions).
    expect(changes).toEqual(['plan', 'usage', 'title', 'commands', 'configOptions', 'modes', 'configOptions']);
    expect(session.configOptions.find((option) => option.id === 'mode')?.currentValue).toBe('plan');
    expect(supervisorChanges).toEqual(changes);
    expect(session.state).toMatchObject({ title: 'Fixture title', modes: { currentModeId: 'plan' } });
  });

  it('malformed state updates are dropped with a protocol warning and leave the state intact', async () => {
    const session = await fullSession();
    await session.prompt(command({ op: 'state-updates' }));
    const before = session.state;
    const warnings: string[] = [];
    env.supervisor!.on('protocol:warning', ({ message, suppressed }) => warnings.push(`${message} (+${suppressed})`));
    const received = collectChunks(session);
    await session.prompt(command({ op: 'malformed-state' }));
    expect(received.text()).toBe('malformed:done');
    expect(session.state).toEqual(before);
    expect(warnings.length).toBeGreaterThan(0);
    expect(warnings[0]).toMatch(/session\/update is malformed/);
    expect(await session.prompt('still fine')).toBe('end_turn');
  });

  it('an agent that advertises none of it: no modes, no options, no commands, and every control is unsupported with nothing sent', async () => {
    env.supervisor = createSupervisor({ agents: { plain: fixtureSpec() }, stateDir: false });
    const session = await env.supervisor.newSession('plain', { cwd: env.files.dir });
    expect(session.state).toEqual({ modes: null, configOptions: [], commands: [], plan: null, usage: null, title: null, models: null });
    await refused(session.setMode('plan'), 'unsupported');
    await refused(session.setConfigOption('model', 'x'), 'unsupported');
    await refused(session.setModel('x'), 'unsupported');
    expect(session.status).toBe('ready');
    expect(await session.prompt('hello there')).toBe('end_turn');
  });
});

describe('controls', () => {
  it('setMode, setConfigOption and setModel resolve once the agent answered and the state shows it', async () => {
    const session = await fullSession();
    const modes: string[] = [];
    session.on('modes', (value) => modes.push(value?.currentModeId ?? 'none'));
    await session.setMode('plan');
    expect(session.modes?.currentModeId).toBe('plan');
    await session.setConfigOption('fast', true);
    expect(session.configOptions.find((option) => option.id === 'fast')?.currentValue).toBe(true);
    await session.setModel('fixture-large');
    expect(session.configOptions.find((option) => option.id === 'model')?.currentValue).toBe('fixture-large');
    await session.setConfigOption('mode', 'yolo');
    expect(session.modes?.currentModeId).toBe('yolo');
    expect(modes).toEqual(['plan', 'yolo']);
  });

  it('a mode change the agent announces only with a config_option_update, or not at all, still shows', async () => {
    for (const announcement of ['config_option_update', 'none']) {
      const session = await fullSession(['--mode-announcement', announcement]);
      await session.setMode('plan');
      expect(session.modes?.currentModeId).toBe('plan');
      if (announcement === 'config_option_update') {
        await eventually(() => session.configOptions.find((option) => option.id === 'mode')?.currentValue === 'plan', 'the mode option to follow');
      }
      await env.supervisor!.shutdown();
    }
  });

  it('bad input is refused before anything is sent; the agent refusing leaves the state and the session as they were', async () => {
    const session = await fullSession();
    await eventually(() => session.commands.length === 2, 'the commands sent after session/new');
    const sent: SessionUpdate[] = [];
    session.on('update', (update) => sent.push(update));
    await refused(session.setMode('nonsense'), 'invalid_options');
    await refused(session.setMode(''), 'invalid_options');
    await refused(session.setConfigOption('nonsense', 'x'), 'invalid_options');
    await refused(session.setConfigOption('fast', 'yes'), 'invalid_options');
    await refused(session.setConfigOption('model', true), 'invalid_options');
    await refused(session.setModel('gpt-nonsense'), 'invalid_options');
    expect(sent).toEqual([]);
    // The agent received none of them.
    expect(collected(await replyOf(session, command({ op: 'controls-received' })))).toEqual([]);
    const before = session.state;
    const locked = await refused(session.setMode('locked'), 'protocol_error');
    expect(locked.message).toMatch(/mode locked/);
    await refused(session.setModel('fixture-forbidden'), 'protocol_error');
    expect(collected(await replyOf(session, command({ op: 'controls-received' })))).toEqual(['set_mode locked', 'set_config_option model=fixture-forbidden']);
    expect(session.state).toEqual(before);
    expect(session.status).toBe('completed'); // the last turn (controls-received) ended; nothing failed
    expect(await session.prompt('usable')).toBe('end_turn');
  });

  it('on an agent with the unstable models field, setModel uses session/set_model', async () => {
    const session = await fullSession(['--unstable-models']);
    expect(session.configOptions.some((option) => option.category === 'model')).toBe(false);
    expect(session.models).toEqual({ currentModelId: 'fixture-small', availableModels: [expect.objectContaining({ modelId: 'fixture-small' }), expect.objectContaining({ modelId: 'fixture-large' })] });
    const models: string[] = [];
    session.on('models', (value) => models.push(value?.currentModelId ?? ''));
    await session.setModel('fixture-large');
    expect(session.models?.currentModelId).toBe('fixture-large');
    expect(models).toEqual(['fixture-large']);
    await refused(session.setModel('fixture-forbidden'), 'invalid_options');
  });

  it('a closed session refuses its controls with session_closed', async () => {
    const session = await fullSession();
    await session.close();
    await refused(session.setMode('plan'), 'session_closed');
    await refused(session.setModel('fixture-large'), 'session_closed');
  });
});

describe('restarts keep the choices', () => {
  it('after a crash, resume reopens the session with session/resume and sets the mode and model the user chose again', async () => {
    const state = env.files.path('agent-state.json');
    const session = await fullSession(['--state-file', state], { restart: { initialDelayMs: 10, stableAfterMs: 60_000 } });
    await session.setMode('plan');
    await session.setModel('fixture-large');
    await session.setConfigOption('fast', true);
    const updates: SessionUpdate[] = [];
    session.on('update', (update) => updates.push(update));
    await expect(session.prompt(command({ op: 'die' }))).rejects.toMatchObject({ kind: 'agent_exited' });
    expect(session.status).toBe('failed');
    await waitForStatus(env.supervisor!, 'full', 'connected');
    const replayed = updates.length;
    await session.resume();
    expect(session.status).toBe('ready');
    // session/resume replays nothing (session/load would have replayed the history).
    expect(updates.slice(replayed).filter((update) => update.sessionUpdate.endsWith('_chunk'))).toEqual([]);
    expect(session.modes?.currentModeId).toBe('plan');
    expect(session.configOptions.find((option) => option.id === 'model')?.currentValue).toBe('fixture-large');
    expect(session.configOptions.find((option) => option.id === 'fast')?.currentValue).toBe(true);
    expect(await session.prompt('after the restart')).toBe('end_turn');
  });

  it('a choice the reopened agent refuses is dropped and reported; the session is usable', async () => {
    const state = env.files.path('agent-state.json');
    const control = env.files.path('control.json');
    env.supervisor = createSupervisor({
      agents: { full: { ...fullAgent(['--state-file', state]), env: { FIXTURE_CONTROL_FILE: control } } },
      stateDir: env.files.path('state'),
      restart: { initialDelayMs: 10 },
    });
    const session = await env.supervisor.newSession('full', { cwd: env.files.dir });
    await session.setMode('yolo');
    const dropped: string[] = [];
    env.supervisor.on('session:choice_dropped', ({ choice, kind }) => dropped.push(`${choice}:${kind}`));
    // The next process refuses the mode this one took.
    env.files.control({ refuseModes: 'yolo' });
    await expect(session.prompt(command({ op: 'die' }))).rejects.toMatchObject({ kind: 'agent_exited' });
    await waitForStatus(env.supervisor!, 'full', 'connected');
    await session.resume();
    expect(dropped).toEqual(['mode yolo:protocol_error']);
    expect(session.modes?.currentModeId).toBe('default');
    expect(await session.prompt('usable')).toBe('end_turn');
  });
});
