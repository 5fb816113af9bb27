/**
 * Git worktrees for workspaces (docs/workspaces.md): the repository a path is in, where a
 * worktree goes, creating, reattaching, inspecting and removing one (its branch deleted only
 * when merged), and `directory` workspaces.
 */
import { createHash } from 'node:crypto';
import { mkdir, realpath, stat } from 'node:fs/promises';
import { basename, join, resolve, sep } from 'node:path';
import { workspaceNameProblem } from '../../core/workspace-spec.js';
import { DirtyWorktreeError, git, runGit, WorkspaceError } from './git.js';
import { workspaceStatus } from './status.js';

/** The repository a path is in: its top level and its common git directory (shared by its worktrees). */
export interface RepoIdentity {
  toplevel: string;
  commonDir: string;
  /** `<repo basename>-<hash of the common dir>`: one folder per repository under the state dir. */
  key: string;
}

/** Finds the repository `repo` is in; rejects with git's message (`cannot change to ...`, `not a git repository`). */
export async function repoIdentity(repo: string): Promise<RepoIdentity> {
  const [toplevel, commonDir] = (await git(repo, ['rev-parse', '--path-format=absolute', '--show-toplevel', '--git-common-dir'], { read: true })).trim().split('\n');
  if (!toplevel || !commonDir) throw new WorkspaceError(`fatal: ${repo} is not in a git work tree`);
  const real = await realpath(commonDir).catch(() => commonDir);
  const hash = createHash('sha256').update(real).digest('hex').slice(0, 12);
  const stem = basename(toplevel).replace(/[^A-Za-z0-9._-]+/g, '-').replace(/^[.-]+/, '').slice(0, 40) || 'repo';
  return { toplevel, commonDir: real, key: `${stem}-${hash}` };
}

/** `<stateDir>/workspaces/<repo key>/<name>`, refusing any name that could leave that folder. */
export function worktreePath(stateDir: string, repo: RepoIdentity, name: string): string {
  const problem = workspaceNameProblem(name);
  if (problem) throw new WorkspaceError(`Workspace name "${name}" ${problem}`);
  const root = join(resolve(stateDir), 'workspaces', repo.key);
  const path = join(root, name);
  if (!path.startsWith(root + sep)) throw new WorkspaceError(`Workspace name "${name}" leaves ${root}`);
  return path;
}

/** What is needed to create a worktree: a valid branch name and the base's commit. */
export interface WorktreePlan {
  branch: string;
  /** The base as recorded: the caller's `base`, or the repository's current branch (or commit) for HEAD. */
  base: string;
  baseCommit: string;
}

/** Checks the branch name with git and resolves the base; rejects with git's message. */
export async function planWorktree(repo: RepoIdentity, branch: string, base: string | undefined): Promise<WorktreePlan> {
  if (branch.startsWith('-')) throw new WorkspaceError(`fatal: '${branch}' is not a valid branch name`);
  await git(repo.toplevel, ['check-ref-format', '--branch', branch], { read: true });
  const rev = base ?? 'HEAD';
  const resolved = await runGit(repo.toplevel, ['rev-parse', '--verify', '--quiet', '--end-of-options', `${rev}^{commit}`], { read: true });
  if (resolved.exitCode !== 0) throw new WorkspaceError(`fatal: invalid reference: ${rev}`);
  const baseCommit = resolved.stdout.trim();
  if (base !== undefined) return { branch, base, baseCommit };
  const current = await runGit(repo.toplevel, ['symbolic-ref', '--quiet', '--short', 'HEAD'], { read: true });
  return { branch, base: current.exitCode === 0 && current.stdout.trim() ? current.stdout.trim() : baseCommit, baseCommit };
}

/** `git worktree add -b <branch> -- <path> <base commit>`; rejects with git's message (a branch that exists, say). */
export async function addWorktree(repo: RepoIdentity, path: string, plan: WorktreePlan): Promise<void> {
  await mkdir(join(path, '..'), { recursive: true });
  await git(repo.toplevel, ['worktree', 'add', '--quiet', '-b', plan.branch, '--', path, plan.baseCommit]);
}

/**
 * Checks out an existing branch of ours again in a worktree whose directory went missing
 * (`git worktree prune`, then `git worktree add -- <path> <branch>`).
 */
export async function reattachWorktree(repo: RepoIdentity, path: string, branch: string): Promise<void> {
  await mkdir(join(path, '..'), { recursive: true });
  await git(repo.toplevel, ['worktree', 'prune']);
  await git(repo.toplevel, ['worktree', 'add', '--quiet', '--', path, branch]);
}

/** True when the repository has the branch `refs/heads/<branch>`. */
export async function hasBranch(repo: RepoIdentity, branch: string): Promise<boolean> {
  return (await runGit(repo.toplevel, ['show-ref', '--verify', '--quiet', `refs/heads/${branch}`], { read: true })).exitCode === 0;
}

/** What an existing directory is, as far as reuse is concerned. */
export type ExistingWorktree = { state: 'missing' } | { state: 'worktree'; branch: string | null } | { state: 'other'; reason: string };

/**
 * Whether `path` is already a worktree of `repo` (its own top level, same common dir), and on
 * which branch; `missing` when nothing is there.
 */
export async function inspectWorktree(repo: RepoIdentity, path: string): Promise<ExistingWorktree> {
  if (!(await exists(path))) return { state: 'missing' };
  const result = await runGit(path, ['rev-parse', '--path-format=absolute', '--show-toplevel', '--git-common-dir'], { read: true });
  const [toplevel, commonDir] = result.stdout.trim().split('\n');
  if (result.exitCode !== 0 || !toplevel || !commonDir) return { state: 'other', reason: `${path} exists and is not a git worktree` };
  const same = (await realpath(toplevel).catch(() => toplevel)) === (await realpath(path).catch(() => path)) && (await realpath(commonDir).catch(() => commonDir)) === repo.commonDir;
  if (!same) return { state: 'other', reason: `${path} exists and is not a worktree of ${repo.toplevel}` };
  const branch = await runGit(path, ['symbolic-ref', '--quiet', '--short', 'HEAD'], { read: true });
  return { state: 'worktree', branch: branch.exitCode === 0 ? branch.stdout.trim() : null };
}

/** What removing (or archiving) a worktree did with its branch. */
export interface RemovalOutcome {
  /** The branch was deleted: its commits are in the base, or in the archive's bundle. */
  branchDeleted: boolean;
}

/**
 * Removes a worktree: refused (WorkspaceError) when it holds uncommitted or untracked changes,
 * unless `force`. Its branch is deleted only when every commit on it is in the base (as
 * recorded, or as it is now): committed work is never lost by a removal.
 */
export async function removeWorktree(repo: RepoIdentity, path: string, record: { branch: string; base: string; baseCommit: string }, force: boolean): Promise<RemovalOutcome> {
  if (!force && (await exists(path))) {
    const status = await workspaceStatus(path, path);
    if (status && !status.clean) throw new DirtyWorktreeError(`${path} has ${status.changedCount} uncommitted change(s): not removed (force: true removes it anyway)`);
  }
  await detachWorktree(repo, path);
  const merged = (await isAncestor(repo, record.branch, record.baseCommit)) || (await isAncestor(repo, record.branch, record.base));
  if (!merged) return { branchDeleted: false };
  return { branchDeleted: await deleteBranch(repo, record.branch) };
}

/** `git worktree remove --force` (or only `worktree prune` when the directory is already gone). */
export async function detachWorktree(repo: RepoIdentity, path: string): Promise<void> {
  if (await exists(path)) await git(repo.toplevel, ['worktree', 'remove', '--force', '--', path]);
  await git(repo.toplevel, ['worktree', 'prune']);
}

/** True when `commit` is `of` or one of its ancestors. */
export async function isAncestor(repo: RepoIdentity, commit: string, of: string): Promise<boolean> {
  const result = await runGit(repo.toplevel, ['merge-base', '--is-ancestor', commit, of], { read: true });
  return result.exitCode === 0;
}

/** Deletes the branch when it exists (true), whatever it holds: callers check it is merged or bundled first. */
export async function deleteBranch(repo: RepoIdentity, branch: string): Promise<boolean> {
  if (!(await hasBranch(repo, branch))) return false;
  await git(repo.toplevel, ['branch', '-D', '--', branch]);
  return true;
}

/** `git worktree prune`: forgets worktrees whose directory is gone. */
export async function pruneWorktrees(repo: RepoIdentity): Promise<void> {
  await git(repo.toplevel, ['worktree', 'prune']);
}

/** Makes a `directory` workspace (recursively); rejects unless it ends up a directory. */
export async function makeDirectory(path: string): Promise<string> {
  try {
    await mkdir(path, { recursive: true });
    if (!(await stat(path)).isDirectory()) throw new WorkspaceError(`${path} is not a directory`);
    return await realpath(path);
  } catch (error) {
    if (error instanceof WorkspaceError) throw error;
    throw new WorkspaceError(`Cannot make directory ${path}: ${(error as Error).message}`);
  }
}

/** True when something is at `path`. */
export async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}
