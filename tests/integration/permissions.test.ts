/** Permission requests on real fixture-agent processes: every policy, timeouts, cancellation. */
import { describe, expect, it } from 'vitest';
import { SimulatedClock } from 'xstate';
import { createSupervisor, type PermissionRequest } from '../../index.js';
import { collectChunks, command, eventually, fixtureSpec, useRealAgentEnvironment } from '../support/real-agents.js';

const env = useRealAgentEnvironment();
const askPermission = command({ op: 'permission', title: 'Run rm -rf build/' });

describe('fixed policies', () => {
  it.each([
    ['allow', 'permission:allow', 'end_turn'],
    ['deny', 'permission:reject', 'end_turn'],
  ] as const)('%s picks the agent option of that kind', async (policy, chunk, stopReason) => {
    env.supervisor = createSupervisor({ permissions: policy, agents: { fixture: fixtureSpec() } });
    const session = await env.supervisor.newSession('fixture', { cwd: env.files.dir });
    const received = collectChunks(session);
    expect(await session.prompt(askPermission)).toBe(stopReason);
    expect(received.text()).toBe(chunk);
  });

  it('a function of the request picks the option; a per-session policy overrides the supervisor', async () => {
    const seen: string[] = [];
    env.supervisor = createSupervisor({ permissions: 'allow', agents: { fixture: fixtureSpec() } });
    const session = await env.supervisor.newSession('fixture', {
      cwd: env.files.dir,
      permissions: (request) => {
        seen.push(`${request.toolCall.title}: ${request.options.map((option) => option.kind).join(',')}`);
        return request.options.find((option) => option.kind === 'reject_once')?.optionId;
      },
    });
    const received = collectChunks(session);
    await session.prompt(askPermission);
    expect(received.text()).toBe('permission:reject');
    expect(seen).toEqual(['Run rm -rf build/: allow_once,reject_once']);
  });
});

describe("'ask' (the default)", () => {
  it('emits permission:request with the options; respond() answers it; the session awaits meanwhile', async () => {
    env.supervisor = createSupervisor({ agents: { fixture: fixtureSpec() } });
    const session = await env.supervisor.newSession('fixture', { cwd: env.files.dir });
    const received = collectChunks(session);
    const requests: PermissionRequest[] = [];
    env.supervisor.on('permission:request', (request) => requests.push(request));
    const turn = session.prompt(askPermission);
    await eventually(() => requests.length === 1, 'the permission request');
    expect(requests[0]).toMatchObject({ agent: 'fixture', sessionId: session.id, toolCall: { title: 'Run rm -rf build/' } });
    expect(requests[0]!.options.map((option) => option.optionId)).toEqual(['allow', 'reject']);
    await eventually(() => session.status === 'awaiting_permission', 'the session to await permission');
    requests[0]!.respond('allow');
    expect(await turn).toBe('end_turn');
    expect(received.text()).toBe('permission:allow');
  });

  it('session.on("permission:request") works too; an unknown option id is answered cancelled', async () => {
    env.supervisor = createSupervisor({ agents: { fixture: fixtureSpec() } });
    const session = await env.supervisor.newSession('fixture', { cwd: env.files.dir });
    const received = collectChunks(session);
    session.on('permission:request', (request) => request.respond('not-an-option'));
    expect(await session.prompt(askPermission)).toBe('cancelled');
    expect(received.text()).toBe('permission:cancelled');
  });

  it('a request nobody answers within permissionTimeoutMs is answered cancelled', async () => {
    const clock = new SimulatedClock();
    env.supervisor = createSupervisor({ clock, permissionTimeoutMs: 300_000, agents: { fixture: fixtureSpec() } });
    const session = await env.supervisor.newSession('fixture', { cwd: env.files.dir });
    const received = collectChunks(session);
    let asked = 0;
    env.supervisor.on('permission:request', () => asked++);
    const turn = session.prompt(askPermission);
    await eventually(() => session.status === 'awaiting_permission', 'the request');
    // The session machine times the question (its own delayed event), not the broker.
    const sessionActor = Object.entries(env.supervisor.actor.getSnapshot().children.fixture!.getSnapshot().children).find(([id]) => id.startsWith(`session:${session.id}#`))![1]!;
    const expired: string[] = [];
    sessionActor.on('ask.expired', (event) => void expired.push((event as { requestId: string }).requestId));
    clock.increment(299_999);
    expect(session.status).toBe('awaiting_permission');
    clock.increment(1);
    expect(await turn).toBe('cancelled');
    expect(expired).toEqual(['permission-1']);
    expect(received.text()).toBe('permission:cancelled');
    expect(asked).toBe(1);
  });

  it('with nobody listening the request is answered cancelled at once', async () => {
    env.supervisor = createSupervisor({ agents: { fixture: fixtureSpec() } });
    const session = await env.supervisor.newSession('fixture', { cwd: env.files.dir });
    expect(await session.prompt(askPermission)).toBe('cancelled');
  });

  it('cancelling the turn cancels its pending request', async () => {
    env.supervisor = createSupervisor({ agents: { fixture: fixtureSpec() } });
    const session = await env.supervisor.newSession('fixture', { cwd: env.files.dir });
    const requests: PermissionRequest[] = [];
    session.on('permission:request', (request) => requests.push(request));
    const turn = session.prompt(askPermission);
    await eventually(() => session.status === 'awaiting_permission', 'the request');
    session.cancel();
    expect(await turn).toBe('cancelled');
    requests[0]!.respond('allow'); // too late: ignored
    expect(session.status).toBe('completed');
  });
});
