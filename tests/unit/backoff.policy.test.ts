import { describe, expect, it } from 'vitest';
import { backoffDelay, defaultRestartPolicy, jitterRoll } from '../../machines/policies/backoff.policy.js';
import { isRetryable } from '../../machines/policies/retry.policy.js';

describe('backoff policy', () => {
  it('follows 1, 2, 4, 8, 16 s and caps at 30 s', () => {
    expect([1, 2, 3, 4, 5, 6, 7].map((attempt) => backoffDelay(attempt, defaultRestartPolicy))).toEqual([1000, 2000, 4000, 8000, 16000, 30000, 30000]);
  });

  it('jitter only shortens, by at most its share', () => {
    const policy = { ...defaultRestartPolicy, jitter: 1 };
    expect(backoffDelay(3, policy, 0)).toBe(4000);
    expect(backoffDelay(3, policy, 0.5)).toBe(2000);
    expect(backoffDelay(10, policy, 0.25)).toBe(22500);
  });

  it('rolls deterministically in [0, 1), differently per seed and attempt', () => {
    const rolls = [];
    for (let seed = 0; seed < 50; seed++) for (let attempt = 1; attempt <= 5; attempt++) rolls.push(jitterRoll(seed, attempt));
    expect(rolls.every((roll) => roll >= 0 && roll < 1)).toBe(true);
    expect(new Set(rolls).size).toBeGreaterThan(240);
    expect(jitterRoll(9, 2)).toBe(jitterRoll(9, 2));
  });

  it('retries only what a restart can fix', () => {
    expect(isRetryable('agent_exited')).toBe(true);
    expect(isRetryable('handshake_timeout')).toBe(true);
    expect(isRetryable('not_installed')).toBe(false);
    expect(isRetryable('auth_required')).toBe(false);
  });
});
