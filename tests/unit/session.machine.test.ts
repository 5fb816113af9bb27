import { afterEach, describe, expect, it } from 'vitest';
import { createActor, createMachine, fromCallback, fromPromise, SimulatedClock } from 'xstate';
import type { StopReason } from '../../core/acp-types.js';
import type { LoadSessionInput, PromptTurnCommand, PromptTurnInput, SessionEvent, SessionMachineInput, SessionRequestResult } from '../../machines/session-events.js';
import { sessionMachine, sessionStatusOf } from '../../machines/session.machine.js';
import { StallWatch } from '../../actors/stall-watch.js';
import { pendingTimers } from '../support/real-agents.js';

interface FakeTurn {
  complete(stopReason: StopReason): void;
  fail(kind: 'protocol_error' | 'agent_exited', message: string): void;
  cancels: number;
  released: boolean;
}

/** Steps after which sessionStatusOf disagreed with the status the machine had just reported (checked after each test). */
const statusMismatches: string[] = [];
afterEach(() => {
  expect(statusMismatches.splice(0)).toEqual([]);
});

/** A session actor whose turns the test settles by hand. */
function startSession(overrides: Partial<SessionMachineInput> = {}) {
  const clock = new SimulatedClock();
  const turns: FakeTurn[] = [];
  /** Every command the machine sent its turn actor, by type. */
  const commands: string[] = [];
  let loads = 0;
  /** What the session tells its agent machine (it has no parent here). */
  const toAgent: Array<{ type: string; kind?: string }> = [];
  const machine = sessionMachine.provide({
    actions: {
      reportTurnFailure: (_, params: { failure: { kind: string } }) => void toAgent.push({ type: 'agent.failure', kind: params.failure.kind }),
      requestAgentRestart: () => void toAgent.push({ type: 'restart' }),
    },
    actors: {
      // The session's one turn actor: each `start` is a turn the test settles by hand.
      // The stall watch is the real one (actors/stall-watch.ts), on the test's clock, driven by the machine's commands as the real actor drives it.
      promptTurn: fromCallback<PromptTurnCommand, PromptTurnInput, SessionEvent>(({ sendBack, receive, input }) => {
        let current: FakeTurn | null = null;
        const watch = new StallWatch(clock, input.stallTimeoutMs, () => sendBack({ type: 'turn.stalled' }));
        const abandon = () => {
          if (current) current.released = true;
          current = null;
        };
        const release = () => {
          abandon();
          watch.stop();
        };
        const ended = (turn: FakeTurn, completed: boolean) => {
          if (current !== turn) return;
          current = null;
          if (completed) watch.pause();
          else watch.stop();
        };
        receive((command) => {
          commands.push(command.type);
          if (command.type === 'start') {
            abandon();
            const turn: FakeTurn = {
              complete: (stopReason) => {
                if (turn.released) return;
                ended(turn, true);
                sendBack({ type: 'turn.completed', stopReason });
              },
              fail: (kind, message) => {
                if (turn.released) return;
                ended(turn, false);
                sendBack({ type: 'turn.failed', failure: { kind, message } });
              },
              cancels: 0,
              released: false,
            };
            current = turn;
            turns.push(turn);
            watch.watch();
          } else if (command.type === 'cancel') {
            if (current) current.cancels++;
          } else if (command.type === 'activity') watch.activity();
          else if (command.type === 'pauseStallWatch') watch.pause();
          else if (command.type === 'resumeStallWatch') {
            if (current) watch.watch();
          } else release();
        });
        return release;
      }),
      loadSession: fromPromise<void, LoadSessionInput>(async () => {
        loads++;
      }),
    },
  });
  const actor = createActor(machine, {
    clock,
    input: { agent: 'codex', displayName: 'Codex', sessionId: 's1', key: 's1#1', stallTimeoutMs: 120_000, onStall: 'none', ...overrides },
  });
  const statuses: string[] = [];
  const stalls: string[] = [];
  const answers: Array<{ requestId: string; result: SessionRequestResult }> = [];
  actor.on('status', ({ status }) => statuses.push(status));
  // The status is the state's, not the context's: after every step it is what the machine last reported.
  actor.subscribe((snapshot) => {
    const derived = sessionStatusOf(snapshot);
    if (derived !== statuses.at(-1)) statusMismatches.push(`${JSON.stringify(snapshot.value)}: ${derived}, last reported ${statuses.at(-1)}`);
  });
  actor.on('stall', ({ policy }) => stalls.push(policy));
  actor.on('request.settled', ({ requestId, result }) => answers.push({ requestId, result }));
  actor.start();
  let next = 0;
  const prompt = () => {
    const requestId = `r${++next}`;
    actor.send({ type: 'prompt', requestId, prompt: [{ type: 'text', text: 'hi' }] });
    return requestId;
  };
  const answerTo = (requestId: string) => answers.find((answer) => answer.requestId === requestId)?.result;
  return { actor, clock, turns, commands, statuses, stalls, toAgent, prompt, answerTo, loads: () => loads, value: () => actor.getSnapshot().value };
}

const flush = () => new Promise((resolve) => setTimeout(resolve, 0));

describe('session machine', () => {
  it('ready → prompting.running → completed, answering the prompt with its stop reason', () => {
    const session = startSession();
    const request = session.prompt();
    expect(session.value()).toEqual({ prompting: 'running' });
    expect(session.answerTo(request)).toBeUndefined();
    session.turns[0]!.complete('end_turn');
    expect(session.value()).toBe('completed');
    expect(session.actor.getSnapshot().context).toMatchObject({ lastStopReason: 'end_turn', turns: 1, request: null });
    expect(sessionStatusOf(session.actor.getSnapshot())).toBe('completed');
    expect(session.answerTo(request)).toEqual({ ok: true, stopReason: 'end_turn' });
    expect(session.statuses).toEqual(['ready', 'running', 'completed']);
  });

  it('refuses a prompt during a turn (session_busy) and in a failed session (session_closed), at once', () => {
    const session = startSession();
    session.prompt();
    const busy = session.prompt();
    expect(session.answerTo(busy)).toMatchObject({ ok: false, failure: { kind: 'session_busy', message: 'Session s1 is already running a turn' } });
    session.turns[0]!.fail('protocol_error', 'bad prompt');
    const refused = session.prompt();
    expect(session.answerTo(refused)).toMatchObject({ ok: false, failure: { kind: 'session_closed', message: 'Session s1 failed; resume() it first' } });
    expect(session.turns).toHaveLength(1);
  });

  it('stalls after stallTimeoutMs without activity; activity restarts the timer and leaves stalled', () => {
    const session = startSession({ stallTimeoutMs: 1000 });
    session.prompt();
    session.clock.increment(900);
    session.actor.send({ type: 'activity' });
    session.clock.increment(900);
    expect(session.value()).toEqual({ prompting: 'running' });
    session.clock.increment(100);
    expect(session.value()).toEqual({ prompting: { stalled: 'reported' } });
    expect(session.stalls).toEqual(['none']);
    expect(session.turns[0]!.cancels).toBe(0);
    session.actor.send({ type: 'activity' });
    expect(session.value()).toEqual({ prompting: 'running' });
    expect(session.statuses).toEqual(['ready', 'running', 'stalled', 'running']);
    // Watched again from the recovery: a second stall is reported a full timeout later.
    session.clock.increment(999);
    expect(session.value()).toEqual({ prompting: 'running' });
    session.clock.increment(1);
    expect(session.stalls).toEqual(['none', 'none']);
    expect(session.commands).toEqual(['start', 'activity', 'resumeStallWatch']);
  });

  it('a turn costs its turn actor one command: start (the watch needs no timer command per turn)', () => {
    const session = startSession({ stallTimeoutMs: 1000 });
    for (let turn = 0; turn < 3; turn++) {
      session.prompt();
      session.clock.increment(600);
      session.turns[turn]!.complete('end_turn');
    }
    expect(session.commands).toEqual(['start', 'start', 'start']);
    // Each turn was watched from its own start: 600 ms apiece never stalled, though 1,800 ms went by.
    expect(session.stalls).toEqual([]);
    session.prompt();
    session.clock.increment(1000);
    expect(session.value()).toEqual({ prompting: { stalled: 'reported' } });
  });

  it("onStall 'cancel' cancels the turn once; the turn then ends with its stop reason", () => {
    const session = startSession({ stallTimeoutMs: 1000, onStall: 'cancel' });
    const request = session.prompt();
    session.clock.increment(1000);
    expect(session.value()).toEqual({ prompting: { stalled: 'cancelling' } });
    expect(session.turns[0]!.cancels).toBe(1);
    session.turns[0]!.complete('cancelled');
    expect(session.answerTo(request)).toEqual({ ok: true, stopReason: 'cancelled' });
  });

  it("onStall 'restart' asks the parent agent machine to restart its process", () => {
    const restarts: string[] = [];
    const clock = new SimulatedClock();
    const parent = createMachine({
      id: 'parent',
      invoke: {
        id: 'child',
        src: sessionMachine.provide({
          actors: {
            // A turn that never answers, watched for stalls as the real actor does.
            promptTurn: fromCallback<PromptTurnCommand, PromptTurnInput, SessionEvent>(({ sendBack, receive, input }) => {
              const watch = new StallWatch(clock, input.stallTimeoutMs, () => sendBack({ type: 'turn.stalled' }));
              receive((command) => command.type === 'start' && watch.watch());
              return () => watch.stop();
            }),
            loadSession: fromPromise(async () => {}),
          },
        }),
        input: { agent: 'codex', displayName: 'Codex', sessionId: 's1', stallTimeoutMs: 1000, onStall: 'restart' },
      },
      on: { restart: { actions: ({ event }) => restarts.push(String(event.sessionId)) } },
    });
    const actor = createActor(parent, { clock }).start();
    actor.getSnapshot().children.child!.send({ type: 'prompt', requestId: 'r1', prompt: [] });
    clock.increment(1000);
    expect(restarts).toEqual(['s1']);
  });

  it('waiting for permission is not a stall; the last settled request returns to running', () => {
    const session = startSession({ stallTimeoutMs: 1000 });
    session.prompt();
    session.actor.send({ type: 'permission.requested', requestId: 'p1', timeoutMs: 300_000 });
    session.actor.send({ type: 'permission.requested', requestId: 'p2', timeoutMs: 300_000 });
    expect(session.value()).toEqual({ prompting: 'awaitingPermission' });
    session.clock.increment(60_000);
    expect(session.value()).toEqual({ prompting: 'awaitingPermission' });
    session.actor.send({ type: 'permission.settled', requestId: 'p1' });
    expect(session.value()).toEqual({ prompting: 'awaitingPermission' });
    session.actor.send({ type: 'permission.settled', requestId: 'p2' });
    expect(session.value()).toEqual({ prompting: 'running' });
    expect(session.statuses).toEqual(['ready', 'running', 'awaiting_permission', 'running']);
    // Watched again from the answer, not from the turn's start.
    session.clock.increment(999);
    expect(session.value()).toEqual({ prompting: 'running' });
    session.clock.increment(1);
    expect(session.value()).toEqual({ prompting: { stalled: 'reported' } });
    expect(session.commands).toEqual(['start', 'pauseStallWatch', 'resumeStallWatch']);
  });

  it('a question nobody answers expires after its timeout on the clock; an answered one, or one of a turn that ended, does not', () => {
    const session = startSession();
    const expired: string[] = [];
    session.actor.on('ask.expired', ({ requestId }) => expired.push(requestId));
    session.prompt();
    session.actor.send({ type: 'permission.requested', requestId: 'late', timeoutMs: 1000 });
    session.actor.send({ type: 'permission.requested', requestId: 'answered', timeoutMs: 1000 });
    session.actor.send({ type: 'permission.settled', requestId: 'answered' });
    session.clock.increment(999);
    expect(expired).toEqual([]);
    session.clock.increment(1);
    expect(expired).toEqual(['late']); // its broker answers it cancelled, which settles it here
    session.actor.send({ type: 'permission.settled', requestId: 'late' });
    session.actor.send({ type: 'permission.requested', requestId: 'orphaned', timeoutMs: 1000 });
    session.turns[0]!.complete('end_turn'); // the turn ended with the question open: its timer goes too
    session.clock.increment(5000);
    expect(expired).toEqual(['late']);
    // Left armed: only the stall watch's one timer, which lapses at its deadline (unwatched, it reports nothing).
    expect(pendingTimers(session.clock)).toBe(1);
    session.clock.increment(120_000);
    expect(pendingTimers(session.clock)).toBe(0);
    expect(session.stalls).toEqual([]);
  });

  it('a failed turn records its kind and answers the prompt; the agent dying fails the session', () => {
    const session = startSession();
    const request = session.prompt();
    session.turns[0]!.fail('protocol_error', 'bad prompt');
    expect(session.value()).toBe('failed');
    expect(session.actor.getSnapshot().context.lastError).toEqual({ kind: 'protocol_error', message: 'bad prompt' });
    expect(session.answerTo(request)).toMatchObject({ ok: false, failure: { kind: 'protocol_error', message: 'bad prompt' } });
    expect(session.toAgent).toEqual([{ type: 'agent.failure', kind: 'protocol_error' }]); // the agent classifies an error answer
    const closed = startSession();
    closed.prompt();
    closed.turns[0]!.fail('agent_exited', 'the connection closed');
    expect(closed.value()).toBe('failed');
    expect(closed.toAgent).toEqual([]); // a lost connection is the agent's own news
    const other = startSession();
    const lost = other.prompt();
    other.actor.send({ type: 'agent.lost', kind: 'agent_exited', message: 'Codex exited unexpectedly' });
    expect(other.value()).toBe('failed');
    expect(other.turns[0]!.released).toBe(true);
    expect(other.answerTo(lost)).toMatchObject({ ok: false, failure: { kind: 'agent_exited' } });
  });

  it('resumes only when the agent (on its current connection) can load sessions', async () => {
    const session = startSession();
    session.actor.send({ type: 'agent.lost', kind: 'agent_exited', message: 'gone' });
    session.actor.send({ type: 'agent.lost', kind: 'agent_exited', message: 'gone again' });
    expect(session.statuses).toEqual(['ready', 'failed']); // failing twice reports once
    expect(session.actor.getSnapshot().context.lastError?.message).toBe('gone');
    session.actor.send({ type: 'resume', requestId: 'no', canLoad: false });
    expect(session.value()).toBe('failed');
    expect(session.answerTo('no')).toMatchObject({ ok: false, failure: { kind: 'not_supported' } });
    session.actor.send({ type: 'resume', requestId: 'yes', canLoad: true });
    await flush();
    expect(session.value()).toBe('ready');
    expect(session.loads()).toBe(1);
    expect(session.answerTo('yes')).toEqual({ ok: true });
  });

  it('reopen (loadSession of a session that is here): an open session answers at once; a failed one resumes, or not_supported', async () => {
    const session = startSession();
    session.actor.send({ type: 'reopen', requestId: 'open', canLoad: true });
    expect(session.answerTo('open')).toEqual({ ok: true });
    expect(session.loads()).toBe(0);
    session.actor.send({ type: 'agent.lost', kind: 'agent_exited', message: 'gone' });
    session.actor.send({ type: 'reopen', requestId: 'no', canLoad: false });
    expect(session.answerTo('no')).toMatchObject({ ok: false, failure: { kind: 'not_supported' } });
    session.actor.send({ type: 'reopen', requestId: 'yes', canLoad: true });
    await flush();
    expect(session.value()).toBe('ready');
    expect(session.loads()).toBe(1);
    expect(session.answerTo('yes')).toEqual({ ok: true });
  });

  it('close and a deliberate stop of the agent end the session; leaving prompting releases the turn', () => {
    const closed = startSession();
    const request = closed.prompt();
    closed.actor.send({ type: 'close' });
    expect(closed.actor.getSnapshot().status).toBe('done');
    expect(closed.turns[0]!.released).toBe(true);
    expect(closed.answerTo(request)).toMatchObject({ ok: false, failure: { kind: 'session_closed' } });
    const stopped = startSession();
    stopped.actor.send({ type: 'agent.lost', kind: 'stopped', message: 'stopped' });
    expect(stopped.value()).toBe('stopped');
    expect(stopped.statuses).toEqual(['ready', 'stopped']);
  });
});
