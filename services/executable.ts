/**
 * Finding a command the way a spawn would: on PATH unless it has a slash, relative to the
 * working directory. One lookup for the presets (which adapter is installed), for the doctor,
 * and for every local spawn of an agent (a wrapper always starts, and a failed exec should be
 * told as what it is: a missing command, a directory, a file that may not be executed).
 */
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, isAbsolute, join, resolve } from 'node:path';

/**
 * Why a command cannot be run, as its spawn would fail: nothing by that name (`missing`, the
 * spawn's ENOENT), or a path that exists but cannot be executed — a directory, a file without
 * execute permission (or not a regular file), or a path this process may not reach (the
 * spawn's EACCES for all three) — with that path.
 */
export type CommandProblem = { problem: 'missing' } | { problem: 'directory' | 'not_executable' | 'denied'; path: string };

/** Where `command` is found, as a spawn in `cwd` with `path` would find it; else every candidate that exists but cannot run, in order. */
function locate(command: string, cwd: string | undefined, path: string): { found: string } | { unusable: Array<Exclude<CommandProblem, { problem: 'missing' }>> } {
  const base = cwd ?? process.cwd();
  const candidates = command.includes('/')
    ? [isAbsolute(command) ? command : resolve(base, command)]
    : path.split(delimiter).filter(Boolean).map((dir) => join(resolve(base, dir), command));
  const unusable: Array<Exclude<CommandProblem, { problem: 'missing' }>> = [];
  for (const candidate of candidates) {
    let isFile: boolean;
    try {
      const stats = statSync(candidate);
      if (stats.isDirectory()) {
        unusable.push({ problem: 'directory', path: candidate });
        continue;
      }
      isFile = stats.isFile();
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EACCES') unusable.push({ problem: 'denied', path: candidate });
      continue;
    }
    try {
      if (!isFile) throw Object.assign(new Error('not a regular file'), { code: 'EACCES' });
      accessSync(candidate, constants.X_OK);
      return { found: candidate };
    } catch {
      unusable.push({ problem: 'not_executable', path: candidate });
    }
  }
  return { unusable };
}

/**
 * Why `command` cannot be run (from `cwd`, on `path`), or null when it can: the first
 * candidate in PATH order that exists but cannot run is the one named (a spawn goes on to the
 * next PATH entry past a directory or a non-executable file, and fails only when none runs).
 *
 * @example
 * commandProblem('/tmp', undefined, process.env.PATH ?? ''); // { problem: 'directory', path: '/tmp' }
 */
export function commandProblem(command: string, cwd: string | undefined, path: string): CommandProblem | null {
  const where = locate(command, cwd, path);
  if ('found' in where) return null;
  return where.unusable[0] ?? { problem: 'missing' };
}

/** How a spawn failure reads: the path and what is wrong with it ("/opt/agent is a directory"). */
export function describeCommandProblem(command: string, problem: CommandProblem): string {
  switch (problem.problem) {
    case 'missing':
      return `${command}: command not found`;
    case 'directory':
      return `${problem.path} is a directory`;
    case 'not_executable':
      return `${problem.path} is not executable`;
    case 'denied':
      return `${problem.path} cannot be reached: permission denied`;
  }
}

/**
 * Why `command` cannot be executed: 'ENOENT', 'EACCES', or null when it can. A directory on
 * the way counts as not found (as a shell's PATH search skips it); a file that may not be
 * executed, or a path that may not be reached, as EACCES.
 */
export function executableProblem(command: string, cwd: string | undefined, path: string): 'ENOENT' | 'EACCES' | null {
  const where = locate(command, cwd, path);
  if ('found' in where) return null;
  return where.unusable.some((candidate) => candidate.problem !== 'directory') ? 'EACCES' : 'ENOENT';
}

/**
 * The file a spawn of `command` would run (on `path` unless it has a slash, relative to
 * `cwd`), or null when there is none it may execute.
 *
 * @example
 * findExecutable('codex-acp'); // '/usr/local/bin/codex-acp', or null when not installed
 */
export function findExecutable(command: string, cwd?: string, path = process.env.PATH ?? ''): string | null {
  const where = locate(command, cwd, path);
  return 'found' in where ? where.found : null;
}

/** True when `command` is an executable file in one of PATH's directories. */
export function isOnPath(command: string, path = process.env.PATH ?? ''): boolean {
  return executableProblem(command, undefined, path) === null;
}
