/**
 * Timing and statistics for the benchmarks: a monotonic clock, medians and spreads, and
 * interleaved A/B rounds (warm-up first, alternating order) so that noise from other work
 * on the machine falls on both sides alike.
 */
import { performance } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** Milliseconds on a monotonic clock. */
export const now = (): number => performance.now();

/** Resolves after `ms` milliseconds. */
export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export function median(values: readonly number[]): number {
  return quantile(values, 0.5);
}

/** Linear-interpolated quantile (q in 0..1) of `values`; NaN when empty. */
export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const position = (sorted.length - 1) * q;
  const low = Math.floor(position);
  const high = Math.ceil(position);
  return sorted[low]! + (sorted[high]! - sorted[low]!) * (position - low);
}

/** Latency quantiles of a sample (3 decimals): count, min, p50, p99, max. */
export interface Quantiles {
  n: number;
  min: number;
  p50: number;
  p99: number;
  max: number;
}

export function quantiles(values: readonly number[]): Quantiles {
  return { n: values.length, min: round(Math.min(...values), 3), p50: round(quantile(values, 0.5), 3), p99: round(quantile(values, 0.99), 3), max: round(Math.max(...values), 3) };
}

/** A sample's shape: median, min, max, and the interquartile range relative to the median. */
export interface Spread {
  n: number;
  median: number;
  min: number;
  max: number;
  /** (p75 − p25) / median: how noisy the rounds were. */
  iqrPct: number;
}

export function spread(values: readonly number[]): Spread {
  const mid = median(values);
  return {
    n: values.length,
    median: round(mid),
    min: round(Math.min(...values)),
    max: round(Math.max(...values)),
    iqrPct: round(((quantile(values, 0.75) - quantile(values, 0.25)) / mid) * 100, 1),
  };
}

export function round(value: number, digits = 2): number {
  const scale = 10 ** digits;
  return Math.round(value * scale) / scale;
}

/** One measured round of one side: its headline value plus any named extras. */
export interface Sample {
  value: number;
  extra?: Record<string, number>;
}

/** Whether a side runs as part of the unmeasured warm-up or as a measured round. */
export type Phase = 'warmup' | 'measured';

export interface InterleavedOptions {
  warmup: number;
  rounds: number;
  baseline: (phase: Phase) => Promise<Sample>;
  agentvisor: (phase: Phase) => Promise<Sample>;
  /** Called after every measured round (progress output). */
  onRound?: (round: number, baseline: Sample, agentvisor: Sample) => void;
}

export interface Interleaved {
  baseline: Sample[];
  agentvisor: Sample[];
}

/**
 * Runs `warmup` unmeasured rounds of both sides, then `rounds` measured ones. Each round
 * runs both sides back to back, in alternating order (A B, B A, A B, ...; {@link rotate}), so
 * neither side is always the one that runs right after the other's garbage or child-process
 * exits.
 */
export async function interleave(options: InterleavedOptions): Promise<Interleaved> {
  const samples = await rotate({
    warmup: options.warmup,
    rounds: options.rounds,
    sides: { baseline: options.baseline, agentvisor: options.agentvisor },
    onRound: (round, samples) => options.onRound?.(round, samples['baseline']!, samples['agentvisor']!),
  });
  return { baseline: samples['baseline']!, agentvisor: samples['agentvisor']! };
}

export interface RotateOptions<T> {
  warmup: number;
  rounds: number;
  /** Each side's round; told whether it is a warm-up (which may be smaller) or measured. */
  sides: Record<string, (phase: Phase) => Promise<T>>;
  onRound?: (round: number, results: Record<string, T>) => void;
}

/**
 * `interleave` for any number of sides and any kind of result. The rounds take the sides in
 * the orders of a balanced Latin square ({@link roundOrder}): two sides alternate (A B, B A,
 * …); three take every order once in six rounds (A B C, C B A, B C A, A C B, …); in general
 * each side runs in each place equally often, and right after each other side equally often,
 * over n rounds (n even) or 2n (n odd) — so that no side is always the one that runs right
 * after another's garbage or exits. Warm-up rounds run every side once, unmeasured.
 */
export async function rotate<T>(options: RotateOptions<T>): Promise<Record<string, T[]>> {
  const names = Object.keys(options.sides);
  for (let i = 0; i < options.warmup; i++) for (const name of names) await options.sides[name]!('warmup');
  const result: Record<string, T[]> = Object.fromEntries(names.map((name) => [name, []]));
  for (let i = 0; i < options.rounds; i++) {
    const round: Record<string, T> = {};
    for (const name of roundOrder(names, i)) {
      round[name] = await options.sides[name]!('measured');
      result[name]!.push(round[name]!);
    }
    options.onRound?.(i + 1, round);
  }
  return result;
}

/**
 * The order of round `i` in {@link rotate}: row i of a Williams design. Its first row is
 * 0, 1, n−1, 2, n−2, …; row r adds r to each place (mod n). With an odd count of sides each
 * row is followed by its mirror, as a Williams design needs two squares then.
 */
export function roundOrder<N>(names: readonly N[], i: number): N[] {
  const n = names.length;
  if (n < 2) return [...names];
  const first = Array.from({ length: n }, (_, place) => (place === 0 ? 0 : place % 2 === 1 ? (place + 1) / 2 : n - place / 2));
  const row = n % 2 === 0 ? i % n : Math.floor(i / 2) % n;
  const order = first.map((index) => names[(index + row) % n]!);
  return n % 2 === 1 && i % 2 === 1 ? order.reverse() : order;
}

/** The medians of every named extra across samples. */
export function medianExtras(samples: readonly Sample[]): Record<string, number> {
  const keys = new Set(samples.flatMap((sample) => Object.keys(sample.extra ?? {})));
  const out: Record<string, number> = {};
  for (const key of keys) {
    const values = samples.map((sample) => sample.extra?.[key]).filter((v): v is number => typeof v === 'number' && Number.isFinite(v));
    out[key] = round(median(values));
  }
  return out;
}

/** Forces a full garbage collection (with or without --expose-gc) once pending work has settled. */
export async function collectGarbage(): Promise<void> {
  const gc = forceGc();
  // Let pending microtasks and timers finish, then collect twice (weak refs, finalizers).
  await sleep(20);
  gc();
  await sleep(0);
  gc();
}

/** `collectGarbage()`, then heapUsed in bytes. */
export async function settledHeapUsed(): Promise<number> {
  await collectGarbage();
  return process.memoryUsage().heapUsed;
}

let cachedGc: (() => void) | undefined;

function forceGc(): () => void {
  if (cachedGc) return cachedGc;
  const global = globalThis as { gc?: () => void };
  if (typeof global.gc === 'function') {
    cachedGc = global.gc;
    return cachedGc;
  }
  // No --expose-gc: enable it at runtime and take gc() from a fresh context.
  setFlagsFromString('--expose-gc');
  cachedGc = runInNewContext('gc') as () => void;
  return cachedGc;
}
