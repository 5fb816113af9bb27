/** The options of `createSupervisor`, their defaults and their validation. */
import type { ActorOptions, AnyActorLogic, InspectionEvent, Observer } from 'xstate';

/** XState's clock interface (setTimeout/clearTimeout), as `createActor` takes it. */
export type Clock = NonNullable<ActorOptions<AnyActorLogic>['clock']>;
import type { AgentTimings } from '../machines/agent-events.js';
import { defaultRestartPolicy, type RestartPolicy } from '../machines/policies/backoff.policy.js';
import type { AgentSpec } from '../services/agent-spec.js';
import { AgentError } from '../services/errors.js';
import type { StallPolicy } from '../machines/session-events.js';
import type { PermissionPolicy } from './permissions.js';

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

export interface ResolvedOptions {
  maxAgents: number;
  timings: AgentTimings;
  stderrLines: number;
  sessions: SessionDefaults;
}

export interface SessionDefaults {
  permissions: PermissionPolicy;
  permissionTimeoutMs: number;
  stallTimeoutMs: number;
  onStall: StallPolicy;
  capabilities: { fs: boolean; terminal: boolean };
  terminalOutputByteLimit: number;
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
export function resolveOptions(options: SupervisorOptions): ResolvedOptions {
  const restart: RestartPolicy = { ...defaultRestartPolicy, ...stripUndefined(options.restart ?? {}) };
  const resolved: ResolvedOptions = {
    maxAgents: options.maxAgents ?? defaultOptions.maxAgents,
    stderrLines: options.stderrLines ?? defaultOptions.stderrLines,
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
  };
  requirePermissionPolicy(resolved.sessions.permissions);
  requireStallPolicy(resolved.sessions.onStall);
  requireInteger('terminalOutputByteLimit', resolved.sessions.terminalOutputByteLimit, 1);
  requireInteger('maxAgents', resolved.maxAgents, 1);
  requireInteger('stderrLines', resolved.stderrLines, 0);
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

function stripUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}

function requireNumber(name: string, value: unknown, min: number, max = Number.POSITIVE_INFINITY): void {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value > max) {
    const range = max === Number.POSITIVE_INFINITY ? `a finite number ≥ ${min}` : `a number from ${min} to ${max}`;
    throw new AgentError('invalid_options', `Option ${name} must be ${range}, got ${String(value)}`);
  }
}

function requireInteger(name: string, value: unknown, min: number): void {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min) {
    throw new AgentError('invalid_options', `Option ${name} must be an integer ≥ ${min}, got ${String(value)}`);
  }
}

/** Throws `invalid_options` unless `policy` is 'ask', 'allow', 'deny' or a function. */
export function requirePermissionPolicy(policy: unknown): void {
  if (typeof policy === 'function' || policy === 'ask' || policy === 'allow' || policy === 'deny') return;
  throw new AgentError('invalid_options', `Option permissions must be 'ask', 'allow', 'deny' or a function, got ${String(policy)}`);
}

/** Throws `invalid_options` unless `policy` is 'none', 'cancel' or 'restart'. */
export function requireStallPolicy(policy: unknown): void {
  if (policy === 'none' || policy === 'cancel' || policy === 'restart') return;
  throw new AgentError('invalid_options', `Option onStall must be 'none', 'cancel' or 'restart', got ${String(policy)}`);
}
