/** The stores' JSON for an entry: the text-chunk shortcut writes the same JSON value as JSON.stringify. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { entryJson } from '../../services/store/entry-json.js';

const chunk = (text: string, sessionUpdate = 'agent_message_chunk') => ({ sessionUpdate, content: { type: 'text', text } });

describe('entryJson', () => {
  it('a text chunk: the same JSON value as JSON.stringify, for any text', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), fc.constantFrom('agent_message_chunk', 'agent_thought_chunk', 'user_message_chunk'), (text, kind) => {
        const value = chunk(text, kind);
        expect(JSON.parse(entryJson(value))).toEqual(JSON.parse(JSON.stringify(value)));
      }),
    );
    expect(entryJson(chunk('a "quoted"\nline \u2028'))).toBe(JSON.stringify(chunk('a "quoted"\nline \u2028')));
  });

  it('anything else, and a chunk with one more field, is JSON.stringify exactly', () => {
    const extra = { ...chunk('x'), _meta: { a: 1 } };
    const richer = { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'x', annotations: { priority: 1 } } };
    for (const value of [extra, richer, { sessionUpdate: 'plan', entries: [] }, chunk('x', 'tool_call'), [1, 2], 'text', 42, null]) {
      expect(entryJson(value)).toBe(JSON.stringify(value));
    }
    expect(entryJson(undefined)).toBe('null');
  });
});
