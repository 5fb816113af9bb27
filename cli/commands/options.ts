/** Options several commands share. */
import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import { InvalidArgumentError, Option } from 'commander';
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
export async function sessionCwd(given: string | undefined): Promise<string> {
  const absolute = resolve(given ?? process.cwd());
  if (given === undefined) return absolute;
  try {
    if (statSync(absolute).isDirectory()) return absolute;
  } catch {
    // told below, in the library's words
  }
  const { existingDirectory } = await loadLibrary();
  return existingDirectory(absolute, 'Option --cwd'); // named as the CLI sends it: absolute
}
