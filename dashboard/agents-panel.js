// @ts-check
/**
 * The agents list: one row per agent, its status badge, facts, last error, and its lifecycle
 * buttons (`data-action` start, stop, kill, restart; `select-agent` on its name); parked for a
 * login, a button per login method (`login`) and the links its login asked to open. `restart`
 * asks for an optional reason first, in the restart dialog (kept in the daemon's event log).
 * What a row says is decided in rows.js.
 */
import { byTestId, h, renderKeyed } from './dom.js';
import { AGENT_ACTIONS, agentRowView } from './rows.js';

/** @import { ClientAgent, DashboardState } from './store.js' */

/**
 * @typedef {object} AgentRowParts
 * @property {HTMLLIElement} element
 * @property {HTMLButtonElement} name
 * @property {HTMLSpanElement} status
 * @property {HTMLElement} pid
 * @property {HTMLElement} restarts
 * @property {HTMLElement} sessions
 * @property {HTMLElement} lastExit
 * @property {HTMLElement} credential
 * @property {HTMLParagraphElement} error
 * @property {HTMLDivElement} login
 * @property {HTMLButtonElement[]} buttons
 */

/**
 * @param {(name: string, reason: string) => void} restart A restart confirmed in the dialog, with
 *   its reason ('' for none).
 */
export function createAgentsPanel(restart) {
  const list = byTestId('agents', HTMLUListElement);
  const dialog = byTestId('restart-dialog', HTMLDialogElement);
  const dialogForm = byTestId('restart-form', HTMLFormElement);
  const dialogAgent = byTestId('restart-agent', HTMLElement);
  const reason = byTestId('restart-reason', HTMLInputElement);
  /** @type {Map<string, AgentRowParts>} */
  const rows = new Map();
  dialogForm.addEventListener('submit', (event) => {
    event.preventDefault();
    const name = dialog.dataset.agent;
    dialog.close();
    if (name) restart(name, reason.value.trim());
  });
  byTestId('restart-cancel', HTMLButtonElement).addEventListener('click', () => dialog.close());
  return {
    /** Every agent's row, as the state has them. */
    render(/** @type {DashboardState} */ state) {
      renderKeyed(list, rows, [...state.agents.values()], (agent) => agent.name, createRow, (parts, agent) =>
        updateRow(parts, agent, agent.name === state.selectedAgent, state.authPrompts.get(agent.name) ?? []),
      );
    },
    /** Asks for a restart's reason (optional), then restarts. */
    askRestart(/** @type {string} */ name) {
      dialog.dataset.agent = name;
      dialogAgent.textContent = name;
      reason.value = '';
      dialog.showModal();
      reason.focus();
    },
  };
}

/** @param {ClientAgent} agent @returns {AgentRowParts} */
function createRow({ name }) {
  const fact = (/** @type {string} */ testid) => h('dd', { 'data-testid': testid });
  const pid = fact('agent-pid');
  const restarts = fact('agent-restarts');
  const sessions = fact('agent-sessions');
  const lastExit = fact('agent-last-exit');
  const credential = fact('agent-credential');
  const facts = h('dl', { class: 'facts' }, h('dt', {}, 'pid'), pid, h('dt', {}, 'restarts'), restarts, h('dt', {}, 'sessions'), sessions, h('dt', {}, 'last exit'), lastExit, h('dt', {}, 'credentials'), credential);
  const parts = {
    name: h('button', { type: 'button', class: 'agent-name', 'data-action': 'select-agent', 'data-agent': name }),
    status: h('span', { class: 'badge', 'data-testid': 'agent-status' }),
    pid,
    restarts,
    sessions,
    lastExit,
    credential,
    error: h('p', { class: 'agent-error', 'data-testid': 'agent-error' }),
    login: h('div', { class: 'agent-login', 'data-testid': 'agent-login' }),
    // kill: stop with force (SIGKILL to the whole containment at once); it stays usable while a graceful stop waits.
    buttons: AGENT_ACTIONS.map((action) =>
      h('button', { type: 'button', 'data-action': action, 'data-agent': name, 'data-testid': `agent-${action}`, title: action === 'kill' ? 'stop at once: SIGKILL to all its processes' : null }, action),
    ),
  };
  const element = h('li', { class: 'agent', 'data-testid': 'agent-row', 'data-agent': name }, parts.name, parts.status, facts, parts.error, parts.login, h('div', { class: 'agent-actions' }, parts.buttons));
  return { element, ...parts };
}

/** @param {AgentRowParts} parts @param {ClientAgent} agent @param {boolean} selected @param {string[]} authUrls */
function updateRow(parts, agent, selected, authUrls) {
  const view = agentRowView(agent, selected, authUrls);
  parts.element.classList.toggle('selected', view.selected);
  parts.element.dataset.status = view.status;
  parts.name.textContent = view.label;
  parts.name.title = view.labelTitle;
  parts.status.textContent = view.status;
  parts.status.className = `badge status-${view.status}`;
  parts.status.title = view.statusTitle;
  parts.pid.textContent = view.pid;
  parts.restarts.textContent = view.restarts;
  parts.sessions.textContent = view.sessions;
  parts.lastExit.textContent = view.lastExit;
  parts.lastExit.title = view.lastExitTitle;
  parts.credential.textContent = view.credential;
  parts.error.hidden = !view.error;
  parts.error.textContent = view.error?.message ?? '';
  parts.error.title = view.error?.title ?? '';
  for (const button of parts.buttons) button.disabled = view.waits && button.dataset.action !== 'kill';
  const login = JSON.stringify([view.login, view.authUrls, view.waits]);
  // Drawn again only when it changes: a button swapped under the pointer loses its click.
  if (parts.login.dataset.drawn !== login) {
    parts.login.dataset.drawn = login;
    parts.login.replaceChildren(
      ...view.login.map((method) =>
        h('button', { type: 'button', 'data-action': 'login', 'data-agent': agent.name, 'data-method-id': method.methodId, 'data-testid': 'agent-login-method', title: method.title || null, disabled: view.waits }, method.label),
      ),
      ...view.authUrls.map((link) =>
        h('p', { class: 'auth-url' }, 'open: ', link.href ? h('a', { href: link.href, target: '_blank', rel: 'noopener noreferrer', 'data-testid': 'agent-auth-url' }, link.url) : h('code', { 'data-testid': 'agent-auth-url' }, link.url)),
      ),
    );
  }
  parts.login.hidden = view.login.length === 0 && view.authUrls.length === 0;
}
