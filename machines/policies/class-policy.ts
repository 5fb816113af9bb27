/**
 * What the supervisor does with a failure of each class (docs/failures.md): retry it with the
 * backoff schedule, park the agent until somebody logs in (`needsAuth`), park it until a usage
 * or rate limit resets (`rateLimited`), or give up at once. Plain data, overridable per class
 * with `restart.policies`; the arithmetic of a parked agent's wait is here too, pure.
 */
import type { FailureClass } from '../../core/failure-class.js';

/** The four things the supervisor can do with a failure. */
export type ClassAction = 'retry' | 'needsAuth' | 'rateLimited' | 'giveUp';

export interface ClassPolicy {
  action: ClassAction;
  /**
   * With `rateLimited`: how long to wait when the agent gave no reset time (ms); `null` waits
   * for a caller's `reconnect()`.
   */
  waitMs?: number | null;
  /** With `rateLimited`: the longest wait, whatever the reset time says (ms). */
  maxWaitMs?: number;
}

export type ClassPolicies = Record<FailureClass, ClassPolicy>;

/**
 * The defaults, and why:
 * - crash, timeout, unknown — retried with the backoff schedule, as every failure was before
 *   classes: a crash or a hung handshake is often transient.
 * - auth — parked in `needsAuth`: a login does not come back by itself, and retrying only
 *   spawns processes that fail the same way.
 * - usage_limit — parked in `rateLimited` until the reset time the agent printed (at most 6 h
 *   from now, then it tries once more and parks again if the limit holds); with no reset time
 *   it waits for `reconnect()` (a plan's quota: somebody switches account or waits).
 * - rate_limited — parked until the reset time (at most 15 min), 60 s when none was given:
 *   throttling passes within seconds to minutes.
 * - config — given up at once: a missing command or a bad argument needs a person.
 */
export const defaultClassPolicies: ClassPolicies = Object.freeze({
  crash: { action: 'retry' },
  timeout: { action: 'retry' },
  unknown: { action: 'retry' },
  auth: { action: 'needsAuth' },
  usage_limit: { action: 'rateLimited', waitMs: null, maxWaitMs: 6 * 60 * 60_000 },
  rate_limited: { action: 'rateLimited', waitMs: 60_000, maxWaitMs: 15 * 60_000 },
  config: { action: 'giveUp' },
});

/**
 * How long a parked agent waits before it tries again: until `retryAt` when the agent gave
 * one (never less than 0, never more than `maxWaitMs`), else `waitMs`; `null` when it waits
 * for a caller.
 */
export function parkedWaitMs(policy: ClassPolicy, retryAt: number | null, now: number): number | null {
  const cap = policy.maxWaitMs ?? Number.POSITIVE_INFINITY;
  if (retryAt !== null) return Math.min(Math.max(0, retryAt - now), cap);
  if (policy.waitMs === undefined || policy.waitMs === null) return null;
  return Math.min(Math.max(0, policy.waitMs), cap);
}

/** Whether the supervisor retries a failure of this class by itself (now, after a backoff, or at a reset time). */
export function retriesByItself(policy: ClassPolicy, retryAt: number | null): boolean {
  if (policy.action === 'retry') return true;
  return policy.action === 'rateLimited' && (retryAt !== null || (policy.waitMs !== undefined && policy.waitMs !== null));
}

/**
 * Restart intensity (OTP's): the times of the automatic restarts still inside the window of
 * `periodMs` ending at `now`. More than `intensity` of them and the agent gives up.
 */
export function restartsWithin(times: readonly number[], periodMs: number, now: number): number[] {
  return times.filter((time) => time > now - periodMs);
}
