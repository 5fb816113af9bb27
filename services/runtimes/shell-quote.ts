/**
 * Quoting one value for a POSIX shell (sh, dash, bash, busybox ash): the value comes back as
 * exactly one word, byte for byte, whatever it holds ($, `, \, quotes, newlines, globs, a
 * leading dash). For a command line a shell parses (ssh's remote command); the container
 * runtimes pass argv arrays and need none.
 */

/**
 * Characters that never need quoting in any position of a word. Not `=`: a first word `A=B`
 * would be an assignment, not a command; not `~`: a leading one expands.
 */
const plain = /^[A-Za-z0-9_@%+:,./-]+$/;

/**
 * `value` as one shell word: unchanged when it holds only safe characters, else between single
 * quotes, each `'` written as `'\''`. The empty string is `''`. A NUL byte cannot be passed
 * to a program at all: it throws.
 */
export function shellQuote(value: string): string {
  if (value.includes('\0')) throw new TypeError('A shell word cannot contain a NUL byte');
  if (value === '') return "''";
  if (plain.test(value)) return value;
  return `'${value.replace(/'/g, "'\\''")}'`;
}

/** Every value quoted, joined by spaces: a command line for a shell. */
export function shellJoin(values: readonly string[]): string {
  return values.map(shellQuote).join(' ');
}
