// @ts-check
/**
 * The selected session's bar, above its transcript: its title, its mode and model pickers and
 * other config options (selects and toggles, showing the current values as `session:state`
 * keeps them), `cancel turn` and `close`, the context usage meter and the plan. What it shows
 * is decided in session-view.js; a choice goes to the controller (`onControl`), the buttons
 * through the page's delegated click listener (`data-action`).
 */
import { byTestId, h, renderKeyed } from './dom.js';
import { pendingKey } from './session-actions.js';
import { selectedSessionRow } from './session-store.js';
import { planView, sessionControls, sessionHeading, usageView } from './session-view.js';

/** @import { DashboardState } from './store.js' */
/** @import { Picker, Toggle } from './session-view.js' */

/**
 * One control as drawn: a picker or a toggle, with the key of the call that makes it wait.
 * @typedef {{ key: string, testid: string, pending: string, picker: Picker | null, toggle: Toggle | null }} ControlItem
 */

/** @typedef {{ element: HTMLLabelElement, input: HTMLSelectElement | HTMLInputElement, shape: string }} ControlParts */

/**
 * @param {(sessionId: string, picker: Pick<Picker, 'route' | 'configId'>, value: string | boolean) => void} onControl
 *   A control changed by the person.
 */
export function createSessionPanel(onControl) {
  const bar = byTestId('session-bar', HTMLDivElement);
  const title = byTestId('session-title', HTMLElement);
  const controls = byTestId('session-controls', HTMLDivElement);
  const cancel = byTestId('session-cancel', HTMLButtonElement);
  const close = byTestId('session-close', HTMLButtonElement);
  const usage = byTestId('usage', HTMLDivElement);
  const usageFill = byTestId('usage-fill', HTMLDivElement);
  const usageText = byTestId('usage-text', HTMLSpanElement);
  const usagePercent = byTestId('usage-percent', HTMLSpanElement);
  const usageCost = byTestId('usage-cost', HTMLSpanElement);
  const plan = byTestId('plan', HTMLDetailsElement);
  const planDone = byTestId('plan-done', HTMLSpanElement);
  const planEntries = byTestId('plan-entries', HTMLOListElement);
  /** @type {Map<string, ControlParts>} */
  const drawn = new Map();
  /** The session the controls are drawn for. @type {string | null} */
  let sessionId = null;

  /**
   * A control's element. A select's options are its picker's choices, under their groups.
   * @param {ControlItem} item
   * @returns {ControlParts}
   */
  function createControl(item) {
    const attributes = { class: 'control', 'data-testid': item.testid, 'data-config-id': item.picker?.configId ?? item.toggle?.configId ?? null };
    if (item.toggle) {
      const toggle = item.toggle;
      const input = h('input', { type: 'checkbox' });
      input.addEventListener('change', () => sessionId && onControl(sessionId, { route: 'config', configId: toggle.configId }, input.checked));
      return { element: h('label', { ...attributes, class: 'control toggle', title: toggle.description }, input, ' ', toggle.label), input, shape: item.key };
    }
    const picker = /** @type {Picker} */ (item.picker);
    /** @type {Map<string, HTMLOptGroupElement>} */
    const groups = new Map();
    const select = h('select', {});
    for (const choice of picker.choices) {
      const option = h('option', { value: choice.value, title: choice.description }, choice.name);
      if (choice.group === null) select.append(option);
      else {
        let group = groups.get(choice.group);
        if (!group) select.append((group = h('optgroup', { label: choice.group })));
        groups.set(choice.group, group);
        group.append(option);
      }
    }
    select.addEventListener('change', () => sessionId && onControl(sessionId, { route: picker.route, configId: picker.configId }, select.value));
    return { element: h('label', { ...attributes, title: picker.description }, h('span', { class: 'control-label' }, picker.label), select), input: select, shape: shapeOf(item) };
  }

  /** @param {DashboardState} state */
  function renderControls(state, /** @type {string} */ id) {
    const row = selectedSessionRow(state);
    const view = row ? sessionControls(row) : { mode: null, model: null, options: [] };
    /** @type {ControlItem[]} */
    const items = [];
    if (view.mode) items.push({ key: 'mode', testid: 'session-mode', pending: pendingFor(view.mode), picker: view.mode, toggle: null });
    if (view.model) items.push({ key: 'model', testid: 'session-model', pending: pendingFor(view.model), picker: view.model, toggle: null });
    for (const option of view.options) {
      if (option.type === 'boolean') items.push({ key: `config ${option.toggle.configId}`, testid: 'config-option', pending: `config ${option.toggle.configId}`, picker: null, toggle: option.toggle });
      else items.push({ key: `config ${option.picker.configId}`, testid: 'config-option', pending: `config ${option.picker.configId}`, picker: option.picker, toggle: null });
    }
    // A control whose choices changed is made again; otherwise it is only set (an open select stays open).
    for (const item of items) {
      const parts = drawn.get(item.key);
      if (parts && parts.shape !== shapeOf(item)) {
        parts.element.remove();
        drawn.delete(item.key);
      }
    }
    renderKeyed(controls, drawn, items, (item) => item.key, createControl, (parts, item) => {
      const pending = state.pending.has(pendingKey(item.pending, id));
      parts.input.disabled = pending || !row?.live;
      parts.element.classList.toggle('waits', pending);
      // While its call is under way a control shows the choice made; then what the session has.
      if (pending) return;
      if (item.toggle && parts.input instanceof HTMLInputElement) parts.input.checked = item.toggle.current;
      else if (item.picker) parts.input.value = item.picker.current;
    });
  }

  return {
    /** The selected session's bar, from its row. */
    render(/** @type {DashboardState} */ state) {
      const row = selectedSessionRow(state);
      bar.hidden = !row;
      if (!row) {
        sessionId = null;
        return;
      }
      if (sessionId !== row.sessionId) {
        controls.replaceChildren();
        drawn.clear();
      }
      sessionId = row.sessionId;
      const heading = sessionHeading(row);
      title.textContent = heading.text;
      title.title = heading.title;
      for (const button of [cancel, close]) button.dataset.sessionId = row.sessionId;
      cancel.disabled = !row.live || state.pending.has(pendingKey('cancel', row.sessionId));
      close.disabled = !row.live || state.pending.has(pendingKey('close', row.sessionId));
      bar.dataset.live = String(row.live);
      bar.dataset.busy = String(row.busy);
      renderControls(state, row.sessionId);

      const meter = usageView(row.usage);
      usage.hidden = !meter;
      if (meter) {
        usage.dataset.level = meter.level;
        usage.title = meter.title;
        usageFill.style.width = `${(meter.fraction * 100).toFixed(2)}%`;
        usageText.textContent = meter.text;
        usagePercent.textContent = meter.percent;
        usageCost.textContent = meter.cost ?? '';
        usageCost.hidden = !meter.cost;
      }

      const steps = planView(row.plan);
      plan.hidden = !steps;
      planDone.textContent = steps?.done ?? '';
      planEntries.replaceChildren(
        ...(steps?.entries ?? []).map((entry) =>
          h(
            'li',
            { 'data-testid': 'plan-entry', 'data-status': entry.status, 'data-priority': entry.priority, title: `${entry.status.replace('_', ' ')} · ${entry.priority} priority` },
            h('span', { class: 'plan-mark' }, entry.mark),
            ' ',
            entry.content,
            ' ',
            h('span', { class: `plan-priority priority-${entry.priority}` }, entry.priority),
          ),
        ),
      );
    },
  };
}

/** The call a picker's choice makes wait: `mode`, `model`, or `config <id>`. @param {Picker} picker */
function pendingFor(picker) {
  return picker.route === 'config' ? `config ${picker.configId}` : picker.route;
}

/** What a control's element is made of: drawn again when it changes. @param {ControlItem} item */
function shapeOf(item) {
  if (item.toggle) return item.key;
  const picker = /** @type {Picker} */ (item.picker);
  return JSON.stringify([picker.route, picker.label, picker.choices]);
}
