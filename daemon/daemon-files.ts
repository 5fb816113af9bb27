/**
 * The two files by which the `agentvisor` commands find a running daemon, in its state
 * directory: `daemon.json` (where it listens) and `daemon.token` (its secret), both mode 0600,
 * both removed when it stops.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** What `daemon.json` holds. */
export interface DaemonInfo {
  pid: number;
  host: string;
  port: number;
  url: string;
  startedAt: number;
  version: string;
}

export const daemonInfoFile = (stateDir: string) => join(stateDir, 'daemon.json');
export const daemonTokenFile = (stateDir: string) => join(stateDir, 'daemon.token');

/** A new random token (32 bytes, hex). */
export function newToken(): string {
  return randomBytes(32).toString('hex');
}

/** Writes a file readable by its owner only, atomically (a reader never sees half of it). */
function writePrivate(path: string, content: string): void {
  const temporary = `${path}.${process.pid}.tmp`;
  writeFileSync(temporary, content, { mode: 0o600 });
  renameSync(temporary, path);
}

/** Writes both files (the state directory made first, mode 0700 when new). */
export function writeDaemonFiles(stateDir: string, info: DaemonInfo, token: string): void {
  mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  writePrivate(daemonTokenFile(stateDir), `${token}\n`);
  writePrivate(daemonInfoFile(stateDir), `${JSON.stringify(info, null, 2)}\n`);
}

/** Removes both files, if they are still this process's (a newer daemon's are left alone). */
export function removeDaemonFiles(stateDir: string, pid = process.pid): void {
  const info = readDaemonInfo(stateDir);
  if (info && info.pid !== pid) return;
  rmSync(daemonInfoFile(stateDir), { force: true });
  rmSync(daemonTokenFile(stateDir), { force: true });
}

/** The daemon's info and token, or null when there is none (or the files are unreadable). */
export function readDaemonFiles(stateDir: string): { info: DaemonInfo; token: string } | null {
  const info = readDaemonInfo(stateDir);
  if (!info) return null;
  try {
    const token = readFileSync(daemonTokenFile(stateDir), 'utf8').trim();
    return token ? { info, token } : null;
  } catch {
    return null;
  }
}

function readDaemonInfo(stateDir: string): DaemonInfo | null {
  try {
    const parsed = JSON.parse(readFileSync(daemonInfoFile(stateDir), 'utf8')) as Partial<DaemonInfo>;
    if (typeof parsed.port !== 'number' || typeof parsed.host !== 'string' || typeof parsed.pid !== 'number') return null;
    return parsed as DaemonInfo;
  } catch {
    return null;
  }
}
