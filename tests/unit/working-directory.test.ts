/** FsSandbox.openWorkingDirectory and FsSandbox.open: what a terminal's cwd check opens, and that no descriptor is left behind on any path. */
import { mkdirSync, mkdtempSync, readdirSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FsSandbox, SandboxViolation } from '../../services/fs-sandbox.service.js';

let base: string;
let root: string;
beforeEach(() => {
  base = mkdtempSync(join(tmpdir(), 'agentvisor-cwd-'));
  root = join(base, 'root');
  mkdirSync(join(root, 'sub'), { recursive: true });
  writeFileSync(join(root, 'file.txt'), 'x');
  mkdirSync(join(base, 'outside'));
  symlinkSync(join(base, 'outside'), join(root, 'out'));
});
afterEach(() => rmSync(base, { recursive: true, force: true }));

const openDescriptors = () => readdirSync('/proc/self/fd').length;

describe.skipIf(process.platform !== 'linux')('FsSandbox.openWorkingDirectory', () => {
  it('opens the root itself and a directory below it, as /proc/self/fd paths to what was checked', async () => {
    const sandbox = await FsSandbox.open([root]);
    for (const [path, real] of [
      [root, realpathSync(root)],
      [join(root, 'sub'), realpathSync(join(root, 'sub'))],
      ['sub', realpathSync(join(root, 'sub'))],
    ] as const) {
      const opened = await sandbox.openWorkingDirectory('read', path);
      expect(opened.path).toMatch(/^\/proc\/self\/fd\/\d+$/);
      expect(realpathSync(opened.path)).toBe(real);
      expect(opened.real).toBe(real);
      await opened.close();
    }
  });

  it('refuses a file, a missing directory and a symlink to outside, leaving no descriptor open', async () => {
    const sandbox = await FsSandbox.open([root]);
    const before = openDescriptors();
    await expect(sandbox.openWorkingDirectory('read', join(root, 'file.txt'))).rejects.toMatchObject({ code: 'ENOTDIR' });
    await expect(sandbox.openWorkingDirectory('read', join(root, 'missing'))).rejects.toMatchObject({ code: 'ENOENT' });
    await expect(sandbox.openWorkingDirectory('read', join(root, 'out'))).rejects.toBeInstanceOf(SandboxViolation);
    await expect(sandbox.openWorkingDirectory('read', '/etc')).rejects.toBeInstanceOf(SandboxViolation);
    expect(openDescriptors()).toBe(before);
  });

  it('past its deadline the directory is closed, never handed out', async () => {
    const sandbox = await FsSandbox.open([root], { timeoutMs: 1 });
    const before = openDescriptors();
    for (let i = 0; i < 50; i++) await sandbox.openWorkingDirectory('read', root).then((opened) => opened.close(), () => undefined);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(openDescriptors()).toBe(before);
  });

  it('FsSandbox.open resolves each root once: a root that did not exist stays refused', async () => {
    const opened = await FsSandbox.open([root, join(base, 'nope')]);
    expect(await opened.readTextFile(join(root, 'file.txt'))).toBe('x');
    mkdirSync(join(base, 'nope'));
    writeFileSync(join(base, 'nope', 'x'), 'late');
    await expect(opened.readTextFile(join(base, 'nope', 'x'))).rejects.toMatchObject({ reason: 'root_changed' });
  });
});
