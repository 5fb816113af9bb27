// @ts-check
/**
 * The page's live lists (a session's transcript, an agent's log): fed by the event stream and
 * back-filled once from the API's history, joined where the two overlap. Pure: the past is
 * fetched by a function the caller gives (tests/unit/dashboard-feed.test.ts).
 */

import { promptText } from './format.js';

/** @import { TranscriptKind } from '../index.js' */

/** Items kept per transcript or log feed, beyond which the oldest go. */
export const FEED_LIMIT = 20000;

/**
 * A transcript item: an entry as the store keeps it (`GET /v1/sessions/:id/history`), or the
 * same shape built from an event-stream message.
 * @typedef {{ kind: TranscriptKind, data: unknown }} TranscriptItem
 */

/**
 * A log line of an agent's stderr.
 * @typedef {{ at: number, line: string }} LogItem
 */

/**
 * A list fed live and back-filled once. Until `loaded`, `items` holds only what arrived live
 * since the page (or its last reset) began.
 * @template T
 */
export class Feed {
  /** @type {T[]} */
  items = [];
  loaded = false;
  /** @type {Promise<void> | null} */
  loading = null;
  /** Bumped by a reset: a load begun before it is thrown away. */
  generation = 0;

  constructor(limit = FEED_LIMIT) {
    this.limit = limit;
  }

  /** @param {T} item */
  push(item) {
    this.items.push(item);
    this.trim();
  }

  trim() {
    if (this.items.length > this.limit) this.items.splice(0, this.items.length - this.limit);
  }

  /** Starts over: empty, not loaded, and any load under way is ignored when it ends. */
  reset() {
    this.generation += 1;
    this.items = [];
    this.loaded = false;
    this.loading = null;
  }

  /**
   * Loads the past once (`fetchPast` resolves with its items, oldest first) and joins it to
   * what came live meanwhile, matched by `key`. `failed` hears a failed load; `settled` runs
   * once it is loaded or has failed, unless a reset came meanwhile (which starts a load of its
   * own). Returns the load (null when loaded or loading already).
   * @param {object} how
   * @param {() => Promise<T[]>} how.fetchPast
   * @param {(item: T) => string} how.key
   * @param {(error: unknown) => void} how.failed
   * @param {() => void} how.settled
   * @returns {Promise<void> | null}
   */
  backfill({ fetchPast, key, failed, settled }) {
    if (this.loaded || this.loading) return null;
    const generation = this.generation;
    const load = fetchPast()
      .then((past) => {
        if (generation !== this.generation) return;
        this.items = mergeOverlap(past, this.items, key);
        this.trim();
        this.loaded = true;
      })
      .catch((/** @type {unknown} */ error) => failed(error))
      .finally(() => {
        if (generation !== this.generation) return;
        this.loading = null;
        settled();
      });
    this.loading = load;
    return load;
  }
}

/**
 * The feed of `key` in `feeds`, made empty when there is none yet.
 * @template T
 * @param {Map<string, Feed<T>>} feeds
 * @param {string} key
 * @returns {Feed<T>}
 */
export function feedOf(feeds, key) {
  let feed = feeds.get(key);
  if (!feed) feeds.set(key, (feed = new Feed()));
  return feed;
}

/**
 * `history` then `live`, without the items both hold. The event stream carries no store
 * cursor, so the overlap is found by content: the longest run at the head of `live` that
 * equals the tail of `history`.
 * @template T
 * @param {T[]} history
 * @param {T[]} live
 * @param {(item: T) => string} key
 * @returns {T[]}
 */
export function mergeOverlap(history, live, key) {
  const tail = history.map(key);
  const head = live.map(key);
  for (let length = Math.min(tail.length, head.length); length > 0; length -= 1) {
    let same = true;
    for (let index = 0; index < length && same; index += 1) same = tail[tail.length - length + index] === head[index];
    if (same) return history.concat(live.slice(length));
  }
  return history.concat(live);
}

/**
 * What makes two transcript items the same one, whether read from history or heard live. A
 * permission request is its tool call; its answer, the option chosen; an elicitation, its
 * mode and message; its answer, the action; a prompt, its text.
 * @param {TranscriptItem} item
 */
export function transcriptKey(item) {
  const data = /** @type {{ prompt?: unknown, toolCall?: { toolCallId?: string }, outcome?: { outcome?: string, optionId?: string }, mode?: string, message?: string, action?: string }} */ (item.data ?? {});
  switch (item.kind) {
    case 'prompt':
      return `prompt:${promptText(data.prompt)}`;
    case 'permission':
      return `permission:${data.toolCall?.toolCallId}`;
    case 'permission_outcome':
      return `outcome:${data.outcome?.outcome}:${data.outcome?.optionId ?? ''}`;
    case 'elicitation':
      return `elicitation:${data.mode}:${data.message}`;
    case 'elicitation_outcome':
      return `elicitation_outcome:${data.action}`;
    default:
      return `${item.kind}:${JSON.stringify(data)}`;
  }
}

/** A log line is the same one if its text is. */
export function logKey(/** @type {LogItem} */ entry) {
  return entry.line;
}
