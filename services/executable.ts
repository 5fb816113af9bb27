/**
 * Finding a command the way a spawn would: on PATH unless it has a slash, relative to the
 * working directory. One lookup for the presets (which adapter is installed) and for a
 * contained spawn (a wrapper always starts, so a missing agent must be found missing first).
 */
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, isAbsolute, join, resolve } from 'node:path';

/** Where `command` is found, as a spawn in `cwd` with `path` would find it, or why not. */
function locate(command: string, cwd: string | undefined, path: string): { found: string } | { problem: 'ENOENT' | 'EACCES' } {
  const base = cwd ?? process.cwd();
  const candidates = command.includes('/')
    ? [isAbsolute(command) ? command : resolve(base, command)]
    : path.split(delimiter).filter(Boolean).map((dir) => join(resolve(base, dir), command));
  let problem: 'ENOENT' | 'EACCES' = 'ENOENT';
  for (const candidate of candidates) {
    try {
      if (!statSync(candidate).isFile()) continue;
      accessSync(candidate, constants.X_OK);
      return { found: candidate };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EACCES') problem = 'EACCES';
    }
  }
  return { problem };
}

/** Why `command` cannot be executed: 'ENOENT', 'EACCES', or null when it can. */
export function executableProblem(command: string, cwd: string | undefined, path: string): 'ENOENT' | 'EACCES' | null {
  const where = locate(command, cwd, path);
  return 'found' in where ? null : where.problem;
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
