/**
 * What a `prompt` sends besides its text (cli/prompt-files.ts, cli/elicitation-form.ts,
 * cli/permission-prompt.ts): files as content blocks (images by their first bytes, text as an
 * embedded resource or a link), the daemon's body limit, elicitation fields typed by the form's
 * schema, and the read-only tool kinds `--approve-reads` allows.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import type { ElicitationRow } from '../../daemon/api-types.js';
import { MAX_BODY_BYTES } from '../../daemon/http-kit.js';
import { READ_ONLY_TOOL_KINDS as libraryReadOnlyKinds } from '../../core/permission-policy.js';
import { CliError } from '../../cli/cli-error.js';
import { contentFromFields, fieldHint, parseFieldValue } from '../../cli/elicitation-form.js';
import { PermissionAsker, READ_ONLY_TOOL_KINDS } from '../../cli/permission-prompt.js';
import { checkBodySize, DAEMON_BODY_LIMIT_BYTES, fileBlock, isText, readPromptFile } from '../../cli/prompt-files.js';

const dir = mkdtempSync(join(tmpdir(), 'agentvisor-prompt-inputs-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const file = (name: string, data: string | Buffer) => {
  writeFileSync(join(dir, name), data);
  return join(dir, name);
};
const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3]);
const all = { image: true, embeddedContext: true };
/** The block a file becomes for an agent with these prompt capabilities. */
const blockOf = (path: string, capabilities: Parameters<typeof fileBlock>[1]) => fileBlock(readPromptFile(path), capabilities);

function refusal(act: () => unknown): { message: string; kind?: string | undefined; exitCode: number } {
  try {
    act();
  } catch (error) {
    expect(error).toBeInstanceOf(CliError);
    return { message: (error as CliError).message, kind: (error as CliError).kind, exitCode: (error as CliError).exitCode };
  }
  throw new Error('not refused');
}

describe('prompt --file', () => {
  it('knows an image by its first bytes, whatever its name: PNG, JPEG, GIF, WebP', () => {
    const cases: Array<[string, Buffer, string]> = [
      ['shot.dat', png, 'image/png'],
      ['photo', Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0]), 'image/jpeg'],
      ['anim.png', Buffer.from('GIF89a....'), 'image/gif'],
      ['pic', Buffer.concat([Buffer.from('RIFF'), Buffer.from([0, 0, 0, 0]), Buffer.from('WEBPVP8 ')]), 'image/webp'],
    ];
    for (const [name, data, mimeType] of cases) {
      expect(blockOf(file(name, data), all)).toEqual({ type: 'image', data: data.toString('base64'), mimeType, uri: pathToFileURL(join(dir, name)).href });
    }
  });

  it('sends text as an embedded resource with a file:// uri, or as a link when the agent takes no embedded context', () => {
    const path = file('notes.md', '# Notes\nsome text\n');
    expect(blockOf(path, all)).toEqual({ type: 'resource', resource: { uri: pathToFileURL(path).href, mimeType: 'text/markdown', text: '# Notes\nsome text\n' } });
    expect(blockOf(path, { image: true })).toEqual({ type: 'resource_link', uri: pathToFileURL(path).href, name: 'notes.md', mimeType: 'text/markdown', size: 18 });
    expect(blockOf(file('plain', 'x'), all)).toMatchObject({ resource: { mimeType: 'text/plain' } });
  });

  it('refuses an image the agent takes none of, a binary that is no image, a missing file, a folder, and a file over the limit', () => {
    expect(refusal(() => blockOf(file('a.png', png), { embeddedContext: true }))).toMatchObject({ kind: 'unsupported', exitCode: 2 });
    expect(refusal(() => blockOf(file('a.png', png), null)).message).toContain('the agent takes none (its promptCapabilities.image is not set)');
    expect(refusal(() => readPromptFile(file('blob', Buffer.from([1, 0, 2, 3]))))).toMatchObject({ message: expect.stringContaining('is neither text nor a PNG, JPEG, GIF or WebP image'), exitCode: 2 });
    expect(refusal(() => readPromptFile(file('latin1', Buffer.from([0x63, 0x61, 0x66, 0xe9])))).message).toContain('neither text nor');
    expect(refusal(() => readPromptFile(join(dir, 'missing.txt'))).message).toBe(`--file ${join(dir, 'missing.txt')}: ${join(dir, 'missing.txt')} does not exist`);
    expect(refusal(() => readPromptFile(dir)).message).toContain('is not a file');
    expect(refusal(() => readPromptFile(file('big.txt', Buffer.alloc(DAEMON_BODY_LIMIT_BYTES + 1, 'a'))))).toMatchObject({ kind: 'too_large', exitCode: 2 });
  });

  it('refuses a request over the daemon body limit before it is sent, naming each file and its weight as base64', () => {
    const image = readPromptFile(file('large.png', Buffer.concat([png, Buffer.alloc(900 * 1024)])));
    expect(() => checkBodySize({ content: [{ type: 'text', text: 'hi' }] }, [])).not.toThrow();
    const refused = refusal(() => checkBodySize({ content: [fileBlock(image, all)] }, [image]));
    expect(refused).toMatchObject({ kind: 'too_large', exitCode: 2 });
    expect(refused.message).toMatch(/^The prompt with its files is 1\.\d+ MiB: over the 1\.00 MiB the daemon reads in one request$/);
  });

  it("keeps the daemon's body limit", () => {
    expect(DAEMON_BODY_LIMIT_BYTES).toBe(MAX_BODY_BYTES);
  });

  it('tells text from binary: UTF-8 without NUL', () => {
    expect(isText(Buffer.from('héllo ✓'))).toBe(true);
    expect(isText(Buffer.from([0x61, 0]))).toBe(false);
    expect(isText(Buffer.from([0xc3]))).toBe(false);
  });
});

describe('elicitation fields', () => {
  const form: ElicitationRow = {
    id: 'e1',
    agent: 'fx',
    sessionId: 's1',
    toolCallId: null,
    mode: 'form',
    message: 'Fill it in',
    url: null,
    elicitationId: null,
    requestedAt: 0,
    requestedSchema: {
      type: 'object',
      properties: {
        name: { type: 'string', minLength: 1 },
        count: { type: 'integer', minimum: 1, maximum: 5 },
        ratio: { type: 'number' },
        color: { type: 'string', enum: ['red', 'green'] },
        ok: { type: 'boolean' },
        tags: { type: 'array', items: { anyOf: [{ const: 'a', title: 'A' }, { const: 'b', title: 'B' }] } },
      },
      required: ['name'],
    },
  };

  it('are typed by the schema: numbers, booleans, a multi-select repeated or with commas', () => {
    expect(contentFromFields(form, ['name=Ada', 'count=3', 'ratio=0.5', 'color=red', 'ok=yes', 'tags=a', 'tags=b'])).toEqual({ name: 'Ada', count: 3, ratio: 0.5, color: 'red', ok: true, tags: ['a', 'b'] });
    expect(contentFromFields(form, ['name=a=b', 'tags=a,b', 'ok=false'])).toEqual({ name: 'a=b', tags: ['a', 'b'], ok: false });
  });

  it('refuse what is plain to see, naming the field and what it takes', () => {
    expect(refusal(() => contentFromFields(form, ['count=3'])).message).toBe('The form of elicitation e1 needs --field name=…');
    expect(refusal(() => contentFromFields(form, ['name=Ada', 'count=9'])).message).toBe('--field count: 9 is above 5; it takes a whole number from 1 to 5');
    expect(refusal(() => contentFromFields(form, ['name=Ada', 'count=2.5'])).message).toContain('2.5 is not a whole number');
    expect(refusal(() => contentFromFields(form, ['name=Ada', 'color=blue'])).message).toBe('--field color: "blue" is not one of red, green; it takes one of red, green');
    expect(refusal(() => contentFromFields(form, ['name=Ada', 'tags=c'])).message).toContain('"c" is not one of a, b');
    expect(refusal(() => contentFromFields(form, ['name=Ada', 'ok=maybe'])).message).toContain('"maybe" is not true or false');
    expect(refusal(() => contentFromFields(form, ['name='])).message).toContain('at least 1 characters');
    expect(refusal(() => contentFromFields(form, ['nope=1']))).toMatchObject({ message: 'The form of elicitation e1 has no field "nope"', kind: 'invalid_options', exitCode: 2 });
    expect(refusal(() => contentFromFields(form, ['name'])).message).toBe('--field takes name=value, not "name"');
  });

  it('say in a few words what a field takes', () => {
    const properties = form.requestedSchema!.properties!;
    expect(fieldHint(properties.count as never)).toBe('a whole number from 1 to 5');
    expect(fieldHint(properties.ok as never)).toBe('true or false');
    expect(fieldHint(properties.tags as never)).toBe('some of a, b');
    expect(parseFieldValue({ type: 'string', format: 'email' }, 'not checked here')).toBe('not checked here');
  });
});

describe('--approve-reads', () => {
  it("allows the library's read-only kinds, and no other", () => {
    expect([...READ_ONLY_TOOL_KINDS].sort()).toEqual([...libraryReadOnlyKinds].sort());
  });

  it('run: a read is allowed; an edit, or a tool call without a kind, is denied when there is no terminal to ask on', async () => {
    const written: string[] = [];
    const output = { isTTY: false, write: (text: string) => written.push(text) > 0 } as unknown as NodeJS.WriteStream;
    const asker = new PermissionAsker({ isTTY: false } as NodeJS.ReadStream, output);
    const policy = asker.policy('allow-reads') as (request: unknown) => Promise<string | undefined> | string | undefined;
    const options = [
      { optionId: 'yes', name: 'Allow', kind: 'allow_once' },
      { optionId: 'no', name: 'Reject', kind: 'reject_once' },
    ];
    const request = (kind?: string) => ({ agent: 'fx', sessionId: 's1', toolCall: { toolCallId: 't', title: 'Tool', ...(kind ? { kind } : {}) }, options });
    expect(await policy(request('read'))).toBe('yes');
    expect(await policy(request('search'))).toBe('yes');
    expect(await policy(request('edit'))).toBe('no');
    expect(await policy(request())).toBe('no');
    expect(written.join('')).toContain('denied permission for "Tool" (no terminal to ask on)');
  });
});
