/** Options several commands share. */
import { InvalidArgumentError, Option } from 'commander';
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
