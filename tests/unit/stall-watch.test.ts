/**
 * The stall watch (actors/stall-watch.ts) on a SimulatedClock: a watched turn with no update
 * for the timeout is reported once, exactly the timeout after its last update — also on a
 * clock without now() — though the watch arms one timer per session rather than one per turn;
 * an unwatched deadline reports nothing; stopping it leaves no timer.
 */
import { describe, expect, it } from 'vitest';
import { SimulatedClock } from 'xstate';
import { StallWatch } from '../../actors/stall-watch.js';
import { realClock } from '../../core/clock.js';
import { pendingDelays, pendingTimers } from '../support/real-agents.js';

/**
 * A watch on a SimulatedClock; with `timersOnly`, on a clock that has only the two timer
 * methods the supervisor's `clock` option asks for (no `now()`), over the same SimulatedClock.
 */
function watched(timeoutMs = 1000, timersOnly = false) {
  const clock = new SimulatedClock();
  const stalls: number[] = [];
  const given = timersOnly ? { setTimeout: (fn: () => void, ms: number) => clock.setTimeout(fn, ms), clearTimeout: (id: unknown) => clock.clearTimeout(id as number) } : clock;
  const watch = new StallWatch(given, timeoutMs, () => stalls.push(clock.now()));
  return { clock, stalls, watch };
}

describe('stall watch', () => {
  it.each([
    ['a clock with now()', false],
    ['a clock with timers only (it restarts its timer instead of reading the time)', true],
  ])('reports a watched turn once, timeoutMs after its last update, on %s', (_, timersOnly) => {
    const { clock, stalls, watch } = watched(1000, timersOnly);
    watch.watch();
    clock.increment(700);
    watch.activity();
    clock.increment(700);
    watch.activity();
    clock.increment(999);
    expect(stalls).toEqual([]);
    clock.increment(1);
    expect(stalls).toEqual([2400]);
    clock.increment(10_000);
    expect(stalls).toEqual([2400]); // once: watched again only when told
    expect(pendingTimers(clock)).toBe(0);
    watch.watch(); // watched again
    watch.pause(); // answered at once
    clock.increment(5000);
    expect(stalls).toEqual([2400]);
    watch.stop();
    expect(pendingTimers(clock)).toBe(0);
  });

  it('turns one after another share one timer, each watched from its own start', () => {
    const { clock, stalls, watch } = watched();
    for (let turn = 0; turn < 5; turn++) {
      watch.watch();
      clock.increment(300);
      watch.pause(); // the turn was answered
      clock.increment(100);
      expect(pendingTimers(clock)).toBe(1);
    }
    expect(stalls).toEqual([]);
    watch.watch(); // at 2000
    clock.increment(1000);
    expect(stalls).toEqual([3000]);
  });

  it('a paused watch reports nothing and its timer lapses; resuming watches from then', () => {
    const { clock, stalls, watch } = watched();
    watch.watch();
    clock.increment(500);
    watch.pause(); // a person is asked
    watch.activity(); // updates while unwatched do not arm anything
    clock.increment(5000);
    expect(stalls).toEqual([]);
    expect(pendingTimers(clock)).toBe(0);
    watch.watch(); // at 5500
    expect(pendingDelays(clock)).toEqual([1000]);
    clock.increment(1000);
    expect(stalls).toEqual([6500]);
  });

  it('stop() clears the armed timer', () => {
    const { clock, stalls, watch } = watched();
    watch.watch();
    watch.stop();
    expect(pendingTimers(clock)).toBe(0);
    clock.increment(5000);
    expect(stalls).toEqual([]);
  });

  it('on the real clock its timer does not hold the process open', () => {
    const watch = new StallWatch(realClock, 60_000, () => {});
    watch.watch();
    const timer = (watch as unknown as { timer: NodeJS.Timeout }).timer;
    expect(timer.hasRef()).toBe(false);
    watch.stop();
  });
});
