/** A retention rule's limits as both stores apply them: only finite ones, the count as a whole number of entries to keep. */
import type { RetentionRule } from '../../core/store.js';

export interface RetentionLimits {
  maxAgeMs: number | undefined;
  /** How many of the newest to keep: a whole number, at least 0. */
  maxCount: number | undefined;
  maxBytes: number | undefined;
}

/** The limits a rule sets (a limit that is absent or not finite is none). */
export function retentionLimits(rule: RetentionRule): RetentionLimits {
  const maxCount = finite(rule.maxCount);
  return { maxAgeMs: finite(rule.maxAgeMs), maxCount: maxCount === undefined ? undefined : Math.max(0, Math.floor(maxCount)), maxBytes: finite(rule.maxBytes) };
}

function finite(value: number | undefined): number | undefined {
  return value !== undefined && Number.isFinite(value) ? value : undefined;
}
