/**
 * The commonest session update — a text chunk with exactly the fields ACP gives it — told
 * apart without a schema: the stream's hot path. The ACP client accepts it without the full
 * schema, and the stores write its JSON by concatenation.
 */

/** A text chunk: `{ sessionUpdate: <kind>, content: { type: 'text', text } }` and nothing else. */
export interface PlainTextChunk {
  sessionUpdate: 'agent_message_chunk' | 'agent_thought_chunk' | 'user_message_chunk';
  content: { type: 'text'; text: string };
}

const textChunkKinds: ReadonlySet<unknown> = new Set(['agent_message_chunk', 'agent_thought_chunk', 'user_message_chunk']);

/** True when `update` is a {@link PlainTextChunk}, with no other field at either level. */
export function isPlainTextChunk(update: unknown): update is PlainTextChunk {
  if (update === null || typeof update !== 'object') return false;
  const { sessionUpdate, content } = update as { sessionUpdate?: unknown; content?: { type?: unknown; text?: unknown } | null };
  if (!textChunkKinds.has(sessionUpdate) || content === null || typeof content !== 'object' || content.type !== 'text' || typeof content.text !== 'string') return false;
  return hasOnly(update, 'sessionUpdate', 'content') && hasOnly(content, 'type', 'text');
}

/** True when `block` is `{ type: 'text', text }` and nothing else: the commonest prompt block, well formed without a schema. */
export function isPlainTextBlock(block: unknown): block is { type: 'text'; text: string } {
  if (block === null || typeof block !== 'object') return false;
  const { type, text } = block as { type?: unknown; text?: unknown };
  return type === 'text' && typeof text === 'string' && hasOnly(block, 'type', 'text');
}

/** True when `value` has no enumerable key besides `a` and `b`. */
function hasOnly(value: object, a: string, b: string): boolean {
  for (const key in value) if (key !== a && key !== b) return false;
  return true;
}
