// @ts-check
/**
 * An elicitation's form, decided from the schema the agent requested (`requestedSchema`: a
 * flat object of string, number, integer, boolean, enum and multi-select fields), and the
 * answer's `content` from what was filled in — checked here as the daemon will check it, so a
 * mistake is said beside its field before anything is sent. Pure
 * (tests/unit/dashboard-elicitation.test.ts).
 */

/** @import { ElicitationRow } from '../daemon/api-types.js' */

/**
 * One field of the form. `kind` says how it is asked: a text input (`text`, with the input
 * type its format asks for), a number (`number`, `integer`), a checkbox (`boolean`), a select
 * (`enum`), or checkboxes (`multi`).
 * @typedef {object} FormField
 * @property {string} name The property's name: the key of its value in `content`.
 * @property {string} label Its title, else its name.
 * @property {string | null} description
 * @property {'text' | 'number' | 'integer' | 'boolean' | 'enum' | 'multi' | 'unsupported'} kind
 * @property {string} inputType With `text`: `text`, `email`, `url` or `date`.
 * @property {boolean} required
 * @property {Array<{ value: string, label: string }>} choices With `enum` and `multi`.
 * @property {string | number | boolean | string[] | null} initial Its default, or null.
 * @property {{ min?: number, max?: number, minLength?: number, maxLength?: number, pattern?: string, minItems?: number, maxItems?: number }} limits
 */

/**
 * What is filled in, by field name: an input's text, a checkbox's state, the values ticked.
 * @typedef {Record<string, string | boolean | string[]>} FormInput
 */

/** @typedef {Record<string, string | number | boolean | string[]>} FormContent */

const inputTypes = { email: 'email', uri: 'url', date: 'date' };

/**
 * The form's fields, in the schema's order.
 * @param {ElicitationRow['requestedSchema']} schema
 * @returns {FormField[]}
 */
export function formFields(schema) {
  const required = new Set(schema?.required ?? []);
  return Object.entries(schema?.properties ?? {}).map(([name, raw]) => {
    const property = /** @type {Record<string, unknown>} */ (raw);
    const number = (/** @type {string} */ key) => (typeof property[key] === 'number' ? /** @type {number} */ (property[key]) : undefined);
    const string = (/** @type {string} */ key) => (typeof property[key] === 'string' ? /** @type {string} */ (property[key]) : undefined);
    /** @type {FormField} */
    const field = {
      name,
      label: string('title') || name,
      description: string('description') ?? null,
      kind: 'unsupported',
      inputType: 'text',
      required: required.has(name),
      choices: [],
      initial: null,
      limits: {},
    };
    const fallback = property.default;
    switch (property.type) {
      case 'string': {
        const choices = stringChoices(property);
        if (choices) {
          field.kind = 'enum';
          field.choices = choices;
        } else {
          field.kind = 'text';
          field.inputType = inputTypes[/** @type {keyof typeof inputTypes} */ (string('format') ?? '')] ?? 'text';
          field.limits = clean({ minLength: number('minLength'), maxLength: number('maxLength'), pattern: string('pattern') });
        }
        field.initial = typeof fallback === 'string' ? fallback : null;
        break;
      }
      case 'number':
      case 'integer':
        field.kind = property.type;
        field.limits = clean({ min: number('minimum'), max: number('maximum') });
        field.initial = typeof fallback === 'number' ? fallback : null;
        break;
      case 'boolean':
        field.kind = 'boolean';
        field.initial = typeof fallback === 'boolean' ? fallback : null;
        break;
      case 'array': {
        const items = /** @type {Record<string, unknown>} */ (property.items ?? {});
        field.kind = 'multi';
        field.choices = stringChoices(items) ?? [];
        field.limits = clean({ minItems: number('minItems'), maxItems: number('maxItems') });
        field.initial = Array.isArray(fallback) ? fallback.filter((value) => typeof value === 'string') : null;
        break;
      }
    }
    return field;
  });
}

/**
 * A string property's choices: `enum` (its values as labels), `oneOf` / `anyOf` of `{ const,
 * title }`; null when it has none.
 * @param {Record<string, unknown>} property
 * @returns {Array<{ value: string, label: string }> | null}
 */
function stringChoices(property) {
  if (Array.isArray(property.enum)) return property.enum.map((value) => ({ value: String(value), label: String(value) }));
  const titled = Array.isArray(property.oneOf) ? property.oneOf : Array.isArray(property.anyOf) ? property.anyOf : null;
  if (!titled) return null;
  return titled.map((/** @type {{ const?: unknown, title?: unknown }} */ option) => ({ value: String(option.const), label: typeof option.title === 'string' ? option.title : String(option.const) }));
}

/**
 * The object without its undefined values.
 * @template {Record<string, unknown>} T
 * @param {T} object
 * @returns {T}
 */
function clean(object) {
  return /** @type {T} */ (Object.fromEntries(Object.entries(object).filter(([, value]) => value !== undefined)));
}

/**
 * The answer's `content` from what was filled in, or what is wrong, by field. An empty text
 * or number of a field that is not required is left out; a checkbox is always its state
 * (unticked: false), the ticked values of a multi-select always a list.
 * @param {FormField[]} fields
 * @param {FormInput} input
 * @returns {{ content: FormContent } | { errors: Record<string, string> }}
 */
export function formContent(fields, input) {
  /** @type {FormContent} */
  const content = {};
  /** @type {Record<string, string>} */
  const errors = {};
  for (const field of fields) {
    const raw = input[field.name];
    const issue = (/** @type {string} */ message) => void (errors[field.name] = message);
    switch (field.kind) {
      case 'boolean':
        content[field.name] = raw === true;
        break;
      case 'multi': {
        const values = Array.isArray(raw) ? raw : [];
        const { minItems, maxItems } = field.limits;
        if (field.required && values.length === 0) issue('pick at least one');
        else if (minItems !== undefined && values.length < minItems) issue(`pick at least ${minItems}`);
        else if (maxItems !== undefined && values.length > maxItems) issue(`pick at most ${maxItems}`);
        else content[field.name] = values;
        break;
      }
      case 'number':
      case 'integer': {
        const text = typeof raw === 'string' ? raw.trim() : '';
        if (text === '') {
          if (field.required) issue('required');
          break;
        }
        const value = Number(text);
        const { min, max } = field.limits;
        if (!Number.isFinite(value)) issue('must be a number');
        else if (field.kind === 'integer' && !Number.isInteger(value)) issue('must be a whole number');
        else if (min !== undefined && value < min) issue(`must be at least ${min}`);
        else if (max !== undefined && value > max) issue(`must be at most ${max}`);
        else content[field.name] = value;
        break;
      }
      case 'enum': {
        const value = typeof raw === 'string' ? raw : '';
        if (value === '') {
          if (field.required) issue('required');
        } else if (!field.choices.some((choice) => choice.value === value)) issue('pick one of the choices');
        else content[field.name] = value;
        break;
      }
      case 'text': {
        const value = typeof raw === 'string' ? raw : '';
        const { minLength, maxLength, pattern } = field.limits;
        if (value === '' && !field.required) break;
        if (value === '') issue('required');
        else if (minLength !== undefined && value.length < minLength) issue(`at least ${minLength} characters`);
        else if (maxLength !== undefined && value.length > maxLength) issue(`at most ${maxLength} characters`);
        else if (pattern !== undefined && !matches(pattern, value)) issue(`must match ${pattern}`);
        else content[field.name] = value;
        break;
      }
      default:
        // A type this page cannot ask for: only a required one stops the answer.
        if (field.required) issue('this page cannot fill in this field: decline, or answer with the CLI');
    }
  }
  return Object.keys(errors).length > 0 ? { errors } : { content };
}

/** The agent's pattern against the answer; a pattern that does not compile checks nothing (as the daemon does). */
function matches(/** @type {string} */ pattern, /** @type {string} */ value) {
  try {
    return new RegExp(pattern, 'u').test(value);
  } catch {
    return true;
  }
}

/**
 * What the elicitation's dialog says around its form: who asks, the message, and with a URL
 * elicitation the link (only an `http(s)` address is made a link: anything else is shown as
 * text).
 * @param {ElicitationRow} row
 */
export function elicitationView(row) {
  const url = row.url ?? '';
  return {
    heading: `${row.agent} asks${row.sessionId ? '' : ' (no session: a login or a setup)'}`,
    message: row.message,
    mode: row.mode,
    url,
    href: /^https?:\/\//i.test(url) ? url : null,
  };
}
