/**
 * The file system an agent may touch through `fs/read_text_file` and `fs/write_text_file`:
 * the session's `cwd` and any extra roots, nothing else. A path is checked after every
 * symlink in it is resolved, so `..`, absolute paths elsewhere and links pointing out are
 * all refused the same way — before anything is read or written.
 */
import { constants } from 'node:fs';
import { mkdir, open, readFile, realpath } from 'node:fs/promises';
import { dirname, isAbsolute, relative, resolve, sep, basename, join } from 'node:path';

/** A refused path: outside every root of the sandbox. */
export class SandboxViolation extends Error {
  override readonly name = 'SandboxViolation';
  constructor(
    readonly operation: 'read' | 'write',
    readonly path: string,
    readonly resolvedPath: string,
  ) {
    super(`Access denied: ${path} is outside the session's allowed directories`);
  }
}

export class FsSandbox {
  private readonly roots: string[];
  private resolvedRoots: Promise<string[]> | undefined;

  /** `roots[0]` is the session's cwd; relative paths are resolved against it. */
  constructor(roots: string[]) {
    if (roots.length === 0) throw new Error('FsSandbox needs at least one root');
    this.roots = roots.map((root) => resolve(root));
  }

  /** Reads a text file inside the sandbox; `line` is 1-based, `limit` counts lines. */
  async readTextFile(path: string, options: { line?: number | null; limit?: number | null } = {}): Promise<string> {
    const target = await this.check('read', path, false);
    const content = await readFile(target, 'utf8');
    if (options.line == null && options.limit == null) return content;
    const lines = content.split('\n');
    const start = Math.max(0, (options.line ?? 1) - 1);
    const end = options.limit == null ? lines.length : start + Math.max(0, options.limit);
    return lines.slice(start, end).join('\n');
  }

  /** Writes a text file inside the sandbox, creating missing parent directories there. */
  async writeTextFile(path: string, content: string): Promise<void> {
    const target = await this.check('write', path, true);
    await mkdir(dirname(target), { recursive: true });
    // Check the directory again now that it exists (a link may have been planted on the
    // way), then open by its real path; O_NOFOLLOW refuses a link planted as the file.
    const directory = await this.check('write', dirname(target), false);
    const handle = await open(join(directory, basename(target)), constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW, 0o644);
    try {
      await handle.writeFile(content, 'utf8');
    } finally {
      await handle.close();
    }
  }

  /** The real path of `path` if it lies inside a root; throws SandboxViolation otherwise. */
  async check(operation: 'read' | 'write', path: string, mayNotExist: boolean): Promise<string> {
    // resolve() also normalises: no `..` survives to be cancelled against a missing directory.
    const requested = resolve(this.roots[0]!, path);
    const real = await realpathOfNearestExisting(requested, mayNotExist);
    const roots = await (this.resolvedRoots ??= Promise.all(this.roots.map((root) => realpath(root).catch(() => root))));
    if (!roots.some((root) => isInside(real, root))) throw new SandboxViolation(operation, path, real);
    return real;
  }
}

function isInside(path: string, root: string): boolean {
  const rel = relative(root, path);
  return rel === '' || (!rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel));
}

/**
 * Resolves every symlink of the normalised absolute `path`. For a file that does not exist
 * yet (a write), resolves the nearest existing ancestor and appends the rest: plain names
 * (no `..`, no links, since they do not exist).
 */
async function realpathOfNearestExisting(path: string, mayNotExist: boolean): Promise<string> {
  try {
    return await realpath(path);
  } catch (error) {
    if (!mayNotExist || (error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const missing: string[] = [];
  let current = path;
  for (;;) {
    missing.unshift(basename(current));
    const parent = dirname(current);
    if (parent === current) return path;
    current = parent;
    try {
      return join(await realpath(current), ...missing);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
  }
}
