// @ts-check
/**
 * The DOM helpers every panel uses. Everything an agent sends is written as text (text nodes,
 * `textContent`), never parsed as markup: `h` makes strings text nodes.
 */

/** How long a notice stays, in ms, unless it is sticky. */
const NOTICE_MS = 8000;

/** @typedef {Node | string | number | null | undefined | false | ChildList} Child */
/** @typedef {Child[]} ChildList */

/**
 * An element with attributes (null, undefined and false leave one out, true sets it empty;
 * `class` is its class name) and children (strings become text nodes, never markup).
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {Record<string, string | number | boolean | null | undefined>} [attributes]
 * @param {...Child} children
 * @returns {HTMLElementTagNameMap[K]}
 */
export function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === null || value === undefined || value === false) continue;
    if (name === 'class') element.className = String(value);
    else element.setAttribute(name, value === true ? '' : String(value));
  }
  append(element, children);
  return element;
}

/** @param {Element} element @param {ChildList} children */
function append(element, children) {
  for (const child of children) {
    if (Array.isArray(child)) append(element, child);
    else if (child !== null && child !== undefined && child !== false) element.append(child instanceof Node ? child : String(child));
  }
}

/**
 * The page's element with `data-testid`, of the class expected; a page that lacks it is a bug
 * said at once.
 * @template {Element} E
 * @param {string} testid
 * @param {{ new (): E, name: string }} type
 * @returns {E}
 */
export function byTestId(testid, type) {
  const element = document.querySelector(`[data-testid="${testid}"]`);
  if (!(element instanceof type)) throw new Error(`The page has no ${type.name} with data-testid="${testid}"`);
  return element;
}

/**
 * Renders `items` into `container`, one element each, kept by key and updated in place: lists
 * are drawn again on every event, and a button swapped under the pointer would lose its click.
 * `create(item)` returns `{ element, ... }` (its parts), `update(parts, item)` refreshes them.
 * @template T
 * @template {{ element: Element }} P
 * @param {Element} container
 * @param {Map<string, P>} cache
 * @param {T[]} items
 * @param {(item: T) => string} keyOf
 * @param {(item: T) => P} create
 * @param {(parts: P, item: T) => void} update
 */
export function renderKeyed(container, cache, items, keyOf, create, update) {
  const keys = new Set(items.map(keyOf));
  for (const [key, parts] of cache) {
    if (!keys.has(key)) {
      parts.element.remove();
      cache.delete(key);
    }
  }
  const elements = items.map((item) => {
    let parts = cache.get(keyOf(item));
    if (!parts) cache.set(keyOf(item), (parts = create(item)));
    update(parts, item);
    return parts.element;
  });
  // Moved only when the order changed: moving a node also cancels a click on it.
  if (elements.length !== container.children.length || elements.some((element, index) => container.children[index] !== element)) {
    container.replaceChildren(...elements);
  }
}

/**
 * Keeps a scrolled list at its bottom while `change` grows it, unless the reader scrolled up.
 * @param {Element} element
 * @param {() => void} change
 */
export function stickToBottom(element, change) {
  const atBottom = element.scrollHeight - element.scrollTop - element.clientHeight < 24;
  change();
  if (atBottom) element.scrollTop = element.scrollHeight;
}

/** @typedef {{ show(message: string, kind?: 'error' | 'info', sticky?: boolean): void }} Notice */

/**
 * The message line above the panels: a message stays a while, unless `sticky`.
 * @param {HTMLElement} element
 * @returns {Notice}
 */
export function createNotice(element) {
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let timer;
  return {
    show(message, kind = 'error', sticky = false) {
      element.textContent = message;
      element.dataset.kind = kind;
      element.hidden = false;
      clearTimeout(timer);
      if (!sticky) timer = setTimeout(() => (element.hidden = true), NOTICE_MS);
    },
  };
}
