// @ts-check
/**
 * The prompt box: its text, its session field, the line under it that says how the prompt
 * goes. Sends with the button or Ctrl+Enter; what is typed is the selected agent's draft.
 */
import { byTestId } from './dom.js';

/** @import { Draft } from './store.js' */

/**
 * @param {(text: string, sessionName: string) => boolean} send Takes the prompt (true: the
 *   text box is emptied), or leaves it (no agent selected).
 */
export function createPromptBox(send) {
  const form = byTestId('prompt-form', HTMLFormElement);
  const text = byTestId('prompt-text', HTMLTextAreaElement);
  const session = byTestId('prompt-session', HTMLInputElement);
  const status = byTestId('prompt-status', HTMLSpanElement);

  form.addEventListener('submit', (event) => {
    event.preventDefault();
    if (!text.value.trim()) return;
    if (send(text.value, session.value.trim())) text.value = '';
  });
  text.addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) form.requestSubmit();
  });

  return {
    /** What is typed now. @returns {Draft} */
    draft: () => ({ text: text.value, session: session.value }),
    /** Shows another agent's draft. */
    setDraft(/** @type {Draft} */ draft) {
      text.value = draft.text;
      session.value = draft.session;
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
