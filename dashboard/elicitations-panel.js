// @ts-check
/**
 * The elicitations waiting for an answer, each a dialog (of every agent, at the page's
 * bottom right): the agent's message, and its form built from `requestedSchema` — or, in URL
 * mode, the link to open. `submit` (or `done`) accepts with the values, `decline` and `cancel`
 * answer so. The form is checked before anything is sent (elicitation-form.js); what the
 * daemon refuses is said in the dialog, which stays open. An elicitation answered anywhere
 * else leaves the state, and its dialog closes.
 */
import { byTestId, h, renderKeyed } from './dom.js';
import { elicitationView, formContent, formFields } from './elicitation-form.js';

/** @import { FormContent, FormField, FormInput } from './elicitation-form.js' */
/** @import { ClientElicitation } from './session-store.js' */
/** @import { DashboardState } from './store.js' */

/**
 * @typedef {object} DialogParts
 * @property {HTMLDialogElement} element
 * @property {HTMLFormElement} form
 * @property {FormField[]} fields
 * @property {HTMLParagraphElement} error
 * @property {HTMLButtonElement[]} buttons
 */

/**
 * @param {(id: string, answer: { action: 'accept', content?: FormContent } | { action: 'decline' } | { action: 'cancel' }) => void} answer
 */
export function createElicitationsPanel(answer) {
  const container = byTestId('elicitations', HTMLDivElement);
  /** @type {Map<string, DialogParts>} */
  const dialogs = new Map();

  /** @param {ClientElicitation} row @returns {DialogParts} */
  function createDialog(row) {
    const view = elicitationView(row);
    const fields = row.mode === 'form' ? formFields(row.requestedSchema) : [];
    const error = h('p', { class: 'elicitation-error', 'data-testid': 'elicitation-error', hidden: true });
    const button = (/** @type {string} */ action, /** @type {string} */ label, type = 'button') => h('button', { type, 'data-testid': `elicitation-${action}`, 'data-answer': action }, label);
    const buttons = [button('accept', row.mode === 'url' ? 'done' : 'submit', 'submit'), button('decline', 'decline'), button('cancel', 'cancel')];
    const form = h(
      'form',
      { class: 'elicitation-form', novalidate: true, autocomplete: 'off' },
      h('p', { class: 'muted' }, view.heading),
      h('p', { class: 'elicitation-message' }, view.message),
      row.mode === 'url'
        ? h('p', {}, view.href ? h('a', { href: view.href, target: '_blank', rel: 'noopener noreferrer', 'data-testid': 'elicitation-link' }, view.url) : h('code', { 'data-testid': 'elicitation-link' }, view.url))
        : fields.map(fieldElement),
      error,
      h('div', { class: 'elicitation-actions' }, buttons),
    );
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      if (row.mode === 'url') {
        answer(row.id, { action: 'accept' });
        return;
      }
      const result = formContent(fields, readInput(form, fields));
      for (const field of fields) {
        const slot = form.querySelector(`[data-field-error="${CSS.escape(field.name)}"]`);
        if (slot) slot.textContent = 'errors' in result ? (result.errors[field.name] ?? '') : '';
      }
      if ('content' in result) answer(row.id, { action: 'accept', content: result.content });
    });
    for (const other of buttons.slice(1)) other.addEventListener('click', () => answer(row.id, { action: /** @type {'decline' | 'cancel'} */ (other.dataset.answer) }));
    const element = h('dialog', { class: 'elicitation', open: true, 'data-testid': 'elicitation', 'data-elicitation-id': row.id, 'data-agent': row.agent, 'data-mode': row.mode }, form);
    return { element, form, fields, error, buttons };
  }

  return {
    /** The waiting elicitations, oldest first: their dialogs, kept while they wait (what is typed stays). */
    render(/** @type {DashboardState} */ state) {
      const waiting = [...state.elicitations.values()].sort((one, other) => one.requestedAt - other.requestedAt);
      renderKeyed(container, dialogs, waiting, (row) => row.id, createDialog, (parts, row) => {
        for (const button of parts.buttons) button.disabled = Boolean(row.answering);
        parts.error.hidden = !row.error;
        parts.error.textContent = row.error ?? '';
      });
      container.hidden = waiting.length === 0;
    },
  };
}

/**
 * A form field's element: its label (a `*` when required), its input, its description, and
 * where a mistake in it is said.
 * @param {FormField} field
 */
function fieldElement(field) {
  const id = `elicitation-field-${Math.random().toString(36).slice(2)}`;
  const name = field.name;
  /** @type {HTMLElement} */
  let input;
  switch (field.kind) {
    case 'text':
      input = h('input', { id, name, type: field.inputType, value: typeof field.initial === 'string' ? field.initial : null });
      break;
    case 'number':
    case 'integer':
      input = h('input', { id, name, type: 'number', step: field.kind === 'integer' ? '1' : 'any', min: field.limits.min, max: field.limits.max, value: typeof field.initial === 'number' ? field.initial : null });
      break;
    case 'boolean':
      input = h('input', { id, name, type: 'checkbox', checked: field.initial === true });
      break;
    case 'enum':
      input = h(
        'select',
        { id, name },
        h('option', { value: '', selected: field.initial === null }, field.required ? 'choose…' : '—'),
        field.choices.map((choice) => h('option', { value: choice.value, selected: field.initial === choice.value }, choice.label)),
      );
      break;
    case 'multi': {
      const ticked = Array.isArray(field.initial) ? field.initial : [];
      input = h(
        'span',
        { class: 'multi', id },
        field.choices.map((choice) => h('label', {}, h('input', { type: 'checkbox', name, value: choice.value, checked: ticked.includes(choice.value) }), ' ', choice.label)),
      );
      break;
    }
    default:
      input = h('span', { class: 'muted' }, 'a field of a kind this page cannot ask for');
  }
  return h(
    'div',
    { class: `field field-${field.kind}`, 'data-testid': 'elicitation-field', 'data-field': name },
    h('label', { for: id }, field.label, field.required ? h('span', { class: 'required', title: 'required' }, ' *') : null),
    input,
    field.description ? h('small', { class: 'muted' }, field.description) : null,
    h('span', { class: 'field-error', 'data-field-error': name }),
  );
}

/**
 * What is filled in, by field: an input's text, a checkbox's state, the values ticked.
 * @param {HTMLFormElement} form
 * @param {FormField[]} fields
 * @returns {FormInput}
 */
function readInput(form, fields) {
  /** @type {FormInput} */
  const input = {};
  for (const field of fields) {
    const inputs = [...form.querySelectorAll(`[name="${CSS.escape(field.name)}"]`)];
    if (field.kind === 'multi') input[field.name] = inputs.filter((element) => element instanceof HTMLInputElement && element.checked).map((element) => /** @type {HTMLInputElement} */ (element).value);
    else if (field.kind === 'boolean') input[field.name] = inputs[0] instanceof HTMLInputElement && inputs[0].checked;
    else if (inputs[0] instanceof HTMLInputElement || inputs[0] instanceof HTMLSelectElement) input[field.name] = inputs[0].value;
  }
  return input;
}
