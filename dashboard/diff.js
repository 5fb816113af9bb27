// @ts-check
/**
 * A line diff of a tool call's `diff` content (`oldText` → `newText`), and its hunks: the
 * changed lines with a few lines of context around them, the unchanged runs between folded
 * into a count. Pure (tests/unit/dashboard-diff.test.ts).
 *
 * The edit script is Myers' O(ND) shortest one, after the common head and tail are set
 * aside. Past {@link MAX_EDITS} edits it is not searched further: the rest is shown as its
 * old lines removed and its new lines added — still a true diff, only not the shortest.
 */

/** Edits searched for at most; past them the middle is shown replaced whole. */
export const MAX_EDITS = 2000;

/** Unchanged lines shown around a change. */
export const CONTEXT_LINES = 3;

/**
 * One line of a diff: `same` (in both), `del` (only in the old text), `add` (only in the new);
 * its number in the old text and in the new (1-based; null where it is not in that text).
 * @typedef {{ op: 'same' | 'del' | 'add', text: string, oldLine: number | null, newLine: number | null }} DiffLine
 */

/**
 * What is shown of a diff: runs of lines, and between them the unchanged lines left out.
 * @typedef {{ type: 'lines', lines: DiffLine[] } | { type: 'gap', count: number }} DiffHunk
 */

/**
 * A text's lines. A final newline ends the last line (it does not begin an empty one); no
 * text (a new file's `oldText`) has none.
 * @param {string | null | undefined} text
 * @returns {string[]}
 */
export function splitLines(text) {
  if (!text) return [];
  const lines = text.split(/\r?\n/);
  if (lines.at(-1) === '') lines.pop();
  return lines;
}

/**
 * The lines of `oldText` → `newText`, in order: every line of both texts once, unchanged ones
 * as `same`.
 * @param {string | null | undefined} oldText
 * @param {string | null | undefined} newText
 * @returns {DiffLine[]}
 */
export function lineDiff(oldText, newText) {
  const before = splitLines(oldText);
  const after = splitLines(newText);
  let head = 0;
  while (head < before.length && head < after.length && before[head] === after[head]) head += 1;
  let endBefore = before.length;
  let endAfter = after.length;
  while (endBefore > head && endAfter > head && before[endBefore - 1] === after[endAfter - 1]) {
    endBefore -= 1;
    endAfter -= 1;
  }
  const a = before.slice(head, endBefore);
  const b = after.slice(head, endAfter);
  const middle = editScript(a, b) ?? [...a.map((text) => ({ op: /** @type {const} */ ('del'), text })), ...b.map((text) => ({ op: /** @type {const} */ ('add'), text }))];
  /** @type {Array<{ op: DiffLine['op'], text: string }>} */
  const ops = [...before.slice(0, head).map((text) => ({ op: /** @type {const} */ ('same'), text })), ...middle, ...before.slice(endBefore).map((text) => ({ op: /** @type {const} */ ('same'), text }))];
  let oldLine = 0;
  let newLine = 0;
  return ops.map(({ op, text }) => {
    if (op !== 'add') oldLine += 1;
    if (op !== 'del') newLine += 1;
    return { op, text, oldLine: op === 'add' ? null : oldLine, newLine: op === 'del' ? null : newLine };
  });
}

/**
 * Myers' shortest edit script of `a` → `b`; null when it needs more than `maxEdits` edits.
 * @param {string[]} a
 * @param {string[]} b
 * @param {number} [maxEdits]
 * @returns {Array<{ op: DiffLine['op'], text: string }> | null}
 */
function editScript(a, b, maxEdits = MAX_EDITS) {
  const n = a.length;
  const m = b.length;
  const limit = Math.min(n + m, maxEdits);
  const offset = limit + 1;
  // furthest[offset + k]: the furthest x reached on diagonal k (y = x - k) with the edits so far.
  const furthest = new Int32Array(2 * limit + 3);
  const reach = (/** @type {number} */ k) => furthest[offset + k] ?? 0;
  /** `furthest` before each step d, for the diagonals -d-1..d+1 (what the way back reads). @type {Int32Array[]} */
  const trace = [];
  for (let d = 0; d <= limit; d += 1) {
    trace.push(furthest.slice(offset - d - 1, offset + d + 2));
    for (let k = -d; k <= d; k += 2) {
      let x = k === -d || (k !== d && reach(k - 1) < reach(k + 1)) ? reach(k + 1) : reach(k - 1) + 1;
      let y = x - k;
      while (x < n && y < m && a[x] === b[y]) {
        x += 1;
        y += 1;
      }
      furthest[offset + k] = x;
      if (x >= n && y >= m) return backtrack(a, b, trace, d);
    }
  }
  return null;
}

/**
 * The edits found, walked back from the end of both texts.
 * @param {string[]} a
 * @param {string[]} b
 * @param {Int32Array[]} trace
 * @param {number} edits
 */
function backtrack(a, b, trace, edits) {
  /** @type {Array<{ op: DiffLine['op'], text: string }>} */
  const ops = [];
  const line = (/** @type {string[]} */ lines, /** @type {number} */ index) => lines[index] ?? '';
  let x = a.length;
  let y = b.length;
  for (let d = edits; d > 0; d -= 1) {
    const row = trace[d] ?? new Int32Array(0);
    const reach = (/** @type {number} */ k) => row[k + d + 1] ?? 0;
    const k = x - y;
    const previousK = k === -d || (k !== d && reach(k - 1) < reach(k + 1)) ? k + 1 : k - 1;
    const previousX = reach(previousK);
    const previousY = previousX - previousK;
    while (x > previousX && y > previousY) {
      ops.push({ op: 'same', text: line(a, x - 1) });
      x -= 1;
      y -= 1;
    }
    if (x === previousX) {
      ops.push({ op: 'add', text: line(b, y - 1) });
      y -= 1;
    } else {
      ops.push({ op: 'del', text: line(a, x - 1) });
      x -= 1;
    }
  }
  while (x > 0 && y > 0) {
    ops.push({ op: 'same', text: line(a, x - 1) });
    x -= 1;
    y -= 1;
  }
  return ops.reverse();
}

/**
 * The hunks to show: every changed line with `context` unchanged lines either side; the
 * unchanged runs between (and before and after) folded into gaps. No change: no hunk.
 * @param {DiffLine[]} lines
 * @param {number} [context]
 * @returns {DiffHunk[]}
 */
export function diffHunks(lines, context = CONTEXT_LINES) {
  const shown = lines.map(() => false);
  lines.forEach((line, index) => {
    if (line.op === 'same') return;
    for (let near = Math.max(0, index - context); near <= Math.min(lines.length - 1, index + context); near += 1) shown[near] = true;
  });
  /** @type {DiffHunk[]} */
  const hunks = [];
  if (!shown.includes(true)) return hunks;
  let index = 0;
  while (index < lines.length) {
    const start = index;
    const visible = shown[index];
    while (index < lines.length && shown[index] === visible) index += 1;
    hunks.push(visible ? { type: 'lines', lines: lines.slice(start, index) } : { type: 'gap', count: index - start });
  }
  return hunks;
}

/** How many lines a diff adds and removes. @param {DiffLine[]} lines */
export function diffStats(lines) {
  let added = 0;
  let removed = 0;
  for (const line of lines) {
    if (line.op === 'add') added += 1;
    else if (line.op === 'del') removed += 1;
  }
  return { added, removed };
}
