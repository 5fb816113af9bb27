/**
 * The packed transcript row's format (schema versions 2 and 3): many entries of one session
 * in one row, one JSON triple a line, plain text chunks written compact; writing, slicing and
 * measuring its lines.
 */
import type { PlainTextChunk } from '../../../core/text-chunk.js';
import type { TranscriptKind } from '../../../core/store.js';
import { entryJson } from '../entry-json.js';

/** The most entries a transcript row holds; an entry's seq is `rowSeq * TRANSCRIPT_ROW_ENTRIES + index`. */
export const TRANSCRIPT_ROW_ENTRIES = 4096;

/** A packed row's `data` stops growing at about this many characters (a larger entry gets a row of its own). */
export const maxPackedChars = 1 << 20;

/**
 * A packed row's data is a JSON array of `[at, kind, data]` triples, one a line: `[` then
 * the triples joined by `,\n`, then `]`. JSON.stringify never writes a raw line feed, so an
 * entry is found by counting line feeds, and read without parsing the others. A plain text
 * chunk (core/text-chunk.ts), the bulk of a stream, is written compact, `[at, code, text]`:
 * kind `update`, `code` its sessionUpdate's index in {@link chunkKinds}, `text` its content's
 * text — about a quarter of the characters of the whole update, and told apart from a triple
 * by the number where a triple has its kind's string.
 */
export function packedLine(at: number, kind: string, json: string): string {
  return `[${at},${kindJsons.get(kind) ?? JSON.stringify(kind)},${json}]`;
}

const kindJsons = new Map<string, string>(
  (['update', 'prompt', 'prompt_result', 'permission', 'permission_outcome', 'elicitation', 'elicitation_outcome'] satisfies TranscriptKind[]).map((kind) => [kind, JSON.stringify(kind)]),
);

/** The bytes a kind's JSON has beyond its characters: 0 for the kinds of core/store.ts. */
export function kindExtraBytes(kind: string): number {
  if (kindJsons.has(kind)) return 0;
  const json = JSON.stringify(kind);
  return Buffer.byteLength(json) - json.length;
}

/** Entries `from` (inclusive) to `to` (exclusive) of a packed row's `count`, as a JSON array of triples. */
export function packedSlice(data: string, count: number, from: number, to: number): string {
  if (from === 0 && to === count) return data;
  let start = 1;
  for (let index = 0; index < from; index++) start = data.indexOf('\n', start) + 1;
  let end = data.length - 1;
  if (to < count) {
    end = start;
    for (let index = from; index < to; index++) end = data.indexOf('\n', end) + 1;
    end -= 2; // the line feed and the comma before it
  }
  return `[${data.slice(start, end)}]`;
}

/** A packed row's entries, one JSON triple each. */
export function packedLines(data: string): string[] {
  return data.slice(1, -1).split(',\n');
}

/** A line's time as written, and its payload's bytes (a compact chunk's as the whole update's JSON). */
export function splitLine(line: string): { at: string; payloadBytes: number } {
  const comma = line.indexOf(',');
  const at = line.slice(1, comma);
  if (line[comma + 1] !== '"') {
    const next = line.indexOf(',', comma + 1);
    return { at, payloadBytes: chunkWrapperChars[Number(line.slice(comma + 1, next))]! + Buffer.byteLength(line.slice(next + 1, -1)) };
  }
  // The kind: a JSON string from comma + 1, its closing quote the first one not escaped.
  let index = comma + 2;
  while (line[index] !== '"') index += line[index] === '\\' ? 2 : 1;
  return { at, payloadBytes: Buffer.byteLength(line.slice(index + 2, -1)) };
}

/** The sessionUpdate of a compact chunk by its code. The order is part of the file format: append only. */
const chunkKinds: readonly PlainTextChunk['sessionUpdate'][] = ['agent_message_chunk', 'agent_thought_chunk', 'user_message_chunk'];
export const chunkCodes = new Map(chunkKinds.map((kind, code) => [kind, code]));
/** What a chunk's update JSON has beyond its text's JSON (all ASCII), by code. */
export const chunkWrapperChars = chunkKinds.map((kind) => entryJson({ sessionUpdate: kind, content: { type: 'text', text: '' } }).length - 2);

/** The update a compact chunk line stands for. */
export function chunkOf(code: number, text: unknown): PlainTextChunk {
  const sessionUpdate = chunkKinds[code];
  if (sessionUpdate === undefined || typeof text !== 'string') throw new Error(`a transcript row holds a compact chunk of unknown code ${code}`);
  return { sessionUpdate, content: { type: 'text', text } };
}
