/**
 * shellQuote: the exact words it makes, and that /bin/sh reads each back byte for byte,
 * for hostile values and for arbitrary strings (fast-check).
 */
import { execFileSync } from 'node:child_process';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { shellJoin, shellQuote } from '../../services/runtimes/shell-quote.js';

/** What /bin/sh makes of a command line `printf '%s\0' <words>`: the words it saw. */
function wordsSeenBySh(line: string): string[] {
  const out = execFileSync('/bin/sh', ['-c', `printf '%s\\0' ${line}`], { encoding: 'utf8' });
  return out.split('\0').slice(0, -1);
}

describe('shellQuote', () => {
  it('leaves plain words alone and quotes everything else', () => {
    expect(shellQuote('codex-acp')).toBe('codex-acp');
    expect(shellQuote('/usr/bin/node')).toBe('/usr/bin/node');
    expect(shellQuote('--flag')).toBe('--flag');
    expect(shellQuote('a@b:c,d%e+f')).toBe('a@b:c,d%e+f');
    expect(shellQuote('')).toBe("''");
    expect(shellQuote('a b')).toBe("'a b'");
    expect(shellQuote("it's")).toBe("'it'\\''s'");
    expect(shellQuote('A=B')).toBe("'A=B'"); // a first word A=B would be an assignment
    expect(shellQuote('~')).toBe("'~'"); // a leading ~ would expand
    expect(shellQuote('$HOME')).toBe("'$HOME'");
  });

  it('refuses a NUL byte (no program can receive one)', () => {
    expect(() => shellQuote('a\0b')).toThrow(TypeError);
  });

  it('hostile values come back from /bin/sh exactly', () => {
    const hostile = ["'; rm -rf / #", '$(id)', '`id`', 'a\nb', '"', '\\', "'", "''", '*', '?', '[a]', '{a,b}', '~root'];
    hostile.push('-e', 'a\tb', '!', '#', '&&', '|', ';', '\r', ' ', 'é中🙂', 'A=B');
    expect(wordsSeenBySh(shellJoin(hostile))).toEqual(hostile);
  });

  it('an assignment-looking first word is run as a command, not assigned', () => {
    expect(execFileSync('/bin/sh', ['-c', `${shellJoin(['A=B'])} 2>&1 || true`], { encoding: 'utf8' })).toMatch(/A=B: not found/);
  });

  // 60 shells: a second here, but more than the default timeout on a machine busy with the
  // rest of the suite (a container image being imported beside it, on a fresh clone).
  it('any string without NUL round-trips through /bin/sh (fast-check)', { timeout: 120_000 }, () => {
    fc.assert(
      fc.property(fc.array(fc.string({ unit: 'binary', maxLength: 20 }).filter((value) => !value.includes('\0')), { minLength: 1, maxLength: 4 }), (values) => {
        expect(wordsSeenBySh(shellJoin(values))).toEqual(values);
      }),
      { numRuns: 60 },
    );
  });
});
