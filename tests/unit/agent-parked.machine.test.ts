/**
 * The agent machine's parked states, restart intensity and held restarts at the unit edge:
 * a fake process actor (tests play the process with `process.*` events), a fake
 * authenticate actor, a SimulatedClock for every delay. The same behaviour on real
 * processes: tests/integration/failure-classes.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { createActor, fromPromise, SimulatedClock } from 'xstate';
import { agentMachine } from '../../machines/agent.machine.js';
import { agentInput, fakeProcessActor, type AgentInputOverrides, type FakeProcessLog, withoutParent } from '../support/fake-process.js';

const initialize = { protocolVersion: 1, agentCapabilities: {}, authMethods: [{ id: 'token', name: 'Token' }] };

function start(overrides: AgentInputOverrides = {}, authenticate: (methodId: string) => Promise<void> = async () => {}) {
  const clock = new SimulatedClock();
  const log: FakeProcessLog = { spawns: 0, alive: 0, commands: [] };
  const machine = agentMachine.provide({
    actions: withoutParent,
    actors: { agentProcess: fakeProcessActor(log), authenticate: fromPromise<void, { agent: string; methodId: string }>(({ input }) => authenticate(input.methodId)) },
  });
  const actor = createActor(machine, { input: agentInput(overrides), clock });
  const emitted: string[] = [];
  actor.on('*', (event) => emitted.push(event.type === 'status' ? `status:${(event as { status: string }).status}` : event.type));
  actor.start();
  const state = () => {
    const value = actor.getSnapshot().value;
    return typeof value === 'string' ? value : Object.entries(value).map(([key, child]) => `${key}.${String(child)}`)[0]!;
  };
  return {
    actor,
    clock,
    log,
    emitted,
    state,
    context: () => actor.getSnapshot().context,
    connect(at = 0) {
      actor.send({ type: 'process.spawned', pid: 1000 + log.spawns, containment: null, at });
      actor.send({ type: 'process.initialized', initialize });
    },
    exit(stderr: string[], at = 0, exitCode = 1) {
      actor.send({ type: 'process.exited', exitCode, signal: null, stderr, reason: 'exit', at });
    },
  };
}

const flush = () => new Promise((resolve) => setImmediate(resolve));

describe('needsAuth', () => {
  it('a process that dies saying 401 parks without retry; authenticate() spawns, then authenticates, then connects', async () => {
    const methods: string[] = [];
    const agent = start({}, async (methodId) => void methods.push(methodId));
    agent.actor.send({ type: 'ensure' });
    agent.connect();
    agent.exit(['Error: 401 Unauthorized']);
    expect(agent.state()).toBe('needsAuth.waiting');
    expect(agent.context().lastError).toMatchObject({ kind: 'agent_exited', class: 'auth', retryable: false, authMethods: [{ id: 'token' }] });
    expect(agent.emitted).toContain('agent.needsAuth');
    agent.clock.increment(600_000);
    expect(agent.log.spawns).toBe(1);
    agent.actor.send({ type: 'authenticate', methodId: 'token', requestId: 'r1' });
    expect(agent.state()).toBe('starting');
    expect(agent.log.spawns).toBe(2);
    agent.connect();
    expect(agent.state()).toBe('needsAuth.authenticating');
    await flush();
    expect(methods).toEqual(['token']);
    expect(agent.state()).toBe('connected.settling');
    expect(agent.context()).toMatchObject({ lastError: null, pendingAuthMethod: null });
  });

  it('a refused authenticate stays parked with the refusal; ensure is answered at once with it', async () => {
    const agent = start({}, async () => {
      throw Object.assign(new Error('bad token'), { code: -32000 });
    });
    agent.actor.send({ type: 'ensure' });
    agent.connect();
    agent.actor.send({ type: 'agent.failure', phase: 'session', kind: 'auth_required', detail: 'Authentication required', rpcCode: -32000, at: 5 });
    expect(agent.state()).toBe('needsAuth.waiting');
    const settled: unknown[] = [];
    agent.actor.on('command.settled', (event) => settled.push(event));
    agent.actor.send({ type: 'authenticate', methodId: 'token', requestId: 'a' });
    expect(agent.state()).toBe('needsAuth.authenticating');
    await flush();
    expect(agent.state()).toBe('needsAuth.waiting');
    expect(agent.context().lastError).toMatchObject({ kind: 'auth_required', class: 'auth', detail: 'bad token' });
    agent.actor.send({ type: 'ensure', requestId: 'e' });
    expect(settled).toEqual([
      expect.objectContaining({ requestId: 'a', result: { ok: false, failure: expect.objectContaining({ detail: 'bad token' }) } }),
      expect.objectContaining({ requestId: 'e', result: { ok: false, failure: expect.objectContaining({ class: 'auth' }) } }),
    ]);
  });

  it('reconnect() with the process still there replaces it: kill, then spawn; killTimeout spawns anyway', () => {
    const agent = start();
    agent.actor.send({ type: 'ensure' });
    agent.connect();
    agent.actor.send({ type: 'agent.failure', phase: 'turn', kind: 'protocol_error', detail: 'invalid api key', at: 5 });
    expect(agent.state()).toBe('needsAuth.waiting');
    agent.actor.send({ type: 'reconnect' });
    expect(agent.state()).toBe('reconnecting.replacing');
    expect(agent.log.commands).toEqual(['kill']);
    agent.clock.increment(2_000);
    expect(agent.state()).toBe('reconnecting.spawning');
    expect(agent.log.spawns).toBe(2);
    agent.connect();
    expect(agent.state()).toBe('connected.settling');
  });

  it('a process that ends while parked is released; the agent stays parked; stop() goes idle', () => {
    const agent = start();
    agent.actor.send({ type: 'ensure' });
    agent.connect();
    agent.actor.send({ type: 'agent.failure', phase: 'session', kind: 'auth_required', detail: 'login', rpcCode: -32000, at: 0 });
    agent.exit([]);
    expect(agent.state()).toBe('needsAuth.waiting');
    expect(agent.context().processRunning).toBe(false);
    agent.actor.send({ type: 'stop' });
    expect(agent.state()).toBe('idle');
  });
});

describe('rateLimited', () => {
  it('"retry after 30s" waits 30 s from the failure, then spawns again', () => {
    const agent = start();
    agent.actor.send({ type: 'ensure' });
    agent.connect(1_000);
    agent.exit(['429 Too Many Requests: retry after 30s'], 1_000);
    expect(agent.state()).toBe('rateLimited.waiting');
    expect(agent.context()).toMatchObject({ parkedWaitMs: 30_000, lastError: { class: 'rate_limited', retryAt: 31_000, retryable: true } });
    agent.clock.increment(29_999);
    expect(agent.log.spawns).toBe(1);
    agent.clock.increment(1);
    expect(agent.state()).toBe('reconnecting.spawning');
    expect(agent.log.spawns).toBe(2);
  });

  it('a limit met by a turn keeps the process: at the reset the agent is connected again, no spawn', () => {
    const agent = start();
    agent.actor.send({ type: 'ensure' });
    agent.connect();
    agent.actor.send({ type: 'agent.failure', phase: 'turn', kind: 'protocol_error', detail: 'Rate limit reached. Please try again in 10s.', at: 0 });
    expect(agent.state()).toBe('rateLimited.waiting');
    agent.clock.increment(10_000);
    expect(agent.state()).toBe('connected.settling');
    expect(agent.log.spawns).toBe(1);
  });

  it('with no reset time and no wait in its policy it is held until reconnect(); a capped wait never exceeds maxWaitMs', () => {
    const held = start();
    held.actor.send({ type: 'ensure' });
    held.connect();
    held.actor.send({ type: 'agent.failure', phase: 'turn', kind: 'protocol_error', detail: "You've hit your usage limit", at: 0 });
    expect(held.state()).toBe('rateLimited.held');
    held.clock.increment(10 * 24 * 60 * 60_000);
    expect(held.state()).toBe('rateLimited.held');
    held.actor.send({ type: 'reconnect' });
    expect(held.state()).toBe('connected.settling');

    const capped = start({ restart: { policies: { crash: { action: 'retry' }, timeout: { action: 'retry' }, unknown: { action: 'retry' }, auth: { action: 'needsAuth' }, config: { action: 'giveUp' }, usage_limit: { action: 'rateLimited', waitMs: null, maxWaitMs: 60_000 }, rate_limited: { action: 'rateLimited', waitMs: 5_000, maxWaitMs: 60_000 } } } });
    capped.actor.send({ type: 'ensure' });
    capped.connect();
    capped.actor.send({ type: 'agent.failure', phase: 'turn', kind: 'protocol_error', detail: 'usage limit reached, try again in 5 hours', at: 0 });
    expect(capped.context().parkedWaitMs).toBe(60_000);
    capped.actor.send({ type: 'agent.failure', phase: 'turn', kind: 'protocol_error', detail: 'ignored while parked', at: 0 });
    expect(capped.state()).toBe('rateLimited.waiting');
  });
});

describe('restart intensity and held restarts', () => {
  it('the restart one past restart.intensity gives up with restart_intensity', () => {
    const agent = start({ restart: { maxAttempts: 10, intensity: 2, periodMs: 60_000 } });
    agent.actor.send({ type: 'ensure' });
    agent.connect(0);
    agent.exit([], 100);
    expect(agent.state()).toBe('reconnecting.waiting');
    agent.clock.increment(1_000);
    agent.exit([], 1_200); // the handshake of restart 1 fails
    expect(agent.state()).toBe('reconnecting.waiting');
    agent.clock.increment(2_000);
    agent.exit([], 3_300); // restart 2 fails: a third restart would exceed 2 in 60 s
    expect(agent.state()).toBe('disconnected');
    expect(agent.context().lastError).toMatchObject({ kind: 'restart_intensity', retryable: false });
    expect(agent.emitted.filter((type) => type === 'error')).toHaveLength(4);
  });

  it('restarts outside the period do not count', () => {
    const agent = start({ restart: { maxAttempts: 10, intensity: 1, periodMs: 1_000, stableAfterMs: 100 } });
    agent.actor.send({ type: 'ensure' });
    agent.connect(0);
    agent.exit([], 0);
    agent.clock.increment(1_000);
    agent.connect(1_000);
    agent.exit([], 5_000);
    expect(agent.state()).toBe('reconnecting.waiting');
  });

  it('held restarts: a backoff that elapses waits in reconnecting.held; a disconnected agent stays; release resumes both', () => {
    const waiting = start();
    waiting.actor.send({ type: 'ensure' });
    waiting.connect();
    waiting.exit([]);
    waiting.actor.send({ type: 'restarts.hold' });
    waiting.clock.increment(1_000);
    expect(waiting.state()).toBe('reconnecting.held');
    expect(waiting.log.spawns).toBe(1);
    waiting.actor.send({ type: 'restarts.release' });
    expect(waiting.state()).toBe('reconnecting.spawning');

    const disconnected = start({ restartsHeld: true });
    disconnected.actor.send({ type: 'ensure' });
    disconnected.connect();
    disconnected.exit([]);
    expect(disconnected.state()).toBe('disconnected');
    disconnected.actor.send({ type: 'restarts.release' });
    expect(disconnected.state()).toBe('reconnecting.waiting');

    const manual = start({ restartsHeld: true });
    manual.actor.send({ type: 'ensure' });
    manual.connect();
    manual.exit([]);
    manual.actor.send({ type: 'reconnect' });
    expect(manual.state()).toBe('reconnecting.spawning');
  });
});
