/** The store's per-session grouping (services/store/by-session.ts): found by agent and session, listed in the order sessions came first. */
import { describe, expect, it } from 'vitest';
import { BySession } from '../../services/store/by-session.js';

describe('BySession', () => {
  it('keeps a value per agent and session, in the order each session was first added, apart by agent', () => {
    const groups = new BySession<string[]>();
    const writes: Array<[string, string, string]> = [['a', 's1', 'one'], ['b', 's1', 'two'], ['a', 's2', 'three'], ['a', 's1', 'four'], ['b', 's1', 'five']];
    for (const [agent, sessionId, value] of writes) {
      const group = groups.get(agent, sessionId);
      if (group) group.push(value);
      else groups.add(agent, sessionId, [value]);
    }
    expect(groups.inOrder).toEqual([['one', 'four'], ['two', 'five'], ['three']]);
    expect(groups.get('a', 's1')).toEqual(['one', 'four']);
    expect(groups.get('b', 's2')).toBeUndefined();
    groups.clear();
    expect(groups.inOrder).toEqual([]);
    expect(groups.get('a', 's1')).toBeUndefined();
  });
});
