import { describe, expect, it } from 'vitest';
import { createActor, fromPromise, SimulatedClock } from 'xstate';
import type { LoadSessionInput, PromptTurnInput, PromptTurnOutput, SessionMachineInput } from '../../machines/session-events.js';
import { sessionMachine } from '../../machines/session.machine.js';

/** A session actor whose turns the test settles by hand. */
function startSession(overrides: Partial<SessionMachineInput> = {}) {
  const clock = new SimulatedClock();
  const turns: Array<{ resolve(output: PromptTurnOutput): void; reject(error: unknown): void; aborted: () => boolean }> = [];
  let loads = 0;
  const machine = sessionMachine.provide({
    actors: {
      promptTurn: fromPromise<PromptTurnOutput, PromptTurnInput>(({ signal }) => new Promise((resolve, reject) => turns.push({ resolve, reject, aborted: () => signal.aborted }))),
      loadSession: fromPromise<void, LoadSessionInput>(async () => {
        loads++;
      }),
    },
  });
  const actor = createActor(machine, {
    clock,
    input: { agent: 'codex', sessionId: 's1', stallTimeoutMs: 120_000, onStall: 'none', ...overrides },
  });
  const statuses: string[] = [];
  const stalls: string[] = [];
  actor.on('status', ({ status }) => statuses.push(status));
  actor.on('stall', ({ policy }) => stalls.push(policy));
  actor.start();
  const prompt = () => actor.send({ type: 'prompt', prompt: [{ type: 'text', text: 'hi' }] });
  return { actor, clock, turns, statuses, stalls, prompt, loads: () => loads, value: () => actor.getSnapshot().value };
}

const flush = () => new Promise((resolve) => setTimeout(resolve, 0));

describe('session machine', () => {
  it('ready → prompting.running → completed with the stop reason', async () => {
    const session = startSession();
    session.prompt();
    expect(session.value()).toEqual({ prompting: { running: 'watching' } });
    session.turns[0]!.resolve({ stopReason: 'end_turn' });
    await flush();
    expect(session.value()).toBe('completed');
    expect(session.actor.getSnapshot().context).toMatchObject({ lastStopReason: 'end_turn', turns: 1 });
    expect(session.statuses).toEqual(['ready', 'running', 'completed']);
  });

  it('stalls after stallTimeoutMs without activity; activity restarts the timer and leaves stalled', () => {
    const session = startSession({ stallTimeoutMs: 1000 });
    session.prompt();
    session.clock.increment(900);
    session.actor.send({ type: 'activity' });
    session.clock.increment(900);
    expect(session.value()).toEqual({ prompting: { running: 'watching' } });
    session.clock.increment(100);
    expect(session.value()).toEqual({ prompting: 'stalled' });
    expect(session.stalls).toEqual(['none']);
    session.actor.send({ type: 'activity' });
    expect(session.value()).toEqual({ prompting: { running: 'watching' } });
    expect(session.statuses).toEqual(['ready', 'running', 'stalled', 'running']);
  });

  it('waiting for permission is not a stall; the last settled request returns to running', () => {
    const session = startSession({ stallTimeoutMs: 1000 });
    session.prompt();
    session.actor.send({ type: 'permission.requested', requestId: 'p1' });
    session.actor.send({ type: 'permission.requested', requestId: 'p2' });
    expect(session.value()).toEqual({ prompting: 'awaitingPermission' });
    session.clock.increment(60_000);
    expect(session.value()).toEqual({ prompting: 'awaitingPermission' });
    session.actor.send({ type: 'permission.settled', requestId: 'p1' });
    expect(session.value()).toEqual({ prompting: 'awaitingPermission' });
    session.actor.send({ type: 'permission.settled', requestId: 'p2' });
    expect(session.value()).toEqual({ prompting: { running: 'watching' } });
    expect(session.statuses).toEqual(['ready', 'running', 'awaiting_permission', 'running']);
  });

  it('a failed turn records its kind; the agent dying fails the session', async () => {
    const session = startSession();
    session.prompt();
    session.turns[0]!.reject({ kind: 'protocol_error', message: 'bad prompt' });
    await flush();
    expect(session.value()).toBe('failed');
    expect(session.actor.getSnapshot().context.lastError).toEqual({ kind: 'protocol_error', message: 'bad prompt' });
    const other = startSession();
    other.prompt();
    other.actor.send({ type: 'agent.lost', kind: 'agent_exited', message: 'Codex exited unexpectedly' });
    expect(other.value()).toBe('failed');
    expect(other.turns[0]!.aborted()).toBe(true);
  });

  it('resumes only when the agent (on its current connection) can load sessions', async () => {
    const session = startSession();
    session.actor.send({ type: 'agent.lost', kind: 'agent_exited', message: 'gone' });
    session.actor.send({ type: 'agent.lost', kind: 'agent_exited', message: 'gone again' });
    expect(session.statuses).toEqual(['ready', 'failed']); // failing twice reports once
    expect(session.actor.getSnapshot().context.lastError?.message).toBe('gone');
    session.actor.send({ type: 'resume', canLoad: false });
    expect(session.value()).toBe('failed');
    session.actor.send({ type: 'resume', canLoad: true });
    await flush();
    expect(session.value()).toBe('ready');
    expect(session.loads()).toBe(1);
  });

  it('close and a deliberate stop of the agent end the session; leaving prompting aborts the turn', () => {
    const closed = startSession();
    closed.prompt();
    closed.actor.send({ type: 'close' });
    expect(closed.actor.getSnapshot().status).toBe('done');
    expect(closed.turns[0]!.aborted()).toBe(true);
    const stopped = startSession();
    stopped.actor.send({ type: 'agent.lost', kind: 'stopped', message: 'stopped' });
    expect(stopped.value()).toBe('stopped');
    expect(stopped.statuses).toEqual(['ready', 'stopped']);
  });
});
