// @ts-check
/**
 * Pending permission requests, of every agent: one button per option (`data-action`
 * `answer-permission`). What a row says is decided in rows.js.
 */
import { byTestId, h, renderKeyed } from './dom.js';
import { permissionRowView } from './rows.js';

/** @import { ClientPermission, DashboardState } from './store.js' */

/** @typedef {{ element: HTMLLIElement, options: HTMLButtonElement[] }} PermissionRowParts */

export function createPermissionsPanel() {
  const list = byTestId('permissions', HTMLUListElement);
  const empty = byTestId('permissions-empty', HTMLParagraphElement);
  /** @type {Map<string, PermissionRowParts>} */
  const rows = new Map();
  return {
    /** The pending requests, as the state has them. */
    render(/** @type {DashboardState} */ state) {
      const pending = [...state.permissions.values()];
      renderKeyed(list, rows, pending, (row) => row.id, createRow, (parts, row) => {
        const waits = permissionRowView(row).waits;
        for (const button of parts.options) button.disabled = waits;
      });
      empty.hidden = pending.length > 0;
    },
  };
}

/** @param {ClientPermission} row @returns {PermissionRowParts} */
function createRow(row) {
  const view = permissionRowView(row);
  const options = view.options.map((option) =>
    h(
      'button',
      { type: 'button', class: `option-${option.kind}`, title: option.kind, 'data-testid': 'permission-option', 'data-action': 'answer-permission', 'data-permission-id': row.id, 'data-option-id': option.optionId },
      option.name,
    ),
  );
  const element = h(
    'li',
    { class: 'permission', 'data-testid': 'permission', 'data-permission-id': row.id, 'data-agent': row.agent, 'data-session-id': row.sessionId },
    h('p', { class: 'permission-title' }, view.title),
    h('p', { class: 'muted' }, view.subtitle),
    h('div', { class: 'permission-options' }, options),
  );
  return { element, options };
}
