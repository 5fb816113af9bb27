/**
 * How to launch one agent: plain data. The schema is the one definition: the type is derived
 * from it, and every spec (and agent name) is checked against it at the public edge.
 */
import { z } from 'zod';
import { invalidOptions } from './errors.js';
import { describeSchemaIssue, noNul } from './schema.js';
import { failureClasses, type FailureClass, type FailurePattern } from './failure-class.js';
import { runsOnThisHost, runtimeSpecSchema } from './runtime-spec.js';
import { workspaceSpecSchema } from './workspace-spec.js';
import { restartOptionsSchema } from './restart-spec.js';
import { maxTimerMs, timeoutMsSchema } from './timeout.js';

export { maxTimerMs, timeoutMsSchema };

/** A pattern that marks a failure as one class: a RegExp, or its source as a string (case-insensitive). */
export const failurePatternSchema = z
  .strictObject({
    class: z.enum(failureClasses as [FailureClass, ...FailureClass[]]),
    pattern: z.union([z.instanceof(RegExp), z.string().min(1, 'must not be empty')]),
  })
  .superRefine((value, context) => {
    if (typeof value.pattern !== 'string') return;
    try {
      new RegExp(value.pattern, 'i');
    } catch (error) {
      context.addIssue({ code: 'custom', path: ['pattern'], message: `is not a regular expression: ${(error as Error).message}` });
    }
  });

export type FailurePatternInput = z.input<typeof failurePatternSchema>;

/** A spec's patterns as machine context keeps them (plain JSON): a string is case-insensitive. */
export function toFailurePatterns(patterns: readonly FailurePatternInput[] = []): FailurePattern[] {
  return patterns.map(({ class: failureClass, pattern }) =>
    typeof pattern === 'string' ? { class: failureClass, source: pattern, flags: 'i' } : { class: failureClass, source: pattern.source, flags: pattern.flags.replace(/[gy]/g, '') },
  );
}

/** An agent's name: any non-empty string up to 200 characters without control characters. */
export const agentNameSchema = z
  .string()
  .min(1, 'must not be empty')
  .max(200, 'must be at most 200 characters')
  // eslint-disable-next-line no-control-regex
  .refine((name) => !/[\u0000-\u001f\u007f]/.test(name), 'must not contain control characters');

/**
 * An agent spec.
 *
 * @example
 * const codex: AgentSpec = { command: 'codex-acp', displayName: 'Codex', env: { RUST_LOG: 'warn' } };
 */
export const agentSpecSchema = z.strictObject({
  /** Program to run (looked up on PATH unless it contains a slash). */
  command: noNul(z.string().trim().min(1, 'must be a non-empty string')),
  args: z.array(noNul(z.string())).optional(),
  /** Variables merged over the parent's environment. Never copied into machine context. */
  env: z.record(noNul(z.string().min(1).refine((name) => !name.includes('='), 'must not contain "="')), noNul(z.string())).optional(),
  /**
   * Working directory of the process; the parent's by default. For an agent that runs here
   * (local, sandbox) an existing directory, made absolute and checked when the agent is
   * registered (`invalid_options` otherwise); for a remote one, a path where it runs.
   */
  cwd: noNul(z.string().min(1)).optional(),
  /** Name used in messages ("Could not connect to {displayName}"); the agent's key by default. */
  displayName: z.string().optional(),
  /** How to install `command`, carried by a `not_installed` error (presets set it). */
  installHint: z.string().optional(),
  /**
   * The agent's own workspace (docs/workspaces.md): a git worktree on a new branch, or a
   * directory, made before the agent is spawned and used as its cwd. Exclusive with `cwd`.
   */
  workspace: workspaceSpecSchema.optional(),
  /**
   * What this agent prints when it fails, by class (docs/failures.md), tried before the
   * built-in patterns. Presets carry what their agents are known to print.
   */
  failurePatterns: z.array(failurePatternSchema).optional(),
  /**
   * How agentvisor talks to the agent: `'acp'` (default), `'stream-json'` (Claude Code's
   * headless streaming mode behind an ACP face: docs/stream-json.md) or `'pty'` (any
   * interactive CLI in a pseudo-terminal: docs/pty.md).
   */
  protocol: z.enum(['acp', 'stream-json', 'pty']).optional(),
  /** With `protocol: 'pty'`: the terminal's size, its scrollback, and the activity timeouts (docs/pty.md). */
  pty: z
    .strictObject({
      cols: z.number().int().min(2).max(1000).optional(),
      rows: z.number().int().min(2).max(1000).optional(),
      scrollbackLines: z.number().int().min(0).max(1_000_000).optional(),
      needsInputTimeoutMs: timeoutMsSchema.optional(),
      staleTimeoutMs: timeoutMsSchema.optional(),
    })
    .optional(),
  /**
   * Where the agent runs (docs/runtimes.md): `{ kind: 'local' }` (default), `'sandbox'`
   * (bubblewrap), `'ssh'` (a remote host), `'docker'`, `'kubernetes'`.
   */
  runtime: runtimeSpecSchema.optional(),
  /** This agent's own handshake timeout (default: the supervisor's `handshakeTimeoutMs`). */
  handshakeTimeoutMs: timeoutMsSchema.optional(),
  /** This agent's own stop ladder: wait after closing stdin before SIGTERM (default: the supervisor's). */
  shutdownTimeoutMs: timeoutMsSchema.optional(),
  /** This agent's own stop ladder: wait after SIGTERM before SIGKILL (default: the supervisor's). */
  killTimeoutMs: timeoutMsSchema.optional(),
  /**
   * This agent's restart policy: any of the supervisor's `restart` options, merged over them
   * (class policies class by class). Its `when` defaults by protocol: 'always' for ACP,
   * 'on-failure' for pty and stream-json (docs/failures.md).
   */
  restart: restartOptionsSchema.optional(),
  /**
   * Sets of credentials to fail over between (docs/failures.md): the agent starts with the
   * first set's `env` merged over its own; an auth failure or a usage limit moves to the next
   * set and restarts; when every set has failed, the agent parks as it would with one. Only
   * the names ever leave the spec (describe, events, the store).
   */
  credentials: z
    .array(
      z.strictObject({
        name: z.string().trim().min(1, 'must be a non-empty string').max(200, 'must be at most 200 characters'),
        env: z.record(noNul(z.string().min(1).refine((name) => !name.includes('='), 'must not contain "="')), noNul(z.string())),
      }),
    )
    .min(1, 'must list at least one set (leave it out for none)')
    .optional(),
}).superRefine((spec, context) => {
  const remote = !runsOnThisHost(spec.runtime?.kind);
  if (spec.protocol === 'pty' && remote) {
    context.addIssue({ code: 'custom', path: ['runtime'], message: `cannot be ${spec.runtime!.kind} for protocol 'pty': a pseudo-terminal runs on this host (local or sandbox)` });
  }
  if (spec.workspace !== undefined && remote) {
    context.addIssue({ code: 'custom', path: ['workspace'], message: `cannot be given with runtime ${spec.runtime!.kind}: a workspace is made on this host` });
  }
  if (spec.runtime?.kind === 'docker' && (spec.runtime.container === undefined) === (spec.runtime.image === undefined)) {
    context.addIssue({ code: 'custom', path: ['runtime'], message: 'needs exactly one of container (docker exec) and image (docker run)' });
  }
  if (spec.runtime?.kind === 'kubernetes' && (spec.runtime.pod === undefined) === (spec.runtime.template === undefined)) {
    context.addIssue({ code: 'custom', path: ['runtime'], message: 'needs exactly one of pod (exec into a running pod) and template (a pod per agent, made through the API)' });
  }
  if (spec.runtime?.kind === 'kubernetes' && spec.runtime.template !== undefined && spec.protocol !== undefined && spec.protocol !== 'acp') {
    context.addIssue({ code: 'custom', path: ['protocol'], message: `must be acp with a pod template: the agent speaks ACP over the API's exec stream (not ${spec.protocol})` });
  }
  if (spec.pty !== undefined && spec.protocol !== 'pty') {
    context.addIssue({ code: 'custom', path: ['pty'], message: "is only for protocol 'pty'" });
  }
  const names = (spec.credentials ?? []).map((set) => set.name);
  const repeated = names.find((name, index) => names.indexOf(name) !== index);
  if (repeated !== undefined) context.addIssue({ code: 'custom', path: ['credentials'], message: `names ${JSON.stringify(repeated)} twice: each set needs its own name` });
  if (spec.cwd !== undefined && spec.workspace !== undefined) {
    context.addIssue({ code: 'custom', path: ['workspace'], message: 'cannot be given with cwd: the workspace is the agent\'s cwd' });
  }
});

export type AgentSpec = z.infer<typeof agentSpecSchema>;

/** Throws `AgentError` kind `invalid_options` (naming the field) unless `name` and `spec` are usable. */
export function validateAgentSpec(name: unknown, spec: unknown): AgentSpec {
  const validName = agentNameSchema.safeParse(name);
  if (!validName.success) throw invalidOptions(`An agent name ${describeSchemaIssue(validName.error)}`);
  const valid = agentSpecSchema.safeParse(spec);
  if (!valid.success) throw invalidOptions(`Invalid spec for agent "${validName.data}": ${describeSchemaIssue(valid.error, 'spec')}`, validName.data);
  return valid.data;
}
