/**
 * Where state lives when nobody says (docs/store.md, "Whose state"). The agentvisor CLI and
 * daemon share one directory, `$XDG_STATE_HOME/agentvisor` (else `~/.local/state/agentvisor`):
 * `toolStateDir()`. A program that embeds the library and gives no `stateDir` gets its own,
 * under it: `programs/<name>-<hash>` (`defaultStateDir()`), so that two programs never list,
 * resume or sweep each other's sessions and processes, and the daemon never shows them.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, dirname, extname, join } from 'node:path';

/** The agentvisor CLI's and daemon's own state directory. */
export function toolStateDir(): string {
  return join(process.env.XDG_STATE_HOME || join(homedir(), '.local', 'state'), 'agentvisor');
}

/**
 * This program's default state directory: `<toolStateDir>/programs/<name>-<hash>`. The
 * program is its main script (`process.argv[1]`, its real path): the name is that of the
 * nearest package.json above it, else the script's own; the hash is of the script's real
 * path, so two checkouts of one program stay apart too. A process with no main script
 * (`node -e`, a REPL) is named `node`, hashed by its working directory.
 */
export function defaultStateDir(): string {
  return join(toolStateDir(), 'programs', programKey());
}

function programKey(): string {
  const script = mainScript();
  if (script === null) return `node-${shortHash(process.cwd())}`;
  return `${safeName(packageName(dirname(script)) ?? basename(script, extname(script)))}-${shortHash(script)}`;
}

function mainScript(): string | null {
  const given = process.argv[1];
  if (!given) return null;
  try {
    return realpathSync(given);
  } catch {
    return null;
  }
}

/** The `name` of the nearest package.json at or above `dir`. */
function packageName(dir: string): string | null {
  for (let current = dir; ; current = dirname(current)) {
    const file = join(current, 'package.json');
    if (existsSync(file)) {
      try {
        const name = (JSON.parse(readFileSync(file, 'utf8')) as { name?: unknown }).name;
        if (typeof name === 'string' && name !== '') return name;
      } catch {
        // An unreadable package.json names nothing; look further up.
      }
    }
    if (dirname(current) === current) return null;
  }
}

/** A name fit for one path segment: `@acme/tool` → `acme-tool`. */
function safeName(name: string): string {
  const cleaned = name.replace(/[^A-Za-z0-9._-]+/g, '-').replace(/^[-.]+|[-.]+$/g, '').slice(0, 48);
  return cleaned || 'program';
}

const shortHash = (text: string) => createHash('sha256').update(text).digest('hex').slice(0, 8);
