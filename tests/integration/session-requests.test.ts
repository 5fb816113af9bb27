/**
 * Session requests the session machine answers in its less travelled states, on real
 * fixture processes: several permission requests pending at once, a permission request
 * while the turn is stalled, requests during a resume, and a resume whose session/load
 * fails. The stall timer runs on a SimulatedClock.
 */
import { describe, expect, it } from 'vitest';
import { SimulatedClock } from 'xstate';
import { createSupervisor, type PermissionRequest } from '../../index.js';
import { collectChunks, command, eventually, fixtureSpec, sessionSnapshot, waitForStatus, useRealAgentEnvironment } from '../support/real-agents.js';

const env = useRealAgentEnvironment();

describe('permission requests', () => {
  it('several at once: the session awaits until the last is answered, each answered on its own', async () => {
    env.supervisor = createSupervisor({ agents: { fixture: fixtureSpec() } });
    const session = await env.supervisor.newSession('fixture', { cwd: env.files.dir });
    const requests: PermissionRequest[] = [];
    session.on('permission:request', (request) => requests.push(request));
    const statuses: string[] = [];
    session.on('status', ({ status }) => statuses.push(status));
    const received = collectChunks(session);
    const turn = session.prompt(command({ op: 'permission', count: 2 }));
    await eventually(() => requests.length === 2, 'both permission requests');
    expect(session.status).toBe('awaiting_permission');
    requests[0]!.respond('allow');
    await eventually(() => sessionSnapshot(env.supervisor!, session)?.context.pendingPermissions.length === 1, 'one request left');
    expect(session.status, 'one of two answered: still awaiting').toBe('awaiting_permission');
    requests[1]!.respond('reject');
    expect(await turn).toBe('end_turn');
    expect(received.chunks).toEqual(['permission:allow', 'permission:reject']);
    expect(statuses).toEqual(['running', 'awaiting_permission', 'running', 'completed']);
  });

  it('a request while the turn is stalled: awaiting a person is no longer a stall', async () => {
    const clock = new SimulatedClock();
    env.supervisor = createSupervisor({ clock, stallTimeoutMs: 10_000, permissions: 'allow', agents: { fixture: fixtureSpec() } });
    const session = await env.supervisor.newSession('fixture', { cwd: env.files.dir });
    const statuses: string[] = [];
    session.on('status', ({ status }) => statuses.push(status));
    const turn = session.prompt(command({ op: 'permission', delayMs: 300 }));
    clock.increment(10_000);
    expect(session.status).toBe('stalled');
    expect(await turn).toBe('end_turn');
    expect(statuses).toEqual(['running', 'stalled', 'awaiting_permission', 'running', 'completed']);
  });
});

describe('resume', () => {
  it('a prompt or a second resume during session/load is refused session_busy by the machine', async () => {
    const clock = new SimulatedClock();
    const state = env.files.path('state.json');
    env.supervisor = createSupervisor({ clock, agents: { fixture: fixtureSpec(['--load-session', '--state-file', state, '--load-delay', '300']) } });
    const session = await env.supervisor.newSession('fixture', { cwd: env.files.dir });
    await session.prompt(command({ op: 'die' })).catch(() => {});
    await waitForStatus(env.supervisor, 'fixture', 'reconnecting');
    clock.increment(1_000);
    await waitForStatus(env.supervisor, 'fixture', 'connected');
    const resuming = session.resume();
    await eventually(() => sessionSnapshot(env.supervisor!, session)?.matches('resuming') === true, 'session/load to be under way');
    await expect(session.prompt('too soon')).rejects.toMatchObject({ kind: 'session_busy' });
    await expect(session.resume()).rejects.toMatchObject({ kind: 'session_busy' });
    await resuming;
    expect(session.status).toBe('ready');
  });

  it('a session/load the agent fails leaves the session failed, and says why', async () => {
    const clock = new SimulatedClock();
    // No state file: the restarted process does not know the session.
    env.supervisor = createSupervisor({ clock, agents: { fixture: fixtureSpec(['--load-session']) } });
    const session = await env.supervisor.newSession('fixture', { cwd: env.files.dir });
    await session.prompt(command({ op: 'die' })).catch(() => {});
    await waitForStatus(env.supervisor, 'fixture', 'reconnecting');
    clock.increment(1_000);
    await waitForStatus(env.supervisor, 'fixture', 'connected');
    await expect(session.resume()).rejects.toMatchObject({ kind: 'protocol_error', message: expect.stringContaining('session/load failed') });
    expect(session.status).toBe('failed');
    expect(session.lastError).toMatchObject({ kind: 'protocol_error' });
  });
});
