// @ts-check
/**
 * The slash-command palette's decisions: when the prompt box asks for it (its text is `/` and
 * a word being typed), which of the session's commands (`available_commands_update`) match,
 * in which order, and what picking one writes. Pure (tests/unit/dashboard-palette.test.ts).
 */

/** @import { AvailableCommand } from '../index.js' */

/** Commands listed at most. */
export const PALETTE_LIMIT = 12;

/**
 * What the palette filters by: the word after a `/` that begins the text, while it is the
 * whole text (no space yet); null when the palette is not asked for.
 * @param {string} text The prompt box's text.
 * @returns {string | null}
 */
export function paletteQuery(text) {
  const match = /^\/(\S*)$/.exec(text);
  return match ? (match[1] ?? '') : null;
}

/**
 * The commands that match `query` (case does not matter): those whose name begins with it
 * first, then those whose name holds it, then those whose description does — each group in
 * the agent's order. An empty query lists them all.
 * @param {AvailableCommand[]} commands
 * @param {string} query
 * @param {number} [limit]
 * @returns {AvailableCommand[]}
 */
export function paletteMatches(commands, query, limit = PALETTE_LIMIT) {
  const wanted = query.toLowerCase();
  const rank = (/** @type {AvailableCommand} */ command) => {
    const name = command.name.toLowerCase();
    if (name.startsWith(wanted)) return 0;
    if (name.includes(wanted)) return 1;
    if ((command.description ?? '').toLowerCase().includes(wanted)) return 2;
    return 3;
  };
  return commands
    .map((command, index) => ({ command, index, rank: rank(command) }))
    .filter((entry) => entry.rank < 3)
    .sort((one, other) => one.rank - other.rank || one.index - other.index)
    .slice(0, limit)
    .map((entry) => entry.command);
}

/**
 * What picking a command writes into the prompt box: `/name ` (its input follows the space),
 * and the hint to show for that input, when the command takes one.
 * @param {AvailableCommand} command
 * @returns {{ text: string, hint: string | null }}
 */
export function pickedCommand(command) {
  const input = /** @type {{ hint?: unknown } | null | undefined} */ (command.input);
  return { text: `/${command.name} `, hint: typeof input?.hint === 'string' ? input.hint : null };
}

/**
 * The palette's highlighted row after a move (`1` down, `-1` up), wrapping around.
 * @param {number} current
 * @param {number} move
 * @param {number} count
 */
export function movePaletteCursor(current, move, count) {
  if (count === 0) return 0;
  return (((current + move) % count) + count) % count;
}
