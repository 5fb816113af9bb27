/** The benchmarks' round orders (bench/lib/stats.ts, `rotate`): every side in every place equally often. */
import { describe, expect, it } from 'vitest';
import { rotate, roundOrder } from '../../bench/lib/stats.js';

/** How often each side runs in each place over `rounds` rounds. */
function places(names: string[], rounds: number): Record<string, number[]> {
  const count = Object.fromEntries(names.map((name) => [name, names.map(() => 0)]));
  for (let i = 0; i < rounds; i++) roundOrder(names, i).forEach((name, place) => count[name]![place]!++);
  return count;
}

/** How often each side runs right after each other side within a round, over `rounds` rounds. */
function successions(names: string[], rounds: number): Map<string, number> {
  const count = new Map<string, number>();
  for (let i = 0; i < rounds; i++) {
    const order = roundOrder(names, i);
    for (let place = 1; place < order.length; place++) {
      const pair = `${order[place - 1]}>${order[place]}`;
      count.set(pair, (count.get(pair) ?? 0) + 1);
    }
  }
  return count;
}

describe('round orders', () => {
  it('two sides alternate which goes first', () => {
    expect([0, 1, 2, 3].map((i) => roundOrder(['raw', 'av'], i).join(' '))).toEqual(['raw av', 'av raw', 'raw av', 'av raw']);
  });

  it('three sides: every order once in six rounds, so each side is in each place twice', () => {
    const orders = [0, 1, 2, 3, 4, 5].map((i) => roundOrder(['raw', 'floor', 'control'], i).join(' '));
    expect(new Set(orders).size).toBe(6);
    expect(places(['raw', 'floor', 'control'], 6)).toEqual({ raw: [2, 2, 2], floor: [2, 2, 2], control: [2, 2, 2] });
  });

  it('four sides: in four rounds each side is in each place once and right after each other side once', () => {
    const names = ['a', 'b', 'c', 'd'];
    for (const counts of Object.values(places(names, 4))) expect(counts).toEqual([1, 1, 1, 1]);
    const pairs = successions(names, 4);
    expect(pairs.size).toBe(12);
    expect([...pairs.values()].every((count) => count === 1)).toBe(true);
  });

  it('five sides: in ten rounds each side is in each place twice and right after each other side once', () => {
    const names = ['raw', 'none', 'auto', 'cgroup', 'proc'];
    for (const counts of Object.values(places(names, 10))) expect(counts).toEqual([2, 2, 2, 2, 2]);
    const pairs = successions(names, 10);
    expect(pairs.size).toBe(20);
    expect([...pairs.values()].every((count) => count === 2)).toBe(true);
  });

  it('rotate runs the sides of each round in that order, warm-ups first', async () => {
    const ran: string[] = [];
    const side = (name: string) => async (phase: 'warmup' | 'measured') => void ran.push(`${name}:${phase}`);
    const result = await rotate({ warmup: 1, rounds: 3, sides: { a: side('a'), b: side('b'), c: side('c') } });
    expect(ran).toEqual(['a:warmup', 'b:warmup', 'c:warmup', 'a:measured', 'b:measured', 'c:measured', 'c:measured', 'b:measured', 'a:measured', 'b:measured', 'c:measured', 'a:measured']);
    expect(Object.values(result).map((samples) => samples.length)).toEqual([3, 3, 3]);
  });
});
