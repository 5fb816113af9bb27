/**
 * Hostile agents and careless callers (docs/robustness.md): input that no well-behaved agent
 * or caller sends. Each numbered defect of the review that found them has its own test here
 * (the fs sandbox's and the terminals' are in sandbox*.test.ts and terminals.test.ts).
 */
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { createSupervisor, type AgentSpec } from '../../index.js';
import { command, eventually, fixtureSpec, isRunning, useRealAgentEnvironment } from '../support/real-agents.js';

const env = useRealAgentEnvironment();
const rawAgentScript = fileURLToPath(new URL('../fixtures/raw-agent.mjs', import.meta.url));
const root = fileURLToPath(new URL('../..', import.meta.url));

/** The raw NDJSON agent (tests/fixtures/raw-agent.mjs) with a scenario. */
const rawAgent = (scenario: Record<string, unknown> = {}): AgentSpec => ({ command: process.execPath, args: [rawAgentScript, JSON.stringify(scenario)], displayName: 'Raw' });

describe('1. names every plain object has', () => {
  it('__proto__, constructor, toString and hasOwnProperty are agents like any other; a healthy agent beside them is unaffected', async () => {
    const names = ['__proto__', 'constructor', 'toString', 'hasOwnProperty'];
    env.supervisor = createSupervisor({ agents: { healthy: fixtureSpec() } });
    for (const name of names) env.supervisor.register(name, fixtureSpec());
    expect(env.supervisor.list().map((agent) => agent.name)).toEqual(['healthy', ...names]);
    for (const name of names) expect(env.supervisor.getStatus(name)).toBe('idle');
    const healthy = await env.supervisor.ensureAgent('healthy');
    for (const name of names) {
      const agent = await env.supervisor.ensureAgent(name);
      expect(agent.name).toBe(name);
      await env.supervisor.stop(name);
      expect(env.supervisor.getStatus(name)).toBe('idle');
    }
    expect(env.supervisor.getStatus('healthy')).toBe('connected');
    expect(isRunning(healthy.pid)).toBe(true);
    await expect(env.supervisor.ensureAgent('valueOf')).rejects.toMatchObject({ kind: 'unknown_agent' });
    await env.supervisor.shutdown();
    expect(isRunning(healthy.pid)).toBe(false);
  });
});

describe('2. a NUL byte in a spec', () => {
  it('is invalid_options naming the field, at register() and at createSupervisor(), and nothing is spawned', () => {
    env.supervisor = createSupervisor({});
    expect(() => env.supervisor!.register('nul', fixtureSpec(['a\u0000b']))).toThrow(expect.objectContaining({ kind: 'invalid_options', message: expect.stringContaining('spec.args.1') }));
    expect(() => createSupervisor({ agents: { nul: { command: 'node\u0000' } } })).toThrow(expect.objectContaining({ kind: 'invalid_options', message: expect.stringContaining('NUL') }));
    expect(() => env.supervisor!.register('envnul', fixtureSpec([], { env: { A: 'x\u0000' } }))).toThrow(expect.objectContaining({ kind: 'invalid_options', message: expect.stringContaining('spec.env.A') }));
    expect(env.supervisor.list()).toEqual([]);
  });
});

describe('3. initialize answers that are not ACP', () => {
  it.each([
    ['null', null],
    ['a string', 'hello'],
    ['an array', [1, 2]],
    ['agentCapabilities "nope"', { protocolVersion: 1, agentCapabilities: 'nope' }],
    ['protocol version 999', { protocolVersion: 999, agentCapabilities: {} }],
  ])('%s: handshake_failed with the reason, the process killed, the host unharmed', async (_label, initialize) => {
    env.supervisor = createSupervisor({ agents: { raw: rawAgent({ initialize }) } });
    const failure = await env.supervisor.ensureAgent('raw').catch((error: unknown) => error);
    expect(failure).toMatchObject({ kind: 'handshake_failed' });
    // The reason is the failure's detail (AgentError.cause is the failure record).
    expect((failure as { cause?: { detail?: string } }).cause?.detail).toMatch(/malformed|protocol version/);
    expect(env.supervisor.getStatus('raw')).toBe('disconnected');
    expect(env.supervisor.list()[0]!.pid).toBeNull();
  });
});

describe('4. a session id reused by a restarted agent', () => {
  it('opens a new session; the failed one stays on its own, and closing it leaves the new one running', async () => {
    env.supervisor = createSupervisor({ agents: { fixture: fixtureSpec(['--plain-session-ids', '--pid-file', env.files.path('pids.txt')]) } });
    const old = await env.supervisor.newSession('fixture', { cwd: env.files.dir });
    const agent = await env.supervisor.ensureAgent('fixture');
    process.kill(agent.pid, 'SIGKILL');
    await eventually(() => old.status === 'failed', 'the old session to fail');
    await env.supervisor.reconnect('fixture');
    const fresh = await env.supervisor.newSession('fixture', { cwd: env.files.dir });
    expect(fresh.id).toBe(old.id); // the agent handed out the same id again
    expect(fresh).not.toBe(old);
    expect(await fresh.prompt('hello again')).toBe('end_turn');
    expect(old.status).toBe('failed');
    await old.close();
    expect(fresh.status).not.toBe('stopped');
    expect(await fresh.prompt('still here')).toBe('end_turn');
    expect(env.supervisor.openSessions()).toEqual([fresh]);
  });
});

describe('7 and 8. options the timers or the runtime cannot take', () => {
  it('a timeout above 2^31 - 1 ms is invalid_options (Node would fire it after 1 ms)', () => {
    for (const options of [{ handshakeTimeoutMs: 2 ** 31 }, { stallTimeoutMs: 1e12 }, { restart: { maxDelayMs: 2 ** 40 } }, { permissionTimeoutMs: Infinity }]) {
      expect(() => createSupervisor(options)).toThrow(expect.objectContaining({ kind: 'invalid_options', message: expect.stringMatching(/Option options\.\w+/) }));
    }
  });

  it('bad session options are invalid_options naming the field, before the agent is started', async () => {
    env.supervisor = createSupervisor({ agents: { fixture: fixtureSpec() } });
    for (const options of [{ cwd: 42 }, { additionalRoots: 'x' }, { additionalRoots: [42] }, { onStall: 'explode' }, { signal: 'soon' }, { mcpServers: [1] }, { unknown: true }]) {
      await expect(env.supervisor.newSession('fixture', options as never)).rejects.toMatchObject({ kind: 'invalid_options', message: expect.stringMatching(/^Option session options/) });
    }
    expect(env.supervisor.getStatus('fixture')).toBe('idle');
    await expect(env.supervisor.ensureAgent('fixture', { signal: 42 as never })).rejects.toMatchObject({ kind: 'invalid_options' });
  });

  it('bad supervisor options are invalid_options naming the field', () => {
    for (const [options, field] of [
      [{ inspect: 42 }, 'options.inspect'],
      [{ clock: {} }, 'options.clock'],
      [{ maxAgents: 1.5 }, 'options.maxAgents'],
      [{ agents: { a: { command: '' } } }, 'options.agents.a.command'],
      [{ agents: { a: { command: 'x', cwdd: '/' } } }, 'options.agents.a'],
      [{ capabilities: { fs: 'yes' } }, 'options.capabilities.fs'],
      [{ retention: { stderr: { maxCount: -1 } } }, 'options.retention.stderr.maxCount'],
    ] as const) {
      expect(() => createSupervisor(options as never), field).toThrow(expect.objectContaining({ kind: 'invalid_options', message: expect.stringContaining(field) }));
    }
  });
});

describe('9. malformed agent data never reaches the application', () => {
  it('a malformed update is dropped with a protocol:warning; a stop reason that is not one is protocol_error; the session goes on', async () => {
    env.supervisor = createSupervisor({ agents: { raw: rawAgent() } });
    const warnings: string[] = [];
    env.supervisor.on('protocol:warning', ({ agent, message }) => warnings.push(`${agent}: ${message}`));
    const session = await env.supervisor.newSession('raw', { cwd: env.files.dir });
    const kinds: string[] = [];
    session.on('update', (update) => kinds.push(update.sessionUpdate));
    const badUpdates = { updates: [{ sessionUpdate: 'no_such_kind' }, { sessionUpdate: 'tool_call' }, { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'ok' } }] };
    expect(await session.prompt(command(badUpdates))).toBe('end_turn');
    // A kind the schema does not know is no violation: it is delivered as it came (docs/acp.md);
    // a known kind without its fields is one.
    expect(kinds).toEqual(['no_such_kind', 'agent_message_chunk']);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/^raw: A session\/update is malformed/);
    // A plan whose entries are not a list would be read by ACP's schema as an empty plan: it
    // is dropped instead (warned about within the rate limit), and the session's plan stays as it was.
    const plans: unknown[] = [];
    session.on('update', (update) => update.sessionUpdate === 'plan' && plans.push(update.entries));
    await session.prompt(command({ updates: [{ sessionUpdate: 'plan', entries: [{ content: 'a', priority: 'low', status: 'pending' }] }, { sessionUpdate: 'plan', entries: 'x' }] }));
    expect(plans).toHaveLength(1);
    expect(session.plan).toEqual([{ content: 'a', priority: 'low', status: 'pending' }]);

    // A turn whose answer is not ACP fails (the session with it, as any failed turn); the agent goes on.
    await expect(session.prompt(command({ result: { stopReason: 42 } }))).rejects.toMatchObject({ kind: 'protocol_error', message: expect.stringContaining('stopReason') });
    const second = await env.supervisor.newSession('raw', { cwd: env.files.dir });
    await expect(second.prompt(command({ result: null }))).rejects.toMatchObject({ kind: 'protocol_error' });
    const third = await env.supervisor.newSession('raw', { cwd: env.files.dir });
    expect(await third.prompt('a normal turn')).toBe('end_turn');
    expect(env.supervisor.getStatus('raw')).toBe('connected');
  });

  it('a session/new answer without a session id is protocol_error', async () => {
    env.supervisor = createSupervisor({ agents: { raw: rawAgent({ newSession: { sessionId: 42 } }) } });
    await expect(env.supervisor.newSession('raw', { cwd: env.files.dir })).rejects.toMatchObject({ kind: 'protocol_error' });
    expect(env.supervisor.getStatus('raw')).toBe('connected');
  });
});

describe('10. the SDK writes nothing to the host stderr for what an agent sends', () => {
  it('5,000 stray responses and garbage lines: protocol:warning events rate-limited on the supervisor clock, no stderr lines', async () => {
    const hostScript = `
      import { SimulatedClock } from 'xstate';
      import { createSupervisor } from 'agentvisor';
      const spec = JSON.parse(process.env.RAW_SPEC);
      const clock = new SimulatedClock(); // the warnings' rate limit runs on the supervisor's clock
      const supervisor = createSupervisor({ clock, stateDir: false, agents: { raw: spec } });
      let warnings = 0, suppressed = 0;
      supervisor.on('protocol:warning', (event) => { warnings++; suppressed += event.suppressed; });
      const session = await supervisor.newSession('raw', { cwd: process.cwd() });
      await session.prompt(JSON.stringify({ strayResponses: 5000, raw: ['42', '"a string"', '[1,2]', 'null', '{"jsonrpc":"2.0"}'] }));
      const withinWindow = warnings;
      await session.prompt(JSON.stringify({ strayResponses: 1 }));
      if (warnings !== withinWindow) throw new Error('a warning inside the window was not suppressed');
      clock.increment(1000);
      await session.prompt(JSON.stringify({ strayResponses: 1 }));
      const stopReason = await session.prompt('still fine');
      console.log(JSON.stringify({ warnings, suppressed, stopReason }));
      await supervisor.shutdown();
    `;
    const result = await execa(process.execPath, ['--input-type=module', '-e', hostScript], { cwd: root, env: { RAW_SPEC: JSON.stringify(rawAgent()) }, reject: false, timeout: 30_000 });
    expect(result.exitCode, result.stderr).toBe(0);
    expect(result.stderr.split('\n').filter(Boolean)).toEqual([]);
    const outcome = JSON.parse(result.stdout) as { warnings: number; suppressed: number; stopReason: string };
    expect(outcome.stopReason).toBe('end_turn');
    expect(outcome.warnings).toBeGreaterThanOrEqual(2);
    expect(outcome.warnings).toBeLessThanOrEqual(5);
    expect(outcome.warnings + outcome.suppressed).toBeGreaterThanOrEqual(5000);
  });
});
