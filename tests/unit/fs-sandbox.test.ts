import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FsSandbox, SandboxViolation } from '../../services/fs-sandbox.service.js';

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
    const sandbox = new FsSandbox([root]);
    expect(await sandbox.readTextFile('a.txt', { line: 2 })).toBe('two\nthree');
    expect(await sandbox.readTextFile(join(root, 'a.txt'), { limit: 1 })).toBe('one');
  });

  it('refuses every way out before touching the file system outside', async () => {
    const sandbox = new FsSandbox([root]);
    symlinkSync(base, join(root, 'sub', 'up'));
    for (const path of ['../outside.txt', join(base, 'outside.txt'), join(root, 'sub', 'up', 'outside.txt'), join(root, 'sub', '..', '..', 'outside.txt')]) {
      await expect(sandbox.readTextFile(path), path).rejects.toBeInstanceOf(SandboxViolation);
      await expect(sandbox.writeTextFile(path, 'pwned'), path).rejects.toBeInstanceOf(SandboxViolation);
    }
    await expect(sandbox.writeTextFile(join(root, 'sub', 'up', 'new.txt'), 'x'), 'new file through a link').rejects.toBeInstanceOf(SandboxViolation);
    expect(readFileSync(join(base, 'outside.txt'), 'utf8')).toBe('outside');
  });

  it('normalises before resolving: "missing/../link" cannot smuggle a link past the check', async () => {
    const sandbox = new FsSandbox([root]);
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
    const sandbox = new FsSandbox([link]);
    expect(await sandbox.readTextFile(join(link, 'a.txt'))).toContain('one');
    await sandbox.writeTextFile(join(link, 'deep', 'er', 'b.txt'), 'b');
    expect(readFileSync(join(root, 'deep', 'er', 'b.txt'), 'utf8')).toBe('b');
  });

  it('does not mistake a sibling with a common prefix for the root', async () => {
    mkdirSync(join(base, 'root-evil'));
    writeFileSync(join(base, 'root-evil', 'x.txt'), 'evil');
    const sandbox = new FsSandbox([root]);
    await expect(sandbox.readTextFile(join(base, 'root-evil', 'x.txt'))).rejects.toBeInstanceOf(SandboxViolation);
  });
});
