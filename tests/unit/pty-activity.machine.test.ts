/**
 * The pty activity machine on a SimulatedClock: every state, every way out of it, the
 * timers' bounds, custom timeouts, and no timer left behind (docs/pty.md).
 */
import { describe, expect, it } from 'vitest';
import { createActor, SimulatedClock } from 'xstate';
import { activityOf, ptyActivityMachine, type PtyActivityEmitted, type PtyActivityInput } from '../../machines/pty-activity.machine.js';

/** How many timeouts the clock still holds (as tests/support/real-agents.ts `pendingTimers`). */
function pendingTimers(clock: SimulatedClock): number {
  return (clock as unknown as { timeouts: Map<unknown, unknown> }).timeouts.size;
}

function startActivity(input: PtyActivityInput = {}) {
  const clock = new SimulatedClock();
  const actor = createActor(ptyActivityMachine, { clock, input });
  const reports: PtyActivityEmitted[] = [];
  actor.on('activity', (event) => reports.push(event));
  actor.start();
  return {
    actor,
    clock,
    reports,
    states: () => reports.map((report) => report.state),
    value: () => activityOf(actor.getSnapshot().value),
    output: () => actor.send({ type: 'output' }),
    input: () => actor.send({ type: 'input' }),
    exit: (exitCode: number | null, signal: string | null = null) => actor.send({ type: 'exited', exitCode, signal }),
    /** One step of the clock: a timer armed on the way fires no earlier than the next step (SimulatedClock). */
    advance: (ms: number) => clock.increment(ms),
  };
}

describe('ptyActivityMachine', () => {
  it('starts in starting, reports it, and goes running on the first output', () => {
    const pty = startActivity();
    expect(pty.value()).toBe('starting');
    pty.output();
    expect(pty.value()).toBe('running');
    expect(pty.states()).toEqual(['starting', 'running']);
  });

  it('stays running while output flows: each chunk re-arms the timer, and is not reported again', () => {
    const pty = startActivity();
    pty.output();
    for (let i = 0; i < 10; i++) {
      pty.advance(4_000);
      pty.output();
    }
    expect(pty.value()).toBe('running');
    expect(pty.states()).toEqual(['starting', 'running']);
    expect(pendingTimers(pty.clock)).toBe(1);
  });

  it('needs input after exactly needsInputTimeoutMs of silence', () => {
    const pty = startActivity();
    pty.output();
    pty.advance(4_999);
    expect(pty.value()).toBe('running');
    pty.advance(1);
    expect(pty.value()).toBe('needsInput');
    expect(pty.states()).toEqual(['starting', 'running', 'needsInput']);
  });

  it('a silent process needs input too: starting → needsInput after the same timeout', () => {
    const pty = startActivity();
    pty.advance(4_999);
    expect(pty.value()).toBe('starting');
    pty.advance(1);
    expect(pty.value()).toBe('needsInput');
  });

  it('goes stale after staleTimeoutMs in needsInput, and no timer runs there', () => {
    const pty = startActivity();
    pty.output();
    pty.advance(5_000);
    pty.advance(59_999);
    expect(pty.value()).toBe('needsInput');
    pty.advance(1);
    expect(pty.value()).toBe('stale');
    expect(pendingTimers(pty.clock)).toBe(0);
    pty.advance(10 * 60_000);
    expect(pty.value()).toBe('stale');
    expect(pty.states()).toEqual(['starting', 'running', 'needsInput', 'stale']);
  });

  it('output from needsInput or stale is running again, with a fresh timer', () => {
    const pty = startActivity();
    pty.output();
    pty.advance(5_000);
    pty.output();
    expect(pty.value()).toBe('running');
    pty.advance(5_000);
    pty.advance(60_000);
    expect(pty.value()).toBe('stale');
    pty.output();
    expect(pty.value()).toBe('running');
    pty.advance(4_999);
    expect(pty.value()).toBe('running');
    pty.advance(1);
    expect(pty.value()).toBe('needsInput');
    expect(pty.states()).toEqual(['starting', 'running', 'needsInput', 'running', 'needsInput', 'stale', 'running', 'needsInput']);
  });

  it('input answers needsInput and stale (running, with a fresh timer) but is ignored in starting and running', () => {
    const pty = startActivity();
    pty.input();
    expect(pty.value()).toBe('starting');
    pty.advance(4_000);
    pty.input();
    pty.advance(1_000);
    expect(pty.value()).toBe('needsInput'); // typing did not re-arm the timer of starting
    pty.input();
    expect(pty.value()).toBe('running');
    pty.advance(4_000);
    pty.input();
    pty.advance(1_000);
    expect(pty.value()).toBe('needsInput'); // nor that of running
    pty.advance(60_000);
    expect(pty.value()).toBe('stale');
    pty.input();
    expect(pty.value()).toBe('running');
    pty.advance(5_000);
    expect(pty.value()).toBe('needsInput');
  });

  it.each([
    ['starting', () => {}],
    ['running', (pty: ReturnType<typeof startActivity>) => pty.output()],
    ['needsInput', (pty: ReturnType<typeof startActivity>) => (pty.output(), pty.advance(5_000))],
    ['stale', (pty: ReturnType<typeof startActivity>) => (pty.output(), pty.advance(5_000), pty.advance(60_000))],
  ])('exits from %s with the code, and leaves no timer behind', (state, reach) => {
    const pty = startActivity();
    reach(pty);
    expect(pty.value()).toBe(state);
    pty.exit(3);
    expect(pty.value()).toBe('exited');
    expect(pty.actor.getSnapshot().context).toMatchObject({ exitCode: 3, signal: null });
    expect(pty.reports.at(-1)).toEqual({ type: 'activity', state: 'exited', exitCode: 3, signal: null });
    expect(pendingTimers(pty.clock)).toBe(0);
  });

  it('reports a signal exit, then ignores output, input and a second exit', () => {
    const pty = startActivity();
    pty.output();
    pty.exit(null, 'SIGKILL');
    const reported = pty.reports.length;
    pty.output();
    pty.input();
    pty.exit(0);
    pty.advance(120_000);
    expect(pty.value()).toBe('exited');
    expect(pty.actor.getSnapshot().context).toMatchObject({ exitCode: null, signal: 'SIGKILL' });
    expect(pty.reports.length).toBe(reported);
    expect(pty.reports.at(-1)).toEqual({ type: 'activity', state: 'exited', exitCode: null, signal: 'SIGKILL' });
  });

  it('restarted goes back to starting, clears the exit, and times the new process afresh', () => {
    const pty = startActivity();
    pty.output();
    pty.exit(3);
    pty.actor.send({ type: 'restarted' });
    expect(pty.value()).toBe('starting');
    expect(pty.actor.getSnapshot().context).toMatchObject({ exitCode: null, signal: null });
    expect(pty.reports.at(-1)).toEqual({ type: 'activity', state: 'starting' });
    pty.output();
    pty.advance(5_000);
    expect(pty.value()).toBe('needsInput');
    expect(pty.states()).toEqual(['starting', 'running', 'exited', 'starting', 'running', 'needsInput']);
  });

  it('restarted from a live state (a replaced process) restarts the timer', () => {
    const pty = startActivity();
    pty.advance(4_000);
    pty.actor.send({ type: 'restarted' });
    pty.advance(4_999);
    expect(pty.value()).toBe('starting');
    pty.advance(1);
    expect(pty.value()).toBe('needsInput');
    pty.actor.send({ type: 'restarted' });
    expect(pty.value()).toBe('starting');
    expect(pendingTimers(pty.clock)).toBe(1);
    expect(pty.states()).toEqual(['starting', 'needsInput', 'starting']);
  });

  it('takes its timeouts from input', () => {
    const pty = startActivity({ needsInputTimeoutMs: 200, staleTimeoutMs: 1_000 });
    pty.output();
    pty.advance(199);
    expect(pty.value()).toBe('running');
    pty.advance(1);
    expect(pty.value()).toBe('needsInput');
    pty.advance(999);
    expect(pty.value()).toBe('needsInput');
    pty.advance(1);
    expect(pty.value()).toBe('stale');
    expect(pty.actor.getSnapshot().context).toMatchObject({ needsInputTimeoutMs: 200, staleTimeoutMs: 1_000 });
  });

  it('defaults to 5000 ms and 60000 ms', () => {
    const pty = startActivity();
    expect(pty.actor.getSnapshot().context).toMatchObject({ needsInputTimeoutMs: 5_000, staleTimeoutMs: 60_000 });
  });

  it('leaves no timer once stopped', () => {
    const pty = startActivity();
    pty.output();
    expect(pendingTimers(pty.clock)).toBe(1);
    pty.actor.stop();
    expect(pendingTimers(pty.clock)).toBe(0);
  });
});
