// @ts-check
/**
 * The prompt box: its text, its session field, the files attached, the slash-command palette
 * and the line under it that says how the prompt goes. Sends with the button or Ctrl+Enter;
 * what is typed (and attached) is the selected agent's draft. Typing `/` at the start offers
 * the session's commands (palette.js decides which): arrows move, Enter or Tab picks, Escape
 * closes. Attached files become content blocks (attachments.js): the prompt is then sent as
 * `{ content }`.
 */
import { attachmentLabel, attachmentOf, attachmentRefusal } from './attachments.js';
import { byTestId, h } from './dom.js';
import { errorText } from './format.js';
import { movePaletteCursor, paletteMatches, paletteQuery, pickedCommand } from './palette.js';

/** @import { AvailableCommand } from '../index.js' */
/** @import { Attachment } from './attachments.js' */
/** @import { Notice } from './dom.js' */
/** @import { Draft } from './store.js' */

/**
 * @param {object} hooks
 * @param {(text: string, sessionName: string, attachments: Attachment[]) => boolean} hooks.send Takes
 *   the prompt (true: the box is emptied), or leaves it (no agent selected).
 * @param {() => AvailableCommand[]} hooks.commands The selected session's slash commands.
 * @param {Notice} hooks.notice
 */
export function createPromptBox({ send, commands, notice }) {
  const form = byTestId('prompt-form', HTMLFormElement);
  const text = byTestId('prompt-text', HTMLTextAreaElement);
  const session = byTestId('prompt-session', HTMLInputElement);
  const status = byTestId('prompt-status', HTMLSpanElement);
  const hint = byTestId('prompt-hint', HTMLSpanElement);
  const palette = byTestId('palette', HTMLUListElement);
  const files = byTestId('prompt-files', HTMLInputElement);
  const attachButton = byTestId('prompt-attach', HTMLButtonElement);
  const chips = byTestId('attachments', HTMLUListElement);
  /** @type {Attachment[]} */
  let attachments = [];
  /** The commands the palette lists now, and the highlighted one. @type {AvailableCommand[]} */
  let matches = [];
  let cursor = 0;

  function renderAttachments() {
    chips.replaceChildren(
      ...attachments.map((attachment, index) =>
        h(
          'li',
          { class: 'attachment', 'data-testid': 'attachment', 'data-kind': attachment.kind },
          attachmentLabel(attachment),
          ' ',
          h('button', { type: 'button', class: 'attachment-remove', 'data-index': index, title: `remove ${attachment.name}`, 'aria-label': `remove ${attachment.name}` }, '×'),
        ),
      ),
    );
    chips.hidden = attachments.length === 0;
  }

  function renderPalette() {
    palette.hidden = matches.length === 0;
    palette.replaceChildren(
      ...matches.map((command, index) =>
        h(
          'li',
          { class: index === cursor ? 'active' : null, role: 'option', 'aria-selected': index === cursor ? 'true' : 'false', 'data-testid': 'palette-item', 'data-command': command.name, 'data-index': index },
          h('span', { class: 'palette-name' }, `/${command.name}`),
          ' ',
          h('span', { class: 'muted' }, command.description ?? ''),
        ),
      ),
    );
  }

  /** The palette for what is typed now: open with the matching commands, or closed. */
  function updatePalette() {
    const query = paletteQuery(text.value);
    const listed = query === null ? [] : paletteMatches(commands(), query);
    if (listed.map((command) => command.name).join('\n') !== matches.map((command) => command.name).join('\n')) cursor = 0;
    matches = listed;
    renderPalette();
  }

  /** Writes the command picked into the box (its input follows), and says what that input is. */
  function pick(/** @type {number} */ index) {
    const command = matches[index];
    if (!command) return;
    const picked = pickedCommand(command);
    text.value = picked.text;
    hint.textContent = picked.hint ? `/${command.name}: ${picked.hint}` : '';
    matches = [];
    renderPalette();
    text.focus();
    text.setSelectionRange(text.value.length, text.value.length);
  }

  /** Reads the files chosen into attachments; one that does not fit is said and left out. */
  async function attach(/** @type {FileList | null} */ chosen) {
    for (const file of chosen ? [...chosen] : []) {
      try {
        const attachment = attachmentOf({ name: file.name, type: file.type, bytes: new Uint8Array(await file.arrayBuffer()) });
        const refusal = attachmentRefusal(attachments, attachment);
        if (refusal) notice.show(refusal);
        else attachments.push(attachment);
      } catch (error) {
        notice.show(`Could not read ${file.name}: ${errorText(error)}`);
      }
    }
    files.value = '';
    renderAttachments();
  }

  form.addEventListener('submit', (event) => {
    event.preventDefault();
    if (!text.value.trim() && attachments.length === 0) return;
    if (send(text.value, session.value.trim(), attachments)) {
      text.value = '';
      attachments = [];
      hint.textContent = '';
      renderAttachments();
      updatePalette();
    }
  });
  text.addEventListener('input', updatePalette);
  text.addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      form.requestSubmit();
      return;
    }
    if (matches.length === 0) return;
    if (event.key === 'ArrowDown' || event.key === 'ArrowUp') {
      event.preventDefault();
      cursor = movePaletteCursor(cursor, event.key === 'ArrowDown' ? 1 : -1, matches.length);
      renderPalette();
    } else if (event.key === 'Enter' || event.key === 'Tab') {
      event.preventDefault();
      pick(cursor);
    } else if (event.key === 'Escape') {
      event.preventDefault();
      matches = [];
      renderPalette();
    }
  });
  // mousedown, not click: the box keeps its focus (a blur would close the palette first).
  palette.addEventListener('mousedown', (event) => {
    const item = event.target instanceof Element ? event.target.closest('li[data-index]') : null;
    if (!(item instanceof HTMLElement)) return;
    event.preventDefault();
    pick(Number(item.dataset.index));
  });
  text.addEventListener('blur', () => {
    matches = [];
    renderPalette();
  });
  attachButton.addEventListener('click', () => files.click());
  files.addEventListener('change', () => void attach(files.files));
  chips.addEventListener('click', (event) => {
    const button = event.target instanceof Element ? event.target.closest('button[data-index]') : null;
    if (!(button instanceof HTMLElement)) return;
    attachments = attachments.filter((_, index) => index !== Number(button.dataset.index));
    renderAttachments();
  });
  renderAttachments();

  return {
    /** What is typed and attached now. @returns {Draft} */
    draft: () => ({ text: text.value, session: session.value, attachments }),
    /** Shows another agent's draft. */
    setDraft(/** @type {Draft} */ draft) {
      text.value = draft.text;
      session.value = draft.session;
      attachments = draft.attachments ?? [];
      hint.textContent = '';
      renderAttachments();
      updatePalette();
    },
    /** Fills in the session field (a session selected, or the one a prompt runs in). */
    setSessionName(/** @type {string} */ name) {
      session.value = name;
    },
    /** The line under the box. */
    setStatus(/** @type {string} */ line) {
      status.textContent = line;
    },
  };
}
