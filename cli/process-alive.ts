/** Whether a process runs, for the daemon's pid in `daemon.json`. */
import { readFileSync } from 'node:fs';

/** True while `pid` runs (one of another user counts: it exists); a zombie, where /proc shows one, does not. */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
    return state !== 'Z' && state !== 'X';
  } catch {
    return true; // no /proc (macOS): kill(pid, 0) has answered
  }
}
