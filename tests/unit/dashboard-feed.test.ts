/**
 * The dashboard's live lists without a browser (dashboard/feed.js, dashboard/tasks.js): history
 * joined to what came live where they overlap, a load begun before a reset thrown away, the
 * keys that say two items are one, and reloads that fold into one.
 */
import { describe, expect, it } from 'vitest';
import { Feed, feedOf, logKey, mergeOverlap, transcriptKey, type TranscriptItem } from '../../dashboard/feed.js';
import { coalesced } from '../../dashboard/tasks.js';

const same = (item: string) => item;

/** A promise and its resolve/reject, for a load the test settles when it chooses. */
function deferred<T>() {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((yes, no) => {
    resolve = yes;
    reject = no;
  });
  return { promise, resolve, reject };
}

describe('mergeOverlap', () => {
  it.each([
    ['the live head that ends the history', ['a', 'b', 'c'], ['b', 'c', 'd'], ['a', 'b', 'c', 'd']],
    ['no overlap', ['a', 'b'], ['c'], ['a', 'b', 'c']],
    ['live wholly in the history', ['a', 'b', 'c'], ['b', 'c'], ['a', 'b', 'c']],
    ['nothing live', ['a'], [], ['a']],
    ['no history', [], ['a'], ['a']],
    ['the longest run, with repeated items', ['x', 'a', 'a'], ['a', 'a', 'b'], ['x', 'a', 'a', 'b']],
    ['a run that is not at the history\'s end is no overlap', ['a', 'b', 'x'], ['a', 'b'], ['a', 'b', 'x', 'a', 'b']],
  ])('%s', (_name, history, live, joined) => {
    expect(mergeOverlap(history, live, same)).toEqual(joined);
  });
});

describe('Feed', () => {
  it('keeps at most its limit, the newest', () => {
    const feed = new Feed<number>(3);
    for (let item = 1; item <= 5; item += 1) feed.push(item);
    expect(feed.items).toEqual([3, 4, 5]);
  });

  it('back-fills once: the past joined to what came live meanwhile, then settled', async () => {
    const feed = new Feed<string>();
    const past = deferred<string[]>();
    const settled: string[] = [];
    const how = { fetchPast: () => past.promise, key: same, failed: () => settled.push('failed'), settled: () => settled.push('settled') };
    const load = feed.backfill(how);
    expect(feed.backfill(how)).toBeNull(); // loading: not twice
    feed.push('b');
    feed.push('c');
    past.resolve(['a', 'b']);
    await load;
    expect({ items: feed.items, loaded: feed.loaded, loading: feed.loading, settled }).toEqual({ items: ['a', 'b', 'c'], loaded: true, loading: null, settled: ['settled'] });
    expect(feed.backfill(how)).toBeNull(); // loaded: not again
  });

  it('a load begun before a reset is thrown away, and does not settle', async () => {
    const feed = new Feed<string>();
    const past = deferred<string[]>();
    const settled: string[] = [];
    const load = feed.backfill({ fetchPast: () => past.promise, key: same, failed: () => settled.push('failed'), settled: () => settled.push('settled') });
    feed.reset();
    feed.push('live after the reset');
    past.resolve(['old']);
    await load;
    expect({ items: feed.items, loaded: feed.loaded, settled }).toEqual({ items: ['live after the reset'], loaded: false, settled: [] });
  });

  it('a failed load is said, settles, and can be tried again', async () => {
    const feed = new Feed<string>();
    const heard: unknown[] = [];
    await feed.backfill({ fetchPast: () => Promise.reject(new Error('503')), key: same, failed: (error) => heard.push(error), settled: () => heard.push('settled') });
    expect(heard).toEqual([new Error('503'), 'settled']);
    expect(feed.loaded).toBe(false);
    await feed.backfill({ fetchPast: () => Promise.resolve(['a']), key: same, failed: () => {}, settled: () => {} });
    expect(feed.items).toEqual(['a']);
  });

  it('feedOf makes a feed once per key', () => {
    const feeds = new Map<string, Feed<string>>();
    const first = feedOf(feeds, 's1');
    expect(feedOf(feeds, 's1')).toBe(first);
    expect(feedOf(feeds, 's2')).not.toBe(first);
  });
});

describe('keys', () => {
  const key = (kind: TranscriptItem['kind'], data: unknown) => transcriptKey({ kind, data });

  it('a prompt is its text; a permission request its tool call; an answer the option chosen', () => {
    expect(key('prompt', { prompt: [{ type: 'text', text: 'hi ' }, { type: 'image' }] })).toBe('prompt:hi [image]');
    expect(key('permission', { toolCall: { toolCallId: 'c1', title: 'one' }, options: [] })).toBe(key('permission', { toolCall: { toolCallId: 'c1', title: 'other' } }));
    expect(key('permission_outcome', { outcome: { outcome: 'selected', optionId: 'allow' } })).toBe('outcome:selected:allow');
    expect(key('permission_outcome', { outcome: { outcome: 'cancelled' } })).toBe('outcome:cancelled:');
  });

  it('an elicitation as the store keeps it and as the stream says it are one: its mode and message; its answer, the action', () => {
    const stored = key('elicitation', { requestId: 7, mode: 'form', message: 'Name?', requestedSchema: { type: 'object' }, url: null, elicitationId: null, toolCallId: null });
    expect(stored).toBe(key('elicitation', { mode: 'form', message: 'Name?', url: null, toolCallId: null }));
    expect(stored).not.toBe(key('elicitation', { mode: 'url', message: 'Name?' }));
    expect(key('elicitation_outcome', { requestId: 7, action: 'accept', fields: ['name'] })).toBe(key('elicitation_outcome', { action: 'accept' }));
  });

  it('anything else is its whole content', () => {
    expect(key('update', { a: 1 })).toBe('update:{"a":1}');
    expect(key('update', null)).toBe('update:{}');
    expect(logKey({ at: 1, line: 'x' })).toBe(logKey({ at: 2, line: 'x' }));
  });
});

describe('coalesced', () => {
  it('runs one at a time: calls while it runs fold into one more run after it', async () => {
    // Each run says it started, and ends when the test lets it.
    const expected = [0, 1, 2].map(() => ({ started: deferred<void>(), finish: deferred<void>() }));
    let count = 0;
    const reload = coalesced(async () => {
      const current = expected[count]!;
      count += 1;
      current.started.resolve();
      await current.finish.promise;
    });
    const first = reload();
    const second = reload();
    const third = reload();
    expect(second).toBe(first);
    expect(third).toBe(first);
    expect(count).toBe(1);
    expected[0]!.finish.resolve();
    await expected[1]!.started.promise; // the one more run, for both calls made meanwhile
    expected[1]!.finish.resolve();
    await first;
    expect(count).toBe(2);
    // Idle again: the next call runs at once, on its own.
    const fourth = reload();
    expect(fourth).not.toBe(first);
    expect(count).toBe(3);
    expected[2]!.finish.resolve();
    await fourth;
    expect(count).toBe(3);
  });

  it('a failed run rejects its callers and does not block the next', async () => {
    let fail = true;
    const reload = coalesced(async () => {
      if (fail) throw new Error('no');
    });
    await expect(reload()).rejects.toThrow('no');
    fail = false;
    await expect(reload()).resolves.toBeUndefined();
  });
});
