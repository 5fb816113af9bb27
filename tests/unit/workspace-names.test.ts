/**
 * Workspace names and specs (core/workspace-spec.ts, services/workspace/): what a
 * name may be, so that no name leaves the state directory or reaches git as an option; the
 * default names; the schema's refusals as `invalid_options` naming the field; parsing git's
 * porcelain status.
 */
import { describe, expect, it } from 'vitest';
import { validateAgentSpec } from '../../core/agent-spec.js';
import { defaultWorkspaceName, isValidWorkspaceName, maxWorkspaceNameLength, workspaceNameProblem } from '../../core/workspace-spec.js';
import { resolvePruneOptions, resolveSessionOptions, resolveOptions } from '../../api/options.js';
import { gitMessage, WorkspaceError } from '../../services/workspace/git.js';
import { parseStatus } from '../../services/workspace/status.js';
import { worktreePath } from '../../services/workspace/worktree.js';

const repo = { toplevel: '/work/repo', commonDir: '/work/repo/.git', key: 'repo-0123456789ab' };

describe('workspace names', () => {
  it.each(['feature', 'fix-123', 'a.b', 'v1.2_x', 'A', 'codex-a1b2c3', 'x'.repeat(maxWorkspaceNameLength)])('accepts %j', (name) => {
    expect(workspaceNameProblem(name)).toBeNull();
    expect(isValidWorkspaceName(name)).toBe(true);
  });

  it.each([
    ['', 'must not be empty'],
    ['..', 'must not start with "."'],
    ['a..b', 'must not contain ".."'],
    ['-rf', 'must not start with "-"'],
    ['--upload-pack=evil', 'may contain only'],
    ['.git', 'must not start with "."'],
    ['a/b', 'may contain only'],
    ['../../etc', 'may contain only'],
    ['a b', 'may contain only'],
    ['tab\there', 'may contain only'],
    ['nul\u0000', 'may contain only'],
    ['émoji', 'may contain only'],
    ['name.lock', 'must not end with'],
    ['name.', 'must not end with'],
    ['x'.repeat(maxWorkspaceNameLength + 1), `at most ${maxWorkspaceNameLength}`],
  ])('refuses %j (%s)', (name, problem) => {
    expect(workspaceNameProblem(name)).toContain(problem);
    expect(isValidWorkspaceName(name)).toBe(false);
  });

  it('default names are valid, from the agent name and a short id', () => {
    expect(defaultWorkspaceName('codex', 'a1b2c3')).toBe('codex-a1b2c3');
    expect(defaultWorkspaceName('Claude Code', 'a1b2c3')).toBe('Claude-Code-a1b2c3');
    expect(defaultWorkspaceName('../../etc/passwd', 'a1b2c3')).toBe('etc-passwd-a1b2c3');
    expect(defaultWorkspaceName('--help', 'a1b2c3')).toBe('help-a1b2c3');
    expect(defaultWorkspaceName('日本語', 'a1b2c3')).toBe('workspace-a1b2c3');
    expect(defaultWorkspaceName('a'.repeat(500), 'a1b2c3')).toHaveLength(maxWorkspaceNameLength);
    for (const stem of ['codex', 'Claude Code', '../..', '--', '.hidden', 'a..b', 'x.lock', 'é', 'a'.repeat(500), 'fixture-session']) {
      expect(isValidWorkspaceName(defaultWorkspaceName(stem, 'ff00aa')), stem).toBe(true);
    }
  });

  it('a worktree path never leaves <stateDir>/workspaces/<repo key>/', () => {
    expect(worktreePath('/state', repo, 'feature')).toBe('/state/workspaces/repo-0123456789ab/feature');
    for (const name of ['..', '../x', '-x', 'a/b', '.meta', '']) expect(() => worktreePath('/state', repo, name), name).toThrow(WorkspaceError);
  });
});

describe('workspace specs are invalid_options naming the field', () => {
  const spec = (workspace: unknown) => ({ command: 'agent', workspace });
  it.each([
    [{ kind: 'git-worktree' }, 'spec.workspace.repo'],
    [{ kind: 'git-worktree', repo: '/r', name: '..' }, 'spec.workspace.name: must not start with "."'],
    [{ kind: 'git-worktree', repo: '/r', name: '-x' }, 'spec.workspace.name: must not start with "-"'],
    [{ kind: 'git-worktree', repo: '/r', base: '--orphan' }, 'spec.workspace.base: must not start with "-"'],
    [{ kind: 'git-worktree', repo: '/r', branch: '-b' }, 'spec.workspace.branch: must not start with "-"'],
    [{ kind: 'git-worktree', repo: '/r', branch: 'a b' }, 'spec.workspace.branch: must not contain whitespace'],
    [{ kind: 'git-worktree', repo: '/r', base: '@{-1}' }, 'spec.workspace.base: must not use the @{...} syntax'],
    [{ kind: 'git-worktree', repo: '/r', cleanup: 'delete' }, 'spec.workspace.cleanup'],
    [{ kind: 'git-worktree', repo: '/r', extra: 1 }, 'spec.workspace'],
    [{ kind: 'directory', path: '/d', cleanup: 'remove' }, "spec.workspace.cleanup: must be 'keep'"],
    [{ kind: 'jj', repo: '/r' }, "spec.workspace.kind: must be { kind: 'git-worktree'"],
    ['/some/dir', 'spec.workspace'],
  ])('%j', (workspace, message) => {
    expect(() => validateAgentSpec('a', spec(workspace))).toThrow(expect.objectContaining({ kind: 'invalid_options', message: expect.stringContaining(message) }));
  });

  it('cwd and workspace are exclusive, on a spec and in session options', () => {
    expect(() => validateAgentSpec('a', { command: 'agent', cwd: '/x', workspace: { kind: 'directory', path: '/d' } })).toThrow(expect.objectContaining({ message: expect.stringContaining('spec.workspace: cannot be given with cwd') }));
    const defaults = resolveOptions({ stateDir: false, store: 'memory' }).sessions;
    expect(() => resolveSessionOptions({ cwd: '/x', workspace: { kind: 'directory', path: '/d' } }, defaults)).toThrow(expect.objectContaining({ kind: 'invalid_options', message: expect.stringContaining('session options.workspace') }));
    expect(resolveSessionOptions({ workspace: { kind: 'git-worktree', repo: 'relative/repo' } }, defaults).workspace).toEqual({ kind: 'git-worktree', repo: `${process.cwd()}/relative/repo` });
  });

  it('pruneWorkspaces options', () => {
    expect(resolvePruneOptions(undefined)).toEqual({});
    expect(resolvePruneOptions({ force: true, strategy: 'archive' })).toEqual({ force: true, strategy: 'archive' });
    expect(() => resolvePruneOptions({ strategy: 'keep' })).toThrow(expect.objectContaining({ kind: 'invalid_options', message: expect.stringContaining('prune options.strategy') }));
    expect(() => resolvePruneOptions({ dryRun: true })).toThrow(expect.objectContaining({ kind: 'invalid_options' }));
  });

  it('workspaceStatusIntervalMs is bounded', () => {
    expect(resolveOptions({ stateDir: false, store: 'memory' }).workspaceStatusIntervalMs).toBe(1000);
    expect(() => resolveOptions({ workspaceStatusIntervalMs: 10 })).toThrow(expect.objectContaining({ message: expect.stringContaining('workspaceStatusIntervalMs: must be at least 50 ms') }));
  });
});

describe("git's porcelain v2 status and messages", () => {
  it('counts changed, staged, renamed, conflicted and untracked paths (spaces kept)', () => {
    const output = [
      '# branch.oid 0123456789abcdef0123456789abcdef01234567',
      '# branch.head agentvisor/feature',
      '1 .M N... 100644 100644 100644 aaaa bbbb src/a file.ts',
      '2 R. N... 100644 100644 100644 aaaa bbbb R100 new name.ts',
      'old name.ts',
      'u UU N... 100644 100644 100644 100644 aaaa bbbb cccc conflict.ts',
      '? untracked dir/file.txt',
      '',
    ].join('\0');
    expect(parseStatus(output)).toEqual({
      branch: 'agentvisor/feature',
      head: '0123456789abcdef0123456789abcdef01234567',
      clean: false,
      changedFiles: ['src/a file.ts', 'new name.ts', 'conflict.ts', 'untracked dir/file.txt'],
      changedCount: 4,
    });
    expect(parseStatus('# branch.oid (initial)\0# branch.head (detached)\0')).toEqual({ branch: null, head: null, clean: true, changedFiles: [], changedCount: 0 });
  });

  it("keeps git's fatal/error lines as the message", () => {
    expect(gitMessage("Preparing worktree (new branch 'agentvisor/x')\nfatal: a branch named 'agentvisor/x' already exists\n", 'failed')).toBe("fatal: a branch named 'agentvisor/x' already exists");
    expect(gitMessage('something odd\n', 'failed')).toBe('something odd');
    expect(gitMessage('', 'failed')).toBe('failed');
  });
});
