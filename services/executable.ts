/**
 * Finding a command the way a spawn would: on PATH unless it has a slash, relative to the
 * working directory. One lookup for the presets (which adapter is installed) and for a
 * contained spawn (a wrapper always starts, so a missing agent must be found missing first).
 */
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, isAbsolute, join, resolve } from 'node:path';

/** Why `command` cannot be executed: 'ENOENT', 'EACCES', or null when it can. */
export function executableProblem(command: string, cwd: string | undefined, path: string): 'ENOENT' | 'EACCES' | null {
  const base = cwd ?? process.cwd();
  const candidates = command.includes('/')
    ? [isAbsolute(command) ? command : resolve(base, command)]
    : path.split(delimiter).filter(Boolean).map((dir) => join(resolve(base, dir), command));
  let problem: 'ENOENT' | 'EACCES' = 'ENOENT';
  for (const candidate of candidates) {
    try {
      if (!statSync(candidate).isFile()) continue;
      accessSync(candidate, constants.X_OK);
      return null;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EACCES') problem = 'EACCES';
    }
  }
  return problem;
}

/** True when `command` is an executable file in one of PATH's directories. */
export function isOnPath(command: string, path = process.env.PATH ?? ''): boolean {
  return executableProblem(command, undefined, path) === null;
}
