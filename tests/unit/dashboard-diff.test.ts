/**
 * The dashboard's line diff without a browser (dashboard/diff.js): the lines of a tool call's
 * `diff` content, old → new, every line once and the edits the fewest (checked against the
 * longest common subsequence on many generated pairs), the hunks around the changes with the
 * unchanged runs folded, and the fallback past the edit bound.
 */
import { describe, expect, it } from 'vitest';
import { MAX_EDITS, diffHunks, diffStats, lineDiff, splitLines, type DiffLine } from '../../dashboard/diff.js';

/** The diff as `-a`, `+b`, ` c` lines. */
const signs = (lines: DiffLine[]) => lines.map((line) => `${{ same: ' ', add: '+', del: '-' }[line.op]}${line.text}`);

/** The length of the longest common subsequence of a and b. */
function lcs(a: string[], b: string[]): number {
  const table = Array.from({ length: a.length + 1 }, () => new Array<number>(b.length + 1).fill(0));
  for (let i = 1; i <= a.length; i += 1) {
    for (let j = 1; j <= b.length; j += 1) table[i]![j] = a[i - 1] === b[j - 1] ? table[i - 1]![j - 1]! + 1 : Math.max(table[i - 1]![j]!, table[i]![j - 1]!);
  }
  return table[a.length]![b.length]!;
}

/** A small deterministic generator (the pairs are the same on every run). */
function generator(seed: number) {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    return state / 2 ** 31;
  };
}

describe('splitLines', () => {
  it('a final newline ends the last line; no text has no line; CRLF counts as a newline', () => {
    expect(splitLines('a\nb\n')).toEqual(['a', 'b']);
    expect(splitLines('a\nb')).toEqual(['a', 'b']);
    expect(splitLines('a\r\nb\r\n')).toEqual(['a', 'b']);
    expect(splitLines('a\n\n')).toEqual(['a', '']);
    expect([splitLines(''), splitLines(null), splitLines(undefined)]).toEqual([[], [], []]);
  });
});

describe('lineDiff', () => {
  it('a changed line between unchanged ones: removed, then added, with both numbers', () => {
    expect(lineDiff('a\nb\nc\n', 'a\nx\nc\n')).toEqual([
      { op: 'same', text: 'a', oldLine: 1, newLine: 1 },
      { op: 'del', text: 'b', oldLine: 2, newLine: null },
      { op: 'add', text: 'x', oldLine: null, newLine: 2 },
      { op: 'same', text: 'c', oldLine: 3, newLine: 3 },
    ]);
  });

  it('a new file (no old text) is every line added; a file emptied is every line removed; the same text is all unchanged', () => {
    expect(signs(lineDiff(null, 'one\ntwo\n'))).toEqual(['+one', '+two']);
    expect(signs(lineDiff('one\ntwo\n', ''))).toEqual(['-one', '-two']);
    expect(signs(lineDiff('same\n', 'same\n'))).toEqual([' same']);
  });

  it('finds the shortest edit script (the classic example: five edits)', () => {
    const diff = lineDiff('a\nb\nc\na\nb\nb\na\n', 'c\nb\na\nb\na\nc\n');
    expect(diff.filter((line) => line.op !== 'same')).toHaveLength(5);
  });

  it('on generated pairs: every old line and every new line once, in order, with the fewest edits', () => {
    const random = generator(7);
    const text = () => Array.from({ length: Math.floor(random() * 14) }, () => 'abcd'[Math.floor(random() * 4)]!);
    for (let round = 0; round < 400; round += 1) {
      const [before, after] = [text(), text()];
      const diff = lineDiff(before.join('\n'), after.join('\n'));
      expect(diff.filter((line) => line.op !== 'add').map((line) => line.text)).toEqual(before);
      expect(diff.filter((line) => line.op !== 'del').map((line) => line.text)).toEqual(after);
      expect(diff.filter((line) => line.op !== 'same')).toHaveLength(before.length + after.length - 2 * lcs(before, after));
    }
  });

  it(`past ${MAX_EDITS} edits shows the changed middle replaced whole: still every line once, the common head and tail kept`, () => {
    const before = ['head', ...Array.from({ length: 1500 }, (_, index) => `old ${index}`), 'tail'];
    const after = ['head', ...Array.from({ length: 1500 }, (_, index) => `new ${index}`), 'tail'];
    const diff = lineDiff(before.join('\n'), after.join('\n'));
    expect(diff[0]).toEqual({ op: 'same', text: 'head', oldLine: 1, newLine: 1 });
    expect(diff.at(-1)).toEqual({ op: 'same', text: 'tail', oldLine: 1502, newLine: 1502 });
    expect(diff.slice(1, 1501).every((line) => line.op === 'del')).toBe(true);
    expect(diff.slice(1501, 3001).every((line) => line.op === 'add')).toBe(true);
    expect(diffStats(diff)).toEqual({ added: 1500, removed: 1500 });
  });
});

describe('diffHunks', () => {
  const lines = Array.from({ length: 20 }, (_, index) => `line ${index + 1}`);

  it('shows each change with three lines of context, the unchanged runs before, between and after folded', () => {
    const after = [...lines];
    after[4] = 'changed 5';
    after[15] = 'changed 16';
    const hunks = diffHunks(lineDiff(lines.join('\n'), after.join('\n')));
    expect(hunks.map((hunk) => (hunk.type === 'gap' ? hunk.count : signs(hunk.lines)))).toEqual([
      1,
      [' line 2', ' line 3', ' line 4', '-line 5', '+changed 5', ' line 6', ' line 7', ' line 8'],
      4,
      [' line 13', ' line 14', ' line 15', '-line 16', '+changed 16', ' line 17', ' line 18', ' line 19'],
      1,
    ]);
  });

  it('changes closer than twice the context share one hunk; the context is a parameter; no change is no hunk', () => {
    const after = [...lines];
    after[4] = 'x';
    after[9] = 'y';
    expect(diffHunks(lineDiff(lines.join('\n'), after.join('\n'))).filter((hunk) => hunk.type === 'lines')).toHaveLength(1);
    expect(diffHunks(lineDiff(lines.join('\n'), after.join('\n')), 1).filter((hunk) => hunk.type === 'lines')).toHaveLength(2);
    expect(diffHunks(lineDiff('a\n', 'a\n'))).toEqual([]);
  });
});
