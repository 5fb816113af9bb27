/**
 * Every workspace a supervisor's agents and sessions use (docs/workspaces.md): who owns it,
 * its status watcher, and the work a hold's machine (machines/workspace.machine.ts) asks
 * for. The machine decides — when to make, check, let go of, clean up or keep a workspace;
 * this registry does it: it makes an agent's workspace (on the branch it had before, after a
 * stop), checks it on every restart, refuses a second owner of a directory unless both say
 * `shared: true`, archives or removes or keeps it and reports that (`workspace:*` events),
 * and prunes what earlier runs left. The git work itself is services/workspace/.
 */
import { randomBytes } from 'node:crypto';
import { join, resolve } from 'node:path';
import { defaultWorkspaceName, describeOwner, type CleanupStrategy, type WorkspaceKind, type WorkspaceOwner, type WorkspaceSpec } from '../core/workspace-spec.js';
import type { CleanOutcome, KeepReason, WorkspaceDetached, WorkspaceHoldRef } from '../machines/workspace.machine.js';
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

/** One owner's hold on a workspace, as the registry keeps it (the hold's machine decides its course). */
class WorkspaceLease {
  /** This owner's acquire made the worktree (not a reuse, not a share). */
  made = false;

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
  /** Every hold's lease, by its key (`<agent>/<actor id>`), from acquired until cleaned up or kept. */
  private readonly holds = new Map<string, WorkspaceLease>();
  /** The default name of each agent's workspace, until it is archived or removed. */
  private readonly agentNames = new Map<string, string>();
  private readonly queue = new KeyedQueue();
  private readonly inFlight = new Set<Promise<unknown>>();
  private closed = false;

  constructor(private readonly options: WorkspaceRegistryOptions) {}

  /**
   * Makes the workspace of a hold (`acquireWorkspace`): an agent's own (its spec; a worktree
   * keeps its default name across the agent's stops, so a `keep` one is reused) or a
   * session's. Resolves with its path; rejects with a {@link WorkspaceError} (git's message,
   * or the owner that already uses it).
   */
  acquire(hold: WorkspaceHoldRef, agentSpec: () => WorkspaceSpec | undefined): Promise<{ path: string }> {
    if (hold.spec !== null) {
      const spec = hold.spec;
      const name = spec.kind === 'git-worktree' && spec.name === undefined ? defaultWorkspaceName(`${hold.agent}-session`, shortId()) : undefined;
      return this.track(this.acquireLease({ agent: hold.agent }, spec, name).then((lease) => this.hold(hold.key, lease)));
    }
    return this.track(this.queue.run(`agent\u0000${hold.agent}`, () => this.acquireAgentLease(hold, agentSpec)));
  }

  /**
   * An agent's workspace on a restart (`restoreWorkspace`): still a worktree of its repository
   * on its branch (or still a directory), or made again (on its branch: its name is kept)
   * when it went missing.
   */
  restore(hold: WorkspaceHoldRef, agentSpec: () => WorkspaceSpec | undefined): Promise<{ path: string }> {
    return this.track(
      this.queue.run(`agent\u0000${hold.agent}`, async () => {
        const lease = this.lease(hold.key);
        if (await this.stillThere(lease.entry)) return { path: lease.path };
        await this.forget(lease);
        this.holds.delete(hold.key);
        return this.acquireAgentLease(hold, agentSpec);
      }),
    );
  }

  /** An agent's own workspace, under its default name (kept until archived or removed) unless the spec names it. */
  private async acquireAgentLease(hold: WorkspaceHoldRef, agentSpec: () => WorkspaceSpec | undefined): Promise<{ path: string }> {
    const spec = agentSpec();
    if (!spec) throw new WorkspaceError(`Agent "${hold.agent}" has no workspace`);
    let name: string | undefined;
    if (spec.kind === 'git-worktree' && spec.name === undefined) {
      name = this.agentNames.get(hold.agent) ?? defaultWorkspaceName(hold.agent, shortId());
      this.agentNames.set(hold.agent, name);
    }
    const lease = await this.acquireLease({ agent: hold.agent }, spec, name);
    this.agentLeases.set(hold.agent, lease);
    return this.hold(hold.key, lease);
  }

  /** The path of the agent's workspace while it holds one. */
  agentPath(agent: string): string | undefined {
    return this.agentLeases.get(agent)?.path;
  }

  /** A session's workspace: its owner is the session from now on (its id is known once `session/new` answered). */
  claim(key: string, owner: WorkspaceOwner): void {
    const lease = this.holds.get(key);
    if (!lease) return;
    lease.owner = owner;
    void this.track(this.recordOwner(lease.entry));
  }

  /**
   * The holder lets go (`detachWorkspace`). When it was the last owner, the status watcher
   * stops; else the record names the next owner. Says what may be done with the workspace.
   */
  detach(hold: WorkspaceHoldRef): Promise<WorkspaceDetached> {
    const lease = this.lease(hold.key);
    const { entry } = lease;
    entry.leases.delete(lease);
    if (this.agentLeases.get(lease.owner.agent) === lease) this.agentLeases.delete(lease.owner.agent);
    const last = entry.leases.size === 0;
    const detached: WorkspaceDetached = { othersHold: !last, keeps: entry.kind === 'directory' || entry.cleanup === 'keep', made: lease.made, strategy: entry.cleanup };
    if (!last) {
      this.holds.delete(hold.key);
      return this.track(this.recordOwner(entry).then(() => detached));
    }
    if (this.entries.get(entry.path) === entry) {
      this.entries.delete(entry.path);
      unhold(entry.path);
    }
    return this.track(
      (async () => {
        await entry.watcher?.close();
        entry.watcher = null;
        return detached;
      })(),
    );
  }

  /** Archives or removes a detached workspace (`cleanWorkspace`) and reports it; git's refusal is answered, not thrown. */
  clean(hold: WorkspaceHoldRef, strategy: 'archive' | 'remove'): Promise<CleanOutcome> {
    const lease = this.lease(hold.key);
    const { entry, owner } = lease;
    return this.track(
      this.queue.run(entry.path, async (): Promise<CleanOutcome> => {
        try {
          const done = await this.apply(strategy, this.recordOf(entry, owner), entry.force);
          if (owner.sessionId === undefined && this.agentNames.get(owner.agent) === entry.name) this.agentNames.delete(owner.agent);
          this.holds.delete(hold.key);
          this.options.events.emit('workspace:cleaned', { owner, path: entry.path, strategy, ...done });
          return { refused: null };
        } catch (error) {
          return { refused: refusal(error) };
        }
      }),
    );
  }

  /**
   * Keeps a detached workspace (`keepWorkspace`): its record says it has no owner (stale:
   * listed with owner null, pruned by `pruneWorkspaces()`), and the event says why.
   */
  keep(hold: WorkspaceHoldRef, why: KeepReason, strategy: CleanupStrategy): Promise<void> {
    const lease = this.lease(hold.key);
    const { entry, owner } = lease;
    this.holds.delete(hold.key);
    const events = this.options.events;
    return this.track(
      this.queue.run(entry.path, async () => {
        await this.writeRecord(entry, null).catch(() => {});
        if (why.reason === 'kept') events.emit('workspace:cleaned', { owner, path: entry.path, strategy, action: 'kept', branchDeleted: false });
        else events.emit('workspace:cleanup_refused', { owner, path: entry.path, strategy, reason: why.reason, message: why.message });
      }),
    );
  }

  private hold(key: string, lease: WorkspaceLease): { path: string } {
    this.holds.set(key, lease);
    return { path: lease.path };
  }

  private lease(key: string): WorkspaceLease {
    const lease = this.holds.get(key);
    if (!lease) throw new WorkspaceError(`No workspace is held as ${key}`);
    return lease;
  }

  /** Drops a lease whose workspace vanished from disk: no cleanup, no event (there is nothing to clean). */
  private async forget(lease: WorkspaceLease): Promise<void> {
    const { entry } = lease;
    entry.leases.delete(lease);
    if (this.agentLeases.get(lease.owner.agent) === lease) this.agentLeases.delete(lease.owner.agent);
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

  private async acquireLease(owner: WorkspaceOwner, spec: WorkspaceSpec, defaultName: string | undefined): Promise<WorkspaceLease> {
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
