/**
 * docs/acp.md keeps a table row for every ACP method and notification (both directions) and
 * every `sessionUpdate` kind of the installed SDK's stable schema. The names come from the
 * SDK itself — its exported `AGENT_METHODS`, `CLIENT_METHODS` and `PROTOCOL_METHODS`, the
 * `x-method` annotations of `schema/v1/schema.json`, and the `sessionUpdate` constants of
 * that schema's `SessionUpdate` — so an SDK upgrade that adds one fails here, naming it,
 * until the page says what agentvisor does with it.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { AGENT_METHODS, CLIENT_METHODS, PROTOCOL_METHODS } from '@agentclientprotocol/sdk';

interface JsonSchema {
  $defs: Record<string, { 'x-method'?: unknown; 'x-side'?: unknown; oneOf?: Array<{ properties?: { sessionUpdate?: { const?: unknown } } }> }>;
}

const schemaPath = createRequire(import.meta.url).resolve('@agentclientprotocol/sdk/schema/v1/schema.json');
const schema = JSON.parse(readFileSync(schemaPath, 'utf8')) as JsonSchema;
const page = readFileSync(new URL('../../docs/acp.md', import.meta.url), 'utf8');

/** The methods the schema annotates, by the side that handles them (`agent`, `client`, `protocol`). */
function annotatedMethods(): Map<string, string> {
  const methods = new Map<string, string>();
  for (const definition of Object.values(schema.$defs)) {
    if (typeof definition['x-method'] === 'string' && typeof definition['x-side'] === 'string') methods.set(definition['x-method'], definition['x-side']);
  }
  return methods;
}

/** Every `sessionUpdate` kind of the schema's `SessionUpdate`. */
function updateKinds(): string[] {
  return (schema.$defs.SessionUpdate?.oneOf ?? []).map((variant) => variant.properties?.sessionUpdate?.const).filter((kind): kind is string => typeof kind === 'string');
}

/** The first cell of each table row that starts with a name in backticks: `| \`name\` | …`. */
function rowNames(markdown: string): Set<string> {
  const names = new Set<string>();
  for (const line of markdown.split('\n')) {
    const match = /^\| `([^`]+)` \|/.exec(line);
    if (match) names.add(match[1]!);
  }
  return names;
}

function missingRows(markdown: string, names: Iterable<string>): string[] {
  const rows = rowNames(markdown);
  return [...new Set(names)].filter((name) => !rows.has(name)).sort();
}

const agentMethods = Object.values(AGENT_METHODS);
const clientMethods = Object.values(CLIENT_METHODS);
const protocolMethods = Object.values(PROTOCOL_METHODS);

describe('the installed schema, as read here', () => {
  it('names methods on both sides and update kinds (a moved or renamed schema would make the checks below vacuous)', () => {
    expect(agentMethods).toContain('session/prompt');
    expect(clientMethods).toContain('session/update');
    expect(protocolMethods).toContain('$/cancel_request');
    expect(updateKinds()).toContain('agent_message_chunk');
    expect(annotatedMethods().size).toBeGreaterThan(0);
  });

  it("the SDK's method constants and the schema's annotations agree, side by side", () => {
    const bySide = (side: string) => [...annotatedMethods()].filter(([, s]) => s === side).map(([method]) => method).sort();
    expect(bySide('agent')).toEqual([...agentMethods].sort());
    expect(bySide('client')).toEqual([...clientMethods].sort());
    expect(bySide('protocol')).toEqual([...protocolMethods].sort());
  });
});

describe('docs/acp.md', () => {
  it('has a row for every method and notification of the stable schema', () => {
    const methods = [...agentMethods, ...clientMethods, ...protocolMethods, ...annotatedMethods().keys()];
    const missing = missingRows(page, methods);
    expect(missing, `docs/acp.md has no row "| \`<method>\` |" for: ${missing.join(', ')}`).toEqual([]);
  });

  it('has a row for every sessionUpdate kind of the stable schema', () => {
    const missing = missingRows(page, updateKinds());
    expect(missing, `docs/acp.md has no row "| \`<kind>\` |" for: ${missing.join(', ')}`).toEqual([]);
  });

  it('gives each method the direction the schema gives it', () => {
    const cells = new Map<string, string>();
    for (const line of page.split('\n')) {
      const match = /^\| `([^`]+)` \| ([^|]+) \|/.exec(line);
      if (match) cells.set(match[1]!, match[2]!.trim());
    }
    const expected: Array<[string, string]> = [
      ...agentMethods.map((method): [string, string] => [method, 'client → agent']),
      ...clientMethods.map((method): [string, string] => [method, 'agent → client']),
      ...protocolMethods.map((method): [string, string] => [method, 'both']),
    ];
    const wrong = expected
      .filter(([method, direction]) => cells.get(method) !== direction)
      .map(([method, direction]) => `${method}: "${direction}" expected, ${cells.has(method) ? `"${cells.get(method)}" found` : 'no row'}`);
    expect(wrong, `docs/acp.md gives these methods the wrong direction: ${wrong.join('; ')}`).toEqual([]);
  });

  it('keeps the unstable parts agentvisor uses: session/set_model and the models field', () => {
    expect(missingRows(page, ['session/set_model', 'models'])).toEqual([]);
  });

  it('a row is a table row starting with the name: a mention in prose, or a name in a later cell, is not one', () => {
    const prose = 'agentvisor sends `session/prompt` for each turn.\n| kind | `session/cancel` |\n|`logout`| no spaces |';
    expect(missingRows(prose, ['session/prompt', 'session/cancel', 'logout'])).toEqual(['logout', 'session/cancel', 'session/prompt']);
    expect(missingRows('| `logout` | client → agent | not used |', ['logout'])).toEqual([]);
  });
});
