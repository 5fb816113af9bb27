import { execFileSync } from 'node:child_process';
import { closeSync, constants, existsSync, linkSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, readSync, renameSync, rmSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { defaultFsTimeoutMs, defaultMaxReadBytes, FsRequestError, FsRequestTimeout, FsSandbox, SandboxViolation } from '../../services/fs-sandbox.service.js';

let base: string;
let root: string;

beforeEach(() => {
  base = mkdtempSync(join(tmpdir(), 'agentvisor-sandbox-'));
  root = join(base, 'root');
  mkdirSync(join(root, 'sub'), { recursive: true });
  writeFileSync(join(root, 'a.txt'), 'one\ntwo\nthree');
  writeFileSync(join(base, 'outside.txt'), 'outside');
});

afterEach(() => rmSync(base, { recursive: true, force: true }));

describe('FsSandbox', () => {
  it('resolves relative paths against the first root', async () => {
    const sandbox = await FsSandbox.open([root]);
    expect(await sandbox.readTextFile('a.txt', { line: 2 })).toBe('two\nthree');
    expect(await sandbox.readTextFile(join(root, 'a.txt'), { limit: 1 })).toBe('one');
  });

  it('refuses every way out before touching the file system outside', async () => {
    const sandbox = await FsSandbox.open([root]);
    symlinkSync(base, join(root, 'sub', 'up'));
    for (const path of ['../outside.txt', join(base, 'outside.txt'), join(root, 'sub', 'up', 'outside.txt'), join(root, 'sub', '..', '..', 'outside.txt')]) {
      await expect(sandbox.readTextFile(path), path).rejects.toBeInstanceOf(SandboxViolation);
      await expect(sandbox.writeTextFile(path, 'pwned'), path).rejects.toBeInstanceOf(SandboxViolation);
    }
    await expect(sandbox.writeTextFile(join(root, 'sub', 'up', 'new.txt'), 'x'), 'new file through a link').rejects.toBeInstanceOf(SandboxViolation);
    expect(readFileSync(join(base, 'outside.txt'), 'utf8')).toBe('outside');
  });

  it('normalises before resolving: "missing/../link" cannot smuggle a link past the check', async () => {
    const sandbox = await FsSandbox.open([root]);
    symlinkSync(base, join(root, 'link'));
    const unnormalised = `${root}/missing/../link/planted.txt`; // not join(): keep the ..
    await expect(sandbox.writeTextFile(unnormalised, 'x')).rejects.toBeInstanceOf(SandboxViolation);
    await expect(sandbox.readTextFile(`${root}/missing/../link/outside.txt`)).rejects.toBeInstanceOf(SandboxViolation);
    await expect(sandbox.writeTextFile('missing/../link/planted.txt', 'x')).rejects.toBeInstanceOf(SandboxViolation);
    expect(existsSync(join(base, 'planted.txt'))).toBe(false);
    await sandbox.writeTextFile(`${root}/missing/../fine.txt`, 'ok');
    expect(readFileSync(join(root, 'fine.txt'), 'utf8')).toBe('ok');
  });

  it('a root that is itself reached through a symlink still works', async () => {
    const link = join(base, 'root-link');
    symlinkSync(root, link);
    const sandbox = await FsSandbox.open([link]);
    expect(await sandbox.readTextFile(join(link, 'a.txt'))).toContain('one');
    await sandbox.writeTextFile(join(link, 'deep', 'er', 'b.txt'), 'b');
    expect(readFileSync(join(root, 'deep', 'er', 'b.txt'), 'utf8')).toBe('b');
  });

  it('does not mistake a sibling with a common prefix for the root', async () => {
    mkdirSync(join(base, 'root-evil'));
    writeFileSync(join(base, 'root-evil', 'x.txt'), 'evil');
    const sandbox = await FsSandbox.open([root]);
    await expect(sandbox.readTextFile(join(base, 'root-evil', 'x.txt'))).rejects.toBeInstanceOf(SandboxViolation);
  });
});

/** The error a promise rejects with (fails the test if it resolves). */
async function rejection(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected a rejection');
}

/** Fails when `promise` does not settle within `ms`: a request that blocks would hang the test otherwise. */
async function within<T>(ms: number, what: string, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what} did not settle within ${ms} ms`)), ms)));
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

const openDescriptors = () => readdirSync('/proc/self/fd').length;

describe('FsSandbox: the security review (one regression test per defect)', () => {
  it('defect 5: a FIFO, socket or device is refused at once and never holds a threadpool thread', async () => {
    execFileSync('mkfifo', [join(root, 'pipe')]);
    const sandbox = await FsSandbox.open([root, '/dev']);
    // More reads than libuv has threads (4): before the fix these wedged every later file read.
    const fifoReads = await within(2_000, 'reads of a FIFO', Promise.all(Array.from({ length: 8 }, () => rejection(sandbox.readTextFile(join(root, 'pipe'))))));
    for (const error of fifoReads) expect(error).toMatchObject({ name: 'SandboxViolation', reason: 'not_regular', message: expect.stringMatching(/is a FIFO, not a regular file/) });
    expect(await within(2_000, 'a read after the FIFO reads', sandbox.readTextFile(join(root, 'a.txt')))).toBe('one\ntwo\nthree');

    // A FIFO write: without a reader (ENXIO), and with one, which must receive nothing.
    expect(await within(2_000, 'a FIFO write', rejection(sandbox.writeTextFile(join(root, 'pipe'), 'x')))).toMatchObject({ reason: 'not_regular' });
    const reader = openSync(join(root, 'pipe'), constants.O_RDONLY | constants.O_NONBLOCK);
    try {
      expect(await within(2_000, 'a FIFO write with a reader', rejection(sandbox.writeTextFile(join(root, 'pipe'), 'x')))).toMatchObject({ reason: 'not_regular' });
      expect(readSync(reader, Buffer.alloc(10))).toBe(0); // nothing was written, and the writer is gone
    } finally {
      closeSync(reader);
    }

    // A socket (open() answers ENXIO) and devices (an additional root of /dev).
    const server: Server = createServer();
    await new Promise<void>((resolve) => server.listen(join(root, 'socket'), resolve));
    try {
      expect(await within(2_000, 'a socket read', rejection(sandbox.readTextFile(join(root, 'socket'))))).toMatchObject({ reason: 'not_regular' });
      expect(await within(2_000, 'a socket write', rejection(sandbox.writeTextFile(join(root, 'socket'), 'x')))).toMatchObject({ reason: 'not_regular' });
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
    expect(await within(2_000, '/dev/zero', rejection(sandbox.readTextFile('/dev/zero', { limit: 1 })))).toMatchObject({ reason: 'not_regular', message: expect.stringMatching(/character device/) });
    expect(await within(2_000, '/dev/null', rejection(sandbox.writeTextFile('/dev/null', 'x')))).toMatchObject({ reason: 'not_regular' });
  });

  it('defect 6: reads stream — line/limit stop reading early — and an answer over maxReadBytes is refused, never truncated', async () => {
    expect(defaultMaxReadBytes).toBe(10 * 1024 * 1024);
    // 600 MB, sparse: two short lines, then zeros (no newline) to the end.
    const huge = join(root, 'huge.txt');
    writeFileSync(huge, 'first\nsecond\n');
    truncateSync(huge, 600 * 1024 * 1024);
    const sandbox = await FsSandbox.open([root]);
    const rssBefore = process.memoryUsage.rss();
    const startedAt = performance.now();
    expect(await sandbox.readTextFile(huge, { limit: 1 })).toBe('first');
    expect(await sandbox.readTextFile(huge, { line: 2, limit: 1 })).toBe('second');
    expect(performance.now() - startedAt).toBeLessThan(1_000);
    expect(process.memoryUsage.rss() - rssBefore).toBeLessThan(64 * 1024 * 1024);
    // The whole file is refused from its size, before a byte is read.
    expect(await rejection(sandbox.readTextFile(huge))).toMatchObject({ name: 'SandboxViolation', reason: 'too_large', message: expect.stringMatching(/more than 10485760 bytes/) });
    // Lines from line 3 on: one 600 MB line, refused once it passes the limit.
    expect(await rejection(sandbox.readTextFile(huge, { line: 3 }))).toMatchObject({ reason: 'too_large' });
    expect(process.memoryUsage.rss() - rssBefore).toBeLessThan(64 * 1024 * 1024);

    // The rule at the limit, with a small one: 30 lines of 9 bytes + '\n'.
    writeFileSync(join(root, 'lines.txt'), Array.from({ length: 30 }, (_, i) => `line ${String(i + 1).padStart(4, '0')}`).join('\n'));
    const small = await FsSandbox.open([root], { maxReadBytes: 99 });
    await expect(small.readTextFile('lines.txt')).rejects.toMatchObject({ reason: 'too_large' });
    expect(await small.readTextFile('lines.txt', { line: 5, limit: 2 })).toBe('line 0005\nline 0006');
    expect(await small.readTextFile('lines.txt', { line: 21, limit: 10 })).toHaveLength(99); // exactly the limit: served
    await expect(small.readTextFile('lines.txt', { line: 20, limit: 11 })).rejects.toMatchObject({ reason: 'too_large' }); // 109 bytes
    expect(await small.readTextFile('lines.txt', { line: 30 })).toBe('line 0030');
    expect(await small.readTextFile('lines.txt', { line: 31 })).toBe('');
    expect(await small.readTextFile('lines.txt', { line: 2, limit: 0 })).toBe('');
    // The line/limit rules of the whole-file split are kept: a trailing newline is an empty last line.
    writeFileSync(join(root, 'trailing.txt'), 'a\nb\n');
    expect(await sandbox.readTextFile('trailing.txt')).toBe('a\nb\n');
    expect(await sandbox.readTextFile('trailing.txt', { line: 2 })).toBe('b\n');
    expect(await sandbox.readTextFile('trailing.txt', { line: 3 })).toBe('');
    // Multi-byte characters across chunk boundaries survive (the split is on bytes, decoding at the end).
    const text = 'é'.repeat(200_000) + '\nnext';
    writeFileSync(join(root, 'utf8.txt'), text);
    expect(await sandbox.readTextFile('utf8.txt')).toBe(text);
    expect(await sandbox.readTextFile('utf8.txt', { line: 2 })).toBe('next');
  });

  it('defect 6: the streamed window equals the old whole-file split for any line/limit, across chunk boundaries', async () => {
    // Lines of random lengths (some empty, some longer than a 128 KiB chunk), with and without a trailing newline.
    let seed = 42;
    const random = (n: number) => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) % n);
    const sandbox = await FsSandbox.open([root]);
    for (const trailing of ['', '\n']) {
      const lines = Array.from({ length: 60 }, (_, i) => (i % 17 === 5 ? 'y'.repeat(140_000) : 'x'.repeat(random(3) === 0 ? 0 : random(20_000))));
      const content = lines.join('\n') + trailing;
      writeFileSync(join(root, 'random.txt'), content);
      const split = (line: number | null, limit: number | null) => {
        if (line == null && limit == null) return content;
        const all = content.split('\n');
        const start = Math.max(0, (line ?? 1) - 1);
        return all.slice(start, limit == null ? all.length : start + Math.max(0, limit)).join('\n');
      };
      for (let i = 0; i < 60; i++) {
        const line = random(4) === 0 ? null : random(64);
        const limit = random(4) === 0 ? null : random(12);
        expect(await sandbox.readTextFile('random.txt', { line, limit }), `line ${line} limit ${limit}`).toBe(split(line, limit));
      }
    }
    // 10 MiB of empty lines: one copy per chunk, not one per line.
    writeFileSync(join(root, 'newlines.txt'), '\n'.repeat(defaultMaxReadBytes));
    const startedAt = performance.now();
    expect(await sandbox.readTextFile('newlines.txt')).toHaveLength(defaultMaxReadBytes);
    expect(await sandbox.readTextFile('newlines.txt', { line: 5_000_000, limit: 3 })).toBe('\n\n');
    expect(performance.now() - startedAt).toBeLessThan(2_000);
  });

  it('defect 11: a hard-linked file (st_nlink > 1) is refused for read and write — its other name may be outside', async () => {
    linkSync(join(base, 'outside.txt'), join(root, 'hardlink.txt'));
    const sandbox = await FsSandbox.open([root]);
    const read = await rejection(sandbox.readTextFile(join(root, 'hardlink.txt')));
    expect(read).toMatchObject({ name: 'SandboxViolation', reason: 'hardlink', message: expect.stringMatching(/has 2 hard links/) });
    expect(read.message).not.toContain('outside.txt');
    await expect(sandbox.writeTextFile(join(root, 'hardlink.txt'), 'pwned')).rejects.toMatchObject({ reason: 'hardlink' });
    expect(readFileSync(join(base, 'outside.txt'), 'utf8')).toBe('outside');
    // Two names inside the root are refused the same way (a pnpm store link looks just like this).
    linkSync(join(root, 'a.txt'), join(root, 'sub', 'a-again.txt'));
    await expect(sandbox.readTextFile(join(root, 'a.txt'))).rejects.toMatchObject({ reason: 'hardlink' });
    // A file with one link is served, and a written file has one link.
    await sandbox.writeTextFile(join(root, 'sub', 'single.txt'), 'ok');
    expect(await sandbox.readTextFile(join(root, 'sub', 'single.txt'))).toBe('ok');
  });

  it('defect 12 (the deterministic part; the races are in tests/integration/sandbox-races.test.ts): parents created one level at a time, no symlink followed by the kernel', async () => {
    const sandbox = await FsSandbox.open([root]);
    symlinkSync(base, join(root, 'up'));
    // mkdir -p through a link: refused before any directory is created outside.
    await expect(sandbox.writeTextFile(join(root, 'up', 'a', 'b', 'c.txt'), 'x')).rejects.toBeInstanceOf(SandboxViolation);
    await expect(sandbox.writeTextFile(join(root, 'new', 'up-later', 'c.txt'), 'x')).resolves.toBeUndefined();
    expect(existsSync(join(base, 'a'))).toBe(false);
    // A link inside a fresh parent chain, planted as the last name: refused, nothing written through it.
    symlinkSync(join(base, 'outside.txt'), join(root, 'new', 'up-later', 'planted.txt'));
    await expect(sandbox.writeTextFile(join(root, 'new', 'up-later', 'planted.txt'), 'pwned')).rejects.toBeInstanceOf(SandboxViolation);
    expect(readFileSync(join(base, 'outside.txt'), 'utf8')).toBe('outside');
    // Links that stay inside are followed (each hop checked like a requested path), for reads and writes.
    symlinkSync('../a.txt', join(root, 'sub', 'to-a.txt'));
    symlinkSync(join(root, 'sub'), join(root, 'sub-link'));
    expect(await sandbox.readTextFile(join(root, 'sub', 'to-a.txt'))).toBe('one\ntwo\nthree');
    await sandbox.writeTextFile(join(root, 'sub-link', 'via-link.txt'), 'v');
    expect(readFileSync(join(root, 'sub', 'via-link.txt'), 'utf8')).toBe('v');
    await sandbox.writeTextFile(join(root, 'sub', 'to-a.txt'), 'rewritten');
    expect(readFileSync(join(root, 'a.txt'), 'utf8')).toBe('rewritten');
    // A write opens without O_TRUNC and truncates only once the descriptor is verified: a shorter content leaves no tail.
    await sandbox.writeTextFile(join(root, 'a.txt'), 'short');
    expect(readFileSync(join(root, 'a.txt'), 'utf8')).toBe('short');
    // A link chain that leaves the root on the way is refused even if it would come back.
    symlinkSync(join(root, 'a.txt'), join(base, 'back-in'));
    symlinkSync(join(base, 'back-in'), join(root, 'via-outside'));
    await expect(sandbox.readTextFile(join(root, 'via-outside'))).rejects.toBeInstanceOf(SandboxViolation);
    // A loop of links ends with ELOOP, not a hang.
    symlinkSync('loop-b', join(root, 'loop-a'));
    symlinkSync('loop-a', join(root, 'loop-b'));
    await expect(sandbox.readTextFile(join(root, 'loop-a'))).rejects.toMatchObject({ name: 'FsRequestError', code: 'ELOOP' });
  });

  it('defect 13: the roots are resolved when the sandbox is built (the session opens); a root replaced later is refused', async () => {
    const sandbox = await FsSandbox.open([root]);
    // Before the first fs call, the cwd is replaced by a symlink to its parent (where outside.txt is).
    renameSync(root, join(base, 'moved'));
    symlinkSync(base, root);
    const read = await rejection(sandbox.readTextFile(join(root, 'outside.txt')));
    expect(read).toMatchObject({ name: 'SandboxViolation', reason: 'root_changed', message: expect.stringMatching(/was replaced after the session opened/) });
    await expect(sandbox.writeTextFile(join(root, 'planted.txt'), 'x')).rejects.toMatchObject({ reason: 'root_changed' });
    expect(existsSync(join(base, 'planted.txt'))).toBe(false);
    // Replaced by another real directory: refused too (same path, another inode).
    rmSync(root);
    mkdirSync(root);
    writeFileSync(join(root, 'a.txt'), 'impostor');
    await expect(sandbox.readTextFile(join(root, 'a.txt'))).rejects.toMatchObject({ reason: 'root_changed' });
    // A root that did not exist when the sandbox was built stays refused, even once it exists.
    const later = await FsSandbox.open([join(base, 'not-yet')]);
    symlinkSync(base, join(base, 'not-yet'));
    await expect(later.readTextFile(join(base, 'not-yet', 'outside.txt'))).rejects.toMatchObject({ reason: 'root_changed', message: expect.stringMatching(/could not be resolved when the session opened/) });
  });

  it('defect 16: no existence oracle — an outside path gets the same answer whether or not it exists', async () => {
    const sandbox = await FsSandbox.open([root]);
    symlinkSync(base, join(root, 'up'));
    symlinkSync(join(base, 'outside.txt'), join(root, 'link-to-existing'));
    symlinkSync(join(base, 'missing.txt'), join(root, 'link-to-missing'));
    const pairs: Array<[string, string]> = [
      [join(base, 'outside.txt'), join(base, 'missing.txt')],
      [join(root, '..', 'outside.txt'), join(root, '..', 'missing.txt')],
      [join(root, 'up', 'outside.txt'), join(root, 'up', 'missing.txt')],
      [join(root, 'up', 'outside.txt'), join(root, 'up', 'no-dir', 'missing.txt')],
      [join(root, 'link-to-existing'), join(root, 'link-to-missing')],
      ['/etc/passwd', '/etc/no-such-file'],
    ];
    for (const [exists, missing] of pairs) {
      for (const operation of ['read', 'write'] as const) {
        const attempt = (path: string) => rejection(operation === 'read' ? sandbox.readTextFile(path) : sandbox.writeTextFile(path, 'x'));
        const [a, b] = [await attempt(exists), await attempt(missing)];
        expect(a, `${operation} ${exists}`).toBeInstanceOf(SandboxViolation);
        expect(b, `${operation} ${missing}`).toBeInstanceOf(SandboxViolation);
        expect(a.message.replace(exists, '<path>')).toBe(b.message.replace(missing, '<path>'));
      }
    }
    expect(existsSync(join(base, 'missing.txt'))).toBe(false);
    // Inside a root, a missing file is ENOENT, naming only the requested path.
    const missingInside = await rejection(sandbox.readTextFile(join(root, 'sub', 'nope.txt')));
    expect(missingInside).toMatchObject({ name: 'FsRequestError', code: 'ENOENT', message: `ENOENT: no such file or directory, open '${join(root, 'sub', 'nope.txt')}'` });
    expect(missingInside.message).not.toContain('/proc/self/fd');
  });

  it('timeout: an fs request past timeoutMs is answered with FsRequestTimeout and leaves nothing running', async () => {
    expect(defaultFsTimeoutMs).toBe(30_000);
    // 8 GB of zeros (sparse) without a newline: finding line 2 would scan all of it.
    const sparse = join(root, 'sparse.txt');
    writeFileSync(sparse, '');
    truncateSync(sparse, 8 * 1024 ** 3);
    const sandbox = await FsSandbox.open([root], { timeoutMs: 100 });
    const descriptors = openDescriptors();
    const startedAt = performance.now();
    const error = await rejection(sandbox.readTextFile(sparse, { line: 2 }));
    expect(performance.now() - startedAt).toBeLessThan(1_000);
    expect(error).toBeInstanceOf(FsRequestTimeout);
    expect(error).toBeInstanceOf(FsRequestError);
    expect(error).toMatchObject({ code: 'ETIMEDOUT', message: `fs/read_text_file of ${sparse} did not finish within 100 ms and was stopped` });
    // The read stops at its next step and closes its descriptors.
    const deadline = Date.now() + 2_000;
    while (openDescriptors() > descriptors && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(openDescriptors()).toBe(descriptors);
    // The sandbox still serves.
    expect(await sandbox.readTextFile(join(root, 'a.txt'))).toBe('one\ntwo\nthree');
  });

  it('refuses NUL bytes, /proc/self/root and /dev/fd/N ways around the roots', async () => {
    const sandbox = await FsSandbox.open([root]);
    await expect(sandbox.readTextFile(`${join(root, 'a.txt')}\0.png`)).rejects.toMatchObject({ name: 'SandboxViolation', reason: 'invalid_path' });
    await expect(sandbox.writeTextFile(`${join(root, 'x')}\0`, 'x')).rejects.toMatchObject({ reason: 'invalid_path' });
    await expect(sandbox.readTextFile(`/proc/self/root${join(base, 'outside.txt')}`)).rejects.toMatchObject({ reason: 'outside' });
    symlinkSync(`/proc/self/root${base}`, join(root, 'proc-root'));
    await expect(sandbox.readTextFile(join(root, 'proc-root', 'outside.txt'))).rejects.toMatchObject({ reason: 'outside' });
    const fd = openSync(join(base, 'outside.txt'), 'r');
    try {
      await expect(sandbox.readTextFile(`/dev/fd/${fd}`)).rejects.toMatchObject({ reason: 'outside' });
      symlinkSync(`/proc/self/fd/${fd}`, join(root, 'fd-link'));
      await expect(sandbox.readTextFile(join(root, 'fd-link'))).rejects.toMatchObject({ reason: 'outside' });
    } finally {
      closeSync(fd);
    }
    // A directory is an error, not content.
    await expect(sandbox.readTextFile(join(root, 'sub'))).rejects.toMatchObject({ name: 'FsRequestError', code: 'EISDIR' });
    await expect(sandbox.writeTextFile(join(root, 'sub'), 'x')).rejects.toMatchObject({ name: 'FsRequestError', code: 'EISDIR' });
  });

  it('the portable walk (no /proc/self/fd) keeps the same answers', async () => {
    const sandbox = await FsSandbox.open([root], { procFd: false });
    symlinkSync(base, join(root, 'up'));
    expect(await sandbox.readTextFile('a.txt', { line: 2 })).toBe('two\nthree');
    await sandbox.writeTextFile(join(root, 'deep', 'er', 'b.txt'), 'b');
    expect(readFileSync(join(root, 'deep', 'er', 'b.txt'), 'utf8')).toBe('b');
    await expect(sandbox.readTextFile(join(root, 'up', 'outside.txt'))).rejects.toBeInstanceOf(SandboxViolation);
    await expect(sandbox.writeTextFile(join(root, 'up', 'x', 'planted.txt'), 'x')).rejects.toBeInstanceOf(SandboxViolation);
    expect(existsSync(join(base, 'x'))).toBe(false);
    expect(await realOf(sandbox, join(root, 'sub'))).toBe(join(root, 'sub'));
  });

  it('openWorkingDirectory() opens a directory inside a root given through a symlink, verified by its real path', async () => {
    const link = join(base, 'root-link');
    symlinkSync(root, link);
    const sandbox = await FsSandbox.open([link]);
    expect(await realOf(sandbox, link)).toBe(root);
    expect(await realOf(sandbox, join(link, 'sub'))).toBe(join(root, 'sub'));
    await expect(sandbox.openWorkingDirectory('read', join(link, 'nope'))).rejects.toMatchObject({ code: 'ENOENT' });
    await expect(sandbox.openWorkingDirectory('read', base)).rejects.toBeInstanceOf(SandboxViolation);
  });
});

/** The real path of the directory `path` names, as a terminal's cwd check opens it. */
async function realOf(sandbox: FsSandbox, path: string): Promise<string> {
  const opened = await sandbox.openWorkingDirectory('read', path);
  await opened.close();
  return opened.real;
}
