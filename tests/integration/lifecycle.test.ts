/**
 * Every row of the lifecycle table on real fixture-agent processes. Delays (backoff,
 * handshake timeout) run on a SimulatedClock that the tests advance.
 */
import { describe, expect, it } from 'vitest';
import { SimulatedClock } from 'xstate';
import { AgentError, createSupervisor } from '../../index.js';
import { streamClosedGraceMs } from '../../machines/agent.machine.js';
import { agentState, command, eventually, fixtureSpec, isRunning, pendingDelays, recordEvents, waitForStatus, useRealAgentEnvironment } from '../support/real-agents.js';

const env = useRealAgentEnvironment();

describe('idle → starting → connected', () => {
  it('spawns the agent, answers with its initialize result, and emits statuses with previous', async () => {
    env.supervisor = createSupervisor({ agents: { fixture: fixtureSpec(['--pid-file', env.files.path('pids.txt')]) } });
    const events = recordEvents(env.supervisor);
    const agent = await env.supervisor.ensureAgent('fixture');
    expect(agent.pid).toBe(env.files.pidLines()[0]![0]);
    expect(isRunning(agent.pid)).toBe(true);
    expect(agent.agentInfo).toEqual({ name: 'fixture-agent', version: '0.1.0' });
    expect(agent.protocolVersion).toBe(1);
    expect(agent.authMethods).toEqual([]);
    expect(agent.agentCapabilities).toMatchObject({ loadSession: false });
    expect(env.supervisor.getStatus('fixture')).toBe('connected');
    expect(events.statuses).toEqual(['fixture:idle→starting', 'fixture:starting→connected']);
    const session = await agent.connection.agent.request('session/new', { cwd: env.files.dir, mcpServers: [] });
    expect(session.sessionId).toMatch(/^fixture-/);
  });

  it('passes args, cwd and env (merged over the parent environment) to the process', async () => {
    process.env.AGENTVISOR_PARENT_VAR = 'from-parent';
    env.supervisor = createSupervisor({
      agents: { fixture: fixtureSpec([], { cwd: env.files.dir, env: { AGENTVISOR_CHILD_VAR: 'from-spec' } }) },
    });
    const agent = await env.supervisor.ensureAgent('fixture');
    const environ = (await import('node:fs')).readFileSync(`/proc/${agent.pid}/environ`, 'utf8').split('\0');
    expect(environ).toContain('AGENTVISOR_CHILD_VAR=from-spec');
    expect(environ).toContain('AGENTVISOR_PARENT_VAR=from-parent');
    expect((await import('node:fs')).readlinkSync(`/proc/${agent.pid}/cwd`)).toBe(env.files.dir);
    delete process.env.AGENTVISOR_PARENT_VAR;
  });
});

describe('starting → disconnected', () => {
  it('ENOENT: not_installed with the exact message, and no background retry', async () => {
    const clock = new SimulatedClock();
    env.supervisor = createSupervisor({ clock, agents: { ghost: { command: 'agentvisor-no-such-agent', displayName: 'Ghost Agent' } } });
    const events = recordEvents(env.supervisor);
    const failure = await env.supervisor.ensureAgent('ghost').catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(AgentError);
    expect(failure).toMatchObject({ kind: 'not_installed', agent: 'ghost', message: "Could not start Ghost Agent. Check that it's installed." });
    expect(events.errors).toMatchObject([{ agent: 'ghost', kind: 'not_installed', message: "Could not start Ghost Agent. Check that it's installed." }]);
    clock.increment(120_000);
    expect(env.supervisor.getStatus('ghost')).toBe('disconnected');
    expect(events.statuses).toEqual(['ghost:idle→starting', 'ghost:starting→disconnected']);
  });

  it('initialize rejected: handshake_failed, with the agent stderr attached, process group killed', async () => {
    env.supervisor = createSupervisor({
      agents: { fixture: fixtureSpec(['--fail-initialize', '--stderr', 'missing API key', '--pid-file', env.files.path('pids.txt')]) },
    });
    const failure = (await env.supervisor.ensureAgent('fixture').catch((error: unknown) => error)) as AgentError;
    expect(failure).toMatchObject({ kind: 'handshake_failed', message: 'Could not connect to Fixture' });
    expect(failure.stderr).toContain('missing API key');
    const [pid] = env.files.pidLines()[0]!;
    await eventually(() => !isRunning(pid!), 'the refused agent to be killed');
    expect(env.supervisor.list()[0]).toMatchObject({ status: 'disconnected', pid: null, lastError: { kind: 'handshake_failed' } });
  });

  it('process exits during the handshake: handshake_failed with its exit code and last stderr lines (bounded)', async () => {
    env.supervisor = createSupervisor({
      stderrLines: 5,
      agents: { fixture: fixtureSpec(['--exit-on-initialize', '--exit-code', '3', '--stderr-lines', '12']) },
    });
    const failure = (await env.supervisor.ensureAgent('fixture').catch((error: unknown) => error)) as AgentError;
    expect(failure.kind).toBe('handshake_failed');
    expect(failure.stderr).toEqual(['stderr line 8', 'stderr line 9', 'stderr line 10', 'stderr line 11', 'stderr line 12']);
    expect(env.supervisor.list()[0]!.lastError).toMatchObject({ exitCode: 3 });
  });

  it('handshake timeout: handshake_timeout after handshakeTimeoutMs, process killed', async () => {
    const clock = new SimulatedClock();
    env.supervisor = createSupervisor({
      clock,
      handshakeTimeoutMs: 30_000,
      agents: { fixture: fixtureSpec(['--never-initialize', '--pid-file', env.files.path('pids.txt')]) },
    });
    const pending = env.supervisor.ensureAgent('fixture').catch((error: unknown) => error);
    await eventually(() => env.files.pidLines().length === 1 && env.supervisor!.list()[0]!.pid !== null, 'the agent to start');
    const [pid] = env.files.pidLines()[0]!;
    clock.increment(29_999);
    expect(env.supervisor.getStatus('fixture')).toBe('starting');
    clock.increment(1);
    expect(await pending).toMatchObject({ kind: 'handshake_timeout', message: 'Could not connect to Fixture' });
    await eventually(() => !isRunning(pid!), 'the silent agent to be killed');
  });
});

describe('connected → disconnected → reconnecting → connected', () => {
  it('a crash reconnects after the backoff delay', async () => {
    const clock = new SimulatedClock();
    env.supervisor = createSupervisor({ clock, agents: { fixture: fixtureSpec(['--pid-file', env.files.path('pids.txt')]) } });
    const events = recordEvents(env.supervisor);
    const first = await env.supervisor.ensureAgent('fixture');
    process.kill(first.pid, 'SIGKILL');
    await waitForStatus(env.supervisor, 'fixture', 'reconnecting');
    expect(env.supervisor.list()[0]).toMatchObject({
      attempt: 1,
      lastError: { kind: 'agent_exited', message: 'Fixture exited unexpectedly', signal: 'SIGKILL', detail: expect.stringContaining('killed by SIGKILL') },
    });
    clock.increment(999);
    expect(agentState(env.supervisor, 'fixture'), 'nothing spawns before the backoff delay').toBe('reconnecting.waiting');
    expect(env.supervisor.list()[0]!.pid).toBeNull();
    clock.increment(1);
    expect(agentState(env.supervisor, 'fixture'), 'the delay elapsed: spawned at once').toBe('reconnecting.spawning');
    await waitForStatus(env.supervisor, 'fixture', 'connected');
    const second = await env.supervisor.ensureAgent('fixture');
    expect(second.pid).not.toBe(first.pid);
    expect(env.files.pidLines()).toHaveLength(2);
    expect(events.statuses).toEqual([
      'fixture:idle→starting',
      'fixture:starting→connected',
      'fixture:connected→disconnected',
      'fixture:disconnected→reconnecting',
      'fixture:reconnecting→connected',
    ]);
    expect(events.errors.map((error) => error.kind)).toEqual(['agent_exited']);
  });

  it('an agent that closes its ACP stream and keeps running is killed after the stream grace, on the clock', async () => {
    const clock = new SimulatedClock();
    env.supervisor = createSupervisor({ clock, agents: { fixture: fixtureSpec() } });
    const { pid } = await env.supervisor.ensureAgent('fixture');
    const session = await env.supervisor.newSession('fixture', { cwd: env.files.dir });
    expect(pendingDelays(clock)).not.toContain(streamClosedGraceMs);
    const turn = session.prompt(command({ op: 'close-stdout' })).catch((error: unknown) => error);
    const agentContext = () => env.supervisor!.actor.getSnapshot().children['fixture']!.getSnapshot().context as { connectionOpen: boolean };
    await eventually(() => !agentContext().connectionOpen, 'the agent to close its stdout');
    expect(isRunning(pid), 'it keeps running without its stream').toBe(true);
    // The grace is a timer on the supervisor's clock, due in streamClosedGraceMs (a real-time timer would not be here).
    expect(pendingDelays(clock)).toContain(streamClosedGraceMs);
    clock.increment(streamClosedGraceMs - 1);
    expect(isRunning(pid), 'nothing is killed before the grace elapses on the clock').toBe(true);
    expect(env.supervisor.getStatus('fixture')).toBe('connected');
    clock.increment(1);
    await waitForStatus(env.supervisor, 'fixture', 'reconnecting');
    expect(isRunning(pid)).toBe(false);
    expect(env.supervisor.list()[0]!.lastError).toMatchObject({ kind: 'agent_exited', signal: 'SIGKILL', detail: expect.stringContaining('its ACP stream closed') });
    expect(await turn).toMatchObject({ kind: 'agent_exited' });
  });

  it('a crash loop stops after maxAttempts and stays disconnected', async () => {
    const clock = new SimulatedClock();
    const controlFile = env.files.control({});
    env.supervisor = createSupervisor({
      clock,
      restart: { maxAttempts: 3 },
      agents: { fixture: fixtureSpec(['--pid-file', env.files.path('pids.txt')], { env: { FIXTURE_CONTROL_FILE: controlFile } }) },
    });
    const agent = await env.supervisor.ensureAgent('fixture');
    env.files.control({ exitOnInitialize: true }); // every later start dies in the handshake
    process.kill(agent.pid, 'SIGKILL');
    for (const [attempt, delay] of [[1, 1000], [2, 2000], [3, 4000]] as const) {
      await eventually(() => env.supervisor!.getStatus('fixture') === 'reconnecting' && env.supervisor!.list()[0]!.attempt === attempt && env.supervisor!.list()[0]!.pid === null, `attempt ${attempt} to wait`);
      clock.increment(delay);
      await eventually(() => env.files.pidLines().length === attempt + 1, `attempt ${attempt} to spawn`);
    }
    await waitForStatus(env.supervisor, 'fixture', 'disconnected');
    clock.increment(600_000);
    // A stray timer would have spawned synchronously inside increment(): status and pid say so at once.
    expect(env.supervisor.getStatus('fixture')).toBe('disconnected');
    expect(env.supervisor.list()[0]!.pid).toBeNull();
    expect(env.files.pidLines()).toHaveLength(4);
    expect(env.supervisor.list()[0]).toMatchObject({ status: 'disconnected', attempt: 3, lastError: { kind: 'handshake_failed' } });
  });

  it('manual reconnect after giving up resets the counter and connects', async () => {
    const clock = new SimulatedClock();
    const controlFile = env.files.control({});
    env.supervisor = createSupervisor({
      clock,
      restart: { maxAttempts: 1 },
      agents: { fixture: fixtureSpec([], { env: { FIXTURE_CONTROL_FILE: controlFile } }) },
    });
    const agent = await env.supervisor.ensureAgent('fixture');
    env.files.control({ failInitialize: true });
    process.kill(agent.pid, 'SIGKILL');
    await waitForStatus(env.supervisor, 'fixture', 'reconnecting');
    clock.increment(1000);
    await waitForStatus(env.supervisor, 'fixture', 'disconnected');
    expect(env.supervisor.list()[0]!.attempt).toBe(1);
    env.files.control({});
    const reconnected = await env.supervisor.reconnect('fixture');
    expect(reconnected.pid).not.toBe(agent.pid);
    expect(env.supervisor.list()[0]).toMatchObject({ status: 'connected', attempt: 0, lastError: null });
  });

  it('manual reconnect during a pending backoff spawns now', async () => {
    const clock = new SimulatedClock();
    env.supervisor = createSupervisor({ clock, agents: { fixture: fixtureSpec(['--pid-file', env.files.path('pids.txt')]) } });
    const agent = await env.supervisor.ensureAgent('fixture');
    process.kill(agent.pid, 'SIGKILL');
    await waitForStatus(env.supervisor, 'fixture', 'reconnecting');
    const reconnected = await env.supervisor.reconnect('fixture'); // no clock advance needed
    expect(reconnected.pid).not.toBe(agent.pid);
    clock.increment(60_000); // the cancelled backoff timer must not fire a second spawn
    expect(env.supervisor.list()[0]).toMatchObject({ status: 'connected', pid: reconnected.pid });
    expect(env.files.pidLines()).toHaveLength(2);
  });

  it('ensureAgent during a reconnect returns the in-flight result', async () => {
    const clock = new SimulatedClock();
    env.supervisor = createSupervisor({ clock, agents: { fixture: fixtureSpec(['--pid-file', env.files.path('pids.txt')]) } });
    const agent = await env.supervisor.ensureAgent('fixture');
    process.kill(agent.pid, 'SIGKILL');
    await waitForStatus(env.supervisor, 'fixture', 'reconnecting');
    const waiting = env.supervisor.ensureAgent('fixture');
    clock.increment(1000);
    const reconnected = await waiting;
    expect(reconnected.pid).toBe(env.files.pidLines()[1]![0]);
    expect(env.files.pidLines()).toHaveLength(2);
  });
});

describe('disconnected → starting', () => {
  it('ensureAgent after a failed first start spawns a fresh attempt', async () => {
    const controlFile = env.files.control({ failInitialize: true });
    env.supervisor = createSupervisor({ agents: { fixture: fixtureSpec([], { env: { FIXTURE_CONTROL_FILE: controlFile } }) } });
    await expect(env.supervisor.ensureAgent('fixture')).rejects.toMatchObject({ kind: 'handshake_failed' });
    env.files.control({});
    const agent = await env.supervisor.ensureAgent('fixture');
    expect(isRunning(agent.pid)).toBe(true);
  });
});

describe('stop → idle', () => {
  it('leaves a clean slate: no error, attempt 0', async () => {
    env.supervisor = createSupervisor({ agents: { ghost: { command: 'agentvisor-no-such-agent' } } });
    await expect(env.supervisor.ensureAgent('ghost')).rejects.toMatchObject({ kind: 'not_installed' });
    expect(env.supervisor.list()[0]!.lastError).not.toBeNull();
    await env.supervisor.stop('ghost');
    expect(env.supervisor.list()[0]).toMatchObject({ status: 'idle', lastError: null, attempt: 0 });
  });
});
