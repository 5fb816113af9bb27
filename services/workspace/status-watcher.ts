/** The status watcher: a workspace's directories watched, and a throttled `git status` reported after changes. */
import { watch, type FSWatcher } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import { runGit } from './git.js';
import { workspaceStatus, type StatusSnapshot } from './status.js';

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
