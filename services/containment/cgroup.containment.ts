/**
 * Containment by cgroup: the agent runs in a cgroup of its own, and every process it starts —
 * any depth, process group or session, double-forked daemons — is born into it. setsid,
 * setpgid and reparenting do not move a process out; only a write to another cgroup's
 * `cgroup.procs` does, which an agent running as root (or owning a delegated subtree) could
 * do on purpose: this contains careless agents, not hostile ones. Emptying the cgroup kills
 * every member:
 *
 * - `v2` (cgroup2, kernel ≥ 5.14): one write to `cgroup.kill` SIGKILLs every member
 *   atomically; a fork racing the kill is killed too.
 * - `v1-freezer`: the cgroup is frozen (nothing runs, nothing forks), every member gets
 *   SIGKILL, the cgroup is thawed: the members die on waking, none could fork in between.
 * - `v1-pids`: `pids.max` is set to 0 (no fork succeeds any more), then the members are
 *   SIGKILLed, re-read and SIGKILLed again until none runs.
 *
 * The agent is spawned as `/bin/sh -c <join> <cgroup> <command> <args...>`: the shell writes
 * its own pid into the cgroup and only then execs the agent, so the agent keeps the spawned
 * pid, process group and stdio, and nothing it starts runs outside the cgroup. If the write
 * fails the shell exits with {@link cgroupJoinFailedExitCode} and the agent never runs.
 *
 * Every cgroup is created under a directory named `agentvisor` in the chosen place, and only
 * cgroups there are ever emptied or removed. Framework-free: node builtins only.
 */
import { spawnSync } from 'node:child_process';
import { type Dirent, existsSync, mkdirSync, readdirSync, realpathSync, rmdirSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, relative, sep } from 'node:path';
import type { Containment, ContainedSpawn, ContainmentMechanism, SpawnRequest } from './containment.js';
import { isRunningEntry, isRunningProcess, readProcEntry, readProcFile, startTimeOf } from './proc-table.js';

/** How the cgroups under a root are emptied, strongest first. */
export type CgroupFlavor = 'v2' | 'v1-freezer' | 'v1-pids';

/** A place where this process may create per-agent cgroups. */
export interface CgroupRoot {
  readonly flavor: CgroupFlavor;
  /** The cgroup directory that holds `agentvisor/`, e.g. `/sys/fs/cgroup/unified`. */
  readonly path: string;
}

/** The wrapper's exit code when it could not join its cgroup (the agent was not started). */
export const cgroupJoinFailedExitCode = 125;

/** The name of the directory every agentvisor cgroup lives in. */
const ownDirectory = 'agentvisor';
/** How long emptying a cgroup may take before killAll gives up and reports the survivors. */
const killTimeoutMs = 2000;
/** How long release() keeps trying to remove a cgroup whose members are still exiting. */
const releaseTimeoutMs = 2000;
const pollMs = 10;

/**
 * `$0` is the cgroup directory, `"$@"` the agent's command line. The shell joins first and
 * execs second; a failed join ends it before the agent runs.
 */
const joinScript =
  `echo $$ > "$0/cgroup.procs" || { echo "agentvisor: could not join cgroup $0; the agent was not started" >&2; ` +
  `exit ${cgroupJoinFailedExitCode}; }; exec "$@"`;

/** The control file that marks each flavor; also how {@link killCgroup} tells them apart. */
const controlFile: Record<CgroupFlavor, string> = {
  v2: 'cgroup.kill',
  'v1-freezer': 'freezer.state',
  'v1-pids': 'pids.max',
};

let cachedRoot: CgroupRoot | null | undefined;
let cgroupCounter = 0;

/**
 * The strongest usable cgroup root of this host, or null: cgroup v2 (this process's cgroup,
 * then its ancestors — a delegated subtree) where `cgroup.kill` exists, else a cgroup v1
 * `freezer`, else a `pids` hierarchy. Each is verified by creating `agentvisor/probe-<pid>`,
 * moving a short-lived child into it and removing it again. Cached for the process.
 */
export function findCgroupRoot(): CgroupRoot | null {
  if (cachedRoot === undefined) cachedRoot = cgroupRootCandidates().find(probeCgroupRoot) ?? null;
  return cachedRoot;
}

/** Every place a cgroup root might be, strongest first, from this process's mounts; unprobed. */
export function cgroupRootCandidates(): CgroupRoot[] {
  const mounts = readLines('/proc/self/mountinfo').map(parseMountInfo);
  const memberships = readLines('/proc/self/cgroup').map((line) => {
    const [id = '', controllers = '', ...path] = line.split(':');
    return { id, controllers: controllers.split(','), path: path.join(':') };
  });
  const candidates: CgroupRoot[] = [];
  const v2 = memberships.find((membership) => membership.id === '0');
  const v2Dir = v2 && hostDirectory(mounts.filter((mount) => mount.fsType === 'cgroup2'), v2.path);
  // This process's own cgroup first, then its ancestors up to the mount: one may be delegated.
  for (let dir = v2Dir?.dir; dir !== undefined; dir = dir.startsWith(`${v2Dir?.mountPoint}${sep}`) ? dirname(dir) : undefined) {
    candidates.push({ flavor: 'v2', path: dir });
  }
  for (const [controller, flavor] of [['freezer', 'v1-freezer'], ['pids', 'v1-pids']] as const) {
    const membership = memberships.find((entry) => entry.controllers.includes(controller));
    const v1Mounts = mounts.filter((mount) => mount.fsType === 'cgroup' && mount.superOptions.includes(controller));
    const found = membership && hostDirectory(v1Mounts, membership.path);
    if (found) candidates.push({ flavor, path: found.dir });
  }
  return candidates;
}

/**
 * True when agents can be contained under `root`: `agentvisor/probe-<pid>` can be created,
 * has the flavor's control file, takes a short-lived child, and can be removed again.
 */
export function probeCgroupRoot(root: CgroupRoot): boolean {
  const probe = join(root.path, ownDirectory, `probe-${process.pid}`);
  if (existsSync(probe)) removeCgroupBlocking(probe, 0); // left by a dead process with our pid
  try {
    createCgroup(probe);
  } catch {
    removeOwnDirectoryIfEmpty(dirname(probe));
    return false;
  }
  try {
    if (!existsSync(join(probe, controlFile[root.flavor])) || !existsSync(join(probe, 'cgroup.procs'))) return false;
    const joined = spawnSync('/bin/sh', ['-c', joinScript, probe, '/bin/sh', '-c', 'exit 0'], { stdio: 'ignore', timeout: 5000 });
    return joined.status === 0;
  } finally {
    removeCgroupBlocking(probe, 500);
    removeOwnDirectoryIfEmpty(dirname(probe));
  }
}

/** The `cgroup` mechanism over `root` (see {@link findCgroupRoot}). */
export function cgroupContainment(root: CgroupRoot): ContainmentMechanism {
  /** Cgroups made by wrap() and not yet claimed by contain(), oldest first. */
  const wrapped: Array<{ request: SpawnRequest; path: string }> = [];
  return {
    kind: 'cgroup',
    wrap(request: SpawnRequest): ContainedSpawn {
      const path = createAgentCgroup(root, request.agent);
      wrapped.push({ request, path });
      return { command: '/bin/sh', args: ['-c', joinScript, path, request.command, ...request.args] };
    },
    contain(spawnedPid: number, request: SpawnRequest): Containment {
      const same = (other: SpawnRequest) =>
        other.agent === request.agent && other.command === request.command && other.args.join('\0') === request.args.join('\0');
      let index = wrapped.findIndex((entry) => entry.request === request);
      if (index < 0) index = wrapped.findIndex((entry) => same(entry.request));
      const [entry] = index < 0 ? [] : wrapped.splice(index, 1);
      if (!entry) throw new Error(`cgroup containment: contain() for agent ${request.agent} without a matching wrap()`);
      return containIn(entry.path, root.flavor, spawnedPid);
    },
  };
}

/**
 * Kills everything left in a recorded agentvisor cgroup (a sweep after a host crash) and
 * removes it; resolves with the pids that were signaled. Refuses any path that is not an
 * agentvisor cgroup; a path that no longer exists resolves with nothing killed. Rejects when
 * members survive the kill.
 */
export async function killCgroup(path: string): Promise<{ killed: number[] }> {
  const refuse = () => new Error(`killCgroup: ${path} is not an agentvisor cgroup (a cgroup directory inside an "${ownDirectory}" cgroup)`);
  if (basename(dirname(path)) !== ownDirectory) throw refuse();
  if (!existsSync(path)) return { killed: [] };
  const real = realpathSync(path);
  if (basename(dirname(real)) !== ownDirectory || !isOnCgroupMount(real)) throw refuse();
  const flavor = (Object.keys(controlFile) as CgroupFlavor[]).find((each) => existsSync(join(real, controlFile[each]))) ?? 'v1-pids';
  const killed = await emptyCgroup(real, flavor);
  await removeCgroupPatiently(real, releaseTimeoutMs);
  removeOwnDirectoryIfEmpty(dirname(real));
  return { killed };
}

/** One contained agent: its cgroup, and the spawned pid (killed directly too, see killAll). */
function containIn(path: string, flavor: CgroupFlavor, spawnedPid: number): Containment {
  // The spawned process is our unreaped child now, so its start time names it for good.
  const startTime = startTimeOf(spawnedPid);
  const spawnedRuns = () => startTime !== null && isRunningProcess({ pid: spawnedPid, startTime });
  let released = false;
  return {
    kind: 'cgroup',
    handle: () => ({ kind: 'cgroup', path }),
    agentPid: Promise.resolve(spawnedPid),
    async killAll() {
      // A wrapper killed before it joined never starts the agent; one that joined is in the
      // cgroup anyway. Either way nothing escapes a killAll that comes right after spawn.
      if (spawnedRuns()) signal(spawnedPid);
      await emptyCgroup(path, flavor, spawnedRuns);
    },
    release() {
      if (released) return;
      released = true;
      void removeCgroupPatiently(path, releaseTimeoutMs).then(() => removeOwnDirectoryIfEmpty(dirname(path)));
    },
  };
}

/**
 * SIGKILLs every member of the cgroup at `path` the flavor's way, then again until no member
 * (nor `alsoWaitFor`) runs; zombies count as gone. Resolves with the pids seen and killed;
 * rejects after {@link killTimeoutMs} naming the survivors.
 */
async function emptyCgroup(path: string, flavor: CgroupFlavor, alsoWaitFor: () => boolean = () => false): Promise<number[]> {
  const killed = new Set<number>();
  const deadline = Date.now() + killTimeoutMs;
  if (flavor === 'v1-pids') tryWrite(join(path, 'pids.max'), '0'); // no fork succeeds from now on
  for (;;) {
    const running = runningMembers(path);
    if (running.length === 0 && !alsoWaitFor()) return [...killed];
    if (Date.now() > deadline) {
      throw new Error(`cgroup ${path}: ${running.join(', ') || 'the agent'} still running ${killTimeoutMs} ms after SIGKILL`);
    }
    running.forEach((id) => killed.add(id));
    const atOnce =
      flavor === 'v2' ? tryWrite(join(path, 'cgroup.kill'), '1') : flavor === 'v1-freezer' && (await killFrozen(path, deadline));
    if (!atOnce) running.forEach(signal);
    await delay(pollMs);
  }
}

/**
 * Freezes the v1 cgroup, SIGKILLs every member while nothing can run or fork, and thaws it;
 * false when it cannot be frozen (then nobody was signaled).
 */
async function killFrozen(path: string, deadline: number): Promise<boolean> {
  const state = join(path, 'freezer.state');
  if (!tryWrite(state, 'FROZEN')) return false;
  try {
    // FREEZING may last while a member sleeps uninterruptibly; kill anyway after a while.
    const frozenBy = Math.min(deadline, Date.now() + killTimeoutMs / 4);
    while (readProcFile(state)?.trim() !== 'FROZEN' && Date.now() < frozenBy) await delay(pollMs);
    processesOf(memberIds(path)).forEach(signal);
    return true;
  } finally {
    tryWrite(state, 'THAWED');
  }
}

/** The pids of the cgroup's processes that still run a thread (zombies do not count). */
function runningMembers(path: string): number[] {
  return processesOf(memberIds(path).filter(isRunningId));
}

/**
 * Everyone in the cgroup and in the cgroups below it, by pid and by thread id: `cgroup.procs`
 * lists processes by their leader, which may be a zombie with live threads, so the threads
 * (`tasks` in v1, `cgroup.threads` in v2) count too.
 */
function memberIds(path: string): number[] {
  const files = cgroupTree(path).flatMap((dir) => ['cgroup.procs', 'tasks', 'cgroup.threads'].map((file) => join(dir, file)));
  const ids = files.flatMap((file) => (readProcFile(file) ?? '').split('\n'));
  return [...new Set(ids.filter((id) => /^\d+$/.test(id)).map(Number))];
}

/**
 * The cgroup and every cgroup below it, parents first: an agent with the rights (root, or
 * owning a delegated subtree — a nested agentvisor) may make its own. The kill reaches them
 * all (v2 `cgroup.kill`, the v1 freezer and `pids.max` are hierarchical), and so must the
 * wait and the removal.
 */
function cgroupTree(path: string): string[] {
  let entries: Dirent[];
  try {
    entries = readdirSync(path, { withFileTypes: true });
  } catch {
    return [];
  }
  return [path, ...entries.filter((entry) => entry.isDirectory()).flatMap((entry) => cgroupTree(join(path, entry.name)))];
}

/** The processes (thread-group ids) that thread ids belong to; a thread gone since is dropped. */
function processesOf(ids: number[]): number[] {
  const tgids = ids.map((id) => Number(/^Tgid:\s*(\d+)/m.exec(readProcFile(`/proc/${id}/status`) ?? '')?.[1] ?? NaN));
  return [...new Set(tgids.filter((tgid) => Number.isInteger(tgid) && tgid > 0))];
}

/** True while the process or thread `id` runs code (a zombie does not). */
function isRunningId(id: number): boolean {
  const entry = readProcEntry(id);
  return entry !== null && isRunningEntry(entry);
}

/** SIGKILL to a process; gone already is fine. */
function signal(id: number): void {
  try {
    process.kill(id, 'SIGKILL');
  } catch {
    // ESRCH: it is gone.
  }
}

/** `<root>/agentvisor/<hostPid>-<agent>-<counter>`, created; a name left by a dead host is skipped. */
function createAgentCgroup(root: CgroupRoot, agent: string): string {
  const name = agent.replace(/[^A-Za-z0-9_.-]/g, '_').replace(/^\.+/, '_').slice(0, 48) || 'agent';
  for (;;) {
    const path = join(root.path, ownDirectory, `${process.pid}-${name}-${++cgroupCounter}`);
    try {
      createCgroup(path);
      return path;
    } catch (error) {
      if (errorCode(error) !== 'EEXIST') throw new Error(`cgroup containment: cannot create ${path}: ${String(error)}`, { cause: error });
    }
  }
}

/** mkdir of a cgroup and, when missing, of its `agentvisor` parent (another host may remove it). */
function createCgroup(path: string): void {
  for (let attempt = 1; ; attempt++) {
    try {
      mkdirSync(dirname(path), { recursive: true });
      mkdirSync(path);
      return;
    } catch (error) {
      if (errorCode(error) !== 'ENOENT' || attempt >= 3) throw error;
    }
  }
}

/**
 * One try at removing a cgroup, the cgroups below it first. True when there is nothing more
 * to try: removed, gone, failed for another reason than members still exiting (EBUSY), or
 * past `deadline`.
 */
function removeCgroup(path: string, deadline: number): boolean {
  for (const dir of cgroupTree(path).reverse()) {
    try {
      rmdirSync(dir);
    } catch (error) {
      if (errorCode(error) === 'ENOENT') continue; // removed meanwhile (by a nested agentvisor)
      return errorCode(error) !== 'EBUSY' || Date.now() > deadline;
    }
  }
  return true;
}

/** Removes the cgroup, blocking while members are still exiting, for up to `ms` (the probe). */
function removeCgroupBlocking(path: string, ms: number): void {
  const deadline = Date.now() + ms;
  while (!removeCgroup(path, deadline)) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, pollMs);
}

/** Removes the cgroup, retrying while members are still exiting, for up to `ms`; never rejects. */
async function removeCgroupPatiently(path: string, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!removeCgroup(path, deadline)) await delay(pollMs);
}

/** Removes the shared `agentvisor` directory once no cgroup is left in it; quietly. */
function removeOwnDirectoryIfEmpty(path: string): void {
  if (basename(path) !== ownDirectory) return;
  try {
    rmdirSync(path);
  } catch {
    // Another agent's cgroup (or another host's) is still in it, or it is gone already.
  }
}

interface MountInfo {
  root: string;
  mountPoint: string;
  fsType: string;
  superOptions: string[];
}

/** One /proc/self/mountinfo line: `id parent dev root mountpoint options [optional...] - type source super`. */
function parseMountInfo(line: string): MountInfo {
  const fields = line.split(' ');
  const dash = fields.indexOf('-');
  const unescape = (text = '') => text.replace(/\\([0-7]{3})/g, (_match, octal: string) => String.fromCharCode(parseInt(octal, 8)));
  return {
    root: unescape(fields[3]),
    mountPoint: unescape(fields[4]),
    fsType: fields[dash + 1] ?? '',
    superOptions: (fields[dash + 3] ?? '').split(','),
  };
}

/** Where cgroup `cgroupPath` (as /proc/self/cgroup names it) is, under one of `mounts`. */
function hostDirectory(mounts: MountInfo[], cgroupPath: string): { dir: string; mountPoint: string } | undefined {
  if (cgroupPath.split('/').includes('..')) return undefined; // outside our cgroup namespace
  for (const mount of mounts) {
    const inside = relative(mount.root, cgroupPath);
    if (inside === '..' || inside.startsWith(`..${sep}`)) continue;
    return { dir: join(mount.mountPoint, inside), mountPoint: mount.mountPoint };
  }
  return undefined;
}

function isOnCgroupMount(path: string): boolean {
  return readLines('/proc/self/mountinfo')
    .map(parseMountInfo)
    .some((mount) => (mount.fsType === 'cgroup' || mount.fsType === 'cgroup2') && path.startsWith(`${mount.mountPoint}${sep}`));
}

function readLines(path: string): string[] {
  return (readProcFile(path) ?? '').split('\n').filter((line) => line !== '');
}

function tryWrite(path: string, value: string): boolean {
  try {
    writeFileSync(path, value);
    return true;
  } catch {
    return false;
  }
}

function errorCode(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | undefined)?.code;
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
