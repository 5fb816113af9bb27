// @ts-check
/**
 * The selected agent's sessions, newest first (`data-action` `select-session` on each). What a
 * row says is decided in rows.js.
 */
import { byTestId, h, renderKeyed } from './dom.js';
import { sessionRowView } from './rows.js';

/** @import { SessionRow } from '../daemon/api-types.js' */
/** @import { DashboardState } from './store.js' */

/** @typedef {{ element: HTMLLIElement, button: HTMLButtonElement, facts: HTMLSpanElement }} SessionRowParts */

export function createSessionsPanel() {
  const list = byTestId('sessions', HTMLUListElement);
  const empty = byTestId('sessions-empty', HTMLParagraphElement);
  const heading = byTestId('sessions-agent', HTMLSpanElement);
  /** @type {Map<string, SessionRowParts>} */
  const rows = new Map();
  return {
    /** The selected agent's sessions, the selected one marked. */
    render(/** @type {DashboardState} */ state) {
      heading.textContent = state.selectedAgent ? `· ${state.selectedAgent}` : '';
      renderKeyed(list, rows, state.sessions, (session) => session.sessionId, createRow, (parts, session) => {
        const view = sessionRowView(session, session.sessionId === state.selectedSession);
        parts.element.classList.toggle('selected', view.selected);
        parts.button.textContent = view.label;
        parts.button.title = view.title;
        parts.facts.textContent = view.facts;
      });
      empty.hidden = state.sessions.length > 0;
    },
  };
}

/** @param {SessionRow} session @returns {SessionRowParts} */
function createRow({ sessionId }) {
  const button = h('button', { type: 'button', 'data-action': 'select-session', 'data-session-id': sessionId });
  const facts = h('span', { class: 'muted' });
  return { element: h('li', { class: 'session', 'data-testid': 'session-row', 'data-session-id': sessionId }, button, facts), button, facts };
}
