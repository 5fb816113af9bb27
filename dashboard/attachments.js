// @ts-check
/**
 * Files attached to a prompt, as ACP content blocks: an image as an `image` block, audio as
 * `audio`, text as an embedded `resource` with its text, anything else as an embedded
 * `resource` with a base64 `blob` — sent with the prompt's text as `{ content }`. Pure: the
 * prompt box reads the files' bytes (tests/unit/dashboard-attachments.test.ts).
 */

/** @import { ContentBlock } from '../index.js' */

/**
 * The daemon takes bodies up to 1 MiB (docs/http-api.md, "Prompts"); the attachments' blocks
 * may take this much of it, leaving room for the text and the JSON around them.
 */
export const ATTACHMENTS_MAX_CHARS = 1000 * 1024;

/**
 * A file attached: its name, its block, and how many characters the block takes in the body.
 * @typedef {{ name: string, kind: 'image' | 'audio' | 'text' | 'binary', size: number, block: ContentBlock, chars: number }} Attachment
 */

/**
 * Standard base64 of bytes (padded), as ACP carries binary data.
 * @param {Uint8Array} bytes
 */
export function toBase64(bytes) {
  let binary = '';
  // In slices: String.fromCharCode takes its arguments on the stack.
  for (let start = 0; start < bytes.length; start += 0x8000) binary += String.fromCharCode(...bytes.subarray(start, start + 0x8000));
  return btoa(binary);
}

/**
 * Whether bytes are text: valid UTF-8 without a NUL.
 * @param {Uint8Array} bytes
 */
export function looksLikeText(bytes) {
  if (bytes.includes(0)) return false;
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    return true;
  } catch {
    return false;
  }
}

/**
 * A file as the block the prompt carries. Its `uri` is its name: the browser does not say
 * where the file is, and the agent gets its content in the block anyway.
 * @param {{ name: string, type: string, bytes: Uint8Array }} file `type`: the browser's MIME
 *   type for it ('' when it does not know).
 * @returns {Attachment}
 */
export function attachmentOf({ name, type, bytes }) {
  const mimeType = /^[\w.+-]+\/[\w.+-]+$/.test(type) ? type : '';
  /** @type {Attachment['kind']} */
  let kind;
  /** @type {ContentBlock} */
  let block;
  if (mimeType.startsWith('image/')) {
    kind = 'image';
    block = { type: 'image', mimeType, data: toBase64(bytes) };
  } else if (mimeType.startsWith('audio/')) {
    kind = 'audio';
    block = { type: 'audio', mimeType, data: toBase64(bytes) };
  } else if (looksLikeText(bytes)) {
    kind = 'text';
    block = { type: 'resource', resource: { uri: name, text: new TextDecoder().decode(bytes), mimeType: mimeType || 'text/plain' } };
  } else {
    kind = 'binary';
    block = { type: 'resource', resource: { uri: name, blob: toBase64(bytes), mimeType: mimeType || 'application/octet-stream' } };
  }
  return { name, kind, size: bytes.length, block, chars: JSON.stringify(block).length };
}

/**
 * Whether one more attachment still fits in a prompt's body; the reason when it does not.
 * @param {Attachment[]} attached
 * @param {Attachment} next
 * @returns {string | null}
 */
export function attachmentRefusal(attached, next) {
  const chars = attached.reduce((sum, attachment) => sum + attachment.chars, 0) + next.chars;
  if (chars <= ATTACHMENTS_MAX_CHARS) return null;
  return `${next.name} does not fit: a prompt's body is at most 1 MiB (files travel as base64); give the agent a path to read instead`;
}

/**
 * A prompt's blocks: its text first (when there is any), then the attachments in order.
 * @param {string} text
 * @param {Attachment[]} attachments
 * @returns {ContentBlock[]}
 */
export function promptContent(text, attachments) {
  return [...(text.trim() ? [/** @type {ContentBlock} */ ({ type: 'text', text })] : []), ...attachments.map((attachment) => attachment.block)];
}

/**
 * What an attachment's chip says: its name, what it is sent as, its size.
 * @param {Attachment} attachment
 */
export function attachmentLabel(attachment) {
  const size = attachment.size < 1024 ? `${attachment.size} B` : attachment.size < 1024 * 1024 ? `${(attachment.size / 1024).toFixed(1)} KiB` : `${(attachment.size / 1024 / 1024).toFixed(1)} MiB`;
  return `${attachment.name} · ${attachment.kind} · ${size}`;
}
