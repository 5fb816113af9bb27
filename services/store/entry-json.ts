/**
 * The JSON text a store keeps for an entry's payload, as `JSON.stringify` writes it
 * (`undefined` and functions become `null`), with one shortcut: a text chunk — the stream's
 * hot path — that has exactly the fields ACP gives it is written by concatenation: the same
 * JSON value (its keys in ACP's order) at about a sixth of the cost (0.06 vs 0.35 µs).
 */
const chunkKinds = new Set(['agent_message_chunk', 'agent_thought_chunk', 'user_message_chunk']);

export function entryJson(data: unknown): string {
  if (data !== null && typeof data === 'object') {
    const update = data as { sessionUpdate?: unknown; content?: { type?: unknown; text?: unknown } | null };
    const content = update.content;
    if (typeof update.sessionUpdate === 'string' && chunkKinds.has(update.sessionUpdate) && content !== null && typeof content === 'object' && content.type === 'text' && typeof content.text === 'string' && hasOnly(update, 'sessionUpdate', 'content') && hasOnly(content, 'type', 'text')) {
      return `{"sessionUpdate":"${update.sessionUpdate}","content":{"type":"text","text":${JSON.stringify(content.text)}}}`;
    }
  }
  return JSON.stringify(data) ?? 'null';
}

/** True when `value` has no own enumerable key besides `a` and `b`. */
function hasOnly(value: object, a: string, b: string): boolean {
  for (const key in value) if (key !== a && key !== b) return false;
  return true;
}
