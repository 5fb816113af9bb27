import { describe, expect, it } from 'vitest';
import { createActor, getNextSnapshot, initialTransition, transition } from 'xstate';
import { agentMachine, streamClosedGraceMs } from '../../machines/agent.machine.js';
import { agentInput, fakeProcessActor, startFakeAgent, withoutParent } from '../support/fake-process.js';

const initialize = { protocolVersion: 1, agentCapabilities: {}, authMethods: [] };

describe('agent machine: pure transitions', () => {
  const machine = agentMachine.provide({ actions: withoutParent, actors: { agentProcess: fakeProcessActor({ spawns: 0, alive: 0, commands: [] }) } });

  it('starts idle and spawns the process on ensure', () => {
    const [idle] = initialTransition(machine, agentInput());
    expect(idle.value).toBe('idle');
    const [starting, actions] = transition(machine, idle, { type: 'ensure' });
    expect(starting.value).toBe('starting');
    expect(actions.map((action) => action.type)).toContain('xstate.spawnChild');
    expect(starting.context).toMatchObject({ attempt: 0, autoRetry: false, processRunning: true });
  });

  it('connects when initialize is answered and records the answer', () => {
    const [idle] = initialTransition(machine, agentInput());
    const [starting] = transition(machine, idle, { type: 'ensure' });
    const [spawned] = transition(machine, starting, { type: 'process.spawned', pid: 4242, containment: null });
    const [connected] = transition(machine, spawned, { type: 'process.initialized', initialize });
    expect(connected.value).toEqual({ connected: 'settling' });
    expect(connected.context.pid).toBe(4242);
    expect(connected.context.initialize).toEqual(initialize);
  });

  it('a stream closed outside a stop: the process is killed after streamClosedGraceMs on the clock, unless it exits or a stop begins', () => {
    const lingering = startFakeAgent();
    lingering.actor.send({ type: 'ensure' });
    lingering.connect();
    lingering.actor.send({ type: 'process.connectionClosed' });
    lingering.clock.increment(streamClosedGraceMs - 1);
    expect(lingering.log.commands).toEqual([]);
    lingering.clock.increment(1);
    expect(lingering.log.commands).toEqual(['kill:stream_closed']);

    const exiting = startFakeAgent();
    exiting.actor.send({ type: 'ensure' });
    exiting.connect();
    exiting.actor.send({ type: 'process.connectionClosed' });
    exiting.crash();
    exiting.actor.send({ type: 'reconnect' }); // a new process: the old grace must not kill it
    exiting.connect();
    exiting.clock.increment(streamClosedGraceMs);
    expect(exiting.log.commands).toEqual([]);

    const stopped = startFakeAgent();
    stopped.actor.send({ type: 'ensure' });
    stopped.connect();
    stopped.actor.send({ type: 'process.connectionClosed' });
    stopped.actor.send({ type: 'stop' });
    stopped.actor.send({ type: 'process.connectionClosed' }); // the ladder closing it again schedules nothing
    stopped.clock.increment(streamClosedGraceMs);
    expect(stopped.log.commands).toEqual(['closeInput']);
  });

  it('answers a reported failure with its classification, connected or not, parking for a login', () => {
    const agent = startFakeAgent();
    const answers: Array<{ requestId: string | null; class: unknown }> = [];
    agent.actor.on('failure.classified', (event) => answers.push({ requestId: event.requestId, class: event.failure.class }));
    agent.actor.send({ type: 'agent.failure', phase: 'session', kind: 'protocol_error', detail: 'while idle', requestId: 'idle' });
    agent.actor.send({ type: 'ensure' });
    agent.connect();
    agent.actor.send({ type: 'agent.failure', phase: 'session', kind: 'protocol_error', detail: 'Invalid params', rpcCode: -32602, requestId: 'params' });
    expect(agent.value()).toEqual({ connected: 'settling' });
    agent.actor.send({ type: 'agent.failure', phase: 'session', kind: 'auth_required', detail: 'Authentication required', rpcCode: -32000, requestId: 'login' });
    expect(agent.value()).toEqual({ needsAuth: 'waiting' });
    expect(answers.map((answer) => answer.requestId)).toEqual(['idle', 'params', 'login']);
    expect(answers[2]!.class).toBe('auth');
  });

  it('words a spawn failure for people: not_installed', () => {
    const [idle] = initialTransition(machine, agentInput());
    const starting = getNextSnapshot(machine, idle, { type: 'ensure' });
    const [failed, actions] = transition(machine, starting, { type: 'process.failed', kind: 'not_installed', detail: 'ENOENT', stderr: [] });
    expect(failed.value).toBe('disconnected');
    expect(failed.context.lastError).toMatchObject({ kind: 'not_installed', message: "Could not start Codex. Check that it's installed." });
    expect(actions.map((action) => action.type)).toContain('xstate.stopChild');
  });

  it('a first start that fails is not retried', () => {
    const [idle] = initialTransition(machine, agentInput());
    const starting = getNextSnapshot(machine, idle, { type: 'ensure' });
    const failed = getNextSnapshot(machine, starting, { type: 'process.failed', kind: 'handshake_failed', detail: 'refused', stderr: ['why'] });
    expect(failed.value).toBe('disconnected');
    expect(failed.context.lastError).toMatchObject({ kind: 'handshake_failed', message: 'Could not connect to Codex', stderr: ['why'] });
  });

  it('an exit during the handshake is a handshake failure with the exit code', () => {
    const [idle] = initialTransition(machine, agentInput());
    const starting = getNextSnapshot(machine, idle, { type: 'ensure' });
    const failed = getNextSnapshot(machine, starting, { type: 'process.exited', exitCode: 3, signal: null, stderr: ['fatal'], reason: 'exit' });
    expect(failed.context.lastError).toMatchObject({ kind: 'handshake_failed', exitCode: 3, stderr: ['fatal'] });
  });

  it('stop from disconnected goes idle without a ladder', () => {
    const [idle] = initialTransition(machine, agentInput());
    const starting = getNextSnapshot(machine, idle, { type: 'ensure' });
    const failed = getNextSnapshot(machine, starting, { type: 'process.failed', kind: 'not_installed', detail: '', stderr: [] });
    expect(getNextSnapshot(machine, failed, { type: 'stop' }).value).toBe('idle');
  });
});

describe('agent machine: delays on a SimulatedClock', () => {
  it('retries a lost agent on the 1/2/4/8/16 s schedule, then gives up after maxAttempts', () => {
    const agent = startFakeAgent();
    agent.actor.send({ type: 'ensure' });
    agent.connect();
    agent.crash();
    const observedDelays: number[] = [];
    for (let attempt = 1; attempt <= 5; attempt++) {
      expect(agent.value()).toEqual({ reconnecting: 'waiting' });
      expect(agent.context().attempt).toBe(attempt);
      const spawnsBefore = agent.log.spawns;
      let waited = 0;
      while (agent.log.spawns === spawnsBefore && waited < 60_000) {
        agent.clock.increment(100);
        waited += 100;
      }
      observedDelays.push(waited);
      expect(agent.value()).toEqual({ reconnecting: 'spawning' });
      agent.crash(); // the attempt dies before initialize
    }
    expect(observedDelays).toEqual([1000, 2000, 4000, 8000, 16000]);
    expect(agent.value()).toBe('disconnected');
    agent.clock.increment(120_000);
    expect(agent.log.spawns).toBe(6); // the first start + 5 attempts, no more
    expect(agent.log.alive).toBe(0);
    agent.actor.stop();
  });

  it('caps the delay at maxDelayMs', () => {
    const agent = startFakeAgent({ restart: { initialDelayMs: 1000, factor: 10, maxDelayMs: 30_000, maxAttempts: 5 } });
    agent.actor.send({ type: 'ensure' });
    agent.connect();
    agent.crash();
    agent.clock.increment(1000); // attempt 1 after 1 s
    agent.crash();
    agent.clock.increment(10_000); // attempt 2 after 10 s
    agent.crash();
    agent.clock.increment(29_999); // attempt 3: 100 s, capped at 30 s
    expect(agent.value()).toEqual({ reconnecting: 'waiting' });
    agent.clock.increment(1);
    expect(agent.value()).toEqual({ reconnecting: 'spawning' });
    agent.actor.stop();
  });

  it('resets the attempt counter only after stableAfterMs connected', () => {
    const agent = startFakeAgent();
    agent.actor.send({ type: 'ensure' });
    agent.connect();
    agent.crash();
    agent.clock.increment(1000);
    agent.connect();
    expect(agent.context().attempt).toBe(1);
    agent.clock.increment(29_999);
    expect(agent.context().attempt).toBe(1);
    agent.clock.increment(1);
    expect(agent.context().attempt).toBe(0);
    expect(agent.value()).toEqual({ connected: 'stable' });
    agent.actor.stop();
  });

  it('a process that connects and dies at once does not loop at the first step', () => {
    const agent = startFakeAgent();
    agent.actor.send({ type: 'ensure' });
    agent.connect();
    const delays: number[] = [];
    for (let i = 0; i < 5; i++) {
      agent.crash();
      const before = agent.log.spawns;
      let waited = 0;
      while (agent.log.spawns === before) {
        agent.clock.increment(500);
        waited += 500;
      }
      delays.push(waited);
      agent.connect(); // connects, and will die again before stableAfterMs
    }
    expect(delays).toEqual([1000, 2000, 4000, 8000, 16000]);
    agent.crash();
    expect(agent.value()).toBe('disconnected');
    agent.actor.stop();
  });

  it('times the handshake out and kills the process', () => {
    const agent = startFakeAgent({ handshakeTimeoutMs: 30_000 });
    agent.actor.send({ type: 'ensure' });
    agent.actor.send({ type: 'process.spawned', pid: 7, containment: null });
    agent.clock.increment(29_999);
    expect(agent.value()).toBe('starting');
    agent.clock.increment(1);
    expect(agent.value()).toBe('disconnected');
    expect(agent.context().lastError).toMatchObject({ kind: 'handshake_timeout', message: 'Could not connect to Codex' });
    expect(agent.log.alive).toBe(0);
    expect(agent.errors).toEqual(['handshake_timeout']);
    agent.actor.stop();
  });

  it('manual reconnect during a pending backoff cancels the timer, resets the count and spawns now', () => {
    const agent = startFakeAgent();
    agent.actor.send({ type: 'ensure' });
    agent.connect();
    agent.crash();
    agent.clock.increment(1000);
    agent.crash(); // attempt 1 failed; attempt 2 waits 2 s
    expect(agent.context().attempt).toBe(2);
    const spawns = agent.log.spawns;
    agent.actor.send({ type: 'reconnect' });
    expect(agent.value()).toEqual({ reconnecting: 'spawning' });
    expect(agent.context().attempt).toBe(0);
    expect(agent.log.spawns).toBe(spawns + 1);
    agent.clock.increment(60_000); // the old 2 s timer must not fire a second spawn
    expect(agent.log.spawns).toBe(spawns + 1);
    agent.actor.stop();
  });

  it('manual reconnect from disconnected after giving up resets the counter', () => {
    const agent = startFakeAgent({ restart: { maxAttempts: 1 } });
    agent.actor.send({ type: 'ensure' });
    agent.connect();
    agent.crash();
    agent.clock.increment(1000);
    agent.crash();
    expect(agent.value()).toBe('disconnected');
    expect(agent.context().attempt).toBe(1);
    agent.actor.send({ type: 'reconnect' });
    expect(agent.value()).toEqual({ reconnecting: 'spawning' });
    expect(agent.context().attempt).toBe(0);
    agent.connect();
    expect(agent.value()).toEqual({ connected: 'settling' });
    agent.actor.stop();
  });

  it('does not retry errors that a restart cannot fix', () => {
    const agent = startFakeAgent();
    agent.actor.send({ type: 'ensure' });
    agent.connect();
    agent.crash();
    agent.clock.increment(1000);
    agent.actor.send({ type: 'process.failed', kind: 'not_installed', detail: 'ENOENT', stderr: [] });
    expect(agent.value()).toBe('disconnected');
    agent.clock.increment(120_000);
    expect(agent.value()).toBe('disconnected');
    agent.actor.stop();
  });

  it('runs the stop ladder: close input, SIGTERM after shutdownTimeout, SIGKILL after killTimeout', () => {
    const agent = startFakeAgent();
    agent.actor.send({ type: 'ensure' });
    agent.connect();
    agent.actor.send({ type: 'stop' });
    expect(agent.value()).toEqual({ stopping: 'closing' });
    expect(agent.log.commands).toEqual(['closeInput']);
    agent.clock.increment(4_999);
    expect(agent.log.commands).toEqual(['closeInput']);
    agent.clock.increment(1);
    expect(agent.log.commands).toEqual(['closeInput', 'terminate']);
    agent.clock.increment(2_000);
    expect(agent.log.commands).toEqual(['closeInput', 'terminate', 'kill']);
    agent.actor.send({ type: 'process.exited', exitCode: null, signal: 'SIGKILL', stderr: [], reason: 'exit' });
    expect(agent.value()).toBe('idle');
    expect(agent.log.alive).toBe(0);
    expect(agent.statuses).toEqual(['idle', 'starting', 'connected', 'stopping', 'idle']);
    agent.actor.stop();
  });

  it('a graceful exit ends the ladder at the first rung and cancels its timers', () => {
    const agent = startFakeAgent();
    agent.actor.send({ type: 'ensure' });
    agent.connect();
    agent.actor.send({ type: 'stop' });
    agent.actor.send({ type: 'process.exited', exitCode: 0, signal: null, stderr: [], reason: 'exit' });
    expect(agent.value()).toBe('idle');
    agent.clock.increment(60_000);
    expect(agent.log.commands).toEqual(['closeInput']);
    agent.actor.stop();
  });

  it('stop during a pending backoff goes idle and the timer never fires', () => {
    const agent = startFakeAgent();
    agent.actor.send({ type: 'ensure' });
    agent.connect();
    agent.crash();
    const spawns = agent.log.spawns;
    agent.actor.send({ type: 'stop' });
    expect(agent.value()).toBe('idle');
    agent.clock.increment(60_000);
    expect(agent.log.spawns).toBe(spawns);
    expect(agent.statuses.slice(-4)).toEqual(['disconnected', 'reconnecting', 'stopping', 'idle']);
    agent.actor.stop();
  });

  it('emits each status once per transition, in order', () => {
    const agent = startFakeAgent();
    agent.actor.send({ type: 'ensure' });
    agent.connect();
    agent.crash();
    agent.clock.increment(1000);
    agent.connect();
    expect(agent.statuses).toEqual(['idle', 'starting', 'connected', 'disconnected', 'reconnecting', 'connected']);
    expect(agent.errors).toEqual(['agent_exited']);
    agent.actor.stop();
  });

  it('spreads delays with jitter, within [delay·(1−jitter), delay]', () => {
    const delays = new Set<number>();
    for (let seed = 1; seed <= 20; seed++) {
      const agent = startFakeAgent({ jitterSeed: seed * 7919, restart: { jitter: 0.5 } });
      agent.actor.send({ type: 'ensure' });
      agent.connect();
      agent.crash();
      let waited = 0;
      while (agent.log.spawns === 1) {
        agent.clock.increment(10);
        waited += 10;
      }
      expect(waited).toBeGreaterThanOrEqual(500);
      expect(waited).toBeLessThanOrEqual(1000);
      delays.add(waited);
      agent.actor.stop();
    }
    expect(delays.size).toBeGreaterThan(5);
  });
});

describe('agent machine without a provided process actor', () => {
  it('fails loudly rather than silently doing nothing', () => {
    const actor = createActor(agentMachine, { input: agentInput() });
    const errors: unknown[] = [];
    actor.subscribe({ error: (error) => errors.push(error) });
    actor.start();
    actor.send({ type: 'ensure' });
    expect(errors.length).toBe(1);
  });
});
