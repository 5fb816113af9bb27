/** Sessions on real fixture-agent processes: turns, updates, cancel, failure and resume, stalls, auth. */
import { writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { SimulatedClock } from 'xstate';
import { AgentError, createSupervisor, type SessionUpdate } from '../../index.js';
import { collectChunks, command, eventually, fixtureSpec, isRunning, waitForStatus, useRealAgentEnvironment } from '../support/real-agents.js';

const env = useRealAgentEnvironment();

describe('prompt turns', () => {
  it('streams N chunks to on("update") and to the async iterator, then resolves the stop reason', async () => {
    env.supervisor = createSupervisor({ agents: { fixture: fixtureSpec() } });
    const session = await env.supervisor.newSession('fixture', { cwd: env.files.dir });
    expect(session.id).toMatch(/^fixture-/);
    expect(session.status).toBe('ready');
    const received = collectChunks(session);
    const statuses: string[] = [];
    session.on('status', ({ status }) => statuses.push(status));
    const iterated: SessionUpdate[] = [];
    const iterating = (async () => {
      for await (const update of session) {
        iterated.push(update);
        if (iterated.length === 50) break;
      }
    })();
    expect(await session.prompt(command({ op: 'stream', count: 50, text: 'x' }))).toBe('end_turn');
    await iterating;
    expect(received.chunks).toHaveLength(50);
    expect(received.text()).toBe('x'.repeat(50));
    expect(iterated).toHaveLength(50);
    expect(statuses).toEqual(['running', 'completed']);
    expect(session.status).toBe('completed');
    expect(await session.prompt('and again')).toBe('end_turn');
  });

  it('delivers every kind of update: thoughts, tool calls, their updates, plans, mode changes', async () => {
    env.supervisor = createSupervisor({ agents: { fixture: fixtureSpec() } });
    const session = await env.supervisor.newSession('fixture', { cwd: env.files.dir });
    const kinds: string[] = [];
    session.on('update', (update) => kinds.push(update.sessionUpdate));
    await session.prompt(command({ op: 'updates' }));
    expect(kinds).toEqual(['agent_thought_chunk', 'tool_call', 'tool_call_update', 'plan', 'current_mode_update', 'session_info_update', 'agent_message_chunk']);
  });

  it('cancel() sends session/cancel and the turn ends cancelled; so does an aborted signal', async () => {
    env.supervisor = createSupervisor({ agents: { fixture: fixtureSpec() } });
    const session = await env.supervisor.newSession('fixture', { cwd: env.files.dir });
    const turn = session.prompt(command({ op: 'hang' }));
    await eventually(() => session.status === 'running', 'the turn to run');
    await expect(session.prompt('second')).rejects.toMatchObject({ kind: 'session_busy' });
    session.cancel();
    expect(await turn).toBe('cancelled');
    const controller = new AbortController();
    const aborted = session.prompt(command({ op: 'hang' }), { signal: controller.signal });
    controller.abort();
    expect(await aborted).toBe('cancelled');
  });

  it("a session opened with the SDK's own helper over handle.connection gets its updates; agentvisor's session beside it gets its own", async () => {
    env.supervisor = createSupervisor({ agents: { fixture: fixtureSpec() } });
    const ours = await env.supervisor.newSession('fixture', { cwd: env.files.dir });
    const handle = await env.supervisor.ensureAgent('fixture');
    const theirs = await handle.connection.agent.buildSession(env.files.dir).start();
    try {
      const received = collectChunks(ours);
      const theirChunks: string[] = [];
      const reading = (async () => {
        for (;;) {
          const message = await theirs.nextUpdate();
          if (message.kind === 'stop') return message;
          if (message.update.sessionUpdate === 'agent_message_chunk' && message.update.content.type === 'text') theirChunks.push(message.update.content.text);
        }
      })();
      // Both turns at once: their updates interleave on the one connection.
      const [ourStop, theirStop] = await Promise.all([ours.prompt(command({ op: 'stream', count: 40, text: 'a' })), theirs.prompt(command({ op: 'stream', count: 30, text: 'b' }))]);
      await reading;
      expect(ourStop).toBe('end_turn');
      expect(theirStop.stopReason).toBe('end_turn');
      expect(received.text()).toBe('a'.repeat(40));
      expect(theirChunks.join('')).toBe('b'.repeat(30));
      expect(env.supervisor.openSessions().map((session) => session.id)).toEqual([ours.id]);
    } finally {
      theirs.dispose();
    }
  });

  it('turns that complete, fail or are refused leave nothing waiting in the session: its answers are routed by request id, its requests forgotten once settled', async () => {
    env.supervisor = createSupervisor({ agents: { fixture: fixtureSpec() } });
    const session = await env.supervisor.newSession('fixture', { cwd: env.files.dir });
    const record = (session as unknown as { record: { answers: { pending: number }; classified: Map<string, unknown> } }).record;
    for (let turn = 0; turn < 5; turn++) expect(await session.prompt('hello')).toBe('end_turn');
    const busy = session.prompt(command({ op: 'slow', count: 2, intervalMs: 20 }));
    await expect(session.prompt('in between')).rejects.toMatchObject({ kind: 'session_busy' });
    expect(await busy).toBe('end_turn');
    // The agent refuses the turn: its classification is waited for (failure-classes.test.ts checks the class it gives), then nothing is kept.
    await expect(session.prompt(command({ op: 'fail', code: -32603, message: 'boom' }))).rejects.toBeInstanceOf(AgentError);
    expect(record.answers.pending).toBe(0);
    expect(record.classified.size).toBe(0);
  });

  it('a closed session refuses prompts and ends its iterators', async () => {
    env.supervisor = createSupervisor({ agents: { fixture: fixtureSpec() } });
    const session = await env.supervisor.newSession('fixture', { cwd: env.files.dir });
    const iterator = session[Symbol.asyncIterator]();
    const next = iterator.next();
    await session.close();
    expect(await next).toEqual({ done: true, value: undefined });
    expect(session.status).toBe('stopped');
    await expect(session.prompt('hi')).rejects.toMatchObject({ kind: 'session_closed' });
    expect(env.supervisor.openSessions()).toHaveLength(0);
  });
});

describe('when the agent dies mid-turn', () => {
  it('the turn rejects with agent_exited, the session fails, and resumes with session/load after the reconnect', async () => {
    const clock = new SimulatedClock();
    const state = env.files.path('state.json');
    env.supervisor = createSupervisor({ clock, agents: { fixture: fixtureSpec(['--load-session', '--state-file', state]) } });
    const session = await env.supervisor.newSession('fixture', { cwd: env.files.dir });
    await session.prompt('remember this');
    const failure = await session.prompt(command({ op: 'die' })).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(AgentError);
    expect(failure).toMatchObject({ kind: 'agent_exited' });
    expect(session.status).toBe('failed');
    await expect(session.prompt('too soon')).rejects.toMatchObject({ kind: 'session_closed' });
    await waitForStatus(env.supervisor, 'fixture', 'reconnecting');
    clock.increment(1000);
    await waitForStatus(env.supervisor, 'fixture', 'connected');
    const replayed = collectChunks(session);
    await session.resume();
    expect(session.status).toBe('ready');
    expect(replayed.text()).toContain('remember this');
    expect(await session.prompt('back again')).toBe('end_turn');
  });

  it('loadSession of a failed session here resumes it (the session machine decides); of an open one returns it as it is', async () => {
    const clock = new SimulatedClock();
    const state = env.files.path('state.json');
    env.supervisor = createSupervisor({ clock, agents: { fixture: fixtureSpec(['--load-session', '--state-file', state]) } });
    const session = await env.supervisor.newSession('fixture', { cwd: env.files.dir });
    await expect(session.prompt(command({ op: 'die' }))).rejects.toMatchObject({ kind: 'agent_exited' });
    await waitForStatus(env.supervisor, 'fixture', 'reconnecting');
    clock.increment(1000);
    const loaded = await env.supervisor.loadSession('fixture', session.id);
    expect(loaded.id).toBe(session.id);
    expect(session.status).toBe('ready');
    const again = await env.supervisor.loadSession('fixture', session.id);
    expect(again.id).toBe(session.id);
    expect(session.status).toBe('ready');
    expect(await again.prompt('still here')).toBe('end_turn');
  });

  it('an agent without loadSession cannot resume: not_supported, never a silent fresh session', async () => {
    const clock = new SimulatedClock();
    env.supervisor = createSupervisor({ clock, agents: { fixture: fixtureSpec() } });
    const session = await env.supervisor.newSession('fixture', { cwd: env.files.dir });
    await expect(session.prompt(command({ op: 'die' }))).rejects.toMatchObject({ kind: 'agent_exited' });
    await waitForStatus(env.supervisor, 'fixture', 'reconnecting');
    clock.increment(1000);
    await expect(session.resume()).rejects.toMatchObject({ kind: 'not_supported' });
    expect(session.status).toBe('failed');
    await expect(env.supervisor.loadSession('fixture', session.id)).rejects.toMatchObject({ kind: 'not_supported' });
  });

  it('loadSession restores a session created by an earlier process, replaying its history', async () => {
    const state = env.files.path('state.json');
    const first = createSupervisor({ agents: { fixture: fixtureSpec(['--load-session', '--state-file', state]) } });
    const original = await first.newSession('fixture', { cwd: env.files.dir });
    await original.prompt('the first words');
    await first.shutdown();
    env.supervisor = createSupervisor({ agents: { fixture: fixtureSpec(['--load-session', '--state-file', state]) } });
    const replay: string[] = [];
    const loaded = await env.supervisor.loadSession('fixture', original.id, {
      cwd: env.files.dir,
      onUpdate: (update) => {
        if (update.sessionUpdate === 'agent_message_chunk' && update.content.type === 'text') replay.push(update.content.text);
      },
    });
    expect(loaded.id).toBe(original.id);
    expect(replay.join('')).toContain('the first words');
    expect(await loaded.prompt('more')).toBe('end_turn');
    await expect(env.supervisor.loadSession('fixture', 'fixture-unknown')).rejects.toMatchObject({ kind: 'protocol_error' });
  });
});

describe('stalls', () => {
  it('a burst of updates reaches the stall timer as a few activity events, not one per update', async () => {
    let activities = 0;
    env.supervisor = createSupervisor({
      agents: { fixture: fixtureSpec() },
      inspect: (event) => {
        // Those the runtime sends the session machine (the machine forwards each to its stall watch: sourceRef set).
        if (event.type === '@xstate.event' && event.event.type === 'activity' && event.sourceRef === undefined) activities++;
      },
    });
    const session = await env.supervisor.newSession('fixture', { cwd: env.files.dir });
    const received = collectChunks(session);
    const started = performance.now();
    expect(await session.prompt(command({ op: 'stream', count: 2_000, text: 'x' }))).toBe('end_turn');
    const windows = Math.ceil((performance.now() - started) / 50) + 1; // at most one per 50 ms window, plus the first
    expect(received.chunks).toHaveLength(2_000);
    expect(activities).toBeGreaterThanOrEqual(1);
    expect(activities).toBeLessThanOrEqual(windows);
  });

  it('reports a turn with no update for stallTimeoutMs, and recovers when updates resume', async () => {
    const clock = new SimulatedClock();
    env.supervisor = createSupervisor({ clock, stallTimeoutMs: 120_000, agents: { fixture: fixtureSpec() } });
    const session = await env.supervisor.newSession('fixture', { cwd: env.files.dir });
    const stalls: unknown[] = [];
    env.supervisor.on('session:stall', (event) => stalls.push(event));
    const statuses: string[] = [];
    session.on('status', ({ status }) => statuses.push(status));
    const received = collectChunks(session);
    // The agent runs a tool (a terminal) that lasts until the test opens its gate: no update
    // until then, and nothing here waits on real time.
    const gate = env.files.path('gate');
    const turn = session.prompt(command({ op: 'terminal', command: '/bin/sh', args: ['-c', 'until [ -e "$0" ]; do sleep 0.01; done', gate] }));
    expect(session.status).toBe('running');
    clock.increment(119_999);
    expect(session.status).toBe('running');
    clock.increment(1);
    expect(session.status).toBe('stalled');
    expect(stalls).toEqual([{ agent: 'fixture', sessionId: session.id, policy: 'none', stallTimeoutMs: 120_000 }]);
    expect(received.chunks).toEqual([]);
    writeFileSync(gate, '');
    expect(await turn).toBe('end_turn'); // the tool's output arrived: running again, then done
    expect(received.chunks).toEqual(['terminal-output:', 'terminal-exit:0']);
    expect(statuses).toEqual(['running', 'stalled', 'running', 'completed']);
  });

  it('onStall "cancel" cancels the stalled turn', async () => {
    const clock = new SimulatedClock();
    env.supervisor = createSupervisor({ clock, agents: { fixture: fixtureSpec() } });
    const session = await env.supervisor.newSession('fixture', { cwd: env.files.dir, onStall: 'cancel', stallTimeoutMs: 5_000 });
    const turn = session.prompt(command({ op: 'hang' }));
    await eventually(() => session.status === 'running', 'the turn to run');
    clock.increment(5_000);
    expect(await turn).toBe('cancelled');
  });

  it('onStall "restart" restarts the agent: the turn fails with agent_exited and the agent reconnects', async () => {
    const clock = new SimulatedClock();
    env.supervisor = createSupervisor({ clock, onStall: 'restart', stallTimeoutMs: 5_000, agents: { fixture: fixtureSpec() } });
    const first = await env.supervisor.ensureAgent('fixture');
    const session = await env.supervisor.newSession('fixture', { cwd: env.files.dir });
    const turn = session.prompt(command({ op: 'hang' })).catch((error: unknown) => error);
    await eventually(() => session.status === 'running', 'the turn to run');
    clock.increment(5_000);
    expect(await turn).toMatchObject({ kind: 'agent_exited' });
    await eventually(() => !isRunning(first.pid), 'the stalled agent to die');
    await waitForStatus(env.supervisor, 'fixture', 'reconnecting');
    clock.increment(1_000);
    await waitForStatus(env.supervisor, 'fixture', 'connected');
  });
});

describe('authentication', () => {
  it('session/new demanding auth rejects with auth_required and parks the agent in needsAuth; authenticate() unlocks it on the same process', async () => {
    env.supervisor = createSupervisor({ agents: { fixture: fixtureSpec(['--require-auth']) } });
    const parked: unknown[] = [];
    env.supervisor.on('agent:needs_auth', (event) => parked.push(event));
    const refused = (await env.supervisor.newSession('fixture', { cwd: env.files.dir }).catch((error: unknown) => error)) as AgentError;
    expect(refused).toBeInstanceOf(AgentError);
    expect(refused.kind).toBe('auth_required');
    expect(refused).toMatchObject({ class: 'auth', retryable: false, retryAt: null });
    expect(refused.authMethods).toEqual([expect.objectContaining({ id: 'fixture-token', name: 'Fixture token' })]);
    // Parked, never retried: the same process waits for authenticate().
    const pid = env.supervisor.list()[0]!.pid;
    expect(env.supervisor.getStatus('fixture')).toBe('needsAuth');
    expect(parked).toEqual([expect.objectContaining({ agent: 'fixture', authMethods: [expect.objectContaining({ id: 'fixture-token' })], failure: expect.objectContaining({ class: 'auth', retryable: false }) })]);
    await expect(env.supervisor.authenticate('fixture', 'wrong-method')).rejects.toMatchObject({ kind: 'auth_required', class: 'auth' });
    expect(env.supervisor.getStatus('fixture')).toBe('needsAuth');
    const handle = await env.supervisor.authenticate('fixture', 'fixture-token');
    expect(handle.pid).toBe(pid);
    expect(env.supervisor.getStatus('fixture')).toBe('connected');
    const session = await env.supervisor.newSession('fixture', { cwd: env.files.dir });
    expect(await session.prompt('hello')).toBe('end_turn');
  });
});
