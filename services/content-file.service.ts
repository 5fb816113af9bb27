/**
 * Reads a file for a prompt: what kind of content it is (image, audio, text or other
 * bytes), its mime type, and its bytes, bounded. Which ACP content block it becomes depends
 * on what the agent accepts, and is decided by the caller (runtime/prompt-content.ts).
 */
import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import { basename, extname, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

/** What a file is, as a prompt sees it. */
export interface ContentFile {
  kind: 'image' | 'audio' | 'text' | 'binary';
  mimeType: string;
  /** `file://` URL of the file's absolute path. */
  uri: string;
  name: string;
  bytes: Buffer;
}

/** A file larger than the bound it was read with. */
export class ContentFileTooLarge extends Error {
  constructor(
    readonly path: string,
    readonly size: number,
    readonly maxBytes: number,
  ) {
    super(`${path} is ${size} bytes, more than the ${maxBytes} allowed (maxBytes)`);
  }
}

const imageTypes: Record<string, string> = { '.png': 'image/png', '.jpg': 'image/jpeg', '.jpeg': 'image/jpeg', '.gif': 'image/gif', '.webp': 'image/webp' };
const audioTypes: Record<string, string> = { '.wav': 'audio/wav', '.mp3': 'audio/mpeg', '.ogg': 'audio/ogg', '.flac': 'audio/flac', '.m4a': 'audio/mp4', '.webm': 'audio/webm' };
const textTypes: Record<string, string> = {
  '.md': 'text/markdown',
  '.json': 'application/json',
  '.html': 'text/html',
  '.css': 'text/css',
  '.csv': 'text/csv',
  '.xml': 'application/xml',
  '.svg': 'image/svg+xml',
  '.js': 'text/javascript',
  '.mjs': 'text/javascript',
  '.ts': 'text/x-typescript',
  '.py': 'text/x-python',
  '.sh': 'text/x-shellscript',
  '.yaml': 'application/yaml',
  '.yml': 'application/yaml',
};

/** The first bytes that tell an image's real type, whatever its name says. */
const imageSignatures: Array<[string, number[]]> = [
  ['image/png', [0x89, 0x50, 0x4e, 0x47]],
  ['image/jpeg', [0xff, 0xd8, 0xff]],
  ['image/gif', [0x47, 0x49, 0x46, 0x38]],
];

/**
 * Reads `path` (relative to the host's cwd) if it is at most `maxBytes` long; rejects with
 * {@link ContentFileTooLarge} past it, and with the fs error (ENOENT, EISDIR…) otherwise.
 */
export async function readContentFile(path: string, maxBytes: number): Promise<ContentFile> {
  const absolute = resolve(path);
  // Non-blocking: a FIFO with no writer would hold a thread-pool thread (and the caller) forever; it is refused below.
  const handle = await open(absolute, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
  try {
    const stat = await handle.stat();
    if (!stat.isFile()) throw Object.assign(new Error(`${absolute} is not a regular file`), { code: 'EISDIR' });
    if (stat.size > maxBytes) throw new ContentFileTooLarge(absolute, stat.size, maxBytes);
    // Read one byte past the bound: a file that grew since the stat is caught too.
    const buffer = Buffer.alloc(Math.min(stat.size, maxBytes) + 1);
    let length = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buffer, length, buffer.length - length, length);
      if (bytesRead === 0) break;
      length += bytesRead;
      if (length === buffer.length) break;
    }
    if (length > maxBytes) throw new ContentFileTooLarge(absolute, length, maxBytes);
    const bytes = buffer.subarray(0, length);
    return { ...classify(absolute, bytes), uri: pathToFileURL(absolute).href, name: basename(absolute), bytes };
  } finally {
    await handle.close();
  }
}

function classify(path: string, bytes: Buffer): Pick<ContentFile, 'kind' | 'mimeType'> {
  const extension = extname(path).toLowerCase();
  const signature = imageSignatures.find(([, magic]) => magic.every((byte, index) => bytes[index] === byte));
  if (signature) return { kind: 'image', mimeType: signature[0] };
  if (imageTypes[extension]) return { kind: 'image', mimeType: imageTypes[extension] };
  if (audioTypes[extension]) return { kind: 'audio', mimeType: audioTypes[extension] };
  if (isText(bytes)) return { kind: 'text', mimeType: textTypes[extension] ?? 'text/plain' };
  return { kind: 'binary', mimeType: 'application/octet-stream' };
}

/** UTF-8 without NUL bytes. */
function isText(bytes: Buffer): boolean {
  if (bytes.includes(0)) return false;
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    return true;
  } catch {
    return false;
  }
}
