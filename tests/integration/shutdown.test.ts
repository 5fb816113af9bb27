/**
 * The stop ladder and shutdown on real processes: graceful exits, agents that ignore
 * SIGTERM, grandchildren in the process group, and a env.supervisor that leaves nothing
 * behind (the host process exits by itself).
 */
import { execa } from 'execa';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { SimulatedClock } from 'xstate';
import { createSupervisor } from '../../index.js';
import { agentState, eventually, fixtureAgentScript, fixtureSpec, isRunning, recordEvents, waitForAgentState, waitForStatus, useRealAgentEnvironment } from '../support/real-agents.js';

const env = useRealAgentEnvironment();

describe('stop()', () => {
  it('closes stdin; a well-behaved agent exits at the first rung', async () => {
    const clock = new SimulatedClock(); // never advanced: no SIGTERM may be needed
    env.supervisor = createSupervisor({ clock, agents: { fixture: fixtureSpec() } });
    const events = recordEvents(env.supervisor);
    const agent = await env.supervisor.ensureAgent('fixture');
    await env.supervisor.stop('fixture');
    expect(isRunning(agent.pid)).toBe(false);
    expect(env.supervisor.list()[0]).toMatchObject({ status: 'idle', pid: null });
    expect(events.statuses.slice(-2)).toEqual(['fixture:connected→stopping', 'fixture:stopping→idle']);
    const again = await env.supervisor.ensureAgent('fixture');
    expect(again.pid).not.toBe(agent.pid);
  });

  it('SIGTERMs an agent that ignores its closed stdin, after shutdownTimeout', async () => {
    const clock = new SimulatedClock();
    env.supervisor = createSupervisor({ clock, agents: { fixture: fixtureSpec(['--linger']) } });
    const agent = await env.supervisor.ensureAgent('fixture');
    const stopped = env.supervisor.stop('fixture');
    // Only the clock moves the ladder on: until it does, the machine stays at the first rung.
    await waitForAgentState(env.supervisor, 'fixture', 'stopping.closing');
    expect(isRunning(agent.pid)).toBe(true);
    clock.increment(4_999);
    expect(agentState(env.supervisor, 'fixture')).toBe('stopping.closing');
    clock.increment(1);
    expect(agentState(env.supervisor, 'fixture')).toBe('stopping.terminating');
    await stopped;
    expect(isRunning(agent.pid)).toBe(false);
    expect(env.supervisor.getStatus('fixture')).toBe('idle');
  });

  it('a stop during the handshake runs the ladder and settles the waiting caller', async () => {
    const clock = new SimulatedClock();
    env.supervisor = createSupervisor({ clock, agents: { fixture: fixtureSpec(['--never-initialize', '--pid-file', env.files.path('pids.txt')]) } });
    const pending = env.supervisor.ensureAgent('fixture').catch((error: unknown) => error);
    await eventually(() => env.files.pidLines().length === 1, 'the agent to start');
    await env.supervisor.stop('fixture');
    expect(await pending).toMatchObject({ kind: 'stopped' });
    expect(isRunning(env.files.pidLines()[0]![0]!)).toBe(false);
  });
});

describe('shutdown()', () => {
  it('SIGKILLs, after the whole ladder, an agent and grandchild that ignore SIGTERM', async () => {
    const clock = new SimulatedClock();
    env.supervisor = createSupervisor({
      clock,
      agents: { stubborn: fixtureSpec(['--ignore-sigterm', '--spawn-grandchild', '--pid-file', env.files.path('pids.txt')]) },
    });
    await env.supervisor.ensureAgent('stubborn');
    const [agentPid, grandchildPid] = env.files.pidLines()[0]!;
    let finished = false;
    const done = env.supervisor.shutdown().then(() => (finished = true));
    await waitForAgentState(env.supervisor, 'stubborn', 'stopping.closing');
    clock.increment(5_000); // SIGTERM: ignored
    expect(agentState(env.supervisor, 'stubborn')).toBe('stopping.terminating');
    clock.increment(1_999); // no SIGKILL before killTimeoutMs
    expect(agentState(env.supervisor, 'stubborn')).toBe('stopping.terminating');
    expect(finished).toBe(false);
    expect(isRunning(agentPid!)).toBe(true);
    expect(isRunning(grandchildPid!)).toBe(true);
    clock.increment(1); // SIGKILL to the group
    await done;
    expect(isRunning(agentPid!)).toBe(false);
    expect(isRunning(grandchildPid!)).toBe(false);
    expect(env.supervisor.actor.getSnapshot().status).toBe('done');
  });

  it('leaves no process of the group behind when the agent exits but its grandchild would not', async () => {
    env.supervisor = createSupervisor({ agents: { parent: fixtureSpec(['--spawn-grandchild', '--pid-file', env.files.path('pids.txt')]) } });
    await env.supervisor.ensureAgent('parent');
    const [agentPid, grandchildPid] = env.files.pidLines()[0]!;
    await env.supervisor.shutdown();
    expect(isRunning(agentPid!)).toBe(false);
    expect(isRunning(grandchildPid!)).toBe(false);
  });

  it('a crashed agent takes its grandchildren with it', async () => {
    const clock = new SimulatedClock();
    env.supervisor = createSupervisor({ clock, agents: { parent: fixtureSpec(['--spawn-grandchild', '--pid-file', env.files.path('pids.txt')]) } });
    await env.supervisor.ensureAgent('parent');
    const [agentPid, grandchildPid] = env.files.pidLines()[0]!;
    process.kill(agentPid!, 'SIGKILL');
    await waitForStatus(env.supervisor, 'parent', 'reconnecting');
    expect(isRunning(grandchildPid!)).toBe(false);
  });

  it('stops every agent in parallel, cancels pending backoffs, and refuses starts afterwards', async () => {
    const clock = new SimulatedClock();
    env.supervisor = createSupervisor({
      clock,
      agents: { a: fixtureSpec(['--pid-file', env.files.path('pids.txt')]), b: fixtureSpec(['--pid-file', env.files.path('pids.txt')]), c: fixtureSpec(['--pid-file', env.files.path('pids.txt')]) },
    });
    const [a, b] = await Promise.all([env.supervisor.ensureAgent('a'), env.supervisor.ensureAgent('b')]);
    process.kill(b.pid, 'SIGKILL');
    await waitForStatus(env.supervisor, 'b', 'reconnecting');
    await env.supervisor.shutdown();
    expect(isRunning(a.pid)).toBe(false);
    clock.increment(600_000); // the cancelled backoff must not spawn anything
    expect(env.supervisor.list().map((agent) => [agent.status, agent.pid])).toEqual([['idle', null], ['idle', null], ['idle', null]]);
    expect(env.files.pidLines()).toHaveLength(2);
    await expect(env.supervisor.ensureAgent('c')).rejects.toMatchObject({ kind: 'shutting_down' });
    await expect(env.supervisor.reconnect('a')).rejects.toMatchObject({ kind: 'shutting_down' });
    expect(() => env.supervisor!.register('d', fixtureSpec())).toThrow(expect.objectContaining({ kind: 'shutting_down' }));
    await env.supervisor.shutdown(); // idempotent
  });

  it('leaves no timer, listener or stream behind: the host process exits on its own', async () => {
    const script = fileURLToPath(new URL('../fixtures/clean-exit.mjs', import.meta.url));
    const result = await execa(process.execPath, [script, fixtureAgentScript], { timeout: 15_000, reject: false });
    expect(result.timedOut).toBe(false);
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toContain('shutdown complete');
  });
});

describe('processes that hold the agent pipes', () => {
  it('a crash is noticed at once even while a grandchild keeps stdout open, and the grandchild dies', async () => {
    const clock = new SimulatedClock();
    env.supervisor = createSupervisor({
      clock,
      agents: { fixture: fixtureSpec(['--spawn-grandchild', '--grandchild-holds-stdio', '--pid-file', env.files.path('pids.txt')]) },
    });
    await env.supervisor.ensureAgent('fixture');
    const [agentPid, grandchildPid] = env.files.pidLines()[0]!;
    process.kill(agentPid!, 'SIGKILL');
    await waitForStatus(env.supervisor, 'fixture', 'reconnecting', 3_000);
    expect(isRunning(grandchildPid!)).toBe(false);
  });

  it('stop() settles even when an escaped process holds the agent stdout open (no containment: the escapee survives)', async () => {
    // Contained, the escapee dies with the agent (tests/integration/containment.test.ts).
    env.supervisor = createSupervisor({
      containment: 'none',
      agents: { fixture: fixtureSpec(['--spawn-grandchild', '--grandchild-holds-stdio', '--grandchild-escapes', '--pid-file', env.files.path('pids.txt')]) },
    });
    await env.supervisor.ensureAgent('fixture');
    const [agentPid, escapeePid] = env.files.pidLines()[0]!;
    try {
      await env.supervisor.stop('fixture');
      expect(isRunning(agentPid!)).toBe(false);
      expect(env.supervisor.getStatus('fixture')).toBe('idle');
    } finally {
      process.kill(escapeePid!, 'SIGKILL'); // out of the group's reach by design
    }
  });
});
