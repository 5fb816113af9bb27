/** How to launch one agent: plain data, validated by {@link validateAgentSpec}. */
import { invalidOptions } from './errors.js';

/**
 * An agent spec.
 *
 * @example
 * const codex: AgentSpec = { command: 'codex-acp', displayName: 'Codex', env: { RUST_LOG: 'warn' } };
 */
export interface AgentSpec {
  /** Program to run (looked up on PATH unless it contains a slash). */
  command: string;
  args?: string[];
  /** Variables merged over the parent's environment. Never copied into machine context. */
  env?: Record<string, string>;
  /** Working directory of the process; the parent's by default. */
  cwd?: string;
  /** Name used in messages ("Could not connect to {displayName}"); the agent's key by default. */
  displayName?: string;
  /** How to install `command`, carried by a `not_installed` error (presets set it). */
  installHint?: string;
}

/** Throws `AgentError` kind `invalid_options` unless `spec` is a usable agent spec. */
export function validateAgentSpec(name: string, spec: unknown): AgentSpec {
  const fail = (why: string): never => {
    throw invalidOptions(`Invalid spec for agent "${name}": ${why}`, name);
  };
  if (typeof name !== 'string' || name.length === 0) throw invalidOptions('An agent name must be a non-empty string');
  if (spec === null || typeof spec !== 'object') return fail('expected an object with a command');
  const candidate = spec as Record<string, unknown>;
  if (typeof candidate.command !== 'string' || candidate.command.trim() === '') fail('command must be a non-empty string');
  if (candidate.args !== undefined && !(Array.isArray(candidate.args) && candidate.args.every((a) => typeof a === 'string'))) fail('args must be an array of strings');
  if (candidate.env !== undefined) {
    if (candidate.env === null || typeof candidate.env !== 'object') fail('env must be an object of strings');
    for (const [key, value] of Object.entries(candidate.env as object)) if (typeof value !== 'string') fail(`env.${key} must be a string`);
  }
  for (const field of ['cwd', 'displayName', 'installHint'] as const) {
    if (candidate[field] !== undefined && typeof candidate[field] !== 'string') fail(`${field} must be a string`);
  }
  return candidate as unknown as AgentSpec;
}
