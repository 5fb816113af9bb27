/**
 * The hot path's shortcuts past ACP's schema (a plain text prompt block, a bare stop reason)
 * accept exactly what the schema accepts for those shapes, and anything else still goes
 * through the schema.
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { contentBlockIssue, ProtocolViolation, validatePromptResponse } from '../../services/acp-client.service.js';

interface Schema {
  safeParse(value: unknown): { success: boolean };
}
const sdkEntry = createRequire(import.meta.url).resolve('@agentclientprotocol/sdk');
const schemas = (await import(pathToFileURL(join(dirname(sdkEntry), '..', 'schema', 'zod.gen.js')).href)) as { zContentBlock: Schema; zPromptResponse: Schema };
const stopReasons = ['end_turn', 'max_tokens', 'max_turn_requests', 'refusal', 'cancelled'];

describe('shortcuts past the schema', () => {
  it('a plain text block of any text: accepted, as the schema accepts it', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (text) => {
        const block = { type: 'text', text };
        expect(schemas.zContentBlock.safeParse(block).success).toBe(true);
        expect(contentBlockIssue(block)).toBeNull();
      }),
    );
  });

  it('a text block with a wrong or extra field gets the schema\'s own answer', () => {
    const variants = [
      { type: 'text', text: 5 },
      { type: 'text' },
      { type: 'text', text: 'x', annotations: 'loud' },
      { type: 'text', text: 'x', annotations: { priority: 1 } },
      { type: 'text', text: 'x', _meta: { a: 1 } },
      { type: 'texts', text: 'x' },
      { type: 'image', text: 'x' },
      null,
      'text',
    ];
    for (const block of variants) expect(contentBlockIssue(block) === null).toBe(schemas.zContentBlock.safeParse(block).success);
    expect(contentBlockIssue({ type: 'text', text: 5 })).not.toBeNull();
    expect(contentBlockIssue({ type: 'image', text: 'x' })).not.toBeNull();
  });

  it('a bare known stop reason: returned as it is, as the schema accepts it', () => {
    for (const stopReason of stopReasons) {
      const answer = { stopReason };
      expect(schemas.zPromptResponse.safeParse(answer).success).toBe(true);
      expect(validatePromptResponse(answer)).toBe(answer);
    }
  });

  it('an unknown stop reason, a missing one, or a richer answer goes through the schema', () => {
    expect(() => validatePromptResponse({ stopReason: 'done' })).toThrow(ProtocolViolation);
    expect(() => validatePromptResponse({})).toThrow(ProtocolViolation);
    expect(() => validatePromptResponse(null)).toThrow(ProtocolViolation);
    expect(() => validatePromptResponse({ stopReason: 'end_turn', _meta: 'not an object' })).not.toThrow(); // the schema repairs a bad _meta to its default
    expect(validatePromptResponse({ stopReason: 'end_turn', _meta: { a: 1 } })).toMatchObject({ stopReason: 'end_turn', _meta: { a: 1 } });
  });
});
