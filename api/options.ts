/** The options of `createSupervisor` and `newSession`, their defaults and their validation. */
import { statSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import type { InspectionEvent, Observer } from 'xstate';
import { z } from 'zod';
import type { McpServer, SessionUpdate } from '../core/acp-types.js';
import { agentNameSchema, agentSpecSchema, maxTimerMs, timeoutMsSchema, type AgentSpec } from '../core/agent-spec.js';
import type { OverloadPolicy } from '../machines/supervisor.machine.js';
import { realClock, type Clock } from '../core/clock.js';
import { invalidOptions } from '../core/errors.js';
import { runsOnThisHost } from '../core/runtime-spec.js';
import type { ElicitationPolicy } from '../core/elicitation.js';
import type { PermissionPolicy } from '../core/permission-policy.js';
import type { ExtensionHandler } from '../runtime/acp-client-handlers.js';
import type { TerminalLogin } from '../runtime/terminal-login.js';
import { createConsoleInspector } from '../inspection/console-inspector.js';
import type { RestartPolicy } from '../machines/policies/backoff.policy.js';
import { resolveRestartPolicy } from '../machines/policies/restart.policy.js';
import { restartOptionsSchema, type RestartOptions } from '../core/restart-spec.js';
import type { SessionSettings } from '../runtime/session-opener.js';
import type { RuntimeSettings } from '../runtime/supervisor-runtime.js';
import { containmentKinds, type ContainmentPreference } from '../runtime/containment-choice.js';
import { defaultStateDir } from '../runtime/state-dir.js';
import { defaultRetention, storeMethods } from '../runtime/store-choice.js';
import type { Store } from '../core/store.js';
import { describeSchemaIssue, noNul } from '../core/schema.js';
import { workspaceSpecSchema, type WorkspaceSpec } from '../core/workspace-spec.js';

export type { Clock };

export { maxTimerMs };

const timeoutMs = timeoutMsSchema;

export type { RestartOptions };

/** The supervisor-wide restart intensity by default: see docs/failures.md for the reasoning. */
export const defaultOverload: OverloadPolicy = Object.freeze({ intensity: 50, periodMs: 60_000 });
const isFunction = (value: unknown) => typeof value === 'function';
const permissionPolicySchema = z.union([
  z.enum(['ask', 'allow', 'deny', 'allow-reads']),
  z.custom<Extract<PermissionPolicy, (...args: never[]) => unknown>>(isFunction, "must be 'ask', 'allow', 'deny', 'allow-reads' or a function"),
]);
const stallPolicySchema = z.enum(['none', 'cancel', 'restart']);
const elicitationPolicySchema = z.union([z.enum(['decline', 'ask']), z.custom<Extract<ElicitationPolicy, (...args: never[]) => unknown>>(isFunction, "must be 'decline', 'ask' or a function")]);
const metaSchema = z.record(z.string(), z.unknown());
const extensionsSchema = z
  .record(z.string().regex(/^_./, 'an extension method starts with _'), z.custom<ExtensionHandler>(isFunction, 'must be a function'))
  .optional();
const retentionRuleSchema = z.strictObject({ maxCount: z.number().int().min(0).optional(), maxAgeMs: z.number().min(0).optional(), maxBytes: z.number().int().min(0).optional() });
const hasMethods = (value: unknown, methods: readonly string[]) => typeof value === 'object' && value !== null && methods.every((method) => typeof (value as Record<string, unknown>)[method] === 'function');

/** An XState inspection observer, a function of inspection events, or `'console'` for readable traces. */
export type InspectOption = Observer<InspectionEvent> | ((event: InspectionEvent) => void) | 'console';

/**
 * The options of `createSupervisor`: the schema is the one definition (the type is derived
 * from it), so no option escapes validation. Every bad value is `invalid_options` naming
 * the field, before anything starts.
 */
export const supervisorOptionsSchema = z.strictObject({
  /** Agents registered up front, by name. More can be added with `register()`. */
  agents: z.record(agentNameSchema, agentSpecSchema).optional(),
  /** Most agents with a live process at once (default 8). */
  maxAgents: z.number().int().min(1).optional(),
  /** Automatic restart policy after a connected agent is lost. */
  /**
   * The restart policy of every agent (docs/failures.md): when an ended process is started
   * again (`when`), the backoff, the restart intensity, what each failure class does. An
   * agent's `spec.restart` is merged over it.
   */
  restart: restartOptionsSchema.optional(),
  /**
   * The supervisor-wide restart intensity: more than `intensity` automatic restarts of all
   * agents within `periodMs` (default 50 in 60 000 ms) and the supervisor is overloaded — it
   * holds every automatic restart until `resetOverload()` (`supervisor:overloaded`).
   */
  overload: z.strictObject({ intensity: z.number().int().min(0).optional(), periodMs: timeoutMs.optional() }).optional(),
  /** How long `initialize` may take (default 30 000 ms). */
  handshakeTimeoutMs: timeoutMs.optional(),
  /** Stop ladder: wait after closing stdin before SIGTERM (default 5 000 ms). */
  shutdownTimeoutMs: timeoutMs.optional(),
  /** Stop ladder: wait after SIGTERM before SIGKILL (default 2 000 ms). */
  killTimeoutMs: timeoutMs.optional(),
  /** How many of an agent's last stderr lines are kept for error reports (default 20). */
  stderrLines: z.number().int().min(0).optional(),
  /**
   * How agent processes are contained so that nothing they start outlives them
   * (docs/containment.md): `'auto'` (default), the strongest this host offers —
   * `'pid-namespace'`, `'cgroup'`, `'proc-tracking'` — or one of them (a weaker one if it is
   * refused), or `'none'` for process groups only.
   */
  containment: z.enum(['auto', 'none', ...containmentKinds] as [ContainmentPreference, ...ContainmentPreference[]]).optional(),
  /**
   * SIGINT, SIGTERM and SIGHUP run `shutdown()` and then let the host end as it would have;
   * a second signal skips every agent to SIGKILL (default true). `false` leaves signals to
   * the embedding app. Several supervisors in one process share one set of listeners.
   */
  handleSignals: z.boolean().optional(),
  /**
   * Where live agent processes are recorded (`<stateDir>/processes/*.json`) so that
   * `sweepOrphans()` can kill what a crashed supervisor left behind, and where the store
   * lives. Default `$XDG_STATE_HOME/agentvisor` or `~/.local/state/agentvisor`; `false`: no
   * records (and the store is memory).
   */
  stateDir: z.union([z.literal(false), noNul(z.string().min(1, 'must be a directory path or false'))]).optional(),
  /** Sweep orphans once by itself before the first spawn (default true; `orphans:swept` tells the outcome). */
  sweepOnStart: z.boolean().optional(),
  /**
   * Where sessions, transcripts, stderr lines and the event log are kept (docs/store.md):
   * `'sqlite'` (default: `<stateDir>/agentvisor.db`; memory when `stateDir` is false),
   * `'memory'`, or an object implementing `Store`.
   */
  store: z.union([z.enum(['sqlite', 'memory']), z.custom<Store>((value) => hasMethods(value, storeMethods), `must be 'sqlite', 'memory' or a Store with the methods ${storeMethods.join(', ')}`)]).optional(),
  /** How much the store keeps, per kind (merged over the defaults, kind by kind). */
  retention: z.strictObject({ sessions: retentionRuleSchema.optional(), transcript: retentionRuleSchema.optional(), stderr: retentionRuleSchema.optional(), events: retentionRuleSchema.optional() }).optional(),
  /** How permission requests are answered (default 'ask': `permission:request` events). Overridable per session. */
  permissions: permissionPolicySchema.optional(),
  /** A permission request unanswered this long is answered `cancelled` (default 300 000 ms). */
  permissionTimeoutMs: timeoutMs.optional(),
  /**
   * How agents' elicitations (`elicitation/create`: a form or a URL for the user) are
   * answered: `'decline'` (default; the client then advertises no elicitation), `'ask'`
   * (`elicitation:request` events, on the session and the supervisor), or a function of the
   * request. Overridable per session (docs/acp.md).
   */
  elicitation: elicitationPolicySchema.optional(),
  /**
   * How long `authenticate()` may take before it is cancelled with `auth_timeout` (default
   * 120 000 ms; a login that waits for a person in a browser would otherwise never end).
   * Per call: `authenticate(agent, methodId, { timeoutMs })`.
   */
  authTimeoutMs: timeoutMs.optional(),
  /** An elicitation unanswered this long is answered `cancel` (default 300 000 ms). */
  elicitationTimeoutMs: timeoutMs.optional(),
  /**
   * The embedder's answers to agents' extension methods (`_`-prefixed requests and
   * notifications), by method name; any other `_` method is answered "method not found".
   */
  extensions: extensionsSchema,
  /**
   * Runs an agent's terminal login in a terminal the embedder provides, resolving with its
   * exit code; with it the client advertises `auth.terminal`, and `authenticate(agent, id)` of
   * a `terminal` method runs it (docs/acp.md).
   */
  terminalLogin: z.custom<TerminalLogin>(isFunction, 'must be a function').optional(),
  /** A turn with no update this long is stalled (default 120 000 ms). */
  stallTimeoutMs: timeoutMs.optional(),
  /** What a stall does besides the `stall` event: nothing, cancel the turn, or restart the agent (default 'none'). */
  onStall: stallPolicySchema.optional(),
  /** Client capabilities served to agents (both default true): sandboxed fs and terminals. */
  capabilities: z.strictObject({ fs: z.boolean().optional(), terminal: z.boolean().optional() }).optional(),
  /** Most bytes of output a terminal keeps (default 1 MiB); an agent may ask for less. */
  terminalOutputByteLimit: z.number().int().min(1).optional(),
  /** At most one `workspace:status` event per workspace per this many ms (default 1000; docs/workspaces.md). */
  workspaceStatusIntervalMs: z.number().int().min(50, 'must be at least 50 ms').max(maxTimerMs).optional(),
  /** XState clock for every delay (a SimulatedClock in tests). */
  clock: z.custom<Clock>((value) => hasMethods(value, ['setTimeout', 'clearTimeout']), 'must be an XState clock (setTimeout and clearTimeout)').optional(),
  /** XState inspection, passed to every actor. */
  inspect: z
    .custom<InspectOption>((value) => value === 'console' || isFunction(value) || hasMethods(value, ['next']), "must be 'console', a function or an observer with next()")
    .optional(),
});

export type SupervisorOptions = z.input<typeof supervisorOptionsSchema>;

/** Options of `newSession` and `loadSession`; checked the same way, before the agent is started. */
export const sessionOptionsSchema = z.strictObject({
  /**
   * The session's working directory and the root of its sandbox (default: process.cwd()): an
   * existing directory (a relative path is the host's cwd's), else `invalid_options`; for an
   * agent on another host or in a container, a path there, taken as it is (docs/runtimes.md).
   */
  cwd: noNul(z.string().min(1)).optional(),
  /** MCP servers the agent should connect to. */
  mcpServers: z.array(z.custom<McpServer>((value) => typeof value === 'object' && value !== null && !Array.isArray(value), 'must be an MCP server object')).optional(),
  /** More directories the agent may read and write through fs/* and run terminals in. */
  additionalRoots: z.array(noNul(z.string().min(1))).optional(),
  /** Overrides the supervisor's `permissions` policy for this session. */
  permissions: permissionPolicySchema.optional(),
  /** Overrides the supervisor's `elicitation` policy for this session (the client advertises elicitation only when the supervisor's is not 'decline'). */
  elicitation: elicitationPolicySchema.optional(),
  /** Attached to session/new (or load, resume) as `_meta`. */
  meta: metaSchema.optional(),
  stallTimeoutMs: timeoutMs.optional(),
  onStall: stallPolicySchema.optional(),
  /** Subscribed before the request is sent, so it also sees updates replayed by session/load. */
  onUpdate: z.custom<(update: SessionUpdate) => void>(isFunction, 'must be a function').optional(),
  signal: z.custom<AbortSignal>((value) => value instanceof AbortSignal, 'must be an AbortSignal').optional(),
  /**
   * `newSession` only: resume the latest stored session of this agent in this cwd
   * (`session/resume`, else `session/load`) instead of starting a new one; a new one when
   * none is stored, and when the stored one cannot be resumed (the agent cannot load sessions,
   * does not know it, refused the load) — never silently: the new session's `resumeFallback`
   * names the stored session and why.
   */
  resume: z.boolean().optional(),
  /** `resumeSession` only: the agent whose session it is, when several have that id. */
  agent: agentNameSchema.optional(),
  /**
   * The session's own workspace (docs/workspaces.md): a git worktree on a new branch, or a
   * directory, made before `session/new`; it is the session's cwd and sandbox root, and is
   * cleaned up by its strategy when the session is closed. Exclusive with `cwd`.
   */
  workspace: workspaceSpecSchema.optional(),
}).superRefine((options, context) => {
  if (options.cwd !== undefined && options.workspace !== undefined) {
    context.addIssue({ code: 'custom', path: ['workspace'], message: "cannot be given with cwd: the workspace is the session's cwd" });
  }
});

/** Options of `newSession`, `loadSession` and `resumeSession`. */
export type SessionOptions = Omit<z.input<typeof sessionOptionsSchema>, 'resume' | 'agent'>;
/** Options of `newSession`: a session's options, and whether to resume the latest stored one. */
export type NewSessionOptions = SessionOptions & Pick<z.input<typeof sessionOptionsSchema>, 'resume'>;

/** Parses `value` with `schema`, or throws `invalid_options` naming the field. */
function parseOptions<T>(schema: z.ZodType<T>, value: unknown, root: string): T {
  const result = schema.safeParse(value ?? {});
  if (!result.success) throw invalidOptions(`Option ${describeSchemaIssue(result.error, root)}`);
  return result.data;
}

export const defaultOptions = Object.freeze({
  maxAgents: 8,
  handshakeTimeoutMs: 30_000,
  shutdownTimeoutMs: 5_000,
  killTimeoutMs: 2_000,
  stderrLines: 20,
  permissionTimeoutMs: 300_000,
  elicitationTimeoutMs: 300_000,
  authTimeoutMs: 120_000,
  stallTimeoutMs: 120_000,
  terminalOutputByteLimit: 1024 * 1024,
  workspaceStatusIntervalMs: 1_000,
});

/** Fills in defaults; throws `AgentError` kind `invalid_options` for a malformed value. */
export function resolveOptions(input: SupervisorOptions): RuntimeSettings {
  const options = parseOptions(supervisorOptionsSchema, input, 'options');
  const restart: RestartPolicy = resolveRestartPolicy('acp', options.restart);
  return {
    maxAgents: options.maxAgents ?? defaultOptions.maxAgents,
    overload: { ...defaultOverload, ...stripUndefined(options.overload ?? {}) },
    stderrLines: options.stderrLines ?? defaultOptions.stderrLines,
    containment: options.containment ?? 'auto',
    stateDir: options.stateDir === undefined ? defaultStateDir() : options.stateDir === false ? false : resolve(options.stateDir),
    sweepOnStart: options.sweepOnStart ?? true,
    store: options.store ?? 'sqlite',
    retention: { ...defaultRetention, ...stripUndefined(options.retention ?? {}) },
    workspaceStatusIntervalMs: options.workspaceStatusIntervalMs ?? defaultOptions.workspaceStatusIntervalMs,
    extensions: { ...options.extensions },
    authTimeoutMs: options.authTimeoutMs ?? defaultOptions.authTimeoutMs,
    ...(options.terminalLogin ? { terminalLogin: options.terminalLogin } : {}),
    ...(options.restart ? { restartOptions: options.restart } : {}),
    timings: {
      restart,
      handshakeTimeoutMs: options.handshakeTimeoutMs ?? defaultOptions.handshakeTimeoutMs,
      shutdownTimeoutMs: options.shutdownTimeoutMs ?? defaultOptions.shutdownTimeoutMs,
      killTimeoutMs: options.killTimeoutMs ?? defaultOptions.killTimeoutMs,
    },
    sessions: {
      permissions: options.permissions ?? 'ask',
      permissionTimeoutMs: options.permissionTimeoutMs ?? defaultOptions.permissionTimeoutMs,
      elicitation: options.elicitation ?? 'decline',
      elicitationTimeoutMs: options.elicitationTimeoutMs ?? defaultOptions.elicitationTimeoutMs,
      stallTimeoutMs: options.stallTimeoutMs ?? defaultOptions.stallTimeoutMs,
      onStall: options.onStall ?? 'none',
      capabilities: { fs: options.capabilities?.fs ?? true, terminal: options.capabilities?.terminal ?? true },
      terminalOutputByteLimit: options.terminalOutputByteLimit ?? defaultOptions.terminalOutputByteLimit,
    },
    ...(options.clock ? { clock: options.clock } : {}),
    clockForTimers: options.clock ?? realClock,
    ...(options.inspect ? { inspect: options.inspect === 'console' ? createConsoleInspector() : options.inspect } : {}),
  };
}

function stripUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/**
 * A session's settings from its options over the supervisor's defaults; throws `invalid_options`.
 * `agentHere`: the session's agent runs on this host (local or sandboxed), so a given `cwd`
 * must be a directory here; for a remote agent it is a path there, not checked.
 */
export function resolveSessionOptions(input: SessionOptions, defaults: RuntimeSettings['sessions'], agentHere = true, cwdLabel = 'Option session options.cwd'): SessionSettings {
  const options = parseOptions(sessionOptionsSchema, input, 'session options');
  return {
    // A remote agent's cwd is a path on its host: taken as given, neither checked nor resolved here.
    cwd: options.cwd === undefined ? process.cwd() : agentHere ? existingDirectory(options.cwd, cwdLabel) : options.cwd,
    cwdGiven: options.cwd !== undefined,
    ...(options.workspace ? { workspace: resolveWorkspacePaths(options.workspace) } : {}),
    roots: (options.additionalRoots ?? []).map((root) => resolve(root)),
    mcpServers: options.mcpServers ?? [],
    permissions: options.permissions ?? defaults.permissions,
    elicitation: options.elicitation ?? defaults.elicitation,
    ...(options.meta ? { meta: options.meta } : {}),
    stallTimeoutMs: options.stallTimeoutMs ?? defaults.stallTimeoutMs,
    onStall: options.onStall ?? defaults.onStall,
    ...(options.onUpdate ? { onUpdate: options.onUpdate } : {}),
  };
}

/** Options of `pruneWorkspaces()`. */
export const pruneOptionsSchema = z.strictObject({
  /** Remove dirty worktrees too. */
  force: z.boolean().optional(),
  /** Apply this strategy to every stale workspace instead of its own. */
  strategy: z.enum(['archive', 'remove']).optional(),
});

/** Checks the options of `pruneWorkspaces()`; throws `invalid_options` naming the field. */
export function resolvePruneOptions(input: unknown): z.output<typeof pruneOptionsSchema> {
  return parseOptions(pruneOptionsSchema, input, 'prune options');
}

/** A workspace spec with its repository or directory made absolute (against the host's cwd now). */
export function resolveWorkspacePaths(spec: WorkspaceSpec): WorkspaceSpec {
  return spec.kind === 'git-worktree' ? { ...spec, repo: resolve(spec.repo) } : { ...spec, path: resolve(spec.path) };
}

/**
 * A validated spec's paths as the supervisor keeps them: its workspace's made absolute, and
 * the `cwd` of an agent that runs here made absolute and checked to be an existing directory
 * (`invalid_options` naming the agent, the field and the path). A remote agent's `cwd` is a
 * path where it runs, taken as it is.
 */
export function resolveAgentSpecPaths(name: string, spec: AgentSpec): AgentSpec {
  const cwd = spec.cwd !== undefined && runsOnThisHost(spec.runtime?.kind) ? existingDirectory(spec.cwd, `Invalid spec for agent "${name}": spec.cwd`, name) : spec.cwd;
  return { ...spec, ...(cwd === undefined ? {} : { cwd }), ...(spec.workspace ? { workspace: resolveWorkspacePaths(spec.workspace) } : {}) };
}

/**
 * `path` made absolute (against the host's cwd) when it is an existing directory; otherwise
 * `invalid_options` whose message is `field`, the path (as given and absolute) and what is
 * wrong with it. Checked when it is given, so a typo fails here rather than at the spawn.
 */
export function existingDirectory(path: string, field: string, agent?: string): string {
  const absolute = resolve(path);
  const named = isAbsolute(path) ? absolute : `${JSON.stringify(path)} (${absolute})`;
  let problem: string | null = null;
  try {
    if (!statSync(absolute).isDirectory()) problem = 'is not a directory';
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    problem = code === 'ENOENT' || code === 'ENOTDIR' ? 'does not exist' : `cannot be used (${code ?? (error as Error).message})`;
  }
  if (problem !== null) throw invalidOptions(`${field}: ${named} ${problem}`, agent);
  return absolute;
}
