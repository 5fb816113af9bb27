/**
 * Containment by /proc tracking, the weakest mechanism: for hosts with neither a PID
 * namespace nor a writable cgroup. Nothing wraps the agent; a shared scanner reads /proc
 * (one timer for every tracked agent of the process) and each tracker keeps the processes
 * that are its agent's, each by pid AND start time, so that a reused pid is never killed.
 *
 * A process is the agent's when, in a scan,
 * - it is the agent (the root, recorded at `contain()`), or was the agent's at an earlier
 *   scan and still has the same start time, wherever it was reparented since;
 * - its parent is the agent's (in this scan, and not younger than the child);
 * - its session id or process group id is the pid of a process that is the agent's in this
 *   scan, or was the agent's (such a pid, or an id those processes held) at the previous
 *   scan. A session or group id is its creator's pid, and the number is not handed out
 *   again while any process holds it, nor, since pids are allocated cyclically, before
 *   pid_max further pids are: so such a session or group is the agent's, unless pid_max
 *   pids were allocated within one interval.
 * It is never a process that started before the agent, nor pid 1, nor the supervisor.
 *
 * So a double-forked daemon is caught when it keeps the agent's session or group (no scan
 * need have seen its parent), or when the parent that gave it a session of its own lived
 * through one scan. What escapes is listed in docs/containment.md.
 *
 * Default interval, 250 ms: the interval is the window in which such a parent can escape
 * unseen, so short is better, and the cost decides how short. A tick first reads the last
 * pid handed out (/proc/loadavg): unchanged, nothing can have appeared, and the tick stops
 * there (~0.1 ms). Otherwise it lists /proc and reads the stat of the processes new since
 * the last scan only (~0.3-0.9 ms for ~400 processes), and of every process every 10 s
 * (~10 µs a process: 4 ms hot, ~10 ms cold for ~400). With 100 idle agents tracked (300
 * processes, ~390 on a 2-core host) the scanner costs ~0.2 % of one core, ~0.5 % on a host
 * that creates processes all the time; reading every stat at every tick would cost 2-4 %.
 */
import { setTimeout as delay } from 'node:timers/promises';
import type { Containment, ContainmentHandle, ContainmentMechanism } from './containment.js';
import { isRunningEntry, isRunningProcess, readLastPid, readProcEntry, readProcTable, startTimeOf, type ProcEntry, type ProcessIdentity, type ProcTable } from './proc-table.js';

/** How often the shared scanner reads /proc while any agent is tracked. */
export const defaultScanIntervalMs = 250;
/** How often a timer scan reads every process, not only those new since the last scan. */
export const defaultFullScanEveryMs = 10_000;
/** How long `killAll()` and `killTracked()` go on scanning and killing before they give up. */
const killDeadlineMs = 2_000;
/** The pause between two kill rounds once everything is signalled. */
const killPollMs = 10;

/** One scan's table with the indexes every tracker walks. */
export interface ScanView {
  table: ProcTable;
  /** Processes by parent pid. */
  children: Map<number, ProcEntry[]>;
  /** Processes by session id and by process group id (under both when they differ). */
  byGroupOrSession: Map<number, ProcEntry[]>;
}

/** Indexes `table` once, for every tracker of a scan. */
export function scanView(table: ProcTable): ScanView {
  const children = new Map<number, ProcEntry[]>();
  const byGroupOrSession = new Map<number, ProcEntry[]>();
  const add = (index: Map<number, ProcEntry[]>, key: number, entry: ProcEntry) => {
    const list = index.get(key);
    if (list) list.push(entry);
    else index.set(key, [entry]);
  };
  for (const entry of table.values()) {
    add(children, entry.ppid, entry);
    add(byGroupOrSession, entry.sid, entry);
    if (entry.pgid !== entry.sid) add(byGroupOrSession, entry.pgid, entry);
  }
  return { table, children, byGroupOrSession };
}

/** The processes of one agent, as far as the scans so far have seen them. */
export class ProcessTracker {
  /** The agent's processes at the last scan: pid → start time (zombies included). */
  private members = new Map<number, number>();
  /** The session and group ids known to be the agent's at the last scan. */
  private ids = new Set<number>();

  /** Nothing that started before it is the agent's. */
  private readonly since: number;
  /** Told when an update changed the tracked processes (what `identities()` returns). */
  private readonly changeListeners = new Set<() => void>();

  /**
   * Tracks the agent `rootPid`, which started at `rootStartTime`; null when it was gone
   * before it could be read: then what still holds its session or group (the number is not
   * reused while they do) is taken at the next scan, if it started after the supervisor.
   */
  constructor(rootPid: number, rootStartTime: number | null) {
    if (rootStartTime !== null) this.members.set(rootPid, rootStartTime);
    this.ids.add(rootPid);
    this.since = rootStartTime ?? startTimeOf(process.pid) ?? 0;
  }

  /** The tracked processes, for records (plain JSON). */
  identities(): ProcessIdentity[] {
    return [...this.members].map(([pid, startTime]) => ({ pid, startTime }));
  }

  /** Calls `listener` after each update that changed the tracked processes; returns the unsubscribe. */
  onChange(listener: () => void): () => void {
    this.changeListeners.add(listener);
    return () => this.changeListeners.delete(listener);
  }

  /** Takes in one scan: who is the agent's now (see the rules at the top of this file). */
  update(view: ScanView): void {
    const vouched = new Set(this.ids);
    const pending: ProcEntry[] = [];
    for (const [pid, startTime] of this.members) {
      const entry = view.table.get(pid);
      if (entry?.startTime !== startTime) continue; // gone, or the pid is another process's now
      pending.push(entry);
      vouched.add(pid);
    }
    for (const id of vouched) pending.push(...(view.byGroupOrSession.get(id) ?? []));
    const found = new Map<number, ProcEntry>();
    for (let entry = pending.pop(); entry; entry = pending.pop()) {
      if (found.has(entry.pid) || entry.startTime < this.since || isProtected(entry.pid)) continue;
      found.set(entry.pid, entry);
      vouched.add(entry.pid); // so the session or group it leads is the agent's: one update is a fixpoint
      pending.push(...(view.byGroupOrSession.get(entry.pid) ?? []));
      for (const child of view.children.get(entry.pid) ?? []) {
        if (child.startTime >= entry.startTime) pending.push(child);
      }
    }
    const before = this.members;
    this.members = new Map();
    this.ids = new Set();
    for (const entry of found.values()) {
      this.members.set(entry.pid, entry.startTime);
      this.ids.add(entry.pid);
      if (vouched.has(entry.sid)) this.ids.add(entry.sid);
      if (vouched.has(entry.pgid)) this.ids.add(entry.pgid);
    }
    if (this.changeListeners.size > 0 && !sameEntries(before, this.members)) for (const listener of this.changeListeners) listener();
  }

  /** The tracked processes that still run (not zombies) in `view`, the scan of the last update. */
  running(view: ScanView): ProcEntry[] {
    const running: ProcEntry[] = [];
    for (const pid of this.members.keys()) {
      const entry = view.table.get(pid);
      if (entry && isRunningEntry(entry)) running.push(entry);
    }
    return running;
  }
}

/** Never signalled, whatever a scan says: init and the supervisor itself. */
function isProtected(pid: number): boolean {
  return pid <= 1 || pid === process.pid;
}

/** Options of a scanner; the defaults are the shared one's. */
export interface ProcScannerOptions {
  intervalMs?: number;
  /** How often a timer scan reads every process again, not only the new ones. */
  fullScanEveryMs?: number;
  /** Reads the table; with `previous`, only what is new since need be read. Tests feed their own. */
  read?: (previous?: ProcTable) => ProcTable;
  /** The last pid handed out, null if unknown (then every timer tick scans); with `read`, null. */
  lastPid?: () => number | null;
}

/**
 * Reads /proc once per interval for every tracker registered with it: one timer per
 * process, however many agents. The timer is unref'd (it never keeps the host alive) and
 * exists only while a tracker is registered. A timer scan reads only the processes that are
 * new since the last scan (see `readProcTable`), and every process every `fullScanEveryMs`;
 * the scans of `killAll()` always read every process.
 */
export class ProcScanner {
  private readonly trackers = new Set<ProcessTracker>();
  /** Registered since the last scan: they take the next scan even when nothing changed. */
  private readonly unscanned = new Set<ProcessTracker>();
  private timer: NodeJS.Timeout | undefined;
  private last: ScanView | undefined;
  private lastFullAt = 0;
  private lastPid: number | null = null;
  private pendingFull: Promise<ScanView> | undefined;
  private warned = false;
  private readonly intervalMs: number;
  private readonly fullScanEveryMs: number;
  private readonly read: (previous?: ProcTable) => ProcTable;
  private readonly readLastPid: () => number | null;

  constructor(options: ProcScannerOptions = {}) {
    this.intervalMs = options.intervalMs ?? defaultScanIntervalMs;
    this.fullScanEveryMs = options.fullScanEveryMs ?? defaultFullScanEveryMs;
    this.read = options.read ?? readProcTable;
    this.readLastPid = options.lastPid ?? (options.read ? () => null : readLastPid);
  }

  /** How many trackers are registered. */
  get tracked(): number {
    return this.trackers.size;
  }

  /** True while the interval timer exists (exactly while a tracker is registered). */
  get timerActive(): boolean {
    return this.timer !== undefined;
  }

  register(tracker: ProcessTracker): void {
    this.trackers.add(tracker);
    this.unscanned.add(tracker);
    if (!this.timer) {
      this.timer = setInterval(() => this.tick(), this.intervalMs);
      this.timer.unref();
    }
  }

  unregister(tracker: ProcessTracker): void {
    this.trackers.delete(tracker);
    this.unscanned.delete(tracker);
    if (this.trackers.size === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = undefined;
      this.last = undefined;
      this.lastPid = null;
    }
  }

  /**
   * The timer's: scans, unless no pid was handed out since the last scan and no tracker
   * waits for its first one. Without a new pid no process can have appeared, so nothing can
   * have become an agent's; what vanished is noticed at the next scan (and killAll() always
   * scans).
   */
  private tick(): void {
    const lastPid = this.readLastPid();
    if (lastPid !== null && lastPid === this.lastPid && this.unscanned.size === 0) return;
    this.scanAll(lastPid);
  }

  /**
   * Scans at once for every registered tracker: what the timer calls, and what tests call
   * to know a scan has happened (it is synchronous). When no process appeared or vanished
   * since the last scan, only the trackers registered since take it (an update of an
   * unchanged table changes nothing). A failed read is warned about once.
   */
  scanNow(): void {
    this.scanAll(this.readLastPid());
  }

  private scanAll(lastPid: number | null): void {
    if (this.trackers.size === 0) return;
    const previous = this.last;
    let view: ScanView;
    try {
      view = this.scan(previous === undefined || Date.now() - this.lastFullAt >= this.fullScanEveryMs, lastPid);
    } catch (error) {
      if (!this.warned) process.emitWarning(`agentvisor: proc-tracking containment cannot read the process table: ${String(error)}`);
      this.warned = true;
      return;
    }
    this.deliver(view, view === previous ? this.unscanned : this.trackers);
  }

  /** Every registered tracker not in `unscanned` has taken the last view. */
  private deliver(view: ScanView, trackers: Set<ProcessTracker>): void {
    for (const tracker of trackers) tracker.update(view);
    this.unscanned.clear();
  }

  /**
   * A scan of every process, made after this call: one for all the callers of the same
   * turn of the event loop (the killAll()s of a shutdown share their rounds). Every
   * registered tracker takes it.
   */
  fullScan(): Promise<ScanView> {
    this.pendingFull ??= new Promise<ScanView>((resolve, reject) => {
      setImmediate(() => {
        this.pendingFull = undefined;
        try {
          const view = this.scan(true);
          this.deliver(view, this.trackers);
          resolve(view);
        } catch (error) {
          reject(error as Error);
        }
      });
    });
    return this.pendingFull;
  }

  /** Reads the table (all of it, or what is new since the last scan); the last view when nothing changed. */
  private scan(full: boolean, lastPid = this.readLastPid()): ScanView {
    this.lastPid = lastPid; // read before the table: a process created while it is read changes it
    const table = this.read(full ? undefined : this.last?.table);
    if (full) this.lastFullAt = Date.now();
    if (this.last && sameEntries(table, this.last.table)) return this.last;
    const view = scanView(table);
    if (this.trackers.size > 0) this.last = view;
    return view;
  }
}

/** True when both maps hold the same keys with the same values (===): an incremental read that found nothing new or gone, a tracker whose processes did not change. */
function sameEntries<K, V>(a: ReadonlyMap<K, V>, b: ReadonlyMap<K, V>): boolean {
  if (a.size !== b.size) return false;
  for (const [key, value] of a) if (b.get(key) !== value) return false;
  return true;
}

/** The scanner of this process, shared by every agent contained by `procTrackingContainment`. */
export const procScanner = new ProcScanner();

/** The proc-tracking mechanism on `scanner` (the shared one unless a test brings its own). */
export function createProcTrackingContainment(scanner: ProcScanner = procScanner): ContainmentMechanism {
  return {
    kind: 'proc-tracking',
    wrap: (request) => ({ command: request.command, args: request.args }),
    contain: (spawnedPid) => containByTracking(spawnedPid, scanner),
  };
}

/** Contains agents by tracking their processes through /proc, on the shared scanner. */
export const procTrackingContainment: ContainmentMechanism = createProcTrackingContainment();

function containByTracking(spawnedPid: number, scanner: ProcScanner): Containment {
  const tracker = new ProcessTracker(spawnedPid, startTimeOf(spawnedPid));
  scanner.register(tracker);
  let killing: Promise<void> | undefined;
  return {
    kind: 'proc-tracking',
    agentPid: Promise.resolve(spawnedPid),
    handle: (): ContainmentHandle => ({ kind: 'proc-tracking', pids: tracker.identities() }),
    onHandleChange: (listener) => tracker.onChange(listener),
    killAll: () => (killing ??= killEveryTracked(tracker, scanner).finally(() => (killing = undefined))),
    release: () => scanner.unregister(tracker),
  };
}

/** Waits (until `deadline` at most) until each of `entries` is stopped (state T) or gone. */
async function untilStopped(entries: ProcEntry[], deadline: number): Promise<void> {
  const isStoppedOrGone = (entry: ProcEntry) => {
    const now = readProcEntry(entry.pid);
    return now === null || now.startTime !== entry.startTime || now.state === 'T' || !isRunningEntry(now);
  };
  while (!entries.every(isStoppedOrGone) && Date.now() < deadline) await delay(1);
}

/**
 * Freezes, then kills, the tracker's processes. Each round scans (catching what appeared
 * since the last one) and SIGSTOPs what was not signalled yet, so that nothing forks on, or
 * orphans a child, while it is being killed; the first round with nothing new (or any round
 * after the deadline) SIGKILLs everything that runs. Resolves when nothing runs (zombies are
 * gone); past the deadline, once the survivors are SIGKILLed, rejects naming them (as the
 * cgroup mechanism does: uninterruptible sleep can outlast a SIGKILL).
 */
async function killEveryTracked(tracker: ProcessTracker, scanner: ProcScanner): Promise<void> {
  const deadline = Date.now() + killDeadlineMs;
  const stopped = new Set<string>();
  for (;;) {
    const view = await scanner.fullScan();
    tracker.update(view); // taken already, unless released
    const running = tracker.running(view);
    if (running.length === 0) return;
    const fresh = running.filter((entry) => !stopped.has(keyOf(entry)));
    if (fresh.length > 0 && Date.now() < deadline) {
      for (const entry of fresh) {
        signal(entry.pid, 'SIGSTOP');
        stopped.add(keyOf(entry));
      }
      // A stop takes effect when the process next runs: until then it may still fork. Only a
      // scan after it is stopped sees every child it made (with it as their parent, while it
      // lives); a child made after that scan would be reparented at the kill, out of sight.
      await untilStopped(fresh, deadline);
      continue; // the next full scan waits for the event loop's next turn
    }
    for (const entry of running) signal(entry.pid, 'SIGKILL');
    if (Date.now() >= deadline) throw new Error(`proc-tracking: ${survivorList(running)} still running ${killDeadlineMs} ms after SIGKILL`);
    await delay(killPollMs);
  }
}

/**
 * Kills, of `pids` (records of an earlier run, e.g. after a host crash), only the processes
 * that are still the same — pid and start time — and run; the others (gone, zombies, or a
 * reused pid) are skipped. All are frozen before any is killed. Resolves once the killed are
 * gone, or at the deadline with a warning naming the survivors.
 */
export async function killTracked(pids: ProcessIdentity[]): Promise<{ killed: number[]; skipped: number[] }> {
  const live = pids.filter((identity) => isRunningProcess(identity) && !isProtected(identity.pid));
  for (const identity of live) signal(identity.pid, 'SIGSTOP');
  const killed = live.filter((identity) => signal(identity.pid, 'SIGKILL'));
  const skipped = pids.filter((identity) => !killed.includes(identity));
  const deadline = Date.now() + killDeadlineMs;
  for (let running = killed; running.length > 0; running = running.filter(isRunningProcess)) {
    if (Date.now() >= deadline) {
      process.emitWarning(`agentvisor: killTracked: ${survivorList(running)} still running ${killDeadlineMs} ms after SIGKILL`);
      break;
    }
    await delay(killPollMs);
  }
  return { killed: killed.map(({ pid }) => pid), skipped: skipped.map(({ pid }) => pid) };
}

const keyOf = (entry: ProcessIdentity) => `${entry.pid}:${entry.startTime}`;

/** Sends `name` to `pid`; false when it is gone (or may not be signalled). */
function signal(pid: number, name: NodeJS.Signals): boolean {
  if (isProtected(pid)) return false;
  try {
    process.kill(pid, name);
    return true;
  } catch {
    return false;
  }
}

const survivorList = (running: ProcessIdentity[]) => running.map(({ pid }) => pid).join(', ');
