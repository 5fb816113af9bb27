// @ts-check
/**
 * How the page writes the daemon's values: times, exits, errors, a prompt's text. Pure
 * functions, no DOM (tests/unit/dashboard-rows.test.ts).
 */

/** @import { AgentRow } from '../daemon/api-types.js' */

/** A clock time (`14:03:12`, the browser's locale) of an epoch-ms value; '' without one. */
export function clockTime(/** @type {number | null | undefined} */ at) {
  return typeof at === 'number' ? new Date(at).toLocaleTimeString() : '';
}

/** A date and time (the browser's locale) of an epoch-ms value, for titles shown on hover. */
export function dateTime(/** @type {number} */ at) {
  return new Date(at).toLocaleString();
}

/** How a process ended: its signal (`SIGKILL`), else `code N`; `—` when none has ended. */
export function exitText(/** @type {AgentRow['lastExit']} */ exit) {
  if (!exit) return '—';
  return exit.signal ? exit.signal : `code ${exit.code ?? '?'}`;
}

/** `1 update`, `2 updates`. */
export function counted(/** @type {number} */ count, /** @type {string} */ noun) {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}

/** The message of anything thrown. */
export function errorText(/** @type {unknown} */ error) {
  return error instanceof Error ? error.message : String(error);
}

/**
 * A prompt's content blocks as one text: text blocks as they are, any other block as its
 * type in brackets (`[image]`). Not an array (a malformed entry): ''.
 */
export function promptText(/** @type {unknown} */ blocks) {
  if (!Array.isArray(blocks)) return '';
  return blocks
    .map((/** @type {unknown} */ block) => {
      const typed = /** @type {{ type?: unknown, text?: unknown } | null} */ (block);
      return typed?.type === 'text' ? String(typed.text ?? '') : `[${String(typed?.type)}]`;
    })
    .join('');
}
