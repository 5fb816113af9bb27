/**
 * The restart policy's arithmetic: how long to wait before automatic attempt n.
 * Pure functions of plain numbers, so the machine's `backoff` delay stays pure and
 * reproducible (jitter draws from a seeded generator, not Math.random).
 */
import type { RestartWhen } from '../../core/restart-spec.js';
import { defaultClassPolicies, type ClassPolicies } from './class-policy.js';

/** Restart policy options; every field has the default in {@link defaultRestartPolicy}. */
export interface RestartPolicy {
  /** When an ended process is started again by itself: 'always', 'on-failure' (a clean exit is an outcome), 'never'. */
  when: RestartWhen;
  /** A caller's start that fails during the handshake is retried under the backoff before its caller is answered. */
  retryFirstStart: boolean;
  /** Automatic attempts after a loss before giving up. */
  maxAttempts: number;
  /** Delay before the first automatic attempt, in ms. */
  initialDelayMs: number;
  /** Multiplier between consecutive delays. */
  factor: number;
  /** Upper bound of any delay, in ms. */
  maxDelayMs: number;
  /** 0..1: the share of each delay that is randomised (0 = exact schedule). */
  jitter: number;
  /** How long an agent must stay connected before its attempt counter resets, in ms. */
  stableAfterMs: number;
  /** At most this many automatic restarts of one agent within `periodMs`; one more gives up with kind `restart_intensity`. */
  intensity: number;
  /** The window of `intensity`, in ms. */
  periodMs: number;
  /** What each failure class does (docs/failures.md). */
  policies: ClassPolicies;
}

export const defaultRestartPolicy: RestartPolicy = Object.freeze({
  when: 'always',
  retryFirstStart: false,
  maxAttempts: 5,
  initialDelayMs: 1000,
  factor: 2,
  maxDelayMs: 30_000,
  jitter: 0,
  stableAfterMs: 30_000,
  // 5 attempts a streak at 1-16 s make at most 5 restarts in ~31 s; 10 in 5 minutes is an agent
  // that connects, stays up past stableAfterMs (which forgives its attempts) and fails again,
  // over and over — what the attempt counter alone never stops.
  intensity: 10,
  periodMs: 5 * 60_000,
  policies: defaultClassPolicies,
});

/**
 * Delay before automatic attempt `attempt` (1-based):
 * `min(initialDelayMs · factor^(attempt-1), maxDelayMs)`, then with jitter j the delay is
 * shortened by up to j of itself — `delay · (1 − j · roll)` with roll in [0, 1) — so the cap
 * always holds and a storm of restarts spreads over `[delay · (1 − j), delay]`.
 *
 * @example backoffDelay(3, defaultRestartPolicy) // 4000
 */
export function backoffDelay(attempt: number, policy: RestartPolicy, roll = 0): number {
  const exponent = Math.max(0, attempt - 1);
  const base = Math.min(policy.initialDelayMs * policy.factor ** exponent, policy.maxDelayMs);
  return Math.round(base * (1 - policy.jitter * roll));
}

/**
 * A deterministic roll in [0, 1) for (seed, attempt): mulberry32 over the mixed pair.
 * Each agent gets its own seed, so agents restarted together draw different delays.
 */
export function jitterRoll(seed: number, attempt: number): number {
  let t = (seed ^ Math.imul(attempt + 1, 0x9e3779b1)) >>> 0;
  t = (t + 0x6d2b79f5) >>> 0;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
