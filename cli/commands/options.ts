/** Options several commands share. */
import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import { InvalidArgumentError, Option, type Command } from 'commander';
import { CliError } from '../cli-error.js';
import { ExitCode } from '../exit-codes.js';
import { loadLibrary } from '../library.js';
import { outputFormats, type OutputFormat } from '../output.js';

/** `--format text|json|quiet` (default text). */
export function formatOption(): Option {
  return new Option('--format <format>', 'output format').choices(outputFormats).default('text' satisfies OutputFormat);
}

/** `--format` as a command's options carry it. */
export interface FormatOptions {
  format: OutputFormat;
}

/**
 * The global `--json` (before or after the command's name): `--format json` for the command
 * about to run. Every command that prints takes `--format`; one given as something else on the
 * same line is a usage error rather than a silent pick.
 */
export function applyJsonFlag(action: Command): void {
  if (action.optsWithGlobals<{ json?: boolean }>().json !== true) return;
  if (!action.options.some((option) => option.attributeName() === 'format')) return; // prints nothing (none today)
  const given = action.getOptionValue('format') as OutputFormat;
  if (action.getOptionValueSource('format') === 'cli' && given !== 'json') {
    throw new CliError(`--json and --format ${given} say different things: give one of them`, ExitCode.usage);
  }
  action.setOptionValueWithSource('format', 'json', 'cli');
}

/** How the daemon's session answers its agent's permission requests (`POST /v1/sessions`, `POST /v1/prompt`). */
export type PermissionsPolicy = 'ask' | 'allow' | 'deny' | 'allow-reads';

/** The permission flags of `prompt` and `sessions new`. */
export interface PermissionFlags {
  approveReads?: boolean;
  approveAll?: boolean;
  denyAll?: boolean;
}

/** Adds `--approve-reads`, `--approve-all` and `--deny-all` (at most one of them) to `command`. */
export function withPermissionOptions(command: Command, readsHelp = 'allow the read-only tool calls (kinds read, search, fetch, think); the others wait for an answer'): Command {
  return command
    .addOption(new Option('--approve-reads', readsHelp).conflicts(['approveAll', 'denyAll']))
    .addOption(new Option('--approve-all', 'allow every permission request').conflicts('denyAll'))
    .addOption(new Option('--deny-all', 'deny every permission request'));
}

/** The session's `permissions` policy the flags ask for; undefined with none (the daemon's default: ask). */
export function permissionsPolicy(flags: PermissionFlags): PermissionsPolicy | undefined {
  if (flags.approveAll) return 'allow';
  if (flags.denyAll) return 'deny';
  if (flags.approveReads) return 'allow-reads';
  return undefined;
}

/** A repeatable option's values, in order (`--file a --file b`). */
export function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

/** A whole number option's parser: a usage error (exit 2) unless the value is one, at least `min` and at most `max`. */
export function integerOption(name: string, min = 0, max = Number.MAX_SAFE_INTEGER) {
  const range = max < Number.MAX_SAFE_INTEGER ? ` from ${min} to ${max}` : min > 0 ? ` of at least ${min}` : '';
  return (value: string): number => {
    const number = Number(value);
    if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(number) || number < min || number > max) {
      throw new InvalidArgumentError(`${name} must be a whole number${range} (got "${value}")`);
    }
    return number;
  };
}

/** The largest TCP port. */
export const maxPort = 65_535;

/**
 * The session's working directory, absolute: `--cwd` (against the current directory), else the
 * current directory. A `--cwd` that is not an existing directory is refused with the library's
 * own check, `existingDirectory()` (`invalid_options` naming the path, exit 2): `run` checks it
 * before the agent starts, `prompt` before it asks a daemon (or starts one). A directory is
 * let through without loading the library, so `prompt` stays quick.
 */
export async function sessionCwd(given: string | undefined, what = 'Option --cwd'): Promise<string> {
  const absolute = resolve(given ?? process.cwd());
  if (given === undefined) return absolute;
  try {
    if (statSync(absolute).isDirectory()) return absolute;
  } catch {
    // told below, in the library's words
  }
  const { existingDirectory } = await loadLibrary();
  return existingDirectory(absolute, what); // named as the CLI sends it: absolute
}
