/** Finding a command as a spawn would: the doctor's "installed at" and the spawn's ENOENT/EACCES share one lookup. */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { findExecutable } from '../../index.js';
import { commandProblem, describeCommandProblem, executableProblem } from '../../services/executable.js';

const dir = mkdtempSync(join(tmpdir(), 'agentvisor-executable-'));
writeFileSync(join(dir, 'tool'), '#!/bin/sh\n');
chmodSync(join(dir, 'tool'), 0o755);
writeFileSync(join(dir, 'plain'), 'not executable');
mkdirSync(join(dir, 'folder'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('findExecutable', () => {
  it('finds a command on PATH, or by a path relative to cwd', () => {
    expect(findExecutable('node', undefined, dirname(process.execPath))).toBe(process.execPath);
    expect(findExecutable('tool', undefined, `/nonexistent:${dir}`)).toBe(join(dir, 'tool'));
    expect(findExecutable('./tool', dir, '')).toBe(join(dir, 'tool'));
  });

  it('is null for a missing command and for a file it may not execute, as the spawn would fail', () => {
    expect(findExecutable('agentvisor-no-such-command', undefined, dir)).toBeNull();
    expect(findExecutable('plain', undefined, dir)).toBeNull();
    expect(executableProblem('plain', undefined, dir)).toBe('EACCES');
    expect(executableProblem('tool', undefined, dir)).toBeNull();
  });
});

describe('commandProblem', () => {
  it('names the path a spawn would try and what is wrong with it: a directory, a file it may not execute, or nothing there', () => {
    expect(commandProblem(join(dir, 'folder'), undefined, '')).toEqual({ problem: 'directory', path: join(dir, 'folder') });
    expect(commandProblem('./folder', dir, '')).toEqual({ problem: 'directory', path: join(dir, 'folder') });
    expect(commandProblem('folder', undefined, `/nonexistent:${dir}`)).toEqual({ problem: 'directory', path: join(dir, 'folder') });
    expect(commandProblem('plain', undefined, dir)).toEqual({ problem: 'not_executable', path: join(dir, 'plain') });
    expect(commandProblem('agentvisor-no-such-command', undefined, dir)).toEqual({ problem: 'missing' });
    expect(commandProblem('tool', undefined, dir)).toBeNull();
  });

  it('goes on along PATH past what cannot run, as a spawn does, and names the first such path only when nothing runs', () => {
    const other = mkdtempSync(join(tmpdir(), 'agentvisor-executable-'));
    try {
      mkdirSync(join(other, 'tool'));
      writeFileSync(join(other, 'plain'), '#!/bin/sh\n');
      chmodSync(join(other, 'plain'), 0o755);
      expect(commandProblem('tool', undefined, `${other}:${dir}`)).toBeNull();
      expect(commandProblem('plain', undefined, `${dir}:${other}`)).toBeNull();
      expect(commandProblem('folder', undefined, `${other}:${dir}`)).toEqual({ problem: 'directory', path: join(dir, 'folder') });
    } finally {
      rmSync(other, { recursive: true, force: true });
    }
  });

  it('words it with the path', () => {
    expect(describeCommandProblem('folder', { problem: 'directory', path: '/opt/folder' })).toBe('/opt/folder is a directory');
    expect(describeCommandProblem('plain', { problem: 'not_executable', path: '/opt/plain' })).toBe('/opt/plain is not executable');
    expect(describeCommandProblem('ghost', { problem: 'missing' })).toBe('ghost: command not found');
  });

  it('leaves executableProblem as a shell sees it: a directory on the way is not found, a file it may not execute is EACCES', () => {
    expect(executableProblem('folder', undefined, dir)).toBe('ENOENT');
    expect(executableProblem(join(dir, 'folder'), undefined, '')).toBe('ENOENT');
    expect(executableProblem('plain', undefined, dir)).toBe('EACCES');
  });
});
