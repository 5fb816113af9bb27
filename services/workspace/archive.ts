/** Archiving a worktree: a bundle of its branch, a patch of its uncommitted changes and `metadata.json`, then its removal. */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { WorkspaceOwner } from '../../core/workspace-spec.js';
import { git } from './git.js';
import { workspaceStatus } from './status.js';
import { deleteBranch, detachWorktree, exists, hasBranch, isAncestor, type RemovalOutcome, type RepoIdentity } from './worktree.js';


/** What an archive holds, as its `metadata.json` records it. */
export interface ArchiveMetadata {
  version: 1;
  repo: string;
  path: string;
  branch: string;
  base: string;
  baseCommit: string;
  /** The worktree's HEAD when it was archived. */
  head: string | null;
  owner: WorkspaceOwner | null;
  createdAt: string;
  archivedAt: string;
  /** `branch.bundle`: the branch's commits beyond the base commit; null when it had none. */
  bundle: string | null;
  /** `uncommitted.patch`: uncommitted and untracked changes (not ignored files) against HEAD; null when clean. */
  patch: string | null;
  changedFiles: string[];
  /** How to get the work back. */
  restore: string[];
}

/**
 * Archives a worktree into `archiveDir` — a bundle of its branch's commits beyond the base, a
 * binary patch of its uncommitted and untracked changes, `metadata.json` — then removes the
 * worktree and deletes its branch (the bundle holds it). Resolves with the metadata.
 */
export async function archiveWorktree(
  repo: RepoIdentity,
  path: string,
  archiveDir: string,
  record: { branch: string; base: string; baseCommit: string; owner: WorkspaceOwner | null; createdAt: string },
): Promise<ArchiveMetadata & { dir: string } & RemovalOutcome> {
  await mkdir(archiveDir, { recursive: true });
  const present = await exists(path);
  const status = present ? await workspaceStatus(path, path) : null;
  const bundleFile = join(archiveDir, 'branch.bundle');
  const patchFile = join(archiveDir, 'uncommitted.patch');
  const refs = [record.branch, ...(status?.branch && status.branch !== record.branch ? [status.branch] : [])];
  const existing: string[] = [];
  for (const ref of refs) if (await hasBranch(repo, ref)) existing.push(ref);
  let bundle: string | null = null;
  if (existing.length > 0) {
    const count = await git(repo.toplevel, ['rev-list', '--count', ...existing, `^${record.baseCommit}`, '--'], { read: true });
    if (Number(count.trim()) > 0) {
      await git(repo.toplevel, ['bundle', 'create', '--quiet', bundleFile, ...existing, `^${record.baseCommit}`]);
      bundle = bundleFile;
    }
  }
  let patch: string | null = null;
  if (status && !status.clean) {
    await writeUncommittedPatch(path, patchFile);
    patch = patchFile;
  }
  const metadata: ArchiveMetadata = {
    version: 1,
    repo: repo.toplevel,
    path,
    branch: record.branch,
    base: record.base,
    baseCommit: record.baseCommit,
    head: status?.head ?? null,
    owner: record.owner,
    createdAt: record.createdAt,
    archivedAt: new Date().toISOString(),
    bundle,
    patch,
    changedFiles: status?.changedFiles ?? [],
    restore: [
      ...(bundle ? [`git -C ${repo.toplevel} fetch ${bundleFile} ${existing.map((ref) => `${ref}:${ref}`).join(' ')}`] : []),
      ...(patch ? [`git -C <a checkout of ${status?.head ?? record.branch}> apply --index ${patchFile}`] : []),
    ],
  };
  await writeFile(join(archiveDir, 'metadata.json'), `${JSON.stringify(metadata, null, 2)}\n`);
  await detachWorktree(repo, path);
  let branchDeleted = false;
  if (bundle || (await isAncestor(repo, record.branch, record.baseCommit))) {
    for (const ref of existing) branchDeleted = (await deleteBranch(repo, ref)) || branchDeleted;
  }
  return { ...metadata, dir: archiveDir, branchDeleted };
}

/** A binary patch of every uncommitted and untracked change, built in a scratch index (the worktree's own is untouched). */
async function writeUncommittedPatch(path: string, file: string): Promise<void> {
  const scratch = await mkdtemp(join(tmpdir(), 'agentvisor-index-'));
  const env = { GIT_INDEX_FILE: join(scratch, 'index') };
  try {
    await git(path, ['read-tree', 'HEAD'], { env });
    await git(path, ['add', '--all', '--', '.'], { env });
    await git(path, ['diff', '--cached', '--binary', 'HEAD', '--'], { env, stdoutFile: file });
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}
