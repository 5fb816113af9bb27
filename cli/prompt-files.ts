/**
 * `prompt --file PATH`: files sent with a prompt as ACP content blocks (docs/acp.md, "Rich
 * prompts"). An image (PNG, JPEG, GIF or WebP, known by its first bytes) becomes an `image`
 * block (base64), a text file (UTF-8 without NUL) an embedded `resource` with its text and a
 * `file://` uri — a `resource_link` to it when the agent takes no embedded context, as the
 * library's `fileBlock()` does. Anything else is refused. What the agent's
 * `promptCapabilities` do not allow, and a request larger than the daemon reads, are refused
 * before anything is sent.
 */
import { readFileSync, statSync } from 'node:fs';
import { basename, extname, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { ContentBlock, PromptCapabilities } from '../index.js';
import { CliError } from './cli-error.js';
import { ExitCode } from './exit-codes.js';
import { formatBytes } from './output.js';

/**
 * The largest request body the daemon reads (daemon/http-kit.ts's `MAX_BODY_BYTES`, not
 * imported: that module loads the library, which the daemon's commands do without). A unit
 * test keeps the two equal.
 */
export const DAEMON_BODY_LIMIT_BYTES = 1024 * 1024;

/** A file read for a prompt: what it is, and what it weighs. */
export interface PromptFile {
  /** As given on the command line, for messages. */
  given: string;
  path: string;
  uri: string;
  data: Buffer;
  /** The file's size on disk. */
  bytes: number;
  kind: 'image' | 'text';
  mimeType: string;
}

/** The image types a prompt takes, by their first bytes. */
const imageSignatures: Array<{ mimeType: string; matches(head: Buffer): boolean }> = [
  { mimeType: 'image/png', matches: (head) => head.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) },
  { mimeType: 'image/jpeg', matches: (head) => head[0] === 0xff && head[1] === 0xd8 && head[2] === 0xff },
  { mimeType: 'image/gif', matches: (head) => ['GIF87a', 'GIF89a'].includes(head.subarray(0, 6).toString('latin1')) },
  { mimeType: 'image/webp', matches: (head) => head.subarray(0, 4).toString('latin1') === 'RIFF' && head.subarray(8, 12).toString('latin1') === 'WEBP' },
];

/** A text file's MIME type by its extension; text/plain for the rest. */
const textTypes: Record<string, string> = {
  '.md': 'text/markdown',
  '.markdown': 'text/markdown',
  '.json': 'application/json',
  '.html': 'text/html',
  '.htm': 'text/html',
  '.css': 'text/css',
  '.csv': 'text/csv',
  '.xml': 'application/xml',
  '.yaml': 'application/yaml',
  '.yml': 'application/yaml',
  '.js': 'text/javascript',
  '.mjs': 'text/javascript',
  '.ts': 'text/x-typescript',
  '.py': 'text/x-python',
  '.sh': 'text/x-shellscript',
};

/** Whether `data` is text: valid UTF-8 with no NUL byte. */
export function isText(data: Buffer): boolean {
  if (data.includes(0)) return false;
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(data);
    return true;
  } catch {
    return false;
  }
}

/**
 * Reads one `--file` (relative to the current directory) and tells what it is. A file larger
 * than the daemon's body limit is refused before it is read; one that is neither an image nor
 * text is refused with what the CLI takes. Nothing here needs the daemon: a bad file is told
 * before one is asked (or started).
 */
export function readPromptFile(given: string): PromptFile {
  const path = resolve(given);
  let size: number;
  try {
    const stat = statSync(path);
    if (!stat.isFile()) throw new CliError(`--file ${given}: ${path} is not a file`, ExitCode.usage, undefined, 'invalid_options');
    size = stat.size;
  } catch (error) {
    if (error instanceof CliError) throw error;
    throw new CliError(`--file ${given}: ${(error as NodeJS.ErrnoException).code === 'ENOENT' ? `${path} does not exist` : (error as Error).message}`, ExitCode.usage, undefined, 'invalid_options');
  }
  if (size > DAEMON_BODY_LIMIT_BYTES) throw tooLarge(`--file ${given} is ${formatBytes(size)}`, [`${given}: ${formatBytes(size)}`]);
  const data = readFileSync(path);
  const file = { given, path, uri: pathToFileURL(path).href, data, bytes: size };
  const image = imageSignatures.find((signature) => signature.matches(data));
  if (image) return { ...file, kind: 'image', mimeType: image.mimeType };
  if (!isText(data)) {
    throw new CliError(`--file ${given} is neither text nor a PNG, JPEG, GIF or WebP image: only those go with a prompt`, ExitCode.usage, undefined, 'invalid_options');
  }
  return { ...file, kind: 'text', mimeType: textTypes[extname(path).toLowerCase()] ?? 'text/plain' };
}

/**
 * The content block of a file for an agent that advertised `capabilities`: an image only when
 * it takes images (else `unsupported`, exit 2); a text file embedded when it takes embedded
 * context, else a link for it to read (the library's `fileBlock()` does the same).
 */
export function fileBlock(file: PromptFile, capabilities: PromptCapabilities | null | undefined): ContentBlock {
  if (file.kind === 'image') {
    if (capabilities?.image !== true) {
      throw new CliError(`--file ${file.given} is an image (${file.mimeType}), and the agent takes none (its promptCapabilities.image is not set)`, ExitCode.usage, 'send it as a path in the text instead, or to an agent that takes images', 'unsupported');
    }
    return { type: 'image', data: file.data.toString('base64'), mimeType: file.mimeType, uri: file.uri };
  }
  if (capabilities?.embeddedContext === true) return { type: 'resource', resource: { uri: file.uri, mimeType: file.mimeType, text: file.data.toString('utf8') } };
  return { type: 'resource_link', uri: file.uri, name: basename(file.path), mimeType: file.mimeType, size: file.bytes };
}

/** Exit 2, `too_large`: the request would be over the daemon's limit. */
export function tooLarge(what: string, files: string[]): CliError {
  return new CliError(
    `${what}: over the ${formatBytes(DAEMON_BODY_LIMIT_BYTES)} the daemon reads in one request`,
    ExitCode.usage,
    `${files.length > 0 ? `the files: ${files.join(', ')}; ` : ''}images travel as base64 (a third larger): send fewer or smaller files, or a path in the text for the agent to read`,
    'too_large',
  );
}

/** Refuses a request body over the daemon's limit, naming the files and what each weighs in it. */
export function checkBodySize(body: unknown, files: readonly PromptFile[]): void {
  const bytes = Buffer.byteLength(JSON.stringify(body));
  if (bytes <= DAEMON_BODY_LIMIT_BYTES) return;
  throw tooLarge(
    `The prompt with its files is ${formatBytes(bytes)}`,
    files.map((file) => `${basename(file.path)} ${formatBytes(file.bytes)}${file.kind === 'image' ? ` (${formatBytes(Math.ceil(file.bytes / 3) * 4)} as base64)` : ''}`),
  );
}
