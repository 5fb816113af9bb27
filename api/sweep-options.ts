/** The options of `sweepOrphans()` (docs/containment.md), and their validation. */
import { z } from 'zod';
import { invalidOptions } from '../core/errors.js';
import { describeSchemaIssue } from '../core/schema.js';

/** A pid: a whole number above 0 (0 and negative numbers name process groups to kill(2), never a process). */
const pidSchema = z.number().int('must be a whole number').positive('must be a pid (a whole number above 0)').max(2 ** 31 - 1);

/**
 * What `sweepOrphans()` is asked to do. Unknown fields are refused (a typo such as `dryrun`
 * must never turn a listing into a kill).
 */
export const sweepOrphansOptionsSchema = z.strictObject({
  /** List what crashed supervisors left (pid, agent, start time, command): kill nothing, remove no record. */
  dryRun: z.boolean().optional(),
  /**
   * Kill only the leftovers of these pids (as a dry run lists them, or a record's spawned
   * pid); each must be a dead supervisor's leftover on this host, else the sweep rejects
   * `orphan_not_found` and kills nothing. With `dryRun`, lists only them (after the same check).
   * At least one: an empty list is refused rather than read as "none" or "all".
   */
  only: z.array(pidSchema).min(1, 'must name at least one pid (leave it out to sweep every leftover)').optional(),
});

/** The options of `sweepOrphans()`. */
export type SweepOrphansOptions = z.input<typeof sweepOrphansOptionsSchema>;

/** Checks the options of `sweepOrphans()`; throws `invalid_options` naming the field. */
export function resolveSweepOptions(input: unknown): z.output<typeof sweepOrphansOptionsSchema> {
  const result = sweepOrphansOptionsSchema.safeParse(input ?? {});
  if (!result.success) throw invalidOptions(`Option ${describeSchemaIssue(result.error, 'sweep options')}`);
  return result.data;
}
