/**
 * The two files by which the `agentvisor` commands find a running daemon, in its state
 * directory: `daemon.json` (where it listens) and `daemon.token` (its secret), both mode 0600,
 * both removed when it stops. And the registry of running daemons, by which a command that is
 * told no state directory finds one started for another (docs/cli.md, "Finding the daemon"):
 * one small file per daemon in `<toolStateDir>/daemons/`, written with the two files and
 * removed with them; an entry whose process is gone is ignored (and removed by its reader).
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';

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

/** Writes both files (the state directory made first, mode 0700 when new), and the daemon's registry entry. */
export function writeDaemonFiles(stateDir: string, info: DaemonInfo, token: string): void {
  mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  writePrivate(daemonTokenFile(stateDir), `${token}\n`);
  writePrivate(daemonInfoFile(stateDir), `${JSON.stringify(info, null, 2)}\n`);
  registerDaemon(stateDir, info);
}

/** Removes both files, if they are still this process's (a newer daemon's are left alone), and its registry entry. */
export function removeDaemonFiles(stateDir: string, pid = process.pid): void {
  rmSync(registryEntryFile(stateDir, pid), { force: true });
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

/** A running daemon as the registry tells it: where its state, files and config are. */
export interface DaemonRegistryEntry {
  pid: number;
  stateDir: string;
  url: string;
  /** Its `daemon.json` and `daemon.token`. */
  infoFile: string;
  tokenFile: string;
  /** The config file it was started with (null: none, or a daemon started by a program). */
  configPath: string | null;
  /** The directory it was started in. */
  cwd: string;
  startedAt: number;
  version: string;
}

/**
 * The registry's folder: `<toolStateDir>/daemons`, where toolStateDir is the library's
 * `toolStateDir()` (`$XDG_STATE_HOME/agentvisor`, else `~/.local/state/agentvisor`), computed
 * here so that the CLI finds daemons without loading the library (tests/unit/cli-daemon-registry.test.ts
 * checks that the two agree).
 */
export function daemonRegistryDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(env.XDG_STATE_HOME || join(homedir(), '.local', 'state'), 'agentvisor', 'daemons');
}

/** One file per daemon: its pid and its state directory (one process may serve several). */
function registryEntryFile(stateDir: string, pid: number): string {
  return join(daemonRegistryDir(), `${pid}-${createHash('sha256').update(resolve(stateDir)).digest('hex').slice(0, 12)}.json`);
}

let configOfThisProcess: string | null = null;

/** The config file this process loaded (the CLI's `serve` says so), recorded in its registry entry. */
export function noteDaemonConfig(path: string | null): void {
  configOfThisProcess = path;
}

/** Writes this daemon's registry entry; the registry failing never stops a daemon (it is found by --state-dir still). */
function registerDaemon(stateDir: string, info: DaemonInfo): void {
  const entry: DaemonRegistryEntry = {
    pid: info.pid,
    stateDir: resolve(stateDir),
    url: info.url,
    infoFile: daemonInfoFile(resolve(stateDir)),
    tokenFile: daemonTokenFile(resolve(stateDir)),
    configPath: configOfThisProcess,
    cwd: process.cwd(),
    startedAt: info.startedAt,
    version: info.version,
  };
  try {
    mkdirSync(daemonRegistryDir(), { recursive: true, mode: 0o700 });
    writePrivate(registryEntryFile(stateDir, info.pid), `${JSON.stringify(entry, null, 2)}\n`);
  } catch {
    // A read-only home, say: this daemon is found through its state directory only.
  }
}

/**
 * The daemons that run now, oldest first: the registry's entries whose process is alive and
 * whose state directory's `daemon.json` still names it. Any other entry (a daemon killed
 * before it could remove it) is removed.
 */
export function runningDaemons(env: NodeJS.ProcessEnv = process.env): DaemonRegistryEntry[] {
  const dir = daemonRegistryDir(env);
  let names: string[];
  try {
    names = readdirSync(dir).filter((name) => name.endsWith('.json'));
  } catch {
    return [];
  }
  const running: DaemonRegistryEntry[] = [];
  for (const name of names) {
    const file = join(dir, name);
    let entry: Partial<DaemonRegistryEntry>;
    try {
      entry = JSON.parse(readFileSync(file, 'utf8')) as Partial<DaemonRegistryEntry>;
    } catch {
      continue; // being written, or not ours to judge
    }
    const live = typeof entry.pid === 'number' && typeof entry.stateDir === 'string' && processAlive(entry.pid) && readDaemonInfo(entry.stateDir)?.pid === entry.pid;
    if (live) running.push(entry as DaemonRegistryEntry);
    else rmSync(file, { force: true });
  }
  return running.sort((a, b) => a.startedAt - b.startedAt);
}

/** Whether `pid` runs (EPERM: it does, as another user). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
