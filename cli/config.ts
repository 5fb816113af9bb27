/**
 * The config file (docs/cli.md): where it is found, its shape (checked with zod, every
 * problem named by file and field), the agents it defines over the built-in presets, the
 * supervisor options it sets, and the state directory.
 */
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { z } from 'zod';
import { ORPHAN_POLICIES } from '../daemon/daemon-types.js';
import type { AgentSpec, SupervisorOptions } from '../index.js';
import { CliError } from './cli-error.js';
import { ExitCode } from './exit-codes.js';
import { isAgentError, loadLibrary } from './library.js';

/** The presets every config has, by the name a config (or the command line) uses, and the library's preset each one is. */
export const builtinPresets = {
  claude: 'claudeCode',
  'claude-stream-json': 'claudeCodeStreamJson',
  codex: 'codex',
  gemini: 'gemini',
  echo: 'echo',
} as const;

export type PresetName = keyof typeof builtinPresets;
export const presetNames = Object.keys(builtinPresets) as [PresetName, ...PresetName[]];

const millis = z.number().min(0);
const retentionRule = z.strictObject({ maxCount: z.number().int().min(0).optional(), maxAgeMs: millis.optional(), maxBytes: z.number().int().min(0).optional() });

/**
 * One agent: a preset with overrides (`{ "preset": "codex", "env": {...} }`), or a spec of
 * its own (`{ "command": "...", "args": [...] }`). Only the shape is checked here; the
 * library checks every field of the spec when the agent is registered.
 */
const agentEntrySchema = z
  .looseObject({
    preset: z.enum(presetNames).optional(),
    command: z.string().min(1).optional(),
  })
  .refine((entry) => entry.preset !== undefined || entry.command !== undefined, { message: `needs "preset" (one of ${presetNames.join(', ')}) or "command"` });

/** The config file's shape. Unknown top-level fields are refused (a typo is not silently ignored). */
export const configSchema = z.strictObject({
  $schema: z.string().optional(),
  agents: z.record(z.string().min(1), agentEntrySchema).optional(),
  stateDir: z.string().min(1).optional(),
  maxAgents: z.number().int().min(1).optional(),
  restart: z.looseObject({}).optional(),
  handshakeTimeoutMs: millis.optional(),
  shutdownTimeoutMs: millis.optional(),
  killTimeoutMs: millis.optional(),
  store: z.enum(['sqlite', 'memory']).optional(),
  retention: z.strictObject({ sessions: retentionRule.optional(), transcript: retentionRule.optional(), stderr: retentionRule.optional(), events: retentionRule.optional() }).optional(),
  /** What `serve` does at start with a crashed supervisor's leftovers (`serve --orphans` overrides it). */
  orphans: z.enum(ORPHAN_POLICIES).optional(),
  /** Whether `serve` starts again what the last daemon ran (default true; `serve --no-restore` overrides it). */
  restore: z.boolean().optional(),
});

export type ConfigFile = z.output<typeof configSchema>;

/** A loaded config: what the file says (nothing when there is none) and where it is. */
export interface Config {
  path: string | null;
  file: ConfigFile;
}

/** Where the config was asked for. */
export interface ConfigLookup {
  /** `--config FILE`. */
  flag?: string | undefined;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
}

/**
 * The config file to read: `--config`, else `$AGENTVISOR_CONFIG`, else
 * `./agentvisor.config.json`, else `$XDG_CONFIG_HOME/agentvisor/config.json` (default
 * `~/.config`); null when none exists. A file named by the flag or the variable must exist.
 */
export function findConfigFile({ flag, env = process.env, cwd = process.cwd() }: ConfigLookup = {}): string | null {
  for (const [named, by] of [
    [flag, '--config'],
    [env.AGENTVISOR_CONFIG, '$AGENTVISOR_CONFIG'],
  ] as const) {
    if (named === undefined || named === '') continue;
    const path = resolve(cwd, named);
    if (!existsSync(path)) throw new CliError(`Config file ${path} (from ${by}) does not exist`, ExitCode.usage);
    return path;
  }
  const local = join(cwd, 'agentvisor.config.json');
  if (existsSync(local)) return local;
  const configHome = env.XDG_CONFIG_HOME || join(homedir(), '.config');
  const user = join(configHome, 'agentvisor', 'config.json');
  return existsSync(user) ? user : null;
}

/** Reads and checks the config file found by {@link findConfigFile}; throws a usage error naming the file and field. */
export function loadConfig(lookup: ConfigLookup = {}): Config {
  const path = findConfigFile(lookup);
  if (path === null) return { path: null, file: {} };
  return { path, file: parseConfig(readConfigText(path), path) };
}

function readConfigText(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    throw new CliError(`Could not read config file ${path}: ${(error as Error).message}`, ExitCode.usage);
  }
}

/** Parses a config file's text; `path` names it in every message, and anchors its relative paths. */
export function parseConfig(text: string, path: string): ConfigFile {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new CliError(`Config file ${path} is not valid JSON: ${(error as Error).message}`, ExitCode.usage);
  }
  const result = configSchema.safeParse(json);
  if (!result.success) {
    const problems = result.error.issues.map((issue) => `  ${describeIssue(issue)}`);
    throw new CliError(`Invalid config file ${path}:\n${problems.join('\n')}`, ExitCode.usage);
  }
  return anchorPaths(result.data, dirname(path));
}

/** One zod issue as `field: what is wrong`. */
function describeIssue(issue: z.core.$ZodIssue): string {
  const field = issue.path.map(String).join('.');
  const at = (message: string, path = field) => (path ? `${path}: ${message}` : message);
  switch (issue.code) {
    case 'unrecognized_keys':
      return issue.keys.map((key) => at('is not a known field', field ? `${field}.${key}` : key)).join('; ');
    case 'invalid_value':
      return at(`must be one of ${issue.values.map((value) => JSON.stringify(value)).join(', ')}`);
    case 'invalid_type':
      return at(`must be ${issue.expected === 'object' ? 'an object' : `a ${issue.expected}`}`);
    default:
      return at(issue.message);
  }
}

/** `stateDir`, agents' `cwd` and a command path with a slash are relative to the config file's folder. */
function anchorPaths(file: ConfigFile, base: string): ConfigFile {
  const anchor = (value: unknown) => (typeof value === 'string' && value !== '' && !isAbsolute(value) ? resolve(base, value) : value);
  const agents = Object.fromEntries(
    Object.entries(file.agents ?? {}).map(([name, entry]) => {
      const anchored: Record<string, unknown> = { ...entry };
      if (entry.cwd !== undefined) anchored.cwd = anchor(entry.cwd);
      if (typeof entry.command === 'string' && entry.command.includes('/')) anchored.command = anchor(entry.command);
      return [name, anchored as typeof entry];
    }),
  );
  return { ...file, ...(file.stateDir === undefined ? {} : { stateDir: anchor(file.stateDir) as string }), ...(file.agents ? { agents } : {}) };
}

/** Every agent name the config knows: the presets, then the config's own. */
export function agentNames(config: Config): string[] {
  return [...new Set([...presetNames, ...Object.keys(config.file.agents ?? {})])];
}

/**
 * The spec of one agent: the config's entry of that name (a preset with its overrides, or
 * its own spec), else the built-in preset; undefined for a name neither knows. The spec is
 * checked by the library when it is registered.
 */
export async function agentSpec(config: Config, name: string): Promise<AgentSpec | undefined> {
  const entry = config.file.agents?.[name];
  if (entry === undefined && !isPresetName(name)) return undefined;
  const { presets } = await loadLibrary();
  if (entry === undefined) return presets[builtinPresets[name as PresetName]]();
  const { preset, ...overrides } = entry;
  return preset === undefined ? (overrides as AgentSpec) : presets[builtinPresets[preset]](overrides as Partial<AgentSpec>);
}

/** Whether the config knows an agent of that name (its own, or a preset). */
export function knowsAgent(config: Config, name: string): boolean {
  return config.file.agents?.[name] !== undefined || isPresetName(name);
}

function isPresetName(name: string): name is PresetName {
  return Object.hasOwn(builtinPresets, name);
}

/** The specs of every agent the config knows. */
export async function agentSpecs(config: Config): Promise<Record<string, AgentSpec>> {
  const specs: Record<string, AgentSpec> = {};
  for (const name of agentNames(config)) specs[name] = (await agentSpec(config, name))!;
  return specs;
}

/** The supervisor options the config sets (not agents, not the state directory). */
export function supervisorOptions(config: Config): SupervisorOptions {
  const { maxAgents, restart, handshakeTimeoutMs, shutdownTimeoutMs, killTimeoutMs, store, retention } = config.file;
  const options: SupervisorOptions = { maxAgents, restart, handshakeTimeoutMs, shutdownTimeoutMs, killTimeoutMs, store, retention };
  return Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined)) as SupervisorOptions;
}

/**
 * The state directory: `--state-dir`, else the config's `stateDir`, else
 * `$AGENTVISOR_STATE_DIR`, else the tools' own (see {@link toolStateDir}; a program that embeds
 * the library gets a directory of its own instead).
 */
export function resolveStateDir(flag: string | undefined, config: Config, env: NodeJS.ProcessEnv = process.env): string {
  if (flag) return resolve(flag);
  if (config.file.stateDir) return config.file.stateDir;
  if (env.AGENTVISOR_STATE_DIR) return resolve(env.AGENTVISOR_STATE_DIR);
  return toolStateDir(env);
}

/**
 * The library's `toolStateDir()` — `$XDG_STATE_HOME/agentvisor`, else
 * `~/.local/state/agentvisor`, the directory the CLI and the daemon share — computed here so
 * that the commands that only talk to a daemon need not load the library to find it
 * (tests/unit/cli-config.test.ts checks that the two agree).
 */
export function toolStateDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(env.XDG_STATE_HOME || join(homedir(), '.local', 'state'), 'agentvisor');
}

/**
 * A spec or option the library refused (`invalid_options`, from `createSupervisor` or
 * `startDaemon`) as a usage error naming the config file; any other error is returned as it is.
 */
export function asConfigError(config: Config, error: unknown): unknown {
  if (!isAgentError(error) || error.kind !== 'invalid_options') return error;
  const message = error.message.replace(/^Option options\./, '');
  return new CliError(config.path ? `Invalid config file ${config.path}: ${message}` : message, ExitCode.usage);
}
