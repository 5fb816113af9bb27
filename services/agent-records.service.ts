/**
 * Crash-safe records of live agent processes, and the orphan sweep that reads them.
 *
 * One JSON file per agent process, `<stateDir>/processes/<hostPid>-<hostStartTime>-<agent>-<wrapperPid>.json`,
 * written atomically (temporary file, then rename) when the process is spawned, rewritten
 * when its agent pid or container becomes known (and while a /proc-tracked container grows),
 * removed once the process and its container are gone. A record holds no secret: the
 * command, never its arguments nor its environment.
 *
 * After a host crash, `sweepOrphans()` reads every record whose owner (host pid AND start
 * time) is gone and kills what it left behind, by its containment handle; a pid whose start
 * time differs from the recorded one (a reused pid) is never signalled. A dry run reads the
 * same records and /proc and touches nothing; `only` narrows a sweep to given pids, each of
 * which must name a dead owner's record on this host. No XState here.
 */
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { OrphanPidRefusal } from '../core/errors.js';
import { killCgroup } from './containment/cgroup.containment.js';
import type { Containment, ContainmentHandle, ContainmentKind } from './containment/containment.js';
import { isRunningEntry, isRunningProcess, isSameProcess, readProcEntry, readProcFile, readProcTable, startTimeOf, type ProcessIdentity } from './containment/proc-table.js';
import { killTracked } from './containment/proc-tracking.containment.js';
import { clockTicksPerSecond, readUptimeSeconds } from './containment/proc-usage.js';
import { signalGroup } from './process-group.service.js';
import { engineVariables, sweepContainer } from './runtimes/container.runtime.js';
import type { PodLeftover, RemoteLeftover } from './runtimes/runtime.js';

/** What is kept of one live agent process. */
export interface AgentRecord {
  version: 1;
  agent: string;
  /** The agent's command (its arguments and environment are never recorded). */
  command: string;
  /** The spawned process (the containment wrapper, or the agent itself); also its process group id. */
  wrapper: ProcessIdentity;
  /** The agent's own process on this host, once known. */
  agentProcess: ProcessIdentity | null;
  pgid: number;
  sid: number;
  containment: ContainmentKind | null;
  handle: ContainmentHandle | null;
  /** The supervisor's process: while it runs (same start time), its records are left alone. */
  owner: ProcessIdentity;
  /** The host it ran on: a state directory shared between hosts (an NFS home) holds records this host must not act on. Absent in older records. */
  host?: string;
  createdAt: string;
  /** A command the agent ran through `terminal/create` (absent: the agent's own process). */
  terminal?: true;
  /**
   * What the process started in its runtime that outlives it (a `docker run` container): removed
   * by the sweep too. A `kubernetes-pod` record stands for a pod alone: no process of this host
   * (its wrapper and group are 0 and never signalled).
   */
  remote?: RemoteLeftover;
}

/** One thing a crashed supervisor left behind: a process of it that still runs here, or a container it recorded. */
export interface OrphanProcess {
  agent: string;
  /** The agent's pid on this host (the spawned process's, when the agent's was never known): what `only` names. */
  pid: number;
  /** When that process started (epoch ms, from its start time in /proc); null when not known on this boot. */
  startedAt: number | null;
  /** Its command (never its arguments). */
  command: string;
  /** A command the agent ran through `terminal/create`. */
  terminal?: true;
  /** The label token of a container it started (`docker run`): a sweep removes it; a dry run does not ask the engine whether it still runs. */
  container?: string;
  /** A pod made for it through the Kubernetes API (`namespace/name`; its pid is 0: nothing of it runs here): a sweep deletes it; a dry run does not ask the API. */
  pod?: string;
  /** Whether a recorded process still runs here; false: only its container may be left. */
  running: boolean;
  /** How it was contained (null: its process group only). */
  containment: ContainmentKind | null;
  /** The pid of the supervisor that left it (gone now). */
  owner: number;
  /** When its record was written (epoch ms). */
  recordedAt: number;
}

export interface SweepResult {
  /** True for a dry run: nothing was killed and no record removed. */
  dryRun: boolean;
  /**
   * What dead owners left on this host, found before anything was killed: their processes that
   * still run, and the containers they recorded. With `only`, those pids alone.
   */
  orphans: OrphanProcess[];
  /** What was killed (none in a dry run); `terminal` marks a command an agent ran through `terminal/create`. */
  killed: Array<{ agent: string; pid: number; command: string; terminal?: true; container?: string; pod?: string }>;
  /**
   * Records left alone (`'owner alive'`, another host's), and those with nothing left to kill
   * (`'not running'`, `'pid reused'`: removed by a sweep, kept by a dry run), with why.
   */
  skipped: Array<{ agent: string; pid: number; reason: string; terminal?: true }>;
}

/** What a sweep is asked to do. */
export interface SweepOptions {
  /** List only: kill nothing, remove no record. */
  dryRun?: boolean;
  /** Only the leftovers of these pids (each a listed pid, or a record's spawned pid). */
  only?: readonly number[];
}

/** A sweep read once: the refusals of its `only`, then run (or listed) over the same records. */
export interface SweepPlan {
  /** Empty unless `only` names a pid that is no dead owner's leftover here: then nothing may run. */
  refused: OrphanPidRefusal[];
  run(dryRun: boolean): Promise<SweepResult>;
}

/** Where a record stands: a dead owner's on this host (an orphan), or left alone and why. */
type Standing = { orphan: true } | { orphan: false; reason: string; refusal: Omit<OrphanPidRefusal, 'pid'> };

/** This process's identity, read once. */
let self: ProcessIdentity | undefined;
function ownerIdentity(): ProcessIdentity {
  return (self ??= { pid: process.pid, startTime: startTimeOf(process.pid) ?? 0 });
}

/** This supervisor process as other tools see it (a container's label): `<hostname>/<pid>-<start time>`, as its records name their owner. */
export function supervisorInstance(): string {
  const owner = ownerIdentity();
  return `${hostname()}/${owner.pid}-${owner.startTime}`;
}

/** One live record: rewrite it as more is known, remove it when the process is gone. */
export interface RecordFile {
  update(change: Partial<Pick<AgentRecord, 'agentProcess' | 'handle'>>): void;
  /**
   * Removes the record: no write happens after the call; the file is unlinked on libuv's
   * thread pool (an unlink of a file written moments ago cost this thread 0.5-1 ms on ext4),
   * and the promise resolves once it is gone (never rejects: a record that cannot be removed
   * is left for the sweep). Asked again, it returns the same removal.
   */
  remove(): Promise<void>;
}

/** Unlinks `paths` off this thread; a missing file (or any failure) is not an error. */
const unlinkQuietly = (...paths: string[]): Promise<void> => Promise.all(paths.map((path) => unlink(path).catch(() => {}))).then(() => {});

/** The records of one state directory. */
export class AgentRecords {
  readonly dir: string;

  constructor(stateDir: string) {
    this.dir = join(stateDir, 'processes');
  }

  /** Writes the record of a freshly spawned process (best effort: a record that cannot be written is skipped). */
  create(agent: string, command: string, wrapperPid: number, containment: ContainmentKind | null, terminal = false, remote?: RemoteLeftover): RecordFile {
    const owner = ownerIdentity();
    const entry = readProcEntry(wrapperPid);
    const wrapper = { pid: wrapperPid, startTime: entry?.startTime ?? 0 };
    const record: AgentRecord = {
      version: 1,
      agent,
      command,
      wrapper,
      // Without containment the spawned process is the agent: known at once, so the first write is whole.
      agentProcess: containment === null ? wrapper : null,
      // Every process agentvisor spawns leads its own session and group (execa's `detached`,
      // node-pty's setsid): its pid is both. Reading them from /proc right after the fork can
      // race the child's setsid and see the parent's group — which a sweep would then kill.
      pgid: wrapperPid,
      sid: wrapperPid,
      containment,
      handle: null,
      owner,
      host: hostname(),
      createdAt: new Date().toISOString(),
      ...(terminal ? { terminal: true as const } : {}),
      ...(remote ? { remote } : {}),
    };
    const label = `${agent}${terminal ? '.terminal' : ''}`.replace(/[^\w.-]/g, '_');
    const path = join(this.dir, `${owner.pid}-${owner.startTime}-${label}-${wrapperPid}.json`);
    /** The removal, once asked for (asking again returns it). */
    let removed: Promise<void> | undefined;
    let written = '';
    /** A write failed after its temporary file was made: removal takes that file too. */
    let tmpLeft = false;
    const write = () => {
      const text = JSON.stringify(record, null, 2);
      if (removed !== undefined || text === written) return;
      try {
        mkdirSync(this.dir, { recursive: true });
        tmpLeft = true;
        writeFileSync(`${path}.tmp`, text, { mode: 0o600 });
        renameSync(`${path}.tmp`, path);
        tmpLeft = false;
        written = text;
      } catch {
        // Records are a safety net; a read-only state directory must not stop an agent.
      }
    };
    write();
    return {
      update(change) {
        Object.assign(record, change);
        write();
      },
      remove() {
        return (removed ??= unlinkQuietly(...(written ? [path] : []), ...(tmpLeft ? [`${path}.tmp`] : [])));
      },
    };
  }

  /**
   * Writes the record of a pod made for `agent` through the Kubernetes API (no process here):
   * written before the pod is created, removed once its deletion was accepted, so a crash
   * anywhere between leaves it for the sweep.
   */
  createRemote(agent: string, pod: PodLeftover): RecordFile {
    const owner = ownerIdentity();
    const record: AgentRecord = {
      version: 1,
      agent,
      command: 'kubernetes pod',
      wrapper: { pid: 0, startTime: 0 },
      agentProcess: null,
      pgid: 0,
      sid: 0,
      containment: null,
      handle: null,
      owner,
      host: hostname(),
      createdAt: new Date().toISOString(),
      remote: pod,
    };
    const path = join(this.dir, `${owner.pid}-${owner.startTime}-${agent.replace(/[^\w.-]/g, '_')}-pod-${pod.token}.json`);
    try {
      mkdirSync(this.dir, { recursive: true });
      writeFileSync(`${path}.tmp`, JSON.stringify(record, null, 2), { mode: 0o600 });
      renameSync(`${path}.tmp`, path);
    } catch {
      // Records are a safety net; the label sweep still finds the pod.
    }
    return {
      update: () => {},
      remove: () => unlinkQuietly(path, `${path}.tmp`),
    };
  }

  /** Every readable record, with its file. */
  read(): Array<{ path: string; record: AgentRecord }> {
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch {
      return [];
    }
    const records: Array<{ path: string; record: AgentRecord }> = [];
    for (const name of names.filter((each) => each.endsWith('.json'))) {
      const path = join(this.dir, name);
      try {
        const record = JSON.parse(readFileSync(path, 'utf8')) as AgentRecord;
        if (record?.version === 1 && record.owner && record.wrapper) records.push({ path, record });
      } catch {
        // Unreadable or half-written by a foreign tool: not ours to act on.
      }
    }
    return records;
  }

  /** True when some record's owner is gone: a sweep would have work to do. */
  hasOrphans(): boolean {
    return this.read().some(({ record }) => !isSameProcess(record.owner));
  }

  /** Kills what dead owners left behind and removes their records; a live owner's records are left alone. */
  sweep(): Promise<SweepResult> {
    return this.plan().run(false);
  }

  /**
   * Reads the records once for a sweep. With `only`, the sweep covers the records whose listed
   * or spawned pid is one of those; a pid that names no dead owner's record on this host is
   * refused (and then nothing runs: the caller throws).
   */
  plan(only?: readonly number[]): SweepPlan {
    const entries = this.read().map((entry) => ({ ...entry, standing: standingOf(entry.record) }));
    const names = (record: AgentRecord, pid: number) => listedPid(record) === pid || record.wrapper.pid === pid;
    const wanted = only === undefined ? null : new Set(only);
    const selected = wanted === null ? entries : entries.filter(({ record, standing }) => standing.orphan && [...wanted].some((pid) => names(record, pid)));
    const refused: OrphanPidRefusal[] = [];
    for (const pid of wanted ?? []) {
      if (selected.some(({ record }) => names(record, pid))) continue;
      const other = entries.find(({ record }) => names(record, pid));
      refused.push(other && !other.standing.orphan ? { pid, ...other.standing.refusal } : { pid, reason: 'not recorded' });
    }
    return { refused, run: (dryRun) => runSweep(selected, dryRun) };
  }
}

/** Whether a record is an orphan here: of this host (or of a record that does not say), and its owner gone. */
function standingOf(record: AgentRecord): Standing {
  if (record.host !== undefined && record.host !== hostname()) {
    return { orphan: false, reason: `another host's (${record.host})`, refusal: { reason: 'another host', detail: record.host } };
  }
  if (isSameProcess(record.owner)) return { orphan: false, reason: 'owner alive', refusal: { reason: 'owner alive', detail: String(record.owner.pid) } };
  return { orphan: true };
}

/** The pid a record is listed by: the agent's own, else the spawned process's. */
function listedPid(record: AgentRecord): number {
  return record.agentProcess?.pid ?? record.wrapper.pid;
}

/** Lists what the records left, and (unless a dry run) kills it and removes the records. */
async function runSweep(entries: Array<{ path: string; record: AgentRecord; standing: Standing }>, dryRun: boolean): Promise<SweepResult> {
  const result: SweepResult = { dryRun, orphans: [], killed: [], skipped: [] };
  for (const { path, record, standing } of entries) {
    const pid = listedPid(record);
    const terminal = record.terminal === true ? { terminal: true as const } : {};
    if (!standing.orphan) {
      result.skipped.push({ agent: record.agent, pid, reason: standing.reason, ...terminal });
      continue;
    }
    if (record.remote?.kind === 'kubernetes-pod') {
      await sweepPodRecord(result, path, record, record.remote, dryRun);
      continue;
    }
    const state = leftoverState(record);
    const remote = record.remote && validRemote(record.remote) ? record.remote : undefined;
    if (state === 'running' || remote) result.orphans.push(describeOrphan(record, state === 'running', remote));
    if (dryRun) {
      // Nothing here but a record a sweep would drop: said, and kept.
      if (state !== 'running' && !remote) result.skipped.push({ agent: record.agent, pid, reason: state, ...terminal });
      continue;
    }
    try {
      const outcome = await killLeftovers(record);
      // A container its client started is removed whatever became of the client (here its pid is long gone).
      const removal = remote?.kind === 'docker-container' ? await sweepContainer(remote) : 'absent';
      if (removal === 'failed') {
        // Kept: a later sweep tries again (the engine may be back).
        result.skipped.push({ agent: record.agent, pid, reason: `its container ${remote?.token ?? ''} could not be removed`, ...terminal });
        continue;
      }
      const container = removal === 'removed' ? { container: remote!.token } : {};
      if (outcome === 'killed' || removal === 'removed') result.killed.push({ agent: record.agent, pid, command: record.command, ...terminal, ...container });
      else result.skipped.push({ agent: record.agent, pid, reason: outcome, ...terminal });
    } catch (error) {
      result.skipped.push({ agent: record.agent, pid, reason: `kill failed: ${String(error)}`, ...terminal });
    }
    rmSync(path, { force: true });
  }
  return result;
}

/**
 * A dead owner's pod record: listed (a dry run asks nothing of the API), or its namespace swept
 * of the pods this host's dead supervisors made (kubernetes-pod.runtime.ts `sweepPods`); kept
 * when the API could not be reached, for a later sweep.
 */
async function sweepPodRecord(result: SweepResult, path: string, record: AgentRecord, pod: PodLeftover, dryRun: boolean): Promise<void> {
  if (!validPod(pod)) {
    result.skipped.push({ agent: record.agent, pid: 0, reason: 'not a pod record agentvisor writes' });
    return;
  }
  const name = `${pod.namespace}/${pod.name}`;
  result.orphans.push({ ...describeOrphan(record, false, undefined), pid: 0, startedAt: null, pod: name });
  if (dryRun) return;
  // Loaded here: the Kubernetes client is imported only when a pod is swept.
  const { sweepPods } = await import('./runtimes/kubernetes-pod.runtime.js');
  const swept = await sweepPods(pod);
  if (swept.outcome === 'failed') {
    result.skipped.push({ agent: record.agent, pid: 0, reason: `its pod ${name} could not be deleted: ${swept.detail ?? 'the API did not answer'}` });
    return;
  }
  for (const deleted of swept.deleted) result.killed.push({ agent: deleted === name ? record.agent : `${record.agent} (unrecorded)`, pid: 0, command: record.command, pod: deleted });
  if (!swept.deleted.includes(name) && !result.killed.some((killed) => killed.pod === name)) result.skipped.push({ agent: record.agent, pid: 0, reason: `its pod ${name} is gone already` });
  rmSync(path, { force: true });
}

/** Whether a pod record is one agentvisor writes: names Kubernetes accepts, paths and a context as plain strings. */
function validPod(pod: PodLeftover): boolean {
  return (
    /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(pod.namespace) &&
    /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/.test(pod.name) &&
    /^[a-f0-9]{1,64}$/.test(pod.token) &&
    typeof pod.kubeconfig === 'string' &&
    typeof pod.context === 'string'
  );
}

/** One orphan as a sweep lists it. */
function describeOrphan(record: AgentRecord, running: boolean, remote: RemoteLeftover | undefined): OrphanProcess {
  const listed = record.agentProcess ?? record.wrapper;
  const recordedAt = Date.parse(record.createdAt);
  return {
    agent: record.agent,
    pid: listed.pid,
    startedAt: startedAtOf(listed.startTime, recordedAt),
    command: record.command,
    ...(record.terminal === true ? { terminal: true as const } : {}),
    ...(remote ? { container: remote.token } : {}),
    running,
    containment: record.containment,
    owner: record.owner.pid,
    recordedAt: Number.isFinite(recordedAt) ? recordedAt : 0,
  };
}

/**
 * A start time in clock ticks since boot as epoch ms; null when it cannot be of this boot (its
 * record is older than the boot) or /proc/uptime cannot be read.
 */
function startedAtOf(startTicks: number, recordedAt: number): number | null {
  const uptime = readUptimeSeconds();
  if (uptime === null || startTicks <= 0) return null;
  const bootedAt = Date.now() - uptime * 1000;
  if (!Number.isFinite(recordedAt) || recordedAt < bootedAt - 1000) return null;
  return Math.round(bootedAt + (startTicks / clockTicksPerSecond) * 1000);
}

/**
 * What a sweep would find of a dead owner's record, read only (the kill's own checks, without
 * a signal): something recorded still runs, a recorded pid now names another process, or
 * nothing is left.
 */
function leftoverState(record: AgentRecord): 'running' | 'pid reused' | 'not running' {
  const handle = record.handle;
  const gone = (...identities: ProcessIdentity[]) => (identities.some(({ pid, startTime }) => (readProcEntry(pid)?.startTime ?? startTime) !== startTime) ? 'pid reused' : 'not running');
  const anyRuns = (identities: ProcessIdentity[]) => identities.some((identity) => isRunningProcess(identity));
  switch (handle?.kind) {
    case 'cgroup': {
      const members = (readProcFile(join(handle.path, 'cgroup.procs')) ?? '').split('\n').filter((line) => /^\d+$/.test(line));
      return members.some((member) => {
        const entry = readProcEntry(Number(member));
        return entry !== null && isRunningEntry(entry);
      })
        ? 'running'
        : 'not running';
    }
    case 'proc-tracking': {
      const identities = [record.wrapper, ...(record.agentProcess ? [record.agentProcess] : []), ...handle.pids];
      return anyRuns(identities) ? 'running' : gone(...identities);
    }
    case 'pid-namespace': {
      const recorded = [{ pid: handle.initPid, startTime: handle.initStartTime }, record.wrapper];
      return anyRuns(recorded) ? 'running' : gone(...recorded);
    }
    default: {
      if (isRunningProcess(record.wrapper)) return 'running';
      if (readProcEntry(record.pgid) !== null) return gone(record.wrapper);
      const left = [...readProcTable().values()].some((entry) => entry.pgid === record.pgid && entry.sid === record.sid && entry.startTime >= record.wrapper.startTime && isRunningEntry(entry));
      return left ? 'running' : gone(record.wrapper);
    }
  }
}

/**
 * Whether a recorded container is one agentvisor writes, checked before it is listed or
 * removed: a record file is never a way to run another program or to select containers by
 * another label.
 */
function validRemote(remote: RemoteLeftover): boolean {
  if (remote.kind === 'kubernetes-pod') return validPod(remote);
  return (
    remote.kind === 'docker-container' &&
    remote.client === 'docker' &&
    /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/.test(remote.token) &&
    typeof remote.engine === 'object' &&
    remote.engine !== null &&
    Object.entries(remote.engine).every(([name, value]) => (engineVariables as readonly string[]).includes(name) && typeof value === 'string')
  );
}

/** Kills what one orphaned record names, never a pid whose start time differs. */
async function killLeftovers(record: AgentRecord): Promise<'killed' | 'pid reused' | 'not running'> {
  const handle = record.handle;
  /** Nothing was killed: say whether a recorded pid now names another process. */
  const gone = (...identities: ProcessIdentity[]) => (identities.some(({ pid, startTime }) => (readProcEntry(pid)?.startTime ?? startTime) !== startTime) ? 'pid reused' : 'not running');
  switch (handle?.kind) {
    case 'cgroup':
      return (await killCgroup(handle.path)).killed.length > 0 ? 'killed' : 'not running';
    case 'proc-tracking': {
      const identities = [record.wrapper, ...(record.agentProcess ? [record.agentProcess] : []), ...handle.pids];
      return (await killTracked(identities)).killed.length > 0 ? 'killed' : gone(...identities);
    }
    case 'pid-namespace': {
      // The init's death empties the namespace; the wrapper (unshare) goes with it.
      const recorded = [{ pid: handle.initPid, startTime: handle.initStartTime }, record.wrapper];
      return (await killTracked(recorded)).killed.length > 0 ? 'killed' : gone(...recorded);
    }
    default: {
      // Process group only: the group is signalled while its leader is the recorded process.
      if (isRunningProcess(record.wrapper)) {
        signalGroup(record.pgid, 'SIGKILL');
        return 'killed';
      }
      // Its leader is gone, but what it left in its group may not be (a job a terminal's
      // command started, then exited): those members, one by one. A group id is only reused
      // by a process that takes that pid, so none may run under it; and a member must be in
      // the recorded session and have started no earlier than the leader.
      if (readProcEntry(record.pgid) !== null) return gone(record.wrapper);
      const left = [...readProcTable().values()]
        .filter((entry) => entry.pgid === record.pgid && entry.sid === record.sid && entry.startTime >= record.wrapper.startTime && isRunningEntry(entry))
        .map(({ pid, startTime }) => ({ pid, startTime }));
      return left.length > 0 && (await killTracked(left)).killed.length > 0 ? 'killed' : gone(record.wrapper);
    }
  }
}

/**
 * Records a spawned process: at once, again when its agent pid is known, and whenever its
 * container's handle changes (a /proc-tracked agent's pids, as the scans find them); the
 * caller removes the record once it is gone.
 */
export function recordSpawned(
  records: AgentRecords | null | undefined,
  spawned: { agent: string; command: string; pid: number; contained: Containment | null; terminal?: boolean; remote?: RemoteLeftover },
): RecordFile | null {
  if (!records) return null;
  const { agent, command, pid, contained } = spawned;
  const record = records.create(agent, command, pid, contained?.kind ?? null, spawned.terminal ?? false, spawned.remote);
  if (contained) {
    void contained.agentPid.then((agentPid) => {
      record.update({ agentProcess: { pid: agentPid, startTime: startTimeOf(agentPid) ?? 0 }, handle: contained.handle() });
    });
  }
  const unsubscribe = contained?.onHandleChange?.(() => record.update({ handle: contained.handle() }));
  if (!unsubscribe) return record;
  return {
    update: record.update,
    remove() {
      unsubscribe();
      return record.remove();
    },
  };
}
