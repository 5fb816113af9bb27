/**
 * Is anything left behind? Liveness checks that treat zombies as dead, and a scan of this
 * process's own children (other engineers' test agents on the same machine are not ours).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { sleep } from './stats.js';

/**
 * True while `pid` runs (a zombie counts as dead). A process whose main thread has exited
 * still runs while another of its threads does: the kernel shows its main thread as a
 * zombie until the last thread is gone (seen with Claude Code, whose last thread outlives
 * its main one by ~20 ms after a SIGTERM).
 */
export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  const state = procStat(pid)?.state;
  if (state === undefined) return false;
  return isLive(state) || hasLiveThread(pid);
}

const isLive = (state: string) => state !== 'Z' && state !== 'X';

/** Whether any thread of `pid` has not exited yet. */
function hasLiveThread(pid: number): boolean {
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return false;
  }
  return tasks.some((task) => {
    const state = procStat(pid, task)?.state;
    return state !== undefined && isLive(state);
  });
}

/** A process's /proc stat fields, or one of its threads' (`task`). */
function procStat(pid: number, task?: string): { state: string; ppid: number; pgrp: number } | undefined {
  try {
    const stat = readFileSync(task === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${task}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { state: fields[0]!, ppid: Number(fields[1]), pgrp: Number(fields[2]) };
  } catch {
    return undefined;
  }
}

/** Every process below `pid` now (children, their children, …), from /proc's parent links. */
export function descendantsOf(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const ppid = procStat(Number(entry))?.ppid;
    if (ppid !== undefined) children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
  }
  const found: number[] = [];
  const queue = [pid];
  while (queue.length > 0) {
    for (const child of children.get(queue.shift()!) ?? []) {
      found.push(child);
      queue.push(child);
    }
  }
  return found;
}

/**
 * Live (non-zombie) processes whose command line mentions one of `scripts` and that are
 * ours: a child of this process, or in the process group of a pid we spawned.
 */
export function leftoverAgents(scripts: readonly string[], spawnedPids: Iterable<number> = []): number[] {
  const groups = new Set(spawnedPids);
  const found: number[] = [];
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return [...groups].filter(isRunning);
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    if (pid === process.pid) continue;
    const stat = procStat(pid);
    if (!stat || stat.state === 'Z' || stat.state === 'X') continue;
    if (stat.ppid !== process.pid && !groups.has(stat.pgrp) && !groups.has(pid)) continue;
    let cmdline: string;
    try {
      cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    } catch {
      continue;
    }
    if (scripts.some((script) => cmdline.includes(script))) found.push(pid);
  }
  return found;
}

/** Waits (polling every `pollMs`) until none of `pids` runs; returns the ones still running at the deadline. */
export async function waitUntilGone(pids: Iterable<number>, timeoutMs = 5000, pollMs = 10): Promise<number[]> {
  const deadline = Date.now() + timeoutMs;
  let alive = [...pids].filter(isRunning);
  while (alive.length > 0 && Date.now() < deadline) {
    await sleep(pollMs);
    alive = alive.filter(isRunning);
  }
  return alive;
}

/** SIGKILLs the process groups of `pids` (a benchmark's last-resort cleanup). */
export function killGroups(pids: Iterable<number>): void {
  for (const pid of pids) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

/** Reads a fixture `--pid-file`: the agent pid of every start, in order. */
export function readPidFile(path: string): number[] {
  try {
    return readFileSync(path, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => Number(line.split(' ')[0]));
  } catch {
    return [];
  }
}

/** CPU time (user + system, ms) a process has used so far, from /proc; NaN if unreadable. */
export function processCpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // Fields 14 and 15 of stat (utime, stime) are at 11 and 12 after the command; ticks of 1/100 s.
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return Number.NaN;
  }
}

/** CPU time (user + system, ms) this process has used so far. */
export function ownCpuMs(): number {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1000;
}
