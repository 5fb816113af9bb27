/**
 * Workspaces on disk (docs/workspaces.md): git worktrees made with execa'd git, their
 * status, archive and removal, the crash-safe records that let a later run prune them, and
 * a watcher that turns file changes into throttled `git status` reports. No XState here.
 *
 * Every git call is `git -c core.fsmonitor=false -c gc.auto=0 -C <dir> <command> ... -- <paths>`:
 * paths always follow `--`, and names are validated (core/workspace-spec.ts) so that nothing
 * a caller gives is read as an option. No fsmonitor daemon and no background gc is started,
 * so no git process outlives the call that ran it.
 */
import { execa } from 'execa';
import { createHash } from 'node:crypto';
import { watch, type FSWatcher } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, realpath, rename, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join, relative, resolve, sep } from 'node:path';
import { workspaceNameProblem, type CleanupStrategy, type WorkspaceOwner } from '../core/workspace-spec.js';
import { isSameProcess, startTimeOf, type ProcessIdentity } from './containment/proc-table.js';

/** A workspace operation failed: the message is git's own (its `fatal:`/`error:` lines), or the reason. */
export class WorkspaceError extends Error {
  override readonly name: string = 'WorkspaceError';
}

/** A removal refused because the worktree holds uncommitted or untracked changes. */
export class DirtyWorktreeError extends WorkspaceError {
  override readonly name = 'DirtyWorktreeError';
}

/** Variables that would point git at another repository than the one named with `-C`. */
const locatingVariables = ['GIT_DIR', 'GIT_WORK_TREE', 'GIT_INDEX_FILE', 'GIT_COMMON_DIR', 'GIT_PREFIX', 'GIT_OBJECT_DIRECTORY', 'GIT_ALTERNATE_OBJECT_DIRECTORIES', 'GIT_NAMESPACE'];

/** A git run longer than this (a hung hook, say) is killed and reported. */
const gitTimeoutMs = 120_000;

interface GitOptions {
  /** Extra environment (GIT_INDEX_FILE for the archive's scratch index). */
  env?: Record<string, string>;
  /** Write stdout to this file instead of returning it. */
  stdoutFile?: string;
  /** A read: no optional lock (the index is not refreshed), so an agent's own git is never blocked. */
  read?: boolean;
}

interface GitResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/** Runs git in `dir`; never throws (see {@link git} for the throwing form). */
async function runGit(dir: string, args: string[], options: GitOptions = {}): Promise<GitResult> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) if (value !== undefined && !locatingVariables.includes(key)) env[key] = value;
  env.GIT_TERMINAL_PROMPT = '0';
  if (options.read) env.GIT_OPTIONAL_LOCKS = '0';
  Object.assign(env, options.env);
  const result = await execa('git', ['-c', 'core.fsmonitor=false', '-c', 'gc.auto=0', '-C', dir, ...args], {
    env,
    extendEnv: false,
    stdin: 'ignore',
    stdout: options.stdoutFile ? { file: options.stdoutFile } : 'pipe',
    reject: false,
    timeout: gitTimeoutMs,
    killSignal: 'SIGKILL',
    encoding: 'utf8',
    stripFinalNewline: false,
  });
  if (result.timedOut) return { exitCode: -1, stdout: '', stderr: `fatal: git ${args[0]} did not finish within ${gitTimeoutMs / 1000} s` };
  if (result.failed && result.exitCode === undefined) return { exitCode: -1, stdout: '', stderr: result.shortMessage ?? 'git could not be run' };
  return { exitCode: result.exitCode ?? -1, stdout: typeof result.stdout === 'string' ? result.stdout : '', stderr: typeof result.stderr === 'string' ? result.stderr : '' };
}

/** Runs git in `dir`; rejects with {@link WorkspaceError} carrying git's own message. */
async function git(dir: string, args: string[], options: GitOptions = {}): Promise<string> {
  const result = await runGit(dir, args, options);
  if (result.exitCode !== 0) throw new WorkspaceError(gitMessage(result.stderr, `git ${args[0]} failed (exit code ${result.exitCode})`));
  return result.stdout;
}

/** Git's own words for a failure: its `fatal:`/`error:` lines (not "Preparing worktree ..."), or all it said. */
export function gitMessage(stderr: string, fallback: string): string {
  const lines = stderr.split('\n').map((line) => line.trim()).filter(Boolean);
  const reasons = lines.filter((line) => /^(fatal|error):/.test(line));
  return (reasons.length > 0 ? reasons : lines).join('\n') || fallback;
}

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
async function detachWorktree(repo: RepoIdentity, path: string): Promise<void> {
  if (await exists(path)) await git(repo.toplevel, ['worktree', 'remove', '--force', '--', path]);
  await git(repo.toplevel, ['worktree', 'prune']);
}

async function isAncestor(repo: RepoIdentity, commit: string, of: string): Promise<boolean> {
  const result = await runGit(repo.toplevel, ['merge-base', '--is-ancestor', commit, of], { read: true });
  return result.exitCode === 0;
}

async function deleteBranch(repo: RepoIdentity, branch: string): Promise<boolean> {
  if (!(await hasBranch(repo, branch))) return false;
  await git(repo.toplevel, ['branch', '-D', '--', branch]);
  return true;
}

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

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

// ---------------------------------------------------------------------------------------
// Records: one JSON file per worktree, so that a later run (or this one) can prune it.
// ---------------------------------------------------------------------------------------

/** What is kept of one worktree agentvisor made, in `<stateDir>/workspaces/<repo key>/.meta/<name>.json`. */
export interface WorktreeRecord {
  version: 1;
  path: string;
  name: string;
  repo: string;
  commonDir: string;
  repoKey: string;
  branch: string;
  base: string;
  baseCommit: string;
  cleanup: CleanupStrategy;
  force: boolean;
  shared: boolean;
  /** Who uses it now; null once its owner ended (the workspace is stale). */
  owner: WorkspaceOwner | null;
  /** The supervisor's process while an owner uses it: a dead host means a stale workspace. */
  host: ProcessIdentity | null;
  createdAt: string;
  updatedAt: string;
}

let self: ProcessIdentity | undefined;
/** This process, as records name it. */
export function hostIdentity(): ProcessIdentity {
  return (self ??= { pid: process.pid, startTime: startTimeOf(process.pid) ?? 0 });
}

/** True when the record's host is this process. */
export function hostedHere(record: WorktreeRecord): boolean {
  const host = hostIdentity();
  return record.host !== null && record.host.pid === host.pid && record.host.startTime === host.startTime;
}

/** True when the record's host is another process that still runs. */
export function hostedElsewhere(record: WorktreeRecord): boolean {
  return record.host !== null && !hostedHere(record) && isSameProcess(record.host);
}

function recordFile(stateDir: string, repoKey: string, name: string): string {
  return join(resolve(stateDir), 'workspaces', repoKey, '.meta', `${name}.json`);
}

/** Writes a worktree's record atomically (temporary file, then rename). */
export async function writeWorktreeRecord(stateDir: string, record: WorktreeRecord): Promise<void> {
  const file = recordFile(stateDir, record.repoKey, record.name);
  await mkdir(join(file, '..'), { recursive: true });
  await writeFile(`${file}.tmp`, `${JSON.stringify(record, null, 2)}\n`);
  await rename(`${file}.tmp`, file);
}

export async function readWorktreeRecord(stateDir: string, repoKey: string, name: string): Promise<WorktreeRecord | null> {
  try {
    const record = JSON.parse(await readFile(recordFile(stateDir, repoKey, name), 'utf8')) as WorktreeRecord;
    return record?.version === 1 && typeof record.path === 'string' ? record : null;
  } catch {
    return null;
  }
}

export async function removeWorktreeRecord(stateDir: string, repoKey: string, name: string): Promise<void> {
  await rm(recordFile(stateDir, repoKey, name), { force: true });
}

/** Every readable worktree record under `<stateDir>/workspaces/`. */
export async function readWorktreeRecords(stateDir: string): Promise<WorktreeRecord[]> {
  const root = join(resolve(stateDir), 'workspaces');
  const records: WorktreeRecord[] = [];
  for (const repoKey of await readdir(root).catch(() => [] as string[])) {
    const names = await readdir(join(root, repoKey, '.meta')).catch(() => [] as string[]);
    for (const file of names.filter((name) => name.endsWith('.json'))) {
      const record = await readWorktreeRecord(stateDir, repoKey, file.slice(0, -'.json'.length));
      if (record) records.push(record);
    }
  }
  return records;
}

/** The repository a record names, without asking git (its top level and common dir were recorded). */
export function recordedRepo(record: WorktreeRecord): RepoIdentity {
  return { toplevel: record.repo, commonDir: record.commonDir, key: record.repoKey };
}

// ---------------------------------------------------------------------------------------
// The status watcher.
// ---------------------------------------------------------------------------------------

/** Most directories one watcher follows (each is one inotify watch). */
export const watchedDirectoryLimit = 10_000;

export interface StatusWatcherOptions {
  /** At most one `git status` per this many ms; changes in between are coalesced into the next. */
  intervalMs: number;
  /** Each status that differs from the last one reported (the first one included). */
  onStatus(status: StatusSnapshot): void;
}

/**
 * Watches a workspace's directories (one non-recursive `fs.watch` per directory, so a file
 * change is seen in its directory) — never `.git`, nor a directory git ignores (a
 * `node_modules`, a build output) — and runs a throttled `git status` after changes.
 *
 * Not `fs.watch(root, { recursive: true })`: on Linux, Node 20 implements it by watching
 * every file and re-walking new directories synchronously, which a dependency install
 * inside the workspace turns into tens of thousands of watches and a blocked event loop.
 */
export class StatusWatcher {
  private readonly watchers = new Map<string, FSWatcher>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | null = null;
  private pending = false;
  private lastRun = Number.NEGATIVE_INFINITY;
  private closed = false;
  private lastReported: string | undefined;
  private readonly starting: Promise<void>;
  /** Directories being added and looked at after a change (they may run git check-ignore). */
  private readonly work = new Set<Promise<unknown>>();

  constructor(
    private readonly root: string,
    private readonly options: StatusWatcherOptions & {
      /** The work tree's top level when the root is not it (a `directory` inside a repository). */
      toplevel?: string;
    },
  ) {
    this.starting = this.start();
  }

  /** Stops watching; resolves once no git command of this watcher runs any more. */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    for (const watcher of this.watchers.values()) watcher.close();
    this.watchers.clear();
    await this.starting;
    while (this.work.size > 0) await Promise.allSettled([...this.work]);
    await this.running;
  }

  private track(promise: Promise<unknown>): void {
    this.work.add(promise);
    void promise.finally(() => this.work.delete(promise)).catch(() => {});
  }

  /** How many directories are watched (for tests and diagnostics). */
  get watchedDirectories(): number {
    return this.watchers.size;
  }

  private async start(): Promise<void> {
    const ignored = await listIgnoredDirectories(this.root);
    await this.addTree(this.root, ignored);
    await this.watchGitDir();
    this.schedule();
  }

  /**
   * The work tree's own git directory (`.git/worktrees/<id>` of a worktree), not recursively:
   * a commit or `git add` rewrites its `index` without touching a file of the work tree.
   * (Our own `git status` never writes the index: GIT_OPTIONAL_LOCKS=0.)
   */
  private async watchGitDir(): Promise<void> {
    const found = await runGit(this.root, ['rev-parse', '--absolute-git-dir'], { read: true });
    const gitDir = found.stdout.trim();
    if (this.closed || found.exitCode !== 0 || !gitDir || this.watchers.has(gitDir)) return;
    try {
      const watcher = watch(gitDir, { persistent: true }, (_event, filename) => {
        const name = filename === null ? null : String(filename);
        if (name === null || name === 'index' || name === 'HEAD') this.schedule();
      });
      watcher.on('error', () => this.unwatch(gitDir));
      this.watchers.set(gitDir, watcher);
    } catch {
      // Without it, commits are seen with the next change of a file.
    }
  }

  /** Watches `dir` and the directories under it; `ignored` is the start's list, or `ask` git for a directory made later. */
  private async addTree(dir: string, ignored: Set<string> | 'ask'): Promise<void> {
    if (this.closed || this.watchers.has(dir) || this.watchers.size >= watchedDirectoryLimit) return;
    const rel = relative(this.root, dir);
    if (rel !== '' && (ignored === 'ask' ? await isIgnored(this.root, rel) : ignored.has(`${rel.split(sep).join('/')}/`))) return;
    if (this.closed || this.watchers.has(dir)) return;
    try {
      const watcher = watch(dir, { persistent: true }, (event, filename) => this.changed(dir, event, filename));
      watcher.on('error', () => this.unwatch(dir));
      if (this.closed) return watcher.close();
      this.watchers.set(dir, watcher);
    } catch {
      return; // gone already, or the watch limit of the host is reached: the rest still reports
    }
    const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
    for (const entry of entries) if (entry.isDirectory() && entry.name !== '.git') await this.addTree(join(dir, entry.name), ignored);
  }

  private unwatch(dir: string): void {
    for (const [path, watcher] of this.watchers) {
      if (path === dir || path.startsWith(dir + sep)) {
        watcher.close();
        this.watchers.delete(path);
      }
    }
  }

  private changed(dir: string, event: string, filename: string | Buffer | null): void {
    if (this.closed) return;
    const name = filename === null ? null : String(filename);
    if (name === '.git') return;
    this.schedule();
    if (event !== 'rename' || name === null) return;
    const child = join(dir, name);
    this.track(
      stat(child).then(
        (info) => {
          if (info.isDirectory() && !this.watchers.has(child)) this.track(this.addTree(child, 'ask'));
        },
        () => this.unwatch(child),
      ),
    );
  }

  private schedule(): void {
    if (this.closed) return;
    this.pending = true;
    if (this.timer || this.running) return;
    const wait = Math.max(0, this.lastRun + this.options.intervalMs - performance.now());
    this.timer = setTimeout(() => this.run(), wait);
  }

  private run(): void {
    this.timer = undefined;
    if (this.closed) return;
    this.pending = false;
    this.lastRun = performance.now();
    this.running = workspaceStatus(this.root, this.options.toplevel ?? this.root)
      .then((status) => {
        if (!status || this.closed) return;
        const key = JSON.stringify([status.clean, status.changedCount, status.changedFiles]);
        if (key === this.lastReported) return;
        this.lastReported = key;
        this.options.onStatus(status);
      })
      .catch(() => {})
      .finally(() => {
        this.running = null;
        if (this.pending) this.schedule();
      });
  }
}

/** The directories git ignores under `root` (relative, with a trailing `/`); none when git cannot say. */
async function listIgnoredDirectories(root: string): Promise<Set<string>> {
  const result = await runGit(root, ['ls-files', '--others', '--ignored', '--exclude-standard', '--directory', '-z', '--', '.'], { read: true });
  if (result.exitCode !== 0) return new Set();
  return new Set(result.stdout.split('\0').filter((path) => path.endsWith('/')));
}

async function isIgnored(root: string, rel: string): Promise<boolean> {
  const result = await runGit(root, ['check-ignore', '--quiet', '--', rel], { read: true });
  return result.exitCode === 0;
}
