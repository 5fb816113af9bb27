/** util/deadline.ts on a SimulatedClock: time up, a followed signal, already aborted, and nothing left after clear(). */
import { describe, expect, it } from 'vitest';
import { SimulatedClock } from 'xstate';
import { deadline } from '../../util/deadline.js';

describe('deadline', () => {
  it('aborts with the timeout reason when the time is up on the clock, not before', () => {
    const clock = new SimulatedClock();
    const bound = deadline(clock, 1_000, () => 'late');
    clock.increment(999);
    expect(bound.signal.aborted).toBe(false);
    clock.increment(1);
    expect(bound.signal.reason).toBe('late');
  });

  it('follows signals, with their own reasons, also one already aborted', () => {
    const clock = new SimulatedClock();
    const caller = new AbortController();
    const bound = deadline(clock, 1_000, () => 'late', [{ signal: caller.signal, reason: () => 'caller' }, { signal: undefined, reason: () => 'never' }]);
    caller.abort();
    expect(bound.signal.reason).toBe('caller');
    const gone = new AbortController();
    gone.abort();
    expect(deadline(clock, 1_000, () => 'late', [{ signal: gone.signal, reason: () => 'gone' }]).signal.reason).toBe('gone');
  });

  it('clear() stops the timer and the listening', () => {
    const clock = new SimulatedClock();
    const caller = new AbortController();
    const bound = deadline(clock, 1_000, () => 'late', [{ signal: caller.signal, reason: () => 'caller' }]);
    bound.clear();
    clock.increment(5_000);
    caller.abort();
    expect(bound.signal.aborted).toBe(false);
  });
});
