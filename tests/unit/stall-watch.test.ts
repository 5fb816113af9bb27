/**
 * The stall watch (actors/stall-watch.ts) on a SimulatedClock: a watched turn with no update
 * for the timeout is reported once, exactly the timeout after its last update, though the
 * watch arms one timer per session rather than one per turn; an unwatched deadline reports
 * nothing; stopping it leaves no timer.
 */
import { describe, expect, it } from 'vitest';
import { SimulatedClock } from 'xstate';
import { StallWatch } from '../../actors/stall-watch.js';
import { realClock } from '../../core/clock.js';
import { pendingDelays, pendingTimers } from '../support/real-agents.js';

function watched(timeoutMs = 1000) {
  const clock = new SimulatedClock();
  const stalls: number[] = [];
  const watch = new StallWatch(clock, timeoutMs, () => stalls.push(clock.now()));
  return { clock, stalls, watch };
}

describe('stall watch', () => {
  it('reports a watched turn once, timeoutMs after its last update', () => {
    const { clock, stalls, watch } = watched();
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

  it("on a clock without now() (timers only), a stall comes timeoutMs after the last update all the same", () => {
    const simulated = new SimulatedClock();
    // The supervisor's clock option asks only for these two.
    const timersOnly = { setTimeout: (fn: () => void, ms: number) => simulated.setTimeout(fn, ms), clearTimeout: (id: unknown) => simulated.clearTimeout(id as number) };
    const stalls: number[] = [];
    const watch = new StallWatch(timersOnly, 1000, () => stalls.push(simulated.now()));
    watch.watch();
    simulated.increment(700);
    watch.activity();
    simulated.increment(999);
    expect(stalls).toEqual([]);
    simulated.increment(1);
    expect(stalls).toEqual([1700]);
    watch.watch(); // watched again
    watch.pause(); // answered at once
    simulated.increment(5000);
    expect(stalls).toEqual([1700]);
    watch.stop();
    expect(pendingTimers(simulated)).toBe(0);
  });

  it('on the real clock its timer does not hold the process open', () => {
    const watch = new StallWatch(realClock, 60_000, () => {});
    watch.watch();
    const timer = (watch as unknown as { timer: NodeJS.Timeout }).timer;
    expect(timer.hasRef()).toBe(false);
    watch.stop();
  });
});
