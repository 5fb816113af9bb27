/** Finding a command as a spawn would: the doctor's "installed at" and the spawn's ENOENT/EACCES share one lookup. */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { findExecutable } from '../../index.js';
import { executableProblem } from '../../services/executable.js';

const dir = mkdtempSync(join(tmpdir(), 'agentvisor-executable-'));
writeFileSync(join(dir, 'tool'), '#!/bin/sh\n');
chmodSync(join(dir, 'tool'), 0o755);
writeFileSync(join(dir, 'plain'), 'not executable');
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
