/**
 * What an agent's processes cost, read from /proc: the CPU time (utime + stime of
 * /proc/<pid>/stat) and the resident memory (VmRSS of /proc/<pid>/status) of every process of
 * its containment, and which processes those are: the group leader it was spawned as (the
 * containment wrapper, or the agent itself) and, found in one scan of the process table,
 * every descendant and every process in a process group or session one of them leads. A PID
 * namespace's processes are all below its wrapper; a process that left by setsid AND a double
 * fork is below nobody's and is not counted (as in docs/containment.md's proc-tracking).
 */
import { readFileSync } from 'node:fs';
import { parseStat, type ProcEntry, type ProcTable } from './proc-table.js';
import { scanView } from './proc-tracking.containment.js';

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

/** utime + stime (fields 14 and 15) of a /proc/<pid>/stat line; null when it is not one. */
export function parseCpuTicks(statText: string): number | null {
  const close = statText.lastIndexOf(')');
  if (close < 0) return null;
  // After ") ": field 3 (state) is index 0, so field N is index N - 3.
  const fields = statText.slice(close + 2).split(' ', 13);
  const ticks = Number(fields[11]) + Number(fields[12]);
  return fields.length === 13 && Number.isSafeInteger(ticks) ? ticks : null;
}

/** VmRSS of a /proc/<pid>/status text, in bytes; 0 when it has none (a zombie, a kernel thread). */
export function parseRssBytes(statusText: string): number {
  const match = /^VmRSS:\s+(\d+)\s+kB$/m.exec(statusText);
  return match ? Number(match[1]) * 1024 : 0;
}

/** The seconds since boot (first field of /proc/uptime); null when unreadable. */
export function readUptimeSeconds(): number | null {
  const text = readText('/proc/uptime');
  const seconds = text === null ? NaN : Number(text.split(' ')[0]);
  return Number.isFinite(seconds) ? seconds : null;
}

/** What process `entry` has cost so far; null when it is gone (or is another process by now). */
export function readProcessCost(entry: Pick<ProcEntry, 'pid' | 'startTime'>): ProcessCost | null {
  const stat = readText(`/proc/${entry.pid}/stat`);
  const cpuTicks = stat === null ? null : parseCpuTicks(stat);
  const status = readText(`/proc/${entry.pid}/status`);
  if (cpuTicks === null || status === null) return null;
  if (parseStat(stat!)?.startTime !== entry.startTime) return null; // the pid was reused
  return { pid: entry.pid, startTime: entry.startTime, cpuTicks, rssBytes: parseRssBytes(status) };
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
  // Indexed as the tracker's scan is: by parent, and by group and session id.
  const { children, byGroupOrSession } = scanView(table);
  const members = new Map<number, ProcEntry>([[root.pid, root]]);
  const queue = [root];
  for (let entry = queue.pop(); entry; entry = queue.pop()) {
    const led = (byGroupOrSession.get(entry.pid) ?? []).filter((each) => each.startTime >= root.startTime);
    for (const next of [...(children.get(entry.pid) ?? []), ...led]) {
      if (members.has(next.pid) || next.pid === self || next.pid === 1) continue;
      members.set(next.pid, next);
      queue.push(next);
    }
  }
  return [...members.values()];
}

function readText(path: string): string | null {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return null;
  }
}
