/**
 * The Linux process table, read from /proc: one `stat` file per process, parsed into the
 * fields containment needs. A process is identified for good by its pid AND its start time
 * (field 22 of stat, clock ticks since boot): a pid is reused once its process is gone, the
 * pair never is. Fast by design: one readdir of /proc, then one open/read/close per process
 * into a shared buffer (~10 µs a process), or only of the processes new since a previous scan.
 */
import { closeSync, openSync, readdirSync, readFileSync, readlinkSync, readSync } from 'node:fs';

/** One process, as its /proc/<pid>/stat shows it. */
export interface ProcEntry {
  pid: number;
  ppid: number;
  /** Process group id. */
  pgid: number;
  /** Session id. */
  sid: number;
  /** One letter: R running, S sleeping, D disk sleep, T stopped, Z zombie, X dead, I idle... */
  state: string;
  /** Clock ticks since boot when the process started (field 22 of stat). */
  startTime: number;
  /** The command name, as the kernel keeps it (at most 15 bytes; may hold spaces and parentheses). */
  comm: string;
}

/** What identifies one process for good: a pid is reused, a pid with its start time never is. */
export interface ProcessIdentity {
  pid: number;
  startTime: number;
}

/** One process's stat: its entry, and the CPU time it has spent so far. */
export interface ProcStat extends ProcEntry {
  /** User + system CPU time (utime + stime, fields 14 and 15), in clock ticks. */
  cpuTicks: number;
}

/** Every process of a scan, by pid. */
export type ProcTable = Map<number, ProcEntry>;

/** A stat line is well under 1 KiB (comm is at most 64 bytes); one read returns it whole. */
const readBuffer = Buffer.allocUnsafe(4096);

/**
 * Parses one /proc/<pid>/stat line. The command name sits in parentheses and may itself
 * hold spaces and parentheses, so the fields after it start at the LAST ')'. Null when the
 * text is not a stat line.
 */
export function parseStat(text: string): ProcStat | null {
  const open = text.indexOf(' (');
  const close = text.lastIndexOf(')');
  if (open < 1 || close < open) return null;
  // After ") ": field 3 (state) is index 0, so field N is index N - 3.
  const fields = text.slice(close + 2).split(' ', 20);
  if (fields.length < 20) return null;
  const entry: ProcStat = {
    pid: Number(text.slice(0, open)),
    ppid: Number(fields[1]),
    pgid: Number(fields[2]),
    sid: Number(fields[3]),
    state: fields[0]!,
    startTime: Number(fields[19]),
    comm: text.slice(open + 2, close),
    cpuTicks: Number(fields[11]) + Number(fields[12]),
  };
  const numbers = [entry.pid, entry.ppid, entry.pgid, entry.sid, entry.startTime, entry.cpuTicks];
  return numbers.every(Number.isSafeInteger) ? entry : null;
}

/** The process `pid` as /proc shows it now; null when it is gone (or /proc is not there). */
export function readProcEntry(pid: number): ProcEntry | null {
  const text = readProcFile(`/proc/${pid}/stat`);
  return text === null ? null : parseStat(text);
}

/**
 * The pid most recently handed out in this PID namespace (the last field of /proc/loadavg);
 * null when unknown. Pids are allocated cyclically, so while it does not change no process
 * (nor thread) was created.
 */
export function readLastPid(): number | null {
  const last = readProcFile('/proc/loadavg')?.trim().split(' ').at(-1);
  return last === undefined || !/^\d+$/.test(last) ? null : Number(last);
}

/**
 * A small /proc (or cgroup) file in one read (its text is made whole on the first read); one
 * that fills the buffer is read again whole. Null if unreadable.
 */
export function readProcFile(path: string): string | null {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch {
    return null;
  }
  try {
    const length = readSync(fd, readBuffer, 0, readBuffer.length, 0);
    if (length === readBuffer.length) return readFileSync(fd, 'utf8'); // larger: read whole (a positioned read left the offset at 0)
    return readBuffer.toString('utf8', 0, length);
  } catch {
    return null; // ESRCH: the process exited between open and read
  } finally {
    closeSync(fd);
  }
}

/**
 * Every process of the host (of this PID namespace), by pid. Processes that exit while the
 * table is read are left out silently. Throws only when /proc itself cannot be listed.
 *
 * With `previous` (an earlier table), a pid listed in both keeps its earlier entry unread:
 * only the processes that are new since are read, so a scan of a quiet host costs little
 * more than the readdir. The kept entries may be stale (ppid after a reparenting, state, a
 * later setsid) and are taken to be the same processes: true unless the pid was freed and
 * handed out again in between, which takes pid_max further pids (pids are allocated
 * cyclically).
 */
export function readProcTable(previous?: ProcTable): ProcTable {
  const table: ProcTable = new Map();
  for (const name of readdirSync('/proc')) {
    const first = name.charCodeAt(0);
    if (first < 48 || first > 57) continue; // not a pid: self, sys, meminfo...
    const pid = Number(name);
    const entry = previous?.get(pid) ?? readProcEntry(pid);
    if (entry) table.set(pid, entry);
  }
  return table;
}

/** The start time of process `pid` (clock ticks since boot); null when there is no such process. */
export function startTimeOf(pid: number): number | null {
  return readProcEntry(pid)?.startTime ?? null;
}

/**
 * True while `pid` is still the process that started at `startTime`: not gone, not reused.
 * A zombie (exited, not yet reaped) still is that process.
 */
export function isSameProcess(identity: ProcessIdentity): boolean {
  return readProcEntry(identity.pid)?.startTime === identity.startTime;
}

/** True while `entry` runs code: zombies (Z) and dead tasks (X) do not. */
export function isRunningEntry(entry: ProcEntry): boolean {
  return entry.state !== 'Z' && entry.state !== 'X';
}

/** True while the process `identity` names still runs: the same process, and not a zombie. */
export function isRunningProcess(identity: ProcessIdentity): boolean {
  const entry = readProcEntry(identity.pid);
  return entry !== null && entry.startTime === identity.startTime && isRunningEntry(entry);
}

/**
 * What makes a pid and start time name one process: this kernel's boot and this PID
 * namespace (`<boot id>/<pid:[inode]>`). Two hosts, or two containers of one host, may show
 * the same hostname and reuse each other's pids; they never share this. Null where /proc
 * does not say (not Linux).
 */
export function pidDomain(): string | null {
  try {
    return `${readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim()}/${readlinkSync('/proc/self/ns/pid')}`;
  } catch {
    return null;
  }
}
