/**
 * The store writer's batches: a tick's writes are one batch; while writes keep coming, the
 * ticks of one commit window are one batch; reads see everything queued; close leaves no
 * timer behind. The window runs on a SimulatedClock; ticks are real `setImmediate` turns.
 */
import { describe, expect, it } from 'vitest';
import { SimulatedClock } from 'xstate';
import { defaultRetention } from '../../runtime/store-choice.js';
import { StoreWriter } from '../../runtime/store-writer.js';
import { createMemoryStore } from '../../services/store/memory.store.js';
import type { StoreWrite } from '../../core/store.js';

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

function stderrLine(line: string): StoreWrite {
  return { type: 'stderr', at: Date.now(), agent: 'a', line };
}

/** A writer over a real memory store whose `write` calls are recorded as the lines each batch held. */
function recordingWriter(commitEveryMs: number) {
  const store = createMemoryStore();
  const batches: string[][] = [];
  const write = store.write.bind(store);
  store.write = (batch) => {
    batches.push(batch.map((entry) => (entry.type === 'stderr' ? entry.line : entry.type)));
    return write(batch);
  };
  const simulated = new SimulatedClock();
  /** Added to the simulated time: a wall clock that steps (NTP, a suspended laptop). */
  let stepped = 0;
  /** The window timers not yet fired or cleared. */
  const timers = new Set<unknown>();
  const clock = {
    setTimeout(fn: () => void, ms: number): unknown {
      const id: unknown = simulated.setTimeout(() => {
        timers.delete(id);
        fn();
      }, ms);
      timers.add(id);
      return id;
    },
    clearTimeout(id: unknown): void {
      timers.delete(id);
      simulated.clearTimeout(id as never);
    },
    now: () => simulated.now() + stepped,
    increment: (ms: number) => simulated.increment(ms),
    step: (ms: number) => (stepped += ms),
  };
  const writer = new StoreWriter(store, { retention: defaultRetention, pruneEveryMs: 60_000, onError: () => {}, commitEveryMs, clock });
  return { store, batches, clock, timers, writer };
}

describe('StoreWriter batches', () => {
  it('commits the writes of one tick as one batch, at the end of that tick, when no commit came within the window', async () => {
    const { batches, writer } = recordingWriter(5);
    writer.add(stderrLine('one'));
    writer.add(stderrLine('two'));
    expect(batches).toEqual([]);
    await tick();
    await tick();
    expect(batches).toEqual([['one', 'two']]);
    await writer.close();
  });

  it('gathers the ticks of a busy stream into one batch per window, committed when the window ends', async () => {
    const { batches, clock, writer } = recordingWriter(5);
    writer.add(stderrLine('first'));
    await tick();
    await tick();
    expect(batches).toEqual([['first']]);
    // The next ticks fall inside the window the first commit opened: they wait for its end.
    for (const line of ['a', 'b', 'c']) {
      writer.add(stderrLine(line));
      await tick();
    }
    expect(batches).toEqual([['first']]);
    clock.increment(4);
    await tick();
    expect(batches).toEqual([['first']]);
    clock.increment(1);
    await tick();
    expect(batches).toEqual([['first'], ['a', 'b', 'c']]);
    // A write after a quiet window is committed at the end of its own tick again.
    clock.increment(5);
    writer.add(stderrLine('later'));
    await tick();
    await tick();
    expect(batches).toEqual([['first'], ['a', 'b', 'c'], ['later']]);
    await writer.close();
  });

  it('a clock that stepped back since the last commit delays a batch by one window at most', async () => {
    const { batches, clock, writer } = recordingWriter(5);
    writer.add(stderrLine('first'));
    await writer.drain();
    clock.step(-3_600_000); // an hour back
    writer.add(stderrLine('after the step'));
    await tick();
    expect(batches).toEqual([['first']]);
    clock.increment(5);
    await tick();
    expect(batches).toEqual([['first'], ['after the step']]);
    await writer.close();
  });

  it('a commit window of 0 commits every tick', async () => {
    const { batches, writer } = recordingWriter(0);
    for (const line of ['a', 'b', 'c']) {
      writer.add(stderrLine(line));
      await tick();
      await tick();
    }
    expect(batches).toEqual([['a'], ['b'], ['c']]);
    await writer.close();
  });

  it('drain() commits what waits for the window at once: a read sees every write queued before it', async () => {
    const { batches, store, writer } = recordingWriter(5);
    writer.add(stderrLine('first'));
    await writer.drain();
    writer.add(stderrLine('waiting'));
    await tick();
    expect(batches).toEqual([['first']]);
    await writer.drain();
    expect(batches).toEqual([['first'], ['waiting']]);
    expect((await store.logs('a', { after: 0, limit: 10 })).map((entry) => entry.line)).toEqual(['first', 'waiting']);
    await writer.close();
  });

  it('close() commits the waiting batch, cancels the window timer, and ignores later writes', async () => {
    const { batches, clock, timers, writer } = recordingWriter(5);
    writer.add(stderrLine('first'));
    await writer.drain();
    writer.add(stderrLine('waiting'));
    expect(timers.size).toBe(1);
    await writer.close();
    expect(timers.size).toBe(0);
    expect(batches).toEqual([['first'], ['waiting']]);
    writer.add(stderrLine('after close'));
    clock.increment(10);
    await tick();
    await tick();
    expect(batches).toEqual([['first'], ['waiting']]);
  });
});
