// @ts-check
/**
 * Orphans: what a crashed supervisor left running (`GET /v1/orphans`, a listing that touches
 * nothing), each with a `kill` button (`data-action` `kill-orphan`), and `kill all` (`kill-orphans`)
 * when there are several. What a row says is decided in rows.js.
 */
import { byTestId, h, renderKeyed } from './dom.js';
import { orphanKey, orphanRowView, orphansPanelView } from './rows.js';

/** @import { DashboardState, Orphan } from './store.js' */

/** @typedef {{ element: HTMLLIElement, kill: HTMLButtonElement }} OrphanRowParts */

export function createOrphansPanel() {
  const list = byTestId('orphans', HTMLUListElement);
  const empty = byTestId('orphans-empty', HTMLParagraphElement);
  const policy = byTestId('orphans-policy', HTMLSpanElement);
  const killAll = byTestId('orphans-kill-all', HTMLButtonElement);
  /** @type {Map<string, OrphanRowParts>} */
  const rows = new Map();
  return {
    /** The leftovers as last listed, and the kills under way. */
    render(/** @type {DashboardState} */ state) {
      const view = orphansPanelView(state.orphans);
      renderKeyed(list, rows, state.orphans.rows, orphanKey, createRow, (parts, orphan) => {
        parts.kill.disabled = view.killWaits(orphan.pid);
      });
      empty.hidden = !view.empty;
      killAll.hidden = !view.killAllShown;
      killAll.disabled = view.killAllWaits;
      policy.textContent = view.policy;
    },
  };
}

/** @param {Orphan} orphan @returns {OrphanRowParts} */
function createRow(orphan) {
  const view = orphanRowView(orphan);
  const kill = h('button', { type: 'button', 'data-action': 'kill-orphan', 'data-pid': orphan.pid, 'data-testid': 'orphan-kill', title: view.killTitle }, 'kill');
  kill.hidden = !view.killable;
  const element = h(
    'li',
    { class: 'orphan', 'data-testid': 'orphan', 'data-pid': orphan.pid, 'data-agent': orphan.agent },
    h('p', { class: 'orphan-title' }, view.title),
    h('p', { class: 'muted orphan-command' }, view.command),
    h('p', { class: 'muted' }, view.facts),
    h('div', { class: 'orphan-actions' }, kill),
  );
  return { element, kill };
}
