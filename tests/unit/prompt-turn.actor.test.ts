/**
 * The session's prompt-turn actor (actors/prompt-turn.actor.ts) against a connection whose
 * answers the test gives by hand (the SDK's connection, stood in at the unit's edge): one actor
 * runs a session's turns one after another; a released turn's late answer never reaches the
 * session, nor does an earlier turn's once the next has started; stopping it cancels a turn
 * in flight, once.
 */
import { describe, expect, it } from 'vitest';
import { createActor, createMachine, sendTo, SimulatedClock } from 'xstate';
import { createPromptTurnActor } from '../../actors/prompt-turn.actor.js';
import type { ClientConnection } from '../../core/acp-types.js';
import type { PromptTurnCommand, SessionEvent } from '../../machines/session-events.js';
import { pendingTimers } from '../support/real-agents.js';

/** A connection whose session/prompt requests wait for the test; what was sent is recorded. */
function fakeConnection() {
  const requests: Array<{ params: unknown; answer(value: unknown): void; refuse(error: unknown): void }> = [];
  const notifications: Array<{ method: string; params: unknown }> = [];
  const abort = new AbortController();
  const connection = {
    signal: abort.signal,
    agent: {
      request: (_method: string, params: unknown) =>
        new Promise((answer, refuse) => {
          requests.push({ params, answer, refuse });
        }),
      notify: async (method: string, params: unknown) => {
        notifications.push({ method, params });
      },
    },
  } as unknown as ClientConnection;
  return { connection, requests, notifications, abort };
}

/** The actor under a parent that forwards commands to it and records what it reports. */
function startTurns(connection: ClientConnection | undefined, stallTimeoutMs = 120_000) {
  const clock = new SimulatedClock();
  const reported: SessionEvent[] = [];
  const cancelledPermissions: string[] = [];
  const parent = createMachine({
    types: {} as { events: { type: 'command'; command: PromptTurnCommand } | SessionEvent },
    invoke: { id: 'turns', src: 'promptTurn', input: { agent: 'codex', sessionId: 's1', stallTimeoutMs } },
    on: {
      command: { actions: sendTo('turns', ({ event }) => (event as { command: PromptTurnCommand }).command) },
      '*': { actions: ({ event }) => void reported.push(event as SessionEvent) },
    },
  }).provide({
    actors: {
      promptTurn: createPromptTurnActor({
        connectionOf: () => connection,
        cancelPermissions: (agent, sessionId) => void cancelledPermissions.push(`${agent}/${sessionId}`),
        clock,
      }),
    },
  });
  const actor = createActor(parent).start();
  const send = (command: PromptTurnCommand) => actor.send({ type: 'command', command });
  return { actor, send, reported, cancelledPermissions, clock };
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 0));
const text = (value: string) => [{ type: 'text' as const, text: value }];

describe('prompt-turn actor', () => {
  it('runs the turns it is told to start, one after another, each reported once', async () => {
    const agent = fakeConnection();
    const turns = startTurns(agent.connection);
    turns.send({ type: 'start', prompt: text('one') });
    expect(agent.requests.map((request) => request.params)).toEqual([{ sessionId: 's1', prompt: text('one') }]);
    agent.requests[0]!.answer({ stopReason: 'end_turn' });
    await settle();
    turns.send({ type: 'start', prompt: text('two'), meta: { trace: 'x' } });
    expect(agent.requests[1]!.params).toEqual({ sessionId: 's1', prompt: text('two'), _meta: { trace: 'x' } });
    agent.requests[1]!.answer({ stopReason: 'max_tokens' });
    await settle();
    expect(turns.reported).toEqual([
      { type: 'turn.completed', stopReason: 'end_turn' },
      { type: 'turn.completed', stopReason: 'max_tokens' },
    ]);
    expect(agent.notifications).toEqual([]);
    turns.actor.stop();
    expect(agent.notifications).toEqual([]); // nothing in flight: nothing to cancel
  });

  it('cancel sends session/cancel once and the turn still reports how it ended', async () => {
    const agent = fakeConnection();
    const turns = startTurns(agent.connection);
    turns.send({ type: 'start', prompt: text('one') });
    turns.send({ type: 'cancel' });
    turns.send({ type: 'cancel' });
    expect(agent.notifications).toEqual([{ method: 'session/cancel', params: { sessionId: 's1' } }]);
    expect(turns.cancelledPermissions).toEqual(['codex/s1']);
    agent.requests[0]!.answer({ stopReason: 'cancelled' });
    await settle();
    expect(turns.reported).toEqual([{ type: 'turn.completed', stopReason: 'cancelled' }]);
  });

  it('a released turn is cancelled and its late answer is never reported, also after the next turn started', async () => {
    const agent = fakeConnection();
    const turns = startTurns(agent.connection);
    turns.send({ type: 'start', prompt: text('one') });
    turns.send({ type: 'release' });
    expect(agent.notifications).toHaveLength(1);
    turns.send({ type: 'start', prompt: text('two') });
    agent.requests[0]!.answer({ stopReason: 'end_turn' }); // the first turn's late answer
    await settle();
    expect(turns.reported).toEqual([]);
    // A start while a turn is in flight releases that turn first.
    turns.send({ type: 'start', prompt: text('three') });
    expect(agent.notifications).toHaveLength(2);
    agent.requests[1]!.refuse(new Error('late failure'));
    agent.requests[2]!.answer({ stopReason: 'end_turn' });
    await settle();
    expect(turns.reported).toEqual([{ type: 'turn.completed', stopReason: 'end_turn' }]);
  });

  it('stopping the actor cancels the turn in flight once; without a connection a start fails agent_exited', async () => {
    const agent = fakeConnection();
    const turns = startTurns(agent.connection);
    turns.send({ type: 'start', prompt: text('one') });
    turns.actor.stop();
    expect(agent.notifications).toEqual([{ method: 'session/cancel', params: { sessionId: 's1' } }]);
    agent.requests[0]!.answer({ stopReason: 'cancelled' });
    await settle();
    expect(turns.reported).toEqual([]);

    const none = startTurns(undefined);
    none.send({ type: 'start', prompt: text('one') });
    expect(none.reported).toEqual([{ type: 'turn.failed', failure: expect.objectContaining({ kind: 'agent_exited', message: 'Agent "codex" has no live connection' }) }]);
  });

  it('a refused turn reports a classified failure with the agent\'s JSON-RPC code', async () => {
    const agent = fakeConnection();
    const turns = startTurns(agent.connection);
    turns.send({ type: 'start', prompt: text('one') });
    agent.requests[0]!.refuse(Object.assign(new Error('Invalid params'), { code: -32602, data: { field: 'prompt' } }));
    await settle();
    expect(turns.reported).toEqual([{ type: 'turn.failed', failure: expect.objectContaining({ kind: 'protocol_error', rpcCode: -32602, at: expect.any(Number) }) }]);
  });

  it('watches a turn for stalls from its start until it is answered, on the session\'s clock', async () => {
    const agent = fakeConnection();
    const turns = startTurns(agent.connection, 1000);
    turns.send({ type: 'start', prompt: text('one') });
    turns.clock.increment(800);
    turns.send({ type: 'activity' });
    turns.clock.increment(999);
    expect(turns.reported).toEqual([]);
    turns.clock.increment(1);
    expect(turns.reported).toEqual([{ type: 'turn.stalled' }]);
    turns.send({ type: 'resumeStallWatch' }); // updates came again
    turns.send({ type: 'pauseStallWatch' }); // a person is asked
    turns.clock.increment(5000);
    expect(turns.reported).toEqual([{ type: 'turn.stalled' }]);
    agent.requests[0]!.answer({ stopReason: 'end_turn' });
    await settle();
    turns.send({ type: 'resumeStallWatch' }); // too late: the turn was answered, nothing to watch
    turns.clock.increment(5000);
    expect(turns.reported).toEqual([{ type: 'turn.stalled' }, { type: 'turn.completed', stopReason: 'end_turn' }]);

    // An answered turn is not watched any more; a released one neither; stopping clears the timer.
    turns.send({ type: 'start', prompt: text('two') });
    agent.requests[1]!.answer({ stopReason: 'end_turn' });
    await settle();
    expect(pendingTimers(turns.clock)).toBe(1); // an answered turn's timer lapses at its deadline
    turns.send({ type: 'start', prompt: text('three') });
    turns.send({ type: 'release' });
    expect(pendingTimers(turns.clock)).toBe(0); // a released turn's is cleared: no turn follows soon
    turns.clock.increment(5000);
    expect(turns.reported.filter((event) => event.type === 'turn.stalled')).toHaveLength(1);
    turns.send({ type: 'start', prompt: text('four') });
    agent.requests[3]!.refuse(new Error('refused'));
    await settle();
    expect(pendingTimers(turns.clock)).toBe(0); // a failed turn's too: the session fails
    turns.send({ type: 'start', prompt: text('five') });
    turns.actor.stop();
    expect(pendingTimers(turns.clock)).toBe(0);
  });
});
