/**
 * The client capabilities agentvisor serves — fs/* and terminal/* — confined to the
 * session's cwd and extra roots, on real fixture-agent processes that try to escape.
 */
import { existsSync, linkSync, mkdirSync, readFileSync, renameSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createSupervisor, type Session, type Supervisor } from '../../index.js';
import { collectChunks, command, eventually, fixtureSpec, scratch } from '../support/real-agents.js';

let files: ReturnType<typeof scratch>;
let supervisor: Supervisor | undefined;
let workspace: string;
let outside: string;

beforeEach(() => {
  files = scratch();
  workspace = files.path('workspace');
  outside = files.path('outside');
  mkdirSync(workspace);
  mkdirSync(outside);
  writeFileSync(join(workspace, 'notes.txt'), 'line 1\nline 2\nline 3\n');
  writeFileSync(join(outside, 'secret.txt'), 'top secret');
});

afterEach(async () => {
  await supervisor?.shutdown();
  supervisor = undefined;
  files.cleanup();
});

async function ask(session: Session, op: Record<string, unknown>): Promise<string> {
  const received = collectChunks(session);
  await session.prompt(command(op));
  received.off();
  return received.text();
}

async function open(options: Parameters<typeof createSupervisor>[0] = {}, sessionOptions: { additionalRoots?: string[] } = {}) {
  supervisor = createSupervisor({ ...options, agents: { fixture: fixtureSpec() } });
  const violations: Array<{ operation: string; path: string }> = [];
  supervisor.on('sandbox:violation', ({ operation, path }) => violations.push({ operation, path }));
  const session = await supervisor.newSession('fixture', { cwd: workspace, ...sessionOptions });
  return { session, violations };
}

describe('fs/read_text_file and fs/write_text_file', () => {
  it('reads and writes inside the cwd, with line and limit', async () => {
    const { session, violations } = await open();
    expect(await ask(session, { op: 'read', path: join(workspace, 'notes.txt') })).toBe('read:line 1\nline 2\nline 3\n');
    expect(await ask(session, { op: 'read', path: join(workspace, 'notes.txt'), line: 2, limit: 1 })).toBe('read:line 2');
    expect(await ask(session, { op: 'write', path: join(workspace, 'src', 'new.ts'), content: 'export {};\n' })).toBe('write:ok');
    expect(readFileSync(join(workspace, 'src', 'new.ts'), 'utf8')).toBe('export {};\n');
    expect(violations).toEqual([]);
  });

  it('refuses ".." escapes, absolute paths elsewhere and symlinks pointing out — and reports them', async () => {
    const { session, violations } = await open();
    symlinkSync(join(outside, 'secret.txt'), join(workspace, 'link-to-secret.txt'));
    symlinkSync(outside, join(workspace, 'link-to-outside'));
    const attempts = [
      { op: 'read', path: join(workspace, '..', 'outside', 'secret.txt') },
      { op: 'read', path: join(outside, 'secret.txt') },
      { op: 'read', path: join(workspace, 'link-to-secret.txt') },
      { op: 'read', path: join(workspace, 'link-to-outside', 'secret.txt') },
      { op: 'write', path: join(outside, 'planted.txt'), content: 'x' },
      { op: 'write', path: join(workspace, 'link-to-secret.txt'), content: 'overwritten' },
      { op: 'write', path: join(workspace, 'link-to-outside', 'planted.txt'), content: 'x' },
      { op: 'write', path: `${workspace}/missing/../link-to-outside/planted.txt`, content: 'x' },
    ];
    for (const attempt of attempts) {
      const answer = await ask(session, attempt);
      expect(answer, JSON.stringify(attempt)).toMatch(/^error:.*Access denied/);
      expect(answer).not.toContain('top secret');
    }
    expect(readFileSync(join(outside, 'secret.txt'), 'utf8')).toBe('top secret');
    expect(existsSync(join(outside, 'planted.txt'))).toBe(false);
    expect(violations.map((violation) => violation.operation)).toEqual(['read', 'read', 'read', 'read', 'write', 'write', 'write', 'write']);
  });

  it('additionalRoots extends the sandbox', async () => {
    const { session } = await open({}, { additionalRoots: [outside] });
    expect(await ask(session, { op: 'read', path: join(outside, 'secret.txt') })).toBe('read:top secret');
  });

  it('a missing file is an error answer, not a crash', async () => {
    const { session } = await open();
    expect(await ask(session, { op: 'read', path: join(workspace, 'nope.txt') })).toMatch(/^error:/);
  });
});

describe('fs/*: the security review, through a real agent', () => {
  it('defect 5: FIFO reads are refused at once, and every later read of the host still works', async () => {
    execFileSync('mkfifo', [join(workspace, 'pipe')]);
    const { session, violations } = await open();
    // More than libuv's 4 threadpool threads: before the fix the fifth read, and every file read after it, hung.
    for (let i = 0; i < 6; i++) expect(await ask(session, { op: 'read', path: join(workspace, 'pipe') })).toMatch(/^error:.*is a FIFO, not a regular file/);
    expect(await ask(session, { op: 'write', path: join(workspace, 'pipe'), content: 'x' })).toMatch(/^error:.*not a regular file/);
    expect(await ask(session, { op: 'read', path: join(workspace, 'notes.txt'), limit: 1 })).toBe('read:line 1');
    expect(readFileSync(join(workspace, 'notes.txt'), 'utf8')).toBe('line 1\nline 2\nline 3\n');
    expect(violations).toHaveLength(7);
  });

  it('defect 6: a 600 MB file read with limit 1 answers one line without reading the file; a whole read is refused', async () => {
    const huge = join(workspace, 'huge.txt');
    writeFileSync(huge, 'first line\nsecond line\n');
    truncateSync(huge, 600 * 1024 * 1024); // sparse: zeros after the two lines
    const { session } = await open();
    const rssBefore = process.memoryUsage.rss();
    expect(await ask(session, { op: 'read', path: huge, line: 2, limit: 1 })).toBe('read:second line');
    expect(process.memoryUsage.rss() - rssBefore).toBeLessThan(64 * 1024 * 1024);
    expect(await ask(session, { op: 'read', path: huge })).toMatch(/^error:.*would answer more than 10485760 bytes/);
  });

  it('defect 11: a hardlink inside the cwd to a file outside is neither read nor written through', async () => {
    linkSync(join(outside, 'secret.txt'), join(workspace, 'hardlink.txt'));
    const { session, violations } = await open();
    expect(await ask(session, { op: 'read', path: join(workspace, 'hardlink.txt') })).toMatch(/^error:.*has 2 hard links/);
    expect(await ask(session, { op: 'write', path: join(workspace, 'hardlink.txt'), content: 'pwned' })).toMatch(/^error:.*has 2 hard links/);
    expect(readFileSync(join(outside, 'secret.txt'), 'utf8')).toBe('top secret');
    expect(violations.map((violation) => violation.operation)).toEqual(['read', 'write']);
  });

  it('defect 13: a cwd replaced by a symlink after the session opened, before its first fs call, is refused', async () => {
    const { session, violations } = await open();
    renameSync(workspace, files.path('workspace-moved'));
    symlinkSync(outside, workspace);
    const answer = await ask(session, { op: 'read', path: join(workspace, 'secret.txt') });
    expect(answer).toMatch(/^error:.*Access denied: the session's directory .* was replaced after the session opened/);
    expect(await ask(session, { op: 'write', path: join(workspace, 'planted.txt'), content: 'x' })).toMatch(/^error:.*was replaced/);
    expect(existsSync(join(outside, 'planted.txt'))).toBe(false);
    expect(violations.map((violation) => violation.operation)).toEqual(['read', 'write']);
  });

  it('defect 16: an outside path gets the same answer whether or not it exists; only a path inside says "No such file"', async () => {
    symlinkSync(outside, join(workspace, 'link-to-outside'));
    const { session } = await open();
    const answer = async (path: string) => (await ask(session, { op: 'read', path })).replace(path, '<path>');
    expect(await answer(join(outside, 'secret.txt'))).toBe(await answer(join(outside, 'missing.txt')));
    expect(await answer(join(workspace, 'link-to-outside', 'secret.txt'))).toBe(await answer(join(workspace, 'link-to-outside', 'missing.txt')));
    expect(await answer(join(outside, 'missing.txt'))).toMatch(/^error:.*Access denied/);
    expect(await answer(join(workspace, 'missing.txt'))).toMatch(/^error:.*No such file/);
    // Other failures name only the requested path (never the /proc/self/fd names of the walk).
    expect(await ask(session, { op: 'read', path: workspace })).toBe(`error:EISDIR: illegal operation on a directory, open '${workspace}'`);
  });
});

describe('terminal/*', () => {
  const node = process.execPath;

  it('runs a command inside the cwd and reports output and exit code', async () => {
    const { session } = await open();
    const answer = await ask(session, { op: 'terminal', command: node, args: ['-e', 'console.log(process.cwd()); process.exit(3)'] });
    expect(answer).toBe(`terminal-output:${workspace}\nterminal-exit:3`);
  });

  it('keeps only the last outputByteLimit bytes', async () => {
    const { session } = await open();
    const answer = await ask(session, { op: 'terminal', command: node, args: ['-e', 'process.stdout.write("a".repeat(1000) + "END")'], outputByteLimit: 10 });
    expect(answer).toBe('terminal-output:aaaaaaaEND' + 'terminal-exit:0');
  });

  it('kill ends a running command', async () => {
    const { session } = await open();
    const answer = await ask(session, { op: 'terminal', command: node, args: ['-e', 'setInterval(() => {}, 1000)'], kill: true });
    expect(answer).toBe('terminal-output:terminal-exit:SIGKILL');
  });

  it('refuses a cwd outside the sandbox', async () => {
    const { session, violations } = await open();
    const answer = await ask(session, { op: 'terminal', command: node, args: ['-e', '1'], cwd: outside });
    expect(answer).toMatch(/^error:.*Access denied/);
    expect(violations).toEqual([{ operation: 'terminal', path: outside }]);
  });

  it('every terminal is killed when its session closes', async () => {
    const { session } = await open();
    const marker = `agentvisor-terminal-${Date.now()}`;
    // Caught at once: the turn is refused while close() is still releasing the terminals.
    const turn = session.prompt(command({ op: 'terminal', command: node, args: ['-e', `setInterval(() => {}, 1000) // ${marker}`] })).catch((error: unknown) => error);
    const running = () => {
      try {
        return execFileSync('pgrep', ['-f', marker]).toString().trim() !== '';
      } catch {
        return false;
      }
    };
    await eventually(running, 'the terminal command to run');
    await session.close();
    expect(await turn).toMatchObject({ kind: 'session_closed' });
    expect(running()).toBe(false);
  });
});

describe('capabilities', () => {
  it('are advertised only when enabled; disabled ones are not served', async () => {
    const { session } = await open({ capabilities: { fs: false, terminal: false } });
    expect(await ask(session, { op: 'read', path: join(workspace, 'notes.txt') })).toMatch(/^error:.*[Mm]ethod not found/);
    expect(await ask(session, { op: 'terminal', command: process.execPath, args: ['-e', '1'] })).toMatch(/^error:.*[Mm]ethod not found/);
  });
});
