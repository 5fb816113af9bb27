/** A workspace's `git status` (changed files, branch, HEAD) and its commits ahead of and behind its base. */
import { join, relative } from 'node:path';
import { runGit } from './git.js';

/** A workspace's changes as `git status` sees them. */
export interface StatusSnapshot {
  /** The branch checked out (null: detached, or not a git work tree). */
  branch: string | null;
  head: string | null;
  clean: boolean;
  /** Changed, staged, untracked and conflicted paths, relative to the workspace (at most {@link changedFileLimit}). */
  changedFiles: string[];
  /** How many paths changed in all (`changedFiles` stops at the limit). */
  changedCount: number;
}

/** Most paths a status report lists; `changedCount` still counts them all. */
export const changedFileLimit = 1000;

/**
 * `git status --porcelain=v2 --branch -z --untracked-files=all` of `dir` (limited to `dir`
 * when it is a subdirectory of a work tree); null when `dir` is not in a git work tree. Takes
 * no lock: an agent's own git commands are never blocked by it.
 */
export async function workspaceStatus(dir: string, toplevel?: string): Promise<StatusSnapshot | null> {
  const result = await runGit(dir, ['status', '--porcelain=v2', '--branch', '-z', '--untracked-files=all', '--', '.'], { read: true });
  if (result.exitCode !== 0) return null;
  if (toplevel === undefined) {
    const top = await runGit(dir, ['rev-parse', '--show-toplevel'], { read: true });
    toplevel = top.exitCode === 0 ? top.stdout.trim() : dir;
  }
  const root = toplevel;
  return root === dir ? parseStatus(result.stdout) : parseStatus(result.stdout, (path) => relative(dir, join(root, path)));
}

/** Parses porcelain v2 `-z` output; `relativize` turns a repository path into the caller's. */
export function parseStatus(output: string, relativize: (path: string) => string = (path) => path): StatusSnapshot {
  const records = output.split('\0');
  let branch: string | null = null;
  let head: string | null = null;
  const changed: string[] = [];
  let count = 0;
  const add = (path: string) => {
    count++;
    if (changed.length < changedFileLimit) changed.push(relativize(path));
  };
  for (let index = 0; index < records.length; index++) {
    const record = records[index]!;
    if (record.startsWith('# branch.head ')) {
      const name = record.slice('# branch.head '.length);
      branch = name === '(detached)' ? null : name;
    } else if (record.startsWith('# branch.oid ')) {
      const oid = record.slice('# branch.oid '.length);
      head = oid === '(initial)' ? null : oid;
    } else if (record.startsWith('1 ')) add(fieldsAfter(record, 8));
    else if (record.startsWith('2 ')) {
      add(fieldsAfter(record, 9));
      index++; // the original path of a rename or copy
    } else if (record.startsWith('u ')) add(fieldsAfter(record, 10));
    else if (record.startsWith('? ')) add(record.slice(2));
  }
  return { branch, head, clean: count === 0, changedFiles: changed, changedCount: count };
}

/** The rest of a space-separated record after `n` fields (a path may hold spaces). */
function fieldsAfter(record: string, n: number): string {
  let at = 0;
  for (let field = 0; field < n; field++) at = record.indexOf(' ', at) + 1;
  return record.slice(at);
}

/**
 * Commits in `HEAD` of `dir` not in `base` (ahead) and in `base` not in `HEAD` (behind),
 * against `base` as it is now, or the recorded base commit once `base` no longer resolves.
 */
export async function aheadBehind(dir: string, base: string, baseCommit: string): Promise<{ ahead: number; behind: number } | null> {
  const resolves = await runGit(dir, ['rev-parse', '--verify', '--quiet', '--end-of-options', `${base}^{commit}`], { read: true });
  const against = resolves.exitCode === 0 ? base : baseCommit;
  const result = await runGit(dir, ['rev-list', '--left-right', '--count', `${against}...HEAD`, '--'], { read: true });
  if (result.exitCode !== 0) return null;
  const [behind, ahead] = result.stdout.trim().split(/\s+/).map(Number);
  return Number.isFinite(ahead) && Number.isFinite(behind) ? { ahead: ahead!, behind: behind! } : null;
}
