/**
 * Every workspace a supervisor's agents and sessions use (docs/workspaces.md): who owns it,
 * its status watcher, and what happens to it when its owner ends. It makes an agent's
 * workspace once and hands it out again on every restart of that agent; it refuses a second
 * owner of a directory unless both say `shared: true`; it applies the cleanup strategy when
 * the last owner ends — never while a session of that owner awaited input or a permission
 * when it was stopped (the workspace is kept and `workspace:cleanup_refused` says why) — and
 * it prunes what earlier runs left. The git work itself is services/workspace/.
 */
import { randomBytes } from 'node:crypto';
import { join, resolve } from 'node:path';
import { defaultWorkspaceName, describeOwner, type CleanupStrategy, type WorkspaceKind, type WorkspaceOwner, type WorkspaceSpec } from '../core/workspace-spec.js';
import { archiveWorktree } from '../services/workspace/archive.js';
import { DirtyWorktreeError, WorkspaceError } from '../services/workspace/git.js';
import {
  hostedElsewhere,
  hostedHere,
  hostIdentity,
  readWorktreeRecord,
  readWorktreeRecords,
  recordedRepo,
  removeWorktreeRecord,
  writeWorktreeRecord,
  type WorktreeRecord,
} from '../services/workspace/records.js';
import { StatusWatcher } from '../services/workspace/status-watcher.js';
import { aheadBehind, workspaceStatus, type StatusSnapshot } from '../services/workspace/status.js';
import {
  addWorktree,
  hasBranch,
  inspectWorktree,
  makeDirectory,
  planWorktree,
  pruneWorktrees,
  reattachWorktree,
  removeWorktree,
  repoIdentity,
  worktreePath,
  type RepoIdentity,
} from '../services/workspace/worktree.js';

export { WorkspaceError };

/** One workspace, as `supervisor.workspaces()` lists it. */
export interface WorkspaceInfo {
  path: string;
  kind: WorkspaceKind;
  /** The repository's top level (a `directory` outside any repository: null). */
  repo: string | null;
  /** The branch checked out now (the recorded one when git cannot say). */
  branch: string | null;
  /** What ahead/behind count against: the caller's `base`, or the branch (or commit) HEAD was on. */
  base: string | null;
  /** The first owner using it; null for a stale workspace (its owner ended: `pruneWorkspaces()` removes it). */
  owner: WorkspaceOwner | null;
  /** Every owner using it (more than one only with `shared: true`). */
  owners: WorkspaceOwner[];
  cleanup: CleanupStrategy;
  /** No uncommitted, staged or untracked change; null when git cannot tell (not a repository, or gone). */
  clean: boolean | null;
  changedFiles: string[];
  changedCount: number;
  /** Commits on the workspace's HEAD not in the base, and in the base not on HEAD (null: no base, or unknown). */
  ahead: number | null;
  behind: number | null;
}

/** The workspace events a supervisor emits. */
export interface WorkspaceEvents {
  /**
   * A workspace's changes, after files changed in it: at most one per `workspaceStatusIntervalMs`
   * per workspace, and only when they differ from the last report (the first one is always sent).
   */
  'workspace:status': { owner: WorkspaceOwner; owners: WorkspaceOwner[]; path: string; branch: string | null; clean: boolean; changedFiles: string[]; changedCount: number };
  /** The owner of a workspace ended and its cleanup strategy was applied (`kept`, `archived`, `removed`). */
  'workspace:cleaned': { owner: WorkspaceOwner; path: string; strategy: CleanupStrategy; action: 'kept' | 'archived' | 'removed'; archive?: string; branchDeleted: boolean };
  /**
   * The owner ended but its cleanup was not done, and the workspace is kept (stale: listed with
   * owner null, pruned by `pruneWorkspaces()`): `busy` — a session was running a turn or
   * awaiting a permission answer when it was stopped; `dirty` — `remove` of a worktree with
   * uncommitted changes without `force`; `failed` — git refused (its message).
   */
  'workspace:cleanup_refused': { owner: WorkspaceOwner; path: string; strategy: CleanupStrategy; reason: 'busy' | 'dirty' | 'failed'; message: string };
}

/** What `pruneWorkspaces()` did. */
export interface PruneResult {
  cleaned: Array<{ path: string; branch: string; action: 'archived' | 'removed'; archive?: string; branchDeleted: boolean }>;
  refused: Array<{ path: string; branch: string; reason: 'dirty' | 'failed'; message: string }>;
  /** Records of worktrees whose directory was already gone: forgotten. */
  missing: string[];
  /** Repositories where `git worktree prune` ran. */
  repos: string[];
}

export interface PruneOptions {
  /** Remove dirty worktrees too (their uncommitted changes are lost; with `archive` they are in the patch anyway). */
  force?: boolean;
  /** Apply this instead of each workspace's own strategy (`keep` workspaces are removed by default: pruning is what keeping defers). */
  strategy?: 'archive' | 'remove';
}

/** One owner's hold on a workspace. */
export class WorkspaceLease {
  /** Set when the owner's end was asked for: why its cleanup must be refused (null: it may run). */
  ending: { busy: string | null } | null = null;
  releasing: Promise<void> | null = null;
  /** This owner's acquire made the worktree (not a reuse, not a share). */
  made = false;
  /** Released without ever being used (the session failed to open): a worktree it made is removed. */
  abandoned = false;

  constructor(
    public owner: WorkspaceOwner,
    readonly entry: WorkspaceEntry,
  ) {}

  get path(): string {
    return this.entry.path;
  }
}

interface WorkspaceEntry {
  path: string;
  kind: WorkspaceKind;
  name: string | null;
  repo: RepoIdentity | null;
  /** A `directory` inside a work tree: its top level (for status). */
  toplevel: string | null;
  branch: string | null;
  base: string | null;
  baseCommit: string | null;
  cleanup: CleanupStrategy;
  force: boolean;
  shared: boolean;
  createdAt: string;
  leases: Set<WorkspaceLease>;
  watcher: StatusWatcher | null;
}

/** Paths held by any registry of this process: another supervisor here must not prune them. */
const heldInThisProcess = new Map<string, number>();
const hold = (path: string) => heldInThisProcess.set(path, (heldInThisProcess.get(path) ?? 0) + 1);
const unhold = (path: string) => {
  const count = (heldInThisProcess.get(path) ?? 1) - 1;
  if (count > 0) heldInThisProcess.set(path, count);
  else heldInThisProcess.delete(path);
};

/** Runs tasks one after another per key (a path, a repository), across keys in parallel. */
class KeyedQueue {
  private readonly tails = new Map<string, Promise<unknown>>();

  run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    const next = previous.then(task);
    const tail = next.catch(() => {});
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return next;
  }
}

export interface WorkspaceRegistryOptions {
  /** Where worktrees, their records and archives live; false: git worktrees are refused. */
  stateDir: string | false;
  /** At most one `git status` per workspace per this many ms. */
  statusIntervalMs: number;
  /** Where `workspace:*` events go (the supervisor's event hub). */
  events: { emit<K extends keyof WorkspaceEvents>(type: K, event: WorkspaceEvents[K]): void };
}

export class WorkspaceRegistry {
  private readonly entries = new Map<string, WorkspaceEntry>();
  private readonly agentLeases = new Map<string, WorkspaceLease>();
  /** The default name of each agent's workspace, until it is archived or removed. */
  private readonly agentNames = new Map<string, string>();
  private readonly queue = new KeyedQueue();
  private readonly inFlight = new Set<Promise<unknown>>();
  private closed = false;

  constructor(private readonly options: WorkspaceRegistryOptions) {}

  /**
   * The workspace of an agent, made on its first start and handed out again on every restart
   * (recreated if it went missing). Resolves with its path, the agent's cwd; rejects with a
   * {@link WorkspaceError} (git's message, or the owner that already uses it).
   */
  forAgent(agent: string, spec: WorkspaceSpec): Promise<string> {
    return this.track(
      this.queue.run(`agent\u0000${agent}`, async () => {
        let lease = this.agentLeases.get(agent);
        // A new process of an agent whose stop was asked for: that stop has reached idle.
        if (lease?.ending) {
          await this.release(lease);
          lease = undefined;
        }
        if (lease && (await this.stillThere(lease.entry))) return lease.path;
        if (lease) await this.forget(lease); // gone from disk: made again below, on its branch
        let name: string | undefined;
        if (spec.kind === 'git-worktree' && spec.name === undefined) {
          name = this.agentNames.get(agent) ?? defaultWorkspaceName(agent, shortId());
          this.agentNames.set(agent, name);
        }
        lease = await this.acquire({ agent }, spec, name);
        this.agentLeases.set(agent, lease);
        return lease.path;
      }),
    );
  }

  /** The path of the agent's workspace while it holds one. */
  agentPath(agent: string): string | undefined {
    return this.agentLeases.get(agent)?.path;
  }

  agentLease(agent: string): WorkspaceLease | undefined {
    return this.agentLeases.get(agent);
  }

  /** A session's workspace (its owner gets the session id once `session/new` answers). */
  forSession(agent: string, spec: WorkspaceSpec): Promise<WorkspaceLease> {
    const name = spec.kind === 'git-worktree' && spec.name === undefined ? defaultWorkspaceName(`${agent}-session`, shortId()) : undefined;
    return this.track(this.acquire({ agent }, spec, name));
  }

  /** A session's workspace: its owner is the session from now on (its id is known once `session/new` answered). */
  claim(lease: WorkspaceLease, owner: WorkspaceOwner): void {
    lease.owner = owner;
    void this.track(this.recordOwner(lease.entry));
  }

  /**
   * Records that the owner of `lease` is about to end, and whether a session was busy (a turn
   * running, a permission awaited) at that moment: then its cleanup is refused. The first busy
   * reason sticks.
   */
  markEnding(lease: WorkspaceLease, busy: string | null): void {
    lease.ending = { busy: lease.ending?.busy ?? busy };
  }

  /** Ends the agent's hold on its workspace (the agent was stopped); resolves once the cleanup is done. */
  releaseAgent(agent: string): Promise<void> {
    const lease = this.agentLeases.get(agent);
    return lease ? this.release(lease) : Promise.resolve();
  }

  /**
   * Ends the hold of an owner that never came to be (its session failed to open): a worktree
   * its acquire made is removed again (unless it changed meanwhile), whatever its strategy.
   */
  abandon(lease: WorkspaceLease): Promise<void> {
    lease.abandoned = true;
    return this.release(lease);
  }

  /**
   * Ends one owner's hold. When it was the last owner, the watcher stops and the cleanup
   * strategy is applied (or refused and reported). Idempotent; resolves when all is done.
   */
  release(lease: WorkspaceLease): Promise<void> {
    if (lease.releasing) return lease.releasing;
    const { entry } = lease;
    entry.leases.delete(lease);
    if (this.agentLeases.get(lease.owner.agent) === lease && lease.owner.sessionId === undefined) this.agentLeases.delete(lease.owner.agent);
    const last = entry.leases.size === 0;
    if (last && this.entries.get(entry.path) === entry) {
      this.entries.delete(entry.path);
      unhold(entry.path);
    }
    const work = last ? this.cleanUp(lease) : this.recordOwner(entry);
    lease.releasing = this.track(
      work.catch((error: unknown) => {
        this.options.events.emit('workspace:cleanup_refused', { owner: lease.owner, path: entry.path, strategy: entry.cleanup, ...refusal(error), reason: 'failed' });
      }),
    );
    return lease.releasing;
  }

  /** Drops a lease whose workspace vanished from disk: no cleanup, no event (there is nothing to clean). */
  private async forget(lease: WorkspaceLease): Promise<void> {
    const { entry } = lease;
    entry.leases.delete(lease);
    if (this.agentLeases.get(lease.owner.agent) === lease) this.agentLeases.delete(lease.owner.agent);
    lease.releasing = Promise.resolve();
    if (entry.leases.size > 0 || this.entries.get(entry.path) !== entry) return;
    this.entries.delete(entry.path);
    unhold(entry.path);
    await entry.watcher?.close();
    entry.watcher = null;
  }

  /** Every workspace in use, and the stale ones in the state directory, with their git status. */
  async list(): Promise<WorkspaceInfo[]> {
    const live = await Promise.all([...this.entries.values()].map((entry) => this.describe(entry)));
    if (this.options.stateDir === false) return live;
    const stale = (await readWorktreeRecords(this.options.stateDir)).filter((record) => this.isStale(record));
    return [...live, ...(await Promise.all(stale.map((record) => this.describeRecord(record))))];
  }

  /**
   * Cleans up every stale worktree in the state directory — its owner ended, or the process
   * that held it is gone — with its strategy (`keep` ones are removed), then runs
   * `git worktree prune` in each repository. Dirty worktrees are refused unless `force`.
   */
  prune(options: PruneOptions = {}): Promise<PruneResult> {
    return this.track(this.pruneNow(options));
  }

  /** Stops every watcher and waits for every git command this registry started; no workspace is made after. */
  async close(): Promise<void> {
    this.closed = true;
    await this.drain();
    await Promise.all([...this.entries.values()].map((entry) => entry.watcher?.close()));
    await this.drain();
  }

  /** Resolves once no operation of this registry is in flight. */
  async drain(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }

  private track<T>(promise: Promise<T>): Promise<T> {
    this.inFlight.add(promise);
    const forget = () => this.inFlight.delete(promise);
    promise.then(forget, forget);
    return promise;
  }

  private async acquire(owner: WorkspaceOwner, spec: WorkspaceSpec, defaultName: string | undefined): Promise<WorkspaceLease> {
    if (this.closed) throw new WorkspaceError('The supervisor is shutting down: no workspace is made');
    if (spec.kind === 'directory') {
      const path = await makeDirectory(resolve(spec.path));
      return this.queue.run(path, async () => {
        const existing = this.entries.get(path);
        if (existing) return this.join(existing, owner, spec.shared === true, null);
        if (heldInThisProcess.has(path)) throw new WorkspaceError(`${path} is already used by another supervisor of this process`);
        hold(path);
        const repo = await repoIdentity(path).catch(() => null);
        return this.open({
          path,
          kind: 'directory',
          name: null,
          repo,
          toplevel: repo?.toplevel ?? null,
          branch: null,
          base: null,
          baseCommit: null,
          cleanup: 'keep',
          force: false,
          shared: spec.shared === true,
          createdAt: new Date().toISOString(),
          leases: new Set(),
          watcher: null,
        }, owner);
      });
    }
    const stateDir = this.options.stateDir;
    if (stateDir === false) throw new WorkspaceError('A git-worktree workspace needs a stateDir (stateDir is false)');
    const repo = await repoIdentity(resolve(spec.repo));
    const name = spec.name ?? defaultName ?? defaultWorkspaceName(owner.agent, shortId());
    const path = worktreePath(stateDir, repo, name);
    const branch = spec.branch ?? `agentvisor/${name}`;
    return this.queue.run(path, async () => {
      const existing = this.entries.get(path);
      if (existing) return this.join(existing, owner, spec.shared === true, branch);
      if (heldInThisProcess.has(path)) throw new WorkspaceError(`${path} is already used by another supervisor of this process`);
      const record = await readWorktreeRecord(stateDir, repo.key, name);
      if (record?.owner && hostedElsewhere(record)) {
        throw new WorkspaceError(`${path} is already used by ${describeOwner(record.owner)} (supervisor process ${record.host?.pid})`);
      }
      // Held from here on, so that no other supervisor of this process prunes it while it is made.
      hold(path);
      try {
        return await this.makeWorktree(stateDir, repo, path, name, branch, spec, owner, record);
      } catch (error) {
        unhold(path);
        throw error;
      }
    });
  }

  /** Makes (or reuses, or checks out again) the worktree at `path`, and opens it for `owner`. */
  private async makeWorktree(
    stateDir: string,
    repo: RepoIdentity,
    path: string,
    name: string,
    branch: string,
    spec: Extract<WorkspaceSpec, { kind: 'git-worktree' }>,
    owner: WorkspaceOwner,
    record: WorktreeRecord | null,
  ): Promise<WorkspaceLease> {
    const found = await inspectWorktree(repo, path);
    if (found.state === 'other') throw new WorkspaceError(found.reason);
    let plan: { branch: string; base: string; baseCommit: string };
    const createdAt = record?.createdAt ?? new Date().toISOString();
    const entry: WorkspaceEntry = {
      path,
      kind: 'git-worktree',
      name,
      repo,
      toplevel: path,
      branch,
      base: null,
      baseCommit: null,
      cleanup: spec.cleanup ?? 'keep',
      force: spec.force === true,
      shared: spec.shared === true,
      createdAt,
      leases: new Set(),
      watcher: null,
    };
    if (found.state === 'worktree') {
      // Made earlier (a restart, a `keep` of an earlier run): reuse it if it is on that branch.
      if (found.branch !== branch) throw new WorkspaceError(`${path} is a worktree of ${repo.toplevel} on ${found.branch ?? 'a detached HEAD'}, not on ${branch}`);
      plan = record && record.branch === branch ? { branch, base: record.base, baseCommit: record.baseCommit } : await planWorktree(repo, branch, spec.base);
      Object.assign(entry, { base: plan.base, baseCommit: plan.baseCommit });
      await this.writeRecord(entry, owner);
    } else if (record && record.branch === branch && (await hasBranch(repo, branch))) {
      // Ours, but its directory went missing (removed by hand): its branch is checked out again.
      Object.assign(entry, { base: record.base, baseCommit: record.baseCommit });
      await this.writeRecord(entry, owner);
      await this.queue.run(repo.commonDir, () => reattachWorktree(repo, path, branch));
    } else {
      plan = await planWorktree(repo, branch, spec.base);
      Object.assign(entry, { base: plan.base, baseCommit: plan.baseCommit });
      // The record first: a crash between the two leaves a record to prune, never an unknown worktree.
      await this.writeRecord(entry, owner);
      try {
        await this.queue.run(repo.commonDir, () => addWorktree(repo, path, plan));
      } catch (error) {
        await removeWorktreeRecord(stateDir, repo.key, name);
        throw error;
      }
      const lease = this.open(entry, owner);
      lease.made = true;
      return lease;
    }
    return this.open(entry, owner);
  }

  /** A second owner of a workspace in use: only when both say `shared: true`. */
  private async join(entry: WorkspaceEntry, owner: WorkspaceOwner, shared: boolean, branch: string | null): Promise<WorkspaceLease> {
    const first = [...entry.leases][0]?.owner;
    if (!entry.shared || !shared) {
      throw new WorkspaceError(`${entry.path} is already used by ${first ? describeOwner(first) : 'another owner'} (both must say shared: true to share it)`);
    }
    if (branch !== null && entry.branch !== branch) throw new WorkspaceError(`${entry.path} is shared on branch ${entry.branch}, not ${branch}`);
    const lease = new WorkspaceLease(owner, entry);
    entry.leases.add(lease);
    return lease;
  }

  /** Registers a workspace just made (its path already held) with its first owner, and starts its watcher. */
  private open(entry: WorkspaceEntry, owner: WorkspaceOwner): WorkspaceLease {
    this.entries.set(entry.path, entry);
    const lease = new WorkspaceLease(owner, entry);
    entry.leases.add(lease);
    if (entry.toplevel !== null) {
      entry.watcher = new StatusWatcher(entry.path, {
        intervalMs: this.options.statusIntervalMs,
        toplevel: entry.toplevel,
        onStatus: (status) => this.reportStatus(entry, status),
      });
    }
    return lease;
  }

  private reportStatus(entry: WorkspaceEntry, status: StatusSnapshot): void {
    const owners = [...entry.leases].map((lease) => lease.owner);
    if (owners.length === 0) return;
    this.options.events.emit('workspace:status', {
      owner: owners[0]!,
      owners,
      path: entry.path,
      branch: status.branch,
      clean: status.clean,
      changedFiles: status.changedFiles,
      changedCount: status.changedCount,
    });
  }

  /** An agent's workspace on a restart: still a worktree of its repository on its branch (or still a directory). */
  private async stillThere(entry: WorkspaceEntry): Promise<boolean> {
    if (entry.kind === 'directory') return (await makeDirectory(entry.path).catch(() => null)) !== null;
    const found = await inspectWorktree(entry.repo!, entry.path);
    return found.state === 'worktree' && found.branch === entry.branch;
  }

  private async writeRecord(entry: WorkspaceEntry, owner: WorkspaceOwner | null): Promise<void> {
    const stateDir = this.options.stateDir;
    if (entry.kind !== 'git-worktree' || stateDir === false) return;
    const record: WorktreeRecord = { ...this.recordOf(entry, owner), host: owner ? hostIdentity() : null };
    await writeWorktreeRecord(stateDir, record);
  }

  /** A shared workspace lost one owner: its record names the next. */
  private async recordOwner(entry: WorkspaceEntry): Promise<void> {
    await this.queue
      .run(entry.path, async () => {
        if (this.entries.get(entry.path) !== entry) return; // cleaned up meanwhile: no record to bring back
        await this.writeRecord(entry, [...entry.leases][0]?.owner ?? null);
      })
      .catch(() => {});
  }

  /** The last owner ended: stop watching, then keep, archive or remove — or refuse, and say why. */
  private async cleanUp(lease: WorkspaceLease): Promise<void> {
    const { entry, owner } = lease;
    await entry.watcher?.close();
    entry.watcher = null;
    const strategy = lease.abandoned && lease.made ? 'remove' : entry.cleanup;
    const events = this.options.events;
    await this.queue.run(entry.path, async () => {
      if (entry.kind === 'directory' || strategy === 'keep') {
        await this.writeRecord(entry, null).catch(() => {});
        events.emit('workspace:cleaned', { owner, path: entry.path, strategy, action: 'kept', branchDeleted: false });
        return;
      }
      const busy = lease.abandoned ? null : (lease.ending?.busy ?? null);
      if (busy !== null) {
        await this.writeRecord(entry, null).catch(() => {});
        events.emit('workspace:cleanup_refused', { owner, path: entry.path, strategy, reason: 'busy', message: `Not ${strategy === 'archive' ? 'archived' : 'removed'}: ${busy} (kept; pruneWorkspaces() cleans it up later)` });
        return;
      }
      try {
        const done = await this.apply(strategy, this.recordOf(entry, owner), entry.force);
        if (owner.sessionId === undefined && this.agentNames.get(owner.agent) === entry.name) this.agentNames.delete(owner.agent);
        events.emit('workspace:cleaned', { owner, path: entry.path, strategy, ...done });
      } catch (error) {
        await this.writeRecord(entry, null).catch(() => {});
        events.emit('workspace:cleanup_refused', { owner, path: entry.path, strategy, ...refusal(error) });
      }
    });
  }

  /** Archives or removes the worktree a record describes, and forgets the record. */
  private async apply(strategy: 'archive' | 'remove', record: WorktreeRecord, force: boolean): Promise<{ action: 'archived' | 'removed'; archive?: string; branchDeleted: boolean }> {
    const stateDir = this.options.stateDir as string;
    const repo = recordedRepo(record);
    const outcome = await this.queue.run(repo.commonDir, async () => {
      if (strategy === 'remove') return { action: 'removed' as const, ...(await removeWorktree(repo, record.path, record, force)) };
      const stamp = new Date().toISOString().replace(/[:.]/g, '-');
      const archived = await archiveWorktree(repo, record.path, join(resolve(stateDir), 'workspace-archives', repo.key, `${record.name}-${stamp}`), record);
      return { action: 'archived' as const, archive: archived.dir, branchDeleted: archived.branchDeleted };
    });
    await removeWorktreeRecord(stateDir, record.repoKey, record.name);
    return outcome;
  }

  private recordOf(entry: WorkspaceEntry, owner: WorkspaceOwner | null): WorktreeRecord {
    return {
      version: 1,
      path: entry.path,
      name: entry.name!,
      repo: entry.repo!.toplevel,
      commonDir: entry.repo!.commonDir,
      repoKey: entry.repo!.key,
      branch: entry.branch!,
      base: entry.base!,
      baseCommit: entry.baseCommit!,
      cleanup: entry.cleanup,
      force: entry.force,
      shared: entry.shared,
      owner,
      host: null,
      createdAt: entry.createdAt,
      updatedAt: new Date().toISOString(),
    };
  }

  /** Stale: no owner uses it — its owner ended, or the process that held it is gone. */
  private isStale(record: WorktreeRecord): boolean {
    if (this.entries.has(record.path) || heldInThisProcess.has(record.path)) return false;
    if (record.owner === null) return true;
    if (hostedHere(record)) return true; // recorded by this process, held by no registry of it
    return !hostedElsewhere(record);
  }

  private async pruneNow(options: PruneOptions): Promise<PruneResult> {
    const result: PruneResult = { cleaned: [], refused: [], missing: [], repos: [] };
    const stateDir = this.options.stateDir;
    if (stateDir === false) return result;
    const records = await readWorktreeRecords(stateDir);
    const repos = new Map<string, RepoIdentity>();
    for (const record of records) {
      repos.set(record.commonDir, recordedRepo(record));
      await this.queue.run(record.path, async () => {
        if (!this.isStale(record)) return;
        const found = await inspectWorktree(recordedRepo(record), record.path);
        if (found.state === 'missing') {
          await removeWorktreeRecord(stateDir, record.repoKey, record.name);
          result.missing.push(record.path);
          return;
        }
        if (found.state === 'other') {
          result.refused.push({ path: record.path, branch: record.branch, reason: 'failed', message: found.reason });
          return;
        }
        const strategy = options.strategy ?? (record.cleanup === 'archive' ? 'archive' : 'remove');
        try {
          const done = await this.apply(strategy, record, options.force === true || record.force);
          result.cleaned.push({ path: record.path, branch: record.branch, ...done });
        } catch (error) {
          const { reason, message } = refusal(error);
          result.refused.push({ path: record.path, branch: record.branch, reason, message });
        }
      });
    }
    for (const repo of repos.values()) {
      try {
        await this.queue.run(repo.commonDir, () => pruneWorktrees(repo));
        result.repos.push(repo.toplevel);
      } catch {
        // A repository that is gone has nothing to prune.
      }
    }
    return result;
  }

  private async describe(entry: WorkspaceEntry): Promise<WorkspaceInfo> {
    const owners = [...entry.leases].map((lease) => lease.owner);
    const status = entry.toplevel !== null ? await workspaceStatus(entry.path, entry.toplevel) : null;
    const counts = entry.base && entry.baseCommit ? await aheadBehind(entry.path, entry.base, entry.baseCommit) : null;
    return {
      path: entry.path,
      kind: entry.kind,
      repo: entry.repo?.toplevel ?? null,
      branch: status?.branch ?? entry.branch,
      base: entry.base,
      owner: owners[0] ?? null,
      owners,
      cleanup: entry.cleanup,
      ...statusFields(status),
      ahead: counts?.ahead ?? null,
      behind: counts?.behind ?? null,
    };
  }

  private async describeRecord(record: WorktreeRecord): Promise<WorkspaceInfo> {
    const found = await inspectWorktree(recordedRepo(record), record.path);
    const status = found.state === 'worktree' ? await workspaceStatus(record.path, record.path) : null;
    const counts = found.state === 'worktree' ? await aheadBehind(record.path, record.base, record.baseCommit) : null;
    return {
      path: record.path,
      kind: 'git-worktree',
      repo: record.repo,
      branch: status?.branch ?? record.branch,
      base: record.base,
      owner: null,
      owners: [],
      cleanup: record.cleanup,
      ...statusFields(status),
      ahead: counts?.ahead ?? null,
      behind: counts?.behind ?? null,
    };
  }
}

function statusFields(status: StatusSnapshot | null): Pick<WorkspaceInfo, 'clean' | 'changedFiles' | 'changedCount'> {
  return { clean: status?.clean ?? null, changedFiles: status?.changedFiles ?? [], changedCount: status?.changedCount ?? 0 };
}

/** Why a cleanup failed: `dirty` (a removal without force) or `failed` (git's message). */
function refusal(error: unknown): { reason: 'dirty' | 'failed'; message: string } {
  const message = error instanceof Error ? error.message : String(error);
  return { reason: error instanceof DirtyWorktreeError ? 'dirty' : 'failed', message };
}

function shortId(): string {
  return randomBytes(3).toString('hex');
}
