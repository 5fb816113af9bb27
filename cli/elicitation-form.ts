/**
 * Elicitations at the terminal (docs/acp.md, "Elicitation"; docs/cli.md, `elicitations`): an
 * agent asks the user to fill in a form (a flat JSON schema) or to open a URL. The form's
 * fields from `--field name=value` (typed by the schema: numbers, booleans, repeated for a
 * multi-select), checked for what is plain to see before the daemon is asked (which checks the
 * rest with the library); and, on a terminal, the questions asked one field at a time.
 */
import { createInterface, type Interface } from 'node:readline';
import type { ElicitationRow } from '../daemon/api-types.js';
import type { ElicitationAnswer, ElicitationRequestView, ElicitationValue } from '../index.js';
import { CliError } from './cli-error.js';
import { ExitCode } from './exit-codes.js';
import { styleFor } from './output.js';

/** A form's schema, as the agent sent it. */
type ElicitationSchema = NonNullable<ElicitationRequestView['requestedSchema']>;

/** A form field as the CLI reads it: its schema loosely typed (the schema's union has an open member). */
type Property = Record<string, unknown> & { type?: string; title?: string | null; description?: string | null };

/** The form's fields, in the schema's order. */
export function formFields(schema: ElicitationSchema | null): Array<{ name: string; property: Property; required: boolean }> {
  const required = new Set(schema?.required ?? []);
  return Object.entries(schema?.properties ?? {}).map(([name, property]) => ({ name, property: property as Property, required: required.has(name) }));
}

/** The choices of a string field (`enum`, or `oneOf` consts) or of a multi-select's items; null when it takes any text. */
export function choicesOf(property: Property): string[] | null {
  const source = property.type === 'array' ? ((property.items ?? {}) as Property) : property;
  if (Array.isArray(source.enum)) return source.enum as string[];
  const titled = (source.oneOf ?? source.anyOf) as Array<{ const: string }> | undefined;
  return Array.isArray(titled) ? titled.map((option) => option.const) : null;
}

/** What a field takes, in a few words: `text`, `a whole number from 1 to 5`, `yes or no`, `one of red, green`. */
export function fieldHint(property: Property): string {
  const choices = choicesOf(property);
  const range = (min: unknown, max: unknown) => (typeof min === 'number' && typeof max === 'number' ? ` from ${min} to ${max}` : typeof min === 'number' ? ` of at least ${min}` : typeof max === 'number' ? ` of at most ${max}` : '');
  switch (property.type) {
    case 'string':
      return choices ? `one of ${choices.join(', ')}` : typeof property.format === 'string' ? `a ${property.format}` : 'text';
    case 'integer':
      return `a whole number${range(property.minimum, property.maximum)}`;
    case 'number':
      return `a number${range(property.minimum, property.maximum)}`;
    case 'boolean':
      return 'true or false';
    case 'array':
      return choices ? `some of ${choices.join(', ')}` : 'a list';
    default:
      return String(property.type);
  }
}

/**
 * One value typed by its field's schema, and checked for what is plain to see (a number's range,
 * a text's length, the choices); an error message when it does not fit. Patterns and formats
 * are left to the daemon, which checks the answer with the library.
 */
export function parseFieldValue(property: Property, text: string): ElicitationValue | { error: string } {
  const number = (key: string) => (typeof property[key] === 'number' ? (property[key] as number) : undefined);
  const choices = choicesOf(property);
  switch (property.type) {
    case 'integer':
    case 'number': {
      const value = Number(text.trim());
      if (text.trim() === '' || !Number.isFinite(value)) return { error: `"${text}" is not a number` };
      if (property.type === 'integer' && !Number.isInteger(value)) return { error: `${value} is not a whole number` };
      if (number('minimum') !== undefined && value < number('minimum')!) return { error: `${value} is below ${number('minimum')}` };
      if (number('maximum') !== undefined && value > number('maximum')!) return { error: `${value} is above ${number('maximum')}` };
      return value;
    }
    case 'boolean': {
      const word = text.trim().toLowerCase();
      if (['true', 'yes', 'y'].includes(word)) return true;
      if (['false', 'no', 'n'].includes(word)) return false;
      return { error: `"${text}" is not true or false` };
    }
    case 'array': {
      const items = text.split(',').map((item) => item.trim()).filter((item) => item !== '');
      const outside = choices === null ? [] : items.filter((item) => !choices.includes(item));
      return outside.length > 0 ? { error: `${outside.map((item) => `"${item}"`).join(', ')} is not one of ${choices!.join(', ')}` } : items;
    }
    default: {
      if (choices !== null && !choices.includes(text)) return { error: `"${text}" is not one of ${choices.join(', ')}` };
      if (number('minLength') !== undefined && text.length < number('minLength')!) return { error: `it takes at least ${number('minLength')} characters` };
      if (number('maxLength') !== undefined && text.length > number('maxLength')!) return { error: `it takes at most ${number('maxLength')} characters` };
      return text;
    }
  }
}

/** Whether a parsed value is the error of {@link parseFieldValue}. */
export function isFieldError(value: ElicitationValue | { error: string }): value is { error: string } {
  return typeof value === 'object' && !Array.isArray(value);
}

/**
 * The content of `--field name=value` options for `row`'s form: each value typed by its field
 * (a multi-select takes the option again, or commas), then checked against the whole schema
 * with the library's check. A usage error names the field and what it takes.
 */
export function contentFromFields(row: ElicitationRow, pairs: readonly string[]): Record<string, ElicitationValue> {
  const fields = formFields(row.requestedSchema);
  const byName = new Map(fields.map((field) => [field.name, field]));
  const content: Record<string, ElicitationValue> = {};
  const fieldList = fields.map((field) => `${field.name}${field.required ? ' (required)' : ''}: ${fieldHint(field.property)}`).join('; ');
  for (const pair of pairs) {
    const equals = pair.indexOf('=');
    if (equals <= 0) throw new CliError(`--field takes name=value, not "${pair}"`, ExitCode.usage, `the form's fields: ${fieldList}`);
    const name = pair.slice(0, equals);
    const field = byName.get(name);
    if (!field) throw new CliError(`The form of elicitation ${row.id} has no field "${name}"`, ExitCode.usage, `its fields: ${fieldList}`, 'invalid_options');
    const value = parseFieldValue(field.property, pair.slice(equals + 1));
    if (isFieldError(value)) throw new CliError(`--field ${name}: ${value.error}; it takes ${fieldHint(field.property)}`, ExitCode.usage, undefined, 'invalid_options');
    const previous = content[name];
    content[name] = Array.isArray(previous) && Array.isArray(value) ? [...previous, ...value] : value;
  }
  // What is plain to see here; the rest of the schema (lengths, ranges, patterns) is the daemon's check, with the library's words.
  const missing = fields.filter((field) => field.required && !(field.name in content)).map((field) => field.name);
  if (missing.length > 0) throw new CliError(`The form of elicitation ${row.id} needs ${missing.map((name) => `--field ${name}=…`).join(' ')}`, ExitCode.usage, `its fields: ${fieldList}`, 'invalid_options');
  return content;
}

/** How to answer `row` from another terminal (a prompt that has none to ask on). */
export function answerHint(row: ElicitationRow): string {
  if (row.mode === 'url') return `open ${row.url ?? 'the page'}, then \`agentvisor elicitations answer ${row.id} accept|decline|cancel\``;
  const fields = formFields(row.requestedSchema).map((field) => `--field ${field.name}=…`);
  return `answer with \`agentvisor elicitations answer ${row.id} accept ${fields.join(' ')}\` (or decline, cancel)`;
}

/**
 * Asks elicitations on the terminal, one at a time: the action first (accept, decline, cancel),
 * then each field of a form (Enter keeps an optional field out, or takes its default).
 * `close()` ends the question on screen and every one waiting (the turn ended, Ctrl-C).
 */
export class ElicitationAsker {
  private queue: Promise<unknown> = Promise.resolve();
  private readline: Interface | null = null;
  private closed = false;

  constructor(
    private readonly input: NodeJS.ReadStream = process.stdin,
    private readonly output: NodeJS.WriteStream = process.stderr,
  ) {}

  /** Whether questions can be asked: stdin is a terminal. */
  get interactive(): boolean {
    return this.input.isTTY === true;
  }

  /**
   * Asks `row` once the questions before it are answered; resolves with the answer, or null
   * when the asker was closed first. `retry` (after the daemon refused a form) asks again.
   */
  ask(row: ElicitationRow, issue?: string): Promise<ElicitationAnswer | null> {
    const answer = this.queue.then(() => this.askNow(row, issue));
    this.queue = answer.catch(() => undefined);
    return answer;
  }

  /** Ends the question on screen and every one waiting. */
  close(): void {
    this.closed = true;
    this.readline?.close();
  }

  private async askNow(row: ElicitationRow, issue: string | undefined): Promise<ElicitationAnswer | null> {
    if (this.closed) return null;
    const style = styleFor(this.output);
    if (issue) this.output.write(`${style.red('the agent cannot take that:')} ${issue}\n`);
    else {
      this.output.write(`${style.yellow('?')} ${style.bold(`${row.agent} asks`)}: ${row.message}\n`);
      if (row.mode === 'url') this.output.write(`  open: ${row.url ?? '(no address given)'}\n`);
    }
    const action = await this.question(row.mode === 'url' ? 'Done? [a]ccept, [d]ecline, [c]ancel (Enter: accept): ' : 'Fill it in? [a]ccept, [d]ecline, [c]ancel (Enter: accept): ', (reply) => {
      const word = reply.trim().toLowerCase();
      if (word === '' || 'accept'.startsWith(word)) return 'accept' as const;
      if ('decline'.startsWith(word)) return 'decline' as const;
      if ('cancel'.startsWith(word)) return 'cancel' as const;
      return { error: 'a, d or c' };
    });
    if (action === null) return null;
    if (action !== 'accept') return { action };
    if (row.mode === 'url') return { action: 'accept' };
    const content: Record<string, ElicitationValue> = {};
    for (const field of formFields(row.requestedSchema)) {
      const fallback = field.property.default as ElicitationValue | undefined;
      const label = `${field.property.title ?? field.name}${field.property.description ? style.dim(` — ${field.property.description}`) : ''}`;
      const note = `${fieldHint(field.property)}${field.required ? ', required' : fallback !== undefined ? `, Enter: ${String(fallback)}` : ', Enter: leave out'}`;
      const value = await this.question<ElicitationValue | typeof LEAVE_OUT>(`  ${label} ${style.dim(`(${note})`)}: `, (reply) => {
        if (reply.trim() === '') return fallback !== undefined ? fallback : field.required ? { error: 'it is required' } : LEAVE_OUT;
        return parseFieldValue(field.property, reply);
      });
      if (value === null) return null;
      if (value !== LEAVE_OUT) content[field.name] = value;
    }
    return { action: 'accept', content };
  }

  /** One question, asked again (with why) until `accept` takes the reply; null when the asker was closed. */
  private question<T>(text: string, accept: (reply: string) => T | { error: string }): Promise<T | null> {
    if (this.closed) return Promise.resolve(null);
    const readline = createInterface({ input: this.input, output: this.output, terminal: true });
    this.readline = readline;
    // Ctrl-C while the terminal is in raw mode reaches readline, not the process: pass it on.
    readline.on('SIGINT', () => process.kill(process.pid, 'SIGINT'));
    return new Promise<T | null>((resolve) => {
      let answered = false;
      readline.on('close', () => {
        if (!answered) resolve(null);
      });
      const ask = () =>
        readline.question(text, (reply) => {
          const value = accept(reply);
          if (isAnswerError(value)) {
            this.output.write(`  ${styleFor(this.output).red(value.error)}\n`);
            return ask();
          }
          answered = true;
          resolve(value);
          readline.close();
        });
      ask();
    }).finally(() => {
      if (this.readline === readline) this.readline = null;
    });
  }
}

/** Whether a reply was refused (`{ error }`), not taken. */
function isAnswerError(value: unknown): value is { error: string } {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && 'error' in value;
}

/** A field left out of the content (an optional one answered with Enter). */
const LEAVE_OUT = Symbol('leave out');
