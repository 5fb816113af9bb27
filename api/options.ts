/** The options of `createSupervisor` and `newSession`, their defaults and their validation. */
import { resolve } from 'node:path';
import type { InspectionEvent, Observer } from 'xstate';
import type { McpServer, SessionUpdate } from '../core/acp-types.js';
import type { AgentSpec } from '../core/agent-spec.js';
import { realClock, type Clock } from '../core/clock.js';
import { invalidOptions } from '../core/errors.js';
import type { PermissionPolicy } from '../core/permission-policy.js';
import { createConsoleInspector } from '../inspection/console-inspector.js';
import { defaultRestartPolicy, type RestartPolicy } from '../machines/policies/backoff.policy.js';
import type { StallPolicy } from '../machines/session-events.js';
import type { SessionSettings } from '../runtime/session-opener.js';
import type { RuntimeSettings } from '../runtime/supervisor-runtime.js';
import { containmentKinds, type ContainmentPreference } from '../runtime/containment-choice.js';
import { defaultStateDir } from '../runtime/state-dir.js';
import { defaultRetention, storeMethods, type StorePreference } from '../runtime/store-choice.js';
import type { Retention, RetentionRule } from '../core/store.js';

export type { Clock };

/** An XState inspection observer, a function of inspection events, or `'console'` for readable traces. */
export type InspectOption = Observer<InspectionEvent> | ((event: InspectionEvent) => void) | 'console';

export interface SupervisorOptions {
  /** Agents registered up front, by name. More can be added with `register()`. */
  agents?: Record<string, AgentSpec>;
  /** Most agents with a live process at once (default 8). */
  maxAgents?: number;
  /** Automatic restart policy after a connected agent is lost. */
  restart?: Partial<RestartPolicy>;
  /** How long `initialize` may take (default 30 000 ms). */
  handshakeTimeoutMs?: number;
  /** Stop ladder: wait after closing stdin before SIGTERM (default 5 000 ms). */
  shutdownTimeoutMs?: number;
  /** Stop ladder: wait after SIGTERM before SIGKILL (default 2 000 ms). */
  killTimeoutMs?: number;
  /** How many of an agent's last stderr lines are kept for error reports (default 20). */
  stderrLines?: number;
  /**
   * How agent processes are contained so that nothing they start outlives them
   * (docs/containment.md): `'auto'` (default), the strongest this host offers —
   * `'pid-namespace'`, `'cgroup'`, `'proc-tracking'` — or one of them (a weaker one if it is
   * refused), or `'none'` for process groups only.
   */
  containment?: ContainmentPreference;
  /**
   * SIGINT, SIGTERM and SIGHUP run `shutdown()` and then let the host end as it would have;
   * a second signal skips every agent to SIGKILL (default true). `false` leaves signals to
   * the embedding app. Several supervisors in one process share one set of listeners.
   */
  handleSignals?: boolean;
  /**
   * Where live agent processes are recorded (`<stateDir>/processes/*.json`) so that
   * `sweepOrphans()` can kill what a crashed supervisor left behind. Default
   * `$XDG_STATE_HOME/agentvisor` or `~/.local/state/agentvisor`; `false`: no records.
   */
  stateDir?: string | false;
  /** Sweep orphans once by itself before the first spawn (default true; `orphans:swept` tells the outcome). */
  sweepOnStart?: boolean;
  /**
   * Where sessions, transcripts, stderr lines and the event log are kept (docs/store.md):
   * `'sqlite'` (default: `<stateDir>/agentvisor.db`; memory when `stateDir` is false),
   * `'memory'`, or an object implementing `Store`.
   */
  store?: StorePreference;
  /** How much the store keeps, per kind (merged over the defaults, kind by kind). */
  retention?: Retention;
  /** How permission requests are answered (default 'ask': `permission:request` events). Overridable per session. */
  permissions?: PermissionPolicy;
  /** A permission request unanswered this long is answered `cancelled` (default 300 000 ms). */
  permissionTimeoutMs?: number;
  /** A turn with no update this long is stalled (default 120 000 ms). */
  stallTimeoutMs?: number;
  /** What a stall does besides the `stall` event: nothing, cancel the turn, or restart the agent (default 'none'). */
  onStall?: StallPolicy;
  /** Client capabilities served to agents (both default true): sandboxed fs and terminals. */
  capabilities?: { fs?: boolean; terminal?: boolean };
  /** Most bytes of output a terminal keeps (default 1 MiB); an agent may ask for less. */
  terminalOutputByteLimit?: number;
  /** XState clock for every delay (a SimulatedClock in tests). */
  clock?: Clock;
  /** XState inspection, passed to every actor. */
  inspect?: InspectOption;
}

/** Options of `newSession` and `loadSession`. */
export interface SessionOptions {
  /** The session's working directory and the root of its sandbox (default: process.cwd()). */
  cwd?: string;
  /** MCP servers the agent should connect to. */
  mcpServers?: McpServer[];
  /** More directories the agent may read and write through fs/* and run terminals in. */
  additionalRoots?: string[];
  /** Overrides the supervisor's `permissions` policy for this session. */
  permissions?: PermissionPolicy;
  stallTimeoutMs?: number;
  onStall?: StallPolicy;
  /** Subscribed before the request is sent, so it also sees updates replayed by session/load. */
  onUpdate?: (update: SessionUpdate) => void;
  signal?: AbortSignal;
}

/** Options of `newSession`: a session's options, and whether to resume the latest stored one. */
export interface NewSessionOptions extends SessionOptions {
  /**
   * Resume the latest stored session of this agent in this cwd (`session/load`) instead of
   * starting a new one; a new one only when none is stored. `not_supported` when the agent
   * cannot load sessions: never a silent fresh session.
   */
  resume?: boolean;
}

export const defaultOptions = Object.freeze({
  maxAgents: 8,
  handshakeTimeoutMs: 30_000,
  shutdownTimeoutMs: 5_000,
  killTimeoutMs: 2_000,
  stderrLines: 20,
  permissionTimeoutMs: 300_000,
  stallTimeoutMs: 120_000,
  terminalOutputByteLimit: 1024 * 1024,
});

/** Fills in defaults; throws `AgentError` kind `invalid_options` for a malformed value. */
export function resolveOptions(options: SupervisorOptions): RuntimeSettings {
  const restart: RestartPolicy = { ...defaultRestartPolicy, ...stripUndefined(options.restart ?? {}) };
  const resolved: RuntimeSettings = {
    maxAgents: options.maxAgents ?? defaultOptions.maxAgents,
    stderrLines: options.stderrLines ?? defaultOptions.stderrLines,
    containment: options.containment ?? 'auto',
    stateDir: options.stateDir === undefined ? defaultStateDir() : typeof options.stateDir === 'string' && options.stateDir !== '' ? resolve(options.stateDir) : options.stateDir,
    sweepOnStart: options.sweepOnStart ?? true,
    store: options.store ?? 'sqlite',
    retention: resolveRetention(options.retention),
    timings: {
      restart,
      handshakeTimeoutMs: options.handshakeTimeoutMs ?? defaultOptions.handshakeTimeoutMs,
      shutdownTimeoutMs: options.shutdownTimeoutMs ?? defaultOptions.shutdownTimeoutMs,
      killTimeoutMs: options.killTimeoutMs ?? defaultOptions.killTimeoutMs,
    },
    sessions: {
      permissions: options.permissions ?? 'ask',
      permissionTimeoutMs: options.permissionTimeoutMs ?? defaultOptions.permissionTimeoutMs,
      stallTimeoutMs: options.stallTimeoutMs ?? defaultOptions.stallTimeoutMs,
      onStall: options.onStall ?? 'none',
      capabilities: { fs: options.capabilities?.fs ?? true, terminal: options.capabilities?.terminal ?? true },
      terminalOutputByteLimit: options.terminalOutputByteLimit ?? defaultOptions.terminalOutputByteLimit,
    },
    ...(options.clock ? { clock: options.clock } : {}),
    clockForTimers: options.clock ?? realClock,
    ...(options.inspect ? { inspect: options.inspect === 'console' ? createConsoleInspector() : options.inspect } : {}),
  };
  requirePermissionPolicy(resolved.sessions.permissions);
  requireStallPolicy(resolved.sessions.onStall);
  requireInteger('terminalOutputByteLimit', resolved.sessions.terminalOutputByteLimit, 1);
  requireInteger('maxAgents', resolved.maxAgents, 1);
  requireInteger('stderrLines', resolved.stderrLines, 0);
  if (!['auto', 'none', ...containmentKinds].includes(resolved.containment)) {
    throw invalidOptions(`Option containment must be 'auto', 'none' or one of ${containmentKinds.map((kind) => `'${kind}'`).join(', ')}, got ${String(resolved.containment)}`);
  }
  if (resolved.stateDir !== false && (typeof resolved.stateDir !== 'string' || resolved.stateDir === '')) {
    throw invalidOptions(`Option stateDir must be a directory path or false, got ${String(resolved.stateDir)}`);
  }
  requireStore(resolved.store);
  if (typeof resolved.sweepOnStart !== 'boolean') throw invalidOptions(`Option sweepOnStart must be true or false, got ${String(resolved.sweepOnStart)}`);
  if (options.handleSignals !== undefined && typeof options.handleSignals !== 'boolean') {
    throw invalidOptions(`Option handleSignals must be true or false, got ${String(options.handleSignals)}`);
  }
  requireInteger('restart.maxAttempts', restart.maxAttempts, 0);
  for (const [name, value] of Object.entries({
    'restart.initialDelayMs': restart.initialDelayMs,
    'restart.maxDelayMs': restart.maxDelayMs,
    'restart.stableAfterMs': restart.stableAfterMs,
    handshakeTimeoutMs: resolved.timings.handshakeTimeoutMs,
    shutdownTimeoutMs: resolved.timings.shutdownTimeoutMs,
    killTimeoutMs: resolved.timings.killTimeoutMs,
    permissionTimeoutMs: resolved.sessions.permissionTimeoutMs,
    stallTimeoutMs: resolved.sessions.stallTimeoutMs,
  })) {
    requireNumber(name, value, 0);
  }
  requireNumber('restart.factor', restart.factor, 1);
  requireNumber('restart.jitter', restart.jitter, 0, 1);
  return resolved;
}

/** The retention asked for, kind by kind over the defaults; throws `invalid_options`. */
function resolveRetention(retention: Retention | undefined): Retention {
  if (retention === undefined) return defaultRetention;
  if (typeof retention !== 'object' || retention === null) throw invalidOptions(`Option retention must be an object, got ${String(retention)}`);
  const resolved: Retention = { ...defaultRetention };
  for (const [kind, rule] of Object.entries(retention) as Array<[keyof Retention, RetentionRule | undefined]>) {
    if (!(kind in defaultRetention)) throw invalidOptions(`Option retention has no kind ${kind}: use ${Object.keys(defaultRetention).join(', ')}`);
    if (rule === undefined) continue;
    for (const [limit, value] of Object.entries(rule)) {
      if (!['maxCount', 'maxAgeMs', 'maxBytes'].includes(limit)) throw invalidOptions(`Option retention.${kind} has no limit ${limit}: use maxCount, maxAgeMs, maxBytes`);
      if (value !== undefined) requireNumber(`retention.${kind}.${limit}`, value, 0);
    }
    resolved[kind] = rule;
  }
  return resolved;
}

/** Throws `invalid_options` unless `store` is 'sqlite', 'memory' or an object with every `Store` method. */
function requireStore(store: unknown): void {
  if (store === 'sqlite' || store === 'memory') return;
  const missing = typeof store === 'object' && store !== null ? storeMethods.filter((method) => typeof (store as Record<string, unknown>)[method] !== 'function') : storeMethods;
  if (missing.length > 0) throw invalidOptions(`Option store must be 'sqlite', 'memory' or a Store (missing ${missing.join(', ')}), got ${String(store)}`);
}

function stripUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}

function requireNumber(name: string, value: unknown, min: number, max = Number.POSITIVE_INFINITY): void {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value > max) {
    const range = max === Number.POSITIVE_INFINITY ? `a finite number ≥ ${min}` : `a number from ${min} to ${max}`;
    throw invalidOptions(`Option ${name} must be ${range}, got ${String(value)}`);
  }
}

function requireInteger(name: string, value: unknown, min: number): void {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min) {
    throw invalidOptions(`Option ${name} must be an integer ≥ ${min}, got ${String(value)}`);
  }
}

/** Throws `invalid_options` unless `policy` is 'ask', 'allow', 'deny' or a function. */
function requirePermissionPolicy(policy: unknown): void {
  if (typeof policy === 'function' || policy === 'ask' || policy === 'allow' || policy === 'deny') return;
  throw invalidOptions(`Option permissions must be 'ask', 'allow', 'deny' or a function, got ${String(policy)}`);
}

/** Throws `invalid_options` unless `policy` is 'none', 'cancel' or 'restart'. */
function requireStallPolicy(policy: unknown): void {
  if (policy === 'none' || policy === 'cancel' || policy === 'restart') return;
  throw invalidOptions(`Option onStall must be 'none', 'cancel' or 'restart', got ${String(policy)}`);
}

/** A session's settings from its options over the supervisor's defaults; throws `invalid_options`. */
export function resolveSessionOptions(options: SessionOptions, defaults: RuntimeSettings['sessions']): SessionSettings {
  if (options.permissions !== undefined) requirePermissionPolicy(options.permissions);
  if (options.onStall !== undefined) requireStallPolicy(options.onStall);
  if (options.stallTimeoutMs !== undefined) requireNumber('stallTimeoutMs', options.stallTimeoutMs, 0);
  return {
    cwd: resolve(options.cwd ?? process.cwd()),
    roots: (options.additionalRoots ?? []).map((root) => resolve(root)),
    mcpServers: options.mcpServers ?? [],
    permissions: options.permissions ?? defaults.permissions,
    stallTimeoutMs: options.stallTimeoutMs ?? defaults.stallTimeoutMs,
    onStall: options.onStall ?? defaults.onStall,
    ...(options.onUpdate ? { onUpdate: options.onUpdate } : {}),
  };
}
