/**
 * What an agent's processes cost, read from /proc: the CPU time (utime + stime of
 * /proc/<pid>/stat) and the resident memory (VmRSS of /proc/<pid>/status) of every process of
 * its containment, and which processes those are: the group leader it was spawned as (the
 * containment wrapper, or the agent itself) and, found in one scan of the process table,
 * every descendant and every process in a process group or session one of them leads. A PID
 * namespace's processes are all below its wrapper; a process that left by setsid AND a double
 * fork is below nobody's and is not counted (as in docs/containment.md's proc-tracking).
 */
import { parseStat, readProcFile, type ProcEntry, type ProcTable } from './proc-table.js';
import { ProcessTracker, scanView } from './proc-tracking.containment.js';

/** Clock ticks a second of the times in /proc (USER_HZ: 100 on every Linux architecture). */
export const clockTicksPerSecond = 100;

/** One process's cost at one moment. */
export interface ProcessCost {
  pid: number;
  /** Clock ticks since boot when it started: with the pid, what identifies it for good. */
  startTime: number;
  /** User + system CPU time so far, in clock ticks. */
  cpuTicks: number;
  /** Resident memory, bytes (0 for a zombie or a kernel thread). */
  rssBytes: number;
}

/** VmRSS of a /proc/<pid>/status text, in bytes; 0 when it has none (a zombie, a kernel thread). */
export function parseRssBytes(statusText: string): number {
  const match = /^VmRSS:\s+(\d+)\s+kB$/m.exec(statusText);
  return match ? Number(match[1]) * 1024 : 0;
}

/** The seconds since boot (first field of /proc/uptime); null when unreadable. */
export function readUptimeSeconds(): number | null {
  const text = readProcFile('/proc/uptime');
  const seconds = text === null ? NaN : Number(text.split(' ')[0]);
  return Number.isFinite(seconds) ? seconds : null;
}

/** What process `entry` has cost so far; null when it is gone (or is another process by now). */
export function readProcessCost(entry: Pick<ProcEntry, 'pid' | 'startTime'>): ProcessCost | null {
  const text = readProcFile(`/proc/${entry.pid}/stat`);
  const stat = text === null ? null : parseStat(text);
  const status = readProcFile(`/proc/${entry.pid}/status`);
  if (stat === null || status === null) return null;
  if (stat.startTime !== entry.startTime) return null; // the pid was reused
  return { pid: entry.pid, startTime: entry.startTime, cpuTicks: stat.cpuTicks, rssBytes: parseRssBytes(status) };
}

/**
 * The processes of the agent whose own pid is `agentPid`, in `table`: from its process
 * group's leader (the process it was spawned as; itself when that is gone or is this
 * process's own group), every descendant, and every process whose group or session a member
 * leads and that started no earlier than the leader. Empty when the agent is not in the table.
 */
export function processTreeOf(agentPid: number, table: ProcTable, self: number = process.pid): ProcEntry[] {
  const agent = table.get(agentPid);
  if (!agent) return [];
  const leader = table.get(agent.pgid);
  const ownGroup = table.get(self)?.pgid;
  const root = leader && agent.pgid !== ownGroup && agent.pgid !== 1 && agent.pgid !== self ? leader : agent;
  // The walk of proc-tracking's tracker, in one scan: from the leader, what it has started and what
  // holds a group or session a member leads (never older than the leader, init or the supervisor).
  const tracker = new ProcessTracker(root.pid, root.startTime);
  tracker.update(scanView(table));
  return tracker.identities().flatMap(({ pid }) => table.get(pid) ?? []);
}
