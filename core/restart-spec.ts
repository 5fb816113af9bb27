/**
 * The restart options a caller gives — supervisor-wide (`createSupervisor({ restart })`) and
 * per agent (`spec.restart`, merged over the supervisor's) — as one schema, so both are
 * checked the same way (docs/failures.md, "Restart policies").
 */
import { z } from 'zod';
import { failureClasses, type FailureClass } from './failure-class.js';
import { timeoutMsSchema } from './timeout.js';

/**
 * When an agent whose process ended is started again by itself (Docker's and Kubernetes'
 * vocabulary): `'always'` — every exit is a loss and is restarted under the backoff;
 * `'on-failure'` — an exit with code 0 is the agent's outcome (status `exited`), anything else
 * is restarted; `'never'` — every exit is an outcome, nothing restarts by itself.
 */
export type RestartWhen = 'always' | 'on-failure' | 'never';
export const restartWhenValues: readonly RestartWhen[] = Object.freeze(['always', 'on-failure', 'never']);

const classPolicySchema = z.strictObject({
  action: z.enum(['retry', 'needsAuth', 'rateLimited', 'giveUp']),
  waitMs: z.union([timeoutMsSchema, z.null()]).optional(),
  maxWaitMs: timeoutMsSchema.optional(),
});
const classPoliciesSchema = z.strictObject(
  Object.fromEntries(failureClasses.map((failureClass) => [failureClass, classPolicySchema.optional()])) as Record<FailureClass, z.ZodOptional<typeof classPolicySchema>>,
);

export const restartOptionsSchema = z.strictObject({
  /** When an ended process is started again by itself (default: 'always' for ACP agents, 'on-failure' for pty and stream-json ones). */
  when: z.enum(restartWhenValues as [RestartWhen, ...RestartWhen[]]).optional(),
  /**
   * A caller's start that fails in a way a retry can fix (the process died during the
   * handshake, the handshake timed out) is retried under the backoff before its caller is
   * answered (default false: docs/failures.md says why).
   */
  retryFirstStart: z.boolean().optional(),
  maxAttempts: z.number().int().min(0).optional(),
  initialDelayMs: timeoutMsSchema.optional(),
  factor: z.number().min(1).optional(),
  maxDelayMs: timeoutMsSchema.optional(),
  jitter: z.number().min(0).max(1).optional(),
  stableAfterMs: timeoutMsSchema.optional(),
  /** At most this many automatic restarts of one agent within periodMs (default 10); one more gives up with restart_intensity. */
  intensity: z.number().int().min(0).optional(),
  /** The window of intensity (default 300 000 ms). */
  periodMs: timeoutMsSchema.optional(),
  /** What each failure class does (docs/failures.md), merged over the defaults class by class. */
  policies: classPoliciesSchema.optional(),
});

/** The restart options as given: every field optional, a class policy merged over its default. */
export type RestartOptions = z.input<typeof restartOptionsSchema>;
