/**
 * Every command meets the agent in every state, on real processes: a start while stopping
 * waits for the stop and begins once idle, commands join a start in flight, a stop during a
 * stop is answered with it, the last rung of the ladder gives up on its own, and the
 * supervisor refuses what it must (unknown agent, the agent limit, shutting down) with the
 * machine's own words. Timers run on a SimulatedClock; nothing here sleeps.
 */
import { describe, expect, it } from 'vitest';
import { SimulatedClock } from 'xstate';
import { createSupervisor } from '../../index.js';
import { streamClosedGraceMs } from '../../machines/agent.machine.js';
import { agentState, command, eventually, fixtureSpec, isRunning, recordEvents, waitForAgentState, waitForStatus, useRealAgentEnvironment } from '../support/real-agents.js';

const env = useRealAgentEnvironment();

/** Shuts the test's supervisor down, moving the clock on while a lingering agent is stopping. */
async function shutDown(clock: SimulatedClock): Promise<void> {
  const done = env.supervisor!.shutdown();
  await eventually(() => {
    const stopping = env.supervisor!.list().some((agent) => agent.status === 'stopping');
    if (stopping) clock.increment(5_000);
    return !stopping;
  }, 'every agent to stop');
  await done;
}

/** Settles a promise into a value the test can inspect later, without an unhandled rejection. */
const outcome = <T>(promise: Promise<T>) => promise.then((value) => ({ ok: value }), (error: unknown) => ({ error }));

describe('a start while the agent is stopping', () => {
  it.each(['ensureAgent', 'reconnect'] as const)('%s waits for the stop, then starts a new process', async (method) => {
    const clock = new SimulatedClock();
    env.supervisor = createSupervisor({ clock, agents: { fixture: fixtureSpec(['--linger']) } });
    const events = recordEvents(env.supervisor);
    const first = await env.supervisor.ensureAgent('fixture');
    const stopped = env.supervisor.stop('fixture');
    await waitForAgentState(env.supervisor, 'fixture', 'stopping.closing');
    const again = outcome(env.supervisor[method]('fixture'));
    const secondStop = env.supervisor.stop('fixture'); // a stop during the stop: answered with it
    expect(agentState(env.supervisor, 'fixture'), 'the start waits; the ladder goes on').toBe('stopping.closing');
    clock.increment(5_000); // SIGTERM ends the lingering agent
    await stopped;
    await secondStop;
    const handle = (await again) as { ok: { pid: number } };
    expect(handle.ok.pid).not.toBe(first.pid);
    expect(isRunning(first.pid)).toBe(false);
    expect(events.statuses).toEqual([
      'fixture:idle→starting',
      'fixture:starting→connected',
      'fixture:connected→stopping',
      'fixture:stopping→idle',
      'fixture:idle→starting',
      'fixture:starting→connected',
    ]);
    await shutDown(clock);
  });

  it('a stop that was waiting for a start ends that start with kind stopped', async () => {
    env.supervisor = createSupervisor({ agents: { fixture: fixtureSpec(['--never-initialize']) } });
    const starting = outcome(env.supervisor.ensureAgent('fixture'));
    await waitForAgentState(env.supervisor, 'fixture', 'starting');
    const joined = outcome(env.supervisor.reconnect('fixture')); // reconnect() joins the start in flight
    await env.supervisor.stop('fixture');
    expect(await starting).toMatchObject({ error: { kind: 'stopped', message: 'Agent "fixture" was stopped before it connected' } });
    expect(await joined).toMatchObject({ error: { kind: 'stopped' } });
  });

  // Uncontained, the process actor reports the pid as it starts; contained, the agent's own
  // pid is found a moment later (after I/O), so the report arrives later still.
  it.each(['none', 'auto'] as const)("a stop sent to the agent actor from its own status listener overtakes the process's pid report (containment %s)", async (containment) => {
    env.supervisor = createSupervisor({ containment, agents: { fixture: fixtureSpec(['--pid-file', env.files.path('pids.txt')]) } });
    const agentActor = env.supervisor.actor.getSnapshot().children.fixture!;
    const reportedPids: Array<number | null> = [];
    const subscription = agentActor.on('status', ({ status }) => {
      // Queued in the agent's mailbox ahead of `process.spawned`, which the new process
      // actor reports as it starts: the pid then arrives while the agent is stopping.
      if (status === 'starting') agentActor.send({ type: 'stop' });
    });
    const pidSeen = agentActor.subscribe((snapshot) => reportedPids.push(snapshot.context.pid));
    const started = outcome(env.supervisor.ensureAgent('fixture'));
    subscription.unsubscribe();
    expect(agentState(env.supervisor, 'fixture')).toBe('stopping.closing');
    if (containment === 'none') expect(env.supervisor.list()[0]!.pid, 'the pid is recorded while stopping').toEqual(expect.any(Number));
    expect(await started).toMatchObject({ error: { kind: 'stopped' } });
    await waitForStatus(env.supervisor, 'fixture', 'idle');
    pidSeen.unsubscribe();
    expect(reportedPids.at(-1)).toBeNull();
    await eventually(() => env.files.pidLines().every(([pid]) => !isRunning(pid!)), 'the spawned process to be gone');
  });
});

describe('commands that join a start in flight', () => {
  it('reconnect() during an automatic reconnect joins it', async () => {
    const clock = new SimulatedClock();
    const control = env.files.control({});
    env.supervisor = createSupervisor({ clock, agents: { fixture: fixtureSpec([], { env: { FIXTURE_CONTROL_FILE: control } }) } });
    const first = await env.supervisor.ensureAgent('fixture');
    env.files.control({ neverInitialize: true }); // the automatic attempt hangs in its handshake
    process.kill(first.pid, 'SIGKILL');
    await waitForAgentState(env.supervisor, 'fixture', 'reconnecting.waiting');
    clock.increment(1_000);
    expect(agentState(env.supervisor, 'fixture')).toBe('reconnecting.spawning');
    const joined = outcome(env.supervisor.reconnect('fixture'));
    await env.supervisor.stop('fixture');
    expect(await joined).toMatchObject({ error: { kind: 'stopped' } });
  });

  it.each(['ensureAgent', 'reconnect'] as const)('%s on an agent whose ACP stream just closed waits for the loss, then its own start runs at once (no backoff)', async (method) => {
    const clock = new SimulatedClock();
    env.supervisor = createSupervisor({ clock, agents: { fixture: fixtureSpec() } });
    const session = await env.supervisor.newSession('fixture', { cwd: env.files.dir });
    const first = await env.supervisor.ensureAgent('fixture');
    const turn = outcome(session.prompt(command({ op: 'close-stdout' })));
    const agentActor = env.supervisor.actor.getSnapshot().children.fixture!;
    await eventually(() => agentActor.getSnapshot().context.connectionOpen === false, 'the stream to close');
    expect(agentState(env.supervisor, 'fixture'), 'the process still runs').toMatch(/^connected/);
    const joined = outcome(env.supervisor[method]('fixture'));
    clock.increment(streamClosedGraceMs); // the grace runs on the supervisor's clock: killed after it
    // A caller never waits out a backoff: the loss goes straight to the caller's start, the clock untouched.
    const handle = (await joined) as { ok: { pid: number } };
    expect(env.supervisor.describe('fixture').attempt, 'a caller\'s start: no automatic attempt counted').toBe(0);
    expect(handle.ok.pid).not.toBe(first.pid);
    expect(await turn).toMatchObject({ error: { kind: 'agent_exited' } });
  });
});

describe('the last rung', () => {
  it('gives up after killTimeoutMs in killing even before the exit is seen, and releases the group', async () => {
    const clock = new SimulatedClock();
    env.supervisor = createSupervisor({ clock, agents: { stubborn: fixtureSpec(['--ignore-sigterm']) } });
    const agent = await env.supervisor.ensureAgent('stubborn');
    const stopped = env.supervisor.stop('stubborn');
    await waitForAgentState(env.supervisor, 'stubborn', 'stopping.closing');
    clock.increment(5_000);
    clock.increment(2_000);
    expect(agentState(env.supervisor, 'stubborn')).toBe('stopping.killing');
    clock.increment(2_000); // the exit has not been reaped yet: killTimeout fires first
    expect(agentState(env.supervisor, 'stubborn')).toBe('idle');
    await stopped;
    await eventually(() => !isRunning(agent.pid), 'the SIGKILLed agent to be gone');
  });
});

describe('a forced shutdown', () => {
  it('skips every agent from the first rung to SIGKILL at once; forcing again changes nothing', async () => {
    const clock = new SimulatedClock();
    env.supervisor = createSupervisor({ clock, agents: { stubborn: fixtureSpec(['--ignore-sigterm']) } });
    const agent = await env.supervisor.ensureAgent('stubborn');
    const done = env.supervisor.shutdown();
    await waitForAgentState(env.supervisor, 'stubborn', 'stopping.closing');
    void env.supervisor.shutdown({ force: true });
    expect(agentState(env.supervisor, 'stubborn'), 'no shutdownTimeout, no killTimeout waited').toBe('stopping.killing');
    void env.supervisor.shutdown({ force: true });
    expect(agentState(env.supervisor, 'stubborn')).toBe('stopping.killing');
    await done;
    expect(isRunning(agent.pid)).toBe(false);
  });
});

describe('the supervisor refuses', () => {
  it('reconnect() of an unknown agent, and of an idle agent at the agent limit', async () => {
    env.supervisor = createSupervisor({ maxAgents: 1, agents: { a: fixtureSpec(), b: fixtureSpec() } });
    await expect(env.supervisor.reconnect('nobody')).rejects.toMatchObject({ kind: 'unknown_agent', message: 'No agent named "nobody" is registered' });
    await env.supervisor.ensureAgent('a');
    await expect(env.supervisor.reconnect('b')).rejects.toMatchObject({
      kind: 'limit_reached',
      agent: 'b',
      message: 'Cannot start "b": 1 agents are already running (maxAgents)',
    });
    expect(env.supervisor.getStatus('b')).toBe('idle');
  });

  it('starts during shutdown; a stop during shutdown is answered once that agent is idle', async () => {
    const clock = new SimulatedClock();
    env.supervisor = createSupervisor({ clock, agents: { a: fixtureSpec(['--linger']), idle: fixtureSpec() } });
    await env.supervisor.ensureAgent('a');
    const shutdown = env.supervisor.shutdown();
    await waitForAgentState(env.supervisor, 'a', 'stopping.closing');
    expect(env.supervisor.actor.getSnapshot().value).toBe('shuttingDown');
    await expect(env.supervisor.ensureAgent('idle')).rejects.toMatchObject({ kind: 'shutting_down', message: 'Cannot start "idle": the supervisor is shutting down' });
    await expect(env.supervisor.reconnect('a')).rejects.toMatchObject({ kind: 'shutting_down' });
    await expect(env.supervisor.stop('nobody')).rejects.toMatchObject({ kind: 'unknown_agent' });
    const stopA = outcome(env.supervisor.stop('a'));
    clock.increment(5_000);
    expect(await stopA).toEqual({ ok: undefined });
    await shutdown;
    // A finished supervisor answers without its machine: a stop is done, a start refused.
    await expect(env.supervisor.stop('a')).resolves.toBeUndefined();
    await expect(env.supervisor.ensureAgent('a')).rejects.toMatchObject({ kind: 'shutting_down' });
    expect(() => env.supervisor!.register('late', fixtureSpec())).toThrow(expect.objectContaining({ kind: 'shutting_down' }));
  });
});

describe('waiting for a start', () => {
  it('concurrent callers of a start that gives up (ensureAgent, and reconnect joining it) all get its failure', async () => {
    env.supervisor = createSupervisor({ agents: { fixture: fixtureSpec(['--fail-initialize']) } });
    const [one, two] = await Promise.all([outcome(env.supervisor.ensureAgent('fixture')), outcome(env.supervisor.reconnect('fixture'))]);
    expect(one).toMatchObject({ error: { kind: 'handshake_failed' } });
    expect(two).toMatchObject({ error: { kind: 'handshake_failed' } });
    await waitForStatus(env.supervisor, 'fixture', 'disconnected');
  });
});
