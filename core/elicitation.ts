/**
 * Elicitation (ACP `elicitation/create`): the agent asks the user for structured input (a
 * form) or to visit a URL. The public vocabulary, and the check of a form answer against the
 * schema the agent requested. Pure.
 */
import type { CreateElicitationRequest, ElicitationSchema } from './acp-types.js';

/** A form field's value, as ACP carries it. */
export type ElicitationValue = string | number | boolean | string[];

/** How an elicitation was answered. */
export type ElicitationAnswer = { action: 'accept'; content?: Record<string, ElicitationValue> } | { action: 'decline' } | { action: 'cancel' };

/** An elicitation as the application sees it. */
export interface ElicitationRequestView {
  agent: string;
  /** The session it belongs to; null for one scoped to a request (a login, a session/new). */
  sessionId: string | null;
  /** The tool call it belongs to, when the agent said. */
  toolCallId: string | null;
  /** `form` (fill in `requestedSchema`) or `url` (visit `url`); a request of another mode is declined before any policy sees it. */
  mode: 'form' | 'url';
  message: string;
  /** With mode `form`: what to ask for (a flat object of string, number, integer, boolean and multi-select fields). */
  requestedSchema: ElicitationSchema | null;
  /** With mode `url`: the page to open, and the id its `elicitation:complete` event will carry. */
  url: string | null;
  elicitationId: string | null;
}

/** An elicitation with the `'ask'` policy: answer it once with `respond`. */
export interface ElicitationRequest extends ElicitationRequestView {
  /**
   * Answers it: `accept` (with the form's `content`, checked against `requestedSchema` —
   * `invalid_options` is thrown, and the request stays open, when it does not match),
   * `decline` or `cancel`. Later answers are ignored.
   */
  respond(action: 'accept' | 'decline' | 'cancel', content?: Record<string, ElicitationValue>): void;
  /** Resolves with the answer once it is settled: by `respond`, by the turn's cancel, or by `elicitationTimeoutMs` (then `cancel`). */
  settled: Promise<ElicitationAnswer>;
}

/**
 * How elicitations are answered: `'decline'` (the default: the client then advertises no
 * elicitation at all), `'ask'` (`elicitation:request` events), or a function of the request.
 *
 * @example
 * createSupervisor({ elicitation: async (request) => (request.mode === 'form' ? { action: 'accept', content: { name: 'Ada' } } : { action: 'decline' }) });
 */
export type ElicitationPolicy = 'decline' | 'ask' | ((request: ElicitationRequestView) => ElicitationAnswer | Promise<ElicitationAnswer>);

/** The request's view, from the agent's params (already checked against ACP's schema). */
export function elicitationView(agent: string, params: CreateElicitationRequest): ElicitationRequestView {
  const raw = params as Record<string, unknown>;
  const text = (key: string) => (typeof raw[key] === 'string' ? (raw[key] as string) : null);
  return {
    agent,
    sessionId: text('sessionId'),
    toolCallId: text('toolCallId'),
    mode: raw.mode === 'url' ? 'url' : 'form',
    message: params.message,
    requestedSchema: raw.mode === 'form' ? ((raw.requestedSchema as ElicitationSchema | undefined) ?? null) : null,
    url: text('url'),
    elicitationId: text('elicitationId'),
  };
}

/** What is wrong with an answer to `request`, or null when it fits: a form's content against its schema. */
export function elicitationAnswerIssue(request: ElicitationRequestView, answer: ElicitationAnswer): string | null {
  if (!answer || typeof answer !== 'object' || !['accept', 'decline', 'cancel'].includes(answer.action)) return "the action must be 'accept', 'decline' or 'cancel'";
  if (answer.action !== 'accept') return null;
  if (request.mode === 'url') return answer.content === undefined ? null : 'a url elicitation is accepted without content';
  const schema = request.requestedSchema ?? {};
  const content = answer.content ?? {};
  if (typeof content !== 'object' || content === null || Array.isArray(content)) return 'the content must be an object';
  const properties = schema.properties ?? {};
  for (const name of schema.required ?? []) if (!(name in content)) return `the field "${name}" is required`;
  for (const [name, value] of Object.entries(content)) {
    const property = properties[name] as Record<string, unknown> | undefined;
    if (!property) return `the form has no field "${name}"`;
    const issue = valueIssue(property, value);
    if (issue) return `the field "${name}" ${issue}`;
  }
  return null;
}

function valueIssue(property: Record<string, unknown>, value: unknown): string | null {
  const number = (key: string) => (typeof property[key] === 'number' ? (property[key] as number) : undefined);
  switch (property.type) {
    case 'string': {
      if (typeof value !== 'string') return 'must be a string';
      const allowed = stringChoices(property);
      if (allowed && !allowed.includes(value)) return `must be one of ${allowed.join(', ')}`;
      if (number('minLength') !== undefined && value.length < number('minLength')!) return `must be at least ${number('minLength')} characters`;
      if (number('maxLength') !== undefined && value.length > number('maxLength')!) return `must be at most ${number('maxLength')} characters`;
      if (typeof property.pattern === 'string' && !matches(property.pattern, value)) return `must match ${property.pattern}`;
      if (typeof property.format === 'string' && !formatMatches(property.format, value)) return `must be a valid ${property.format}`;
      return null;
    }
    case 'number':
    case 'integer': {
      if (typeof value !== 'number' || !Number.isFinite(value)) return 'must be a number';
      if (property.type === 'integer' && !Number.isInteger(value)) return 'must be a whole number';
      if (number('minimum') !== undefined && value < number('minimum')!) return `must be at least ${number('minimum')}`;
      if (number('maximum') !== undefined && value > number('maximum')!) return `must be at most ${number('maximum')}`;
      return null;
    }
    case 'boolean':
      return typeof value === 'boolean' ? null : 'must be true or false';
    case 'array': {
      if (!Array.isArray(value) || value.some((item) => typeof item !== 'string')) return 'must be a list of strings';
      const items = (property.items ?? {}) as Record<string, unknown>;
      const allowed = Array.isArray(items.enum) ? (items.enum as string[]) : Array.isArray(items.anyOf) ? (items.anyOf as Array<{ const: string }>).map((option) => option.const) : null;
      if (allowed && value.some((item) => !allowed.includes(item as string))) return `must hold only ${allowed.join(', ')}`;
      if (number('minItems') !== undefined && value.length < number('minItems')!) return `must hold at least ${number('minItems')}`;
      if (number('maxItems') !== undefined && value.length > number('maxItems')!) return `must hold at most ${number('maxItems')}`;
      return null;
    }
    default:
      return `has a type this client cannot check (${String(property.type)})`;
  }
}

function stringChoices(property: Record<string, unknown>): string[] | null {
  if (Array.isArray(property.enum)) return property.enum as string[];
  if (Array.isArray(property.oneOf)) return (property.oneOf as Array<{ const: string }>).map((option) => option.const);
  return null;
}

/** The agent's pattern against the user's answer; a pattern that does not compile checks nothing. */
function matches(pattern: string, value: string): boolean {
  try {
    return new RegExp(pattern, 'u').test(value);
  } catch {
    return true;
  }
}

function formatMatches(format: string, value: string): boolean {
  switch (format) {
    case 'email':
      return /^[^\s@]+@[^\s@]+$/.test(value);
    case 'uri':
      return URL.canParse(value);
    case 'date':
      return /^\d{4}-\d{2}-\d{2}$/.test(value) && !Number.isNaN(Date.parse(value));
    case 'date-time':
      return !Number.isNaN(Date.parse(value)) && /^\d{4}-\d{2}-\d{2}T/.test(value);
    default:
      return true;
  }
}
