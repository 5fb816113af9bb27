/**
 * Signals and liveness of whole process groups. Agents are spawned as group leaders
 * (detached), so an agent and every tool it started share one group id = the agent's pid,
 * and one negative-pid kill reaches them all.
 */
import { isRunningEntry, readProcTable } from './containment/proc-table.js';

/** Sends `signal` to every process of group `pgid`. False when the group is already gone. */
export function signalGroup(pgid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw error;
  }
}

/**
 * True while a process of group `pgid` is still running. Zombies do not count: once its
 * leader is gone nobody may reap a killed grandchild quickly, yet it runs no code.
 */
export function groupIsAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== 'ESRCH';
  }
  return process.platform === 'linux' ? groupHasRunningMemberOnLinux(pgid) : true;
}

function groupHasRunningMemberOnLinux(pgid: number): boolean {
  let table;
  try {
    table = readProcTable();
  } catch {
    return true; // /proc unreadable: trust the kill(0) probe above
  }
  for (const entry of table.values()) if (entry.pgid === pgid && isRunningEntry(entry)) return true;
  return false;
}

/** Resolves once no process of group `pgid` runs, polling every `intervalMs`; false on timeout. */
export async function waitForGroupExit(pgid: number, timeoutMs: number, intervalMs = 10): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (groupIsAlive(pgid)) {
    if (Date.now() >= deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
  return true;
}
