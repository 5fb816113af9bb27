/**
 * `bounded()`: a wait with a limit on the supervisor's clock, and what comes after the limit is
 * disposed of (a terminal started too late is killed, a kill exec opened too late is closed).
 */
import { describe, expect, it } from 'vitest';
import { SimulatedClock } from 'xstate';
import { bounded, withinGrace } from '../../util/grace.js';

/** A promise the test settles by hand. */
function deferred<T>() {
  let resolve!: (value: T) => void;
  let reject!: (error: Error) => void;
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

const flush = () => new Promise((resolve) => setImmediate(resolve));

/** Work the test settles by hand, waited for at most 1 s on a SimulatedClock; what comes late is recorded as disposed of. */
function boundedWork() {
  const clock = new SimulatedClock();
  const work = deferred<string>();
  const disposed: string[] = [];
  const waiting = bounded(work.promise, 1_000, () => new Error('too slow'), clock, (late) => disposed.push(late));
  return { clock, work, disposed, waiting };
}

describe('bounded', () => {
  it('in time: the value, nothing disposed, no timer left', async () => {
    const { clock, work, disposed, waiting } = boundedWork();
    clock.increment(999);
    work.resolve('done');
    expect(await waiting).toBe('done');
    clock.increment(10_000);
    await flush();
    expect(disposed).toEqual([]);
  });

  it('past the limit: rejects with the timeout, and the value that comes later is disposed of', async () => {
    const { clock, work, disposed, waiting } = boundedWork();
    clock.increment(1_000);
    await expect(waiting).rejects.toThrow('too slow');
    expect(disposed).toEqual([]);
    work.resolve('late stream');
    await flush();
    expect(disposed).toEqual(['late stream']);
  });

  it('past the limit, then failing: nothing to dispose of, and no unhandled rejection', async () => {
    const { clock, work, disposed, waiting } = boundedWork();
    clock.increment(1_000);
    await expect(waiting).rejects.toThrow('too slow');
    work.reject(new Error('refused'));
    await flush();
    expect(disposed).toEqual([]);
  });

  it('failing in time: its own error, nothing disposed', async () => {
    const { clock, work, disposed, waiting } = boundedWork();
    work.reject(new Error('refused'));
    await expect(waiting).rejects.toThrow('refused');
    clock.increment(5_000);
    await flush();
    expect(disposed).toEqual([]);
  });
});

describe('withinGrace (real time: it bounds waits on processes and pipes)', () => {
  it('the value in time; undefined past the grace; the promise\'s own error as it is', async () => {
    expect(await withinGrace(Promise.resolve('drained'), 1_000)).toBe('drained');
    expect(await withinGrace(new Promise(() => {}), 5)).toBeUndefined();
    await expect(withinGrace(Promise.reject(new Error('pipe broke')), 1_000)).rejects.toThrow('pipe broke');
  });
});
