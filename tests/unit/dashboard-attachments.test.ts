/**
 * Files attached to a prompt, without a browser (dashboard/attachments.js): base64 as ACP
 * carries it, which files are text, the block each file becomes (image, audio, an embedded
 * text resource, an embedded blob), the body's limit, the prompt's blocks and the chips' text.
 */
import { describe, expect, it } from 'vitest';
import { ATTACHMENTS_MAX_CHARS, attachmentLabel, attachmentOf, attachmentRefusal, looksLikeText, promptContent, toBase64 } from '../../dashboard/attachments.js';

const bytes = (text: string) => new TextEncoder().encode(text);

describe('bytes', () => {
  it('base64 as Node writes it, for every byte value and across the slices it is built in', () => {
    const all = new Uint8Array(256).map((_, index) => index);
    const large = new Uint8Array(100_003).map((_, index) => (index * 31) % 256);
    for (const sample of [new Uint8Array(0), new Uint8Array([1]), new Uint8Array([1, 2]), all, large]) expect(toBase64(sample)).toBe(Buffer.from(sample).toString('base64'));
  });

  it('text is valid UTF-8 without a NUL', () => {
    expect([looksLikeText(bytes('plain')), looksLikeText(bytes('héllo ✓')), looksLikeText(new Uint8Array(0))]).toEqual([true, true, true]);
    expect([looksLikeText(new Uint8Array([0x68, 0x00, 0x69])), looksLikeText(new Uint8Array([0xff, 0xfe, 0x41]))]).toEqual([false, false]);
  });
});

describe('attachmentOf', () => {
  it('an image is an image block; audio an audio block', () => {
    const image = attachmentOf({ name: 'shot.png', type: 'image/png', bytes: new Uint8Array([137, 80, 78, 71]) });
    expect(image).toMatchObject({ name: 'shot.png', kind: 'image', size: 4, block: { type: 'image', mimeType: 'image/png', data: 'iVBORw==' } });
    expect(image.chars).toBe(JSON.stringify(image.block).length);
    expect(attachmentOf({ name: 'a.wav', type: 'audio/wav', bytes: new Uint8Array([1]) }).block).toEqual({ type: 'audio', mimeType: 'audio/wav', data: 'AQ==' });
  });

  it('text is an embedded resource with its text, named by the file (text/plain when the browser does not know its type)', () => {
    expect(attachmentOf({ name: 'notes.md', type: 'text/markdown', bytes: bytes('# hi\n') }).block).toEqual({ type: 'resource', resource: { uri: 'notes.md', text: '# hi\n', mimeType: 'text/markdown' } });
    expect(attachmentOf({ name: 'Makefile', type: '', bytes: bytes('all:\n') })).toMatchObject({ kind: 'text', block: { resource: { mimeType: 'text/plain' } } });
  });

  it('anything else is an embedded resource with a base64 blob', () => {
    expect(attachmentOf({ name: 'data.bin', type: '', bytes: new Uint8Array([0, 1, 2]) })).toMatchObject({
      kind: 'binary',
      block: { type: 'resource', resource: { uri: 'data.bin', blob: 'AAEC', mimeType: 'application/octet-stream' } },
    });
    expect(attachmentOf({ name: 'a.pdf', type: 'application/pdf', bytes: new Uint8Array([0xff]) }).block).toMatchObject({ resource: { mimeType: 'application/pdf' } });
  });
});

describe('a prompt with attachments', () => {
  it('is its text block, then the files in order; no text block for a blank text', () => {
    const file = attachmentOf({ name: 'a.txt', type: 'text/plain', bytes: bytes('a') });
    expect(promptContent('look at this', [file])).toEqual([{ type: 'text', text: 'look at this' }, file.block]);
    expect(promptContent('  ', [file])).toEqual([file.block]);
  });

  it('refuses a file that would take the body over its limit, saying why', () => {
    const half = attachmentOf({ name: 'half.bin', type: '', bytes: new Uint8Array(Math.floor((ATTACHMENTS_MAX_CHARS / 2) * 0.74)).fill(0) });
    expect(attachmentRefusal([], half)).toBeNull();
    expect(attachmentRefusal([half], half)).toBeNull();
    expect(attachmentRefusal([half, half], half)).toBe("half.bin does not fit: a prompt's body is at most 1 MiB (files travel as base64); give the agent a path to read instead");
  });

  it("a chip says the file's name, what it is sent as, and its size", () => {
    const sized = (size: number) => attachmentLabel(attachmentOf({ name: 'f', type: 'application/octet-stream', bytes: new Uint8Array(size) }));
    expect([sized(12), sized(2048), sized(3 * 1024 * 1024)]).toEqual(['f · binary · 12 B', 'f · binary · 2.0 KiB', 'f · binary · 3.0 MiB']);
  });
});
