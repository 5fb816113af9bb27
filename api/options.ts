/** The options of `createSupervisor`, their defaults and their validation. */
import type { ActorOptions, AnyActorLogic, InspectionEvent, Observer } from 'xstate';

/** XState's clock interface (setTimeout/clearTimeout), as `createActor` takes it. */
export type Clock = NonNullable<ActorOptions<AnyActorLogic>['clock']>;
import type { AgentTimings } from '../machines/agent-events.js';
import { defaultRestartPolicy, type RestartPolicy } from '../machines/policies/backoff.policy.js';
import type { AgentSpec } from '../services/agent-spec.js';
import { AgentError } from '../services/errors.js';

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
  /** XState clock for every delay (a SimulatedClock in tests). */
  clock?: Clock;
  /** XState inspection, passed to every actor. */
  inspect?: InspectOption;
}

export interface ResolvedOptions {
  maxAgents: number;
  timings: AgentTimings;
  stderrLines: number;
}

export const defaultOptions = Object.freeze({
  maxAgents: 8,
  handshakeTimeoutMs: 30_000,
  shutdownTimeoutMs: 5_000,
  killTimeoutMs: 2_000,
  stderrLines: 20,
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
  };
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
