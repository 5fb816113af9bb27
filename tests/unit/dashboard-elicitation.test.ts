/**
 * An elicitation's form without a browser (dashboard/elicitation-form.js): the fields built
 * from the schema an agent requested (strings with their format, numbers, integers, booleans,
 * enums plain and titled, multi-selects, defaults, what is required), the answer's content
 * from what was filled in and each mistake by field, and the dialog's text and link.
 */
import { describe, expect, it } from 'vitest';
import type { ElicitationRow } from '../../daemon/api-types.js';
import { elicitationView, formContent, formFields } from '../../dashboard/elicitation-form.js';

/** The fixture agent's default form. */
const fixtureSchema: ElicitationRow['requestedSchema'] = {
  type: 'object',
  properties: {
    name: { type: 'string', title: 'Name', minLength: 1 },
    count: { type: 'integer', minimum: 1, maximum: 5 },
    color: { type: 'string', enum: ['red', 'green'] },
    ok: { type: 'boolean' },
  },
  required: ['name'],
};

describe('formFields', () => {
  it("builds the fixture's form: a text, an integer with its bounds, an enum, a checkbox; the required one marked", () => {
    expect(formFields(fixtureSchema)).toEqual([
      { name: 'name', label: 'Name', description: null, kind: 'text', inputType: 'text', required: true, choices: [], initial: null, limits: { minLength: 1 } },
      { name: 'count', label: 'count', description: null, kind: 'integer', inputType: 'text', required: false, choices: [], initial: null, limits: { min: 1, max: 5 } },
      {
        name: 'color',
        label: 'color',
        description: null,
        kind: 'enum',
        inputType: 'text',
        required: false,
        choices: [
          { value: 'red', label: 'red' },
          { value: 'green', label: 'green' },
        ],
        initial: null,
        limits: {},
      },
      { name: 'ok', label: 'ok', description: null, kind: 'boolean', inputType: 'text', required: false, choices: [], initial: null, limits: {} },
    ]);
  });

  it('titled choices, multi-selects, formats, descriptions and defaults; a type it cannot ask for', () => {
    const fields = formFields({
      type: 'object',
      properties: {
        size: { type: 'string', oneOf: [{ const: 's', title: 'Small' }], default: 's' },
        tags: { type: 'array', items: { anyOf: [{ const: 'a', title: 'Alpha' }, { const: 'b', title: 'Beta' }] }, minItems: 1, maxItems: 2, default: ['b'] },
        plain: { type: 'array', items: { type: 'string', enum: ['x', 'y'] } },
        email: { type: 'string', format: 'email', description: 'where to write', default: 'a@b.c' },
        site: { type: 'string', format: 'uri' },
        when: { type: 'string', format: 'date-time' },
        ratio: { type: 'number', default: 0.5 },
        yes: { type: 'boolean', default: true },
        odd: { type: 'object' },
      },
    });
    const byName = Object.fromEntries(fields.map((field) => [field.name, field]));
    expect(byName.size).toMatchObject({ kind: 'enum', choices: [{ value: 's', label: 'Small' }], initial: 's' });
    expect(byName.tags).toMatchObject({ kind: 'multi', choices: [{ value: 'a', label: 'Alpha' }, { value: 'b', label: 'Beta' }], limits: { minItems: 1, maxItems: 2 }, initial: ['b'] });
    expect(byName.plain).toMatchObject({ kind: 'multi', choices: [{ value: 'x', label: 'x' }, { value: 'y', label: 'y' }] });
    expect(byName.email).toMatchObject({ kind: 'text', inputType: 'email', description: 'where to write', initial: 'a@b.c' });
    expect([byName.site!.inputType, byName.when!.inputType]).toEqual(['url', 'text']);
    expect(byName.ratio).toMatchObject({ kind: 'number', initial: 0.5 });
    expect(byName.yes).toMatchObject({ kind: 'boolean', initial: true });
    expect(byName.odd!.kind).toBe('unsupported');
    expect(formFields(null)).toEqual([]);
  });
});

describe('formContent', () => {
  const fields = formFields(fixtureSchema);

  it("the content as the fixture's form is answered: typed values, an unticked box false, empty optional fields left out", () => {
    expect(formContent(fields, { name: 'Ada', count: '2', color: 'red', ok: true })).toEqual({ content: { name: 'Ada', count: 2, color: 'red', ok: true } });
    expect(formContent(fields, { name: 'Ada', count: ' ', color: '', ok: false })).toEqual({ content: { name: 'Ada', ok: false } });
  });

  it('each mistake by its field, and nothing to send', () => {
    expect(formContent(fields, { name: '', count: '9', color: 'blue', ok: false })).toEqual({ errors: { name: 'required', count: 'must be at most 5', color: 'pick one of the choices' } });
    expect(formContent(fields, { name: 'A', count: '1.5' })).toEqual({ errors: { count: 'must be a whole number' } });
    expect(formContent(fields, { name: 'A', count: 'many' })).toEqual({ errors: { count: 'must be a number' } });
    expect(formContent(fields, { name: 'A', count: '0' })).toEqual({ errors: { count: 'must be at least 1' } });
  });

  it('text limits and patterns, multi-select counts, a required field of a kind the page cannot ask for', () => {
    const more = formFields({
      type: 'object',
      properties: {
        code: { type: 'string', pattern: '^[A-Z]{3}$', maxLength: 3 },
        tags: { type: 'array', items: { type: 'string', enum: ['a', 'b', 'c'] }, minItems: 1, maxItems: 2 },
        odd: { type: 'object' },
      },
      required: ['odd'],
    });
    expect(formContent(more, { code: 'abc', tags: [] })).toEqual({ errors: { code: 'must match ^[A-Z]{3}$', tags: 'pick at least 1', odd: 'this page cannot fill in this field: decline, or answer with the CLI' } });
    expect(formContent(more.slice(0, 2), { code: 'ABCD', tags: ['a', 'b', 'c'] })).toEqual({ errors: { code: 'at most 3 characters', tags: 'pick at most 2' } });
    expect(formContent(more.slice(0, 2), { code: 'ABC', tags: ['a'] })).toEqual({ content: { code: 'ABC', tags: ['a'] } });
    // An optional multi-select left empty is an empty list.
    expect(formContent(formFields({ type: 'object', properties: { tags: { type: 'array', items: { enum: ['a'] } } } }), {})).toEqual({ content: { tags: [] } });
  });
});

describe('elicitationView', () => {
  const row: ElicitationRow = {
    id: 'e1',
    agent: 'codex',
    sessionId: 's1',
    toolCallId: null,
    mode: 'url',
    message: 'Log in',
    requestedSchema: null,
    url: 'https://example.test/login',
    elicitationId: 'x',
    requestedAt: 0,
  };

  it('says who asks and what; an http(s) URL is a link, anything else only text', () => {
    expect(elicitationView(row)).toEqual({ heading: 'codex asks', message: 'Log in', mode: 'url', url: 'https://example.test/login', href: 'https://example.test/login' });
    expect(elicitationView({ ...row, url: 'javascript:alert(1)' }).href).toBeNull();
    expect(elicitationView({ ...row, sessionId: null, mode: 'form', url: null })).toMatchObject({ heading: 'codex asks (no session: a login or a setup)', url: '', href: null });
  });
});
