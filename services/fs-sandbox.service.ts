/**
 * The file system an agent may touch through `fs/read_text_file` and `fs/write_text_file`:
 * the session's `cwd` and any extra roots, nothing else (docs/sandbox.md).
 *
 * The sandbox decides on what it opened, never on a name it checked earlier:
 * - The roots are resolved once, when the sandbox is built (the session opens): their real
 *   path and device+inode are kept, and every request reopens the real path and compares.
 * - A requested path is normalised and checked lexically against the roots first, so a path
 *   outside gets the same answer whether or not it exists.
 * - Then it is walked from the root's descriptor one name at a time, each opened with
 *   `O_NOFOLLOW` relative to the directory opened before it (`/proc/self/fd/<dir>/<name>`,
 *   Linux's `openat`), so the kernel never follows a symlink by itself. A symlink met on the
 *   way is read and its target walked again from the top, checked like a requested path.
 * - The opened descriptor is verified (`/proc/self/fd/<fd>` must lie inside a root), then
 *   fstat'ed: only regular files with one link are read or written. Writes create parents
 *   one level at a time in verified directories, open the file without `O_TRUNC`, verify,
 *   then truncate and write through the descriptor.
 * - Reads are streamed: `line`/`limit` stop reading once the lines are collected, and an
 *   answer beyond `maxReadBytes` is refused. Every request has a `timeoutMs` deadline.
 */
import { constants, existsSync, type BigIntStats, type Stats } from 'node:fs';
import { lstat, mkdir, open, readlink, realpath, stat, type FileHandle } from 'node:fs/promises';
import { isAbsolute, join, relative, resolve, sep } from 'node:path';

/** Whether descriptors can be verified through /proc (Linux): read once, at load. */
const procFdAvailable = process.platform === 'linux' && existsSync('/proc/self/fd');

/** The default most bytes one `fs/read_text_file` answers with: 10 MiB. */
export const defaultMaxReadBytes = 10 * 1024 * 1024;
/** The default deadline of one fs request: 30 s. */
export const defaultFsTimeoutMs = 30_000;

export interface FsSandboxOptions {
  /** Most bytes of content one read may answer with (default 10 MiB); a bigger answer is refused, never truncated. */
  maxReadBytes?: number;
  /** Deadline of one fs request in ms (default 30 s); a request past it is answered with {@link FsRequestTimeout}. */
  timeoutMs?: number;
  /**
   * Walk and verify through `/proc/self/fd` (default: on Linux when `/proc/self/fd` exists).
   * `false` uses the portable walk by path names, which has a race window (docs/sandbox.md).
   */
  procFd?: boolean;
}

/** Why a request was refused. */
export type SandboxRefusal =
  /** The path, or a symlink on the way, leads outside every root. */
  | 'outside'
  /** The path is not a usable path (a NUL byte). */
  | 'invalid_path'
  /** A FIFO, socket or device: only regular files are read or written. */
  | 'not_regular'
  /** A regular file with more than one hard link: another name of it may lie outside. */
  | 'hardlink'
  /** A root is no longer the directory it was when the session opened (or never resolved). */
  | 'root_changed'
  /** The answer would exceed the read limit. */
  | 'too_large';

/** A refused request: outside every root of the sandbox, or a file the sandbox never serves. */
export class SandboxViolation extends Error {
  override readonly name = 'SandboxViolation';
  constructor(
    readonly operation: 'read' | 'write',
    readonly path: string,
    readonly resolvedPath: string,
    readonly reason: SandboxRefusal = 'outside',
    message = `Access denied: ${path} is outside the session's allowed directories`,
  ) {
    super(message);
  }
}

/**
 * An fs request that failed for an ordinary reason inside the sandbox (a missing file, a
 * directory): `code` is the errno name, and the message names only the requested path.
 */
export class FsRequestError extends Error {
  override readonly name: string = 'FsRequestError';
  constructor(
    readonly code: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** An fs request that did not finish within the sandbox's `timeoutMs`; it was stopped. */
export class FsRequestTimeout extends FsRequestError {
  override readonly name = 'FsRequestTimeout';
  constructor(
    readonly operation: 'read' | 'write',
    readonly path: string,
    readonly timeoutMs: number,
  ) {
    super('ETIMEDOUT', `fs/${operation === 'read' ? 'read_text_file' : 'write_text_file'} of ${path} did not finish within ${timeoutMs} ms and was stopped`);
  }
}

interface Root {
  /** As given, absolute and normalised: a lexical prefix of requested paths, never followed again. */
  given: string;
  /** Its real path when the sandbox was built. */
  real: string;
  /** Its device and inode then; undefined when it could not be resolved (`unavailable` says why). */
  identity: { dev: bigint; ino: bigint } | undefined;
  unavailable?: string;
}

interface Request {
  operation: 'read' | 'write';
  /** As the agent asked, for messages. */
  path: string;
  signal: AbortSignal;
}

/** A directory opened for a command to run in (`FsSandbox.openWorkingDirectory`). */
export interface OpenedDirectory {
  /** What to give as the command's cwd: `/proc/self/fd/<fd>` on Linux. */
  path: string;
  /** Its real path, as verified inside a root. */
  real: string;
  close(): Promise<void>;
}

type Intent = 'read' | 'write' | 'open-directory';

/** An open directory and the real path it was reached by. */
interface Dir {
  handle: FileHandle;
  path: string;
}

/** The end of one pass from a root down. */
type Pass =
  /** The last name, opened and verified. */
  | { kind: 'opened'; handle: FileHandle; real: string }
  /** A symlink: the walk goes on at this target, from the top. */
  | { kind: 'link'; target: string }
  /** Something changed under the walk: start the pass again. */
  | { kind: 'again' };

const { O_RDONLY, O_WRONLY, O_CREAT, O_DIRECTORY, O_NOFOLLOW, O_NONBLOCK, O_NOCTTY } = constants;
/** Every open: never follow the last name, never block (a FIFO), never adopt a terminal. libuv adds O_CLOEXEC itself. */
const OPEN_COMMON = O_NOFOLLOW | O_NONBLOCK | O_NOCTTY;
const OPEN_DIRECTORY = O_RDONLY | O_DIRECTORY | OPEN_COMMON;
const OPEN_READ = O_RDONLY | OPEN_COMMON;
const OPEN_WRITE = O_WRONLY | O_CREAT | OPEN_COMMON;
/** Symlinks followed (and races retried) in one request before it fails with ELOOP, as the kernel's own limit. */
const MAX_HOPS = 40;
const READ_CHUNK = 128 * 1024;
const WRITE_CHUNK = 1024 * 1024;
const NEWLINE = 0x0a;

export class FsSandbox {
  private readonly roots: Root[];
  private readonly maxReadBytes: number;
  private readonly timeoutMs: number;
  private readonly procFd: boolean;

  /** Built by {@link FsSandbox.open}, from roots resolved once. */
  private constructor(roots: Root[], procFd: boolean, options: FsSandboxOptions) {
    this.procFd = procFd;
    this.roots = roots;
    this.maxReadBytes = options.maxReadBytes ?? defaultMaxReadBytes;
    this.timeoutMs = options.timeoutMs ?? defaultFsTimeoutMs;
    if (!(this.maxReadBytes >= 0)) throw new RangeError(`FsSandbox: maxReadBytes must be a number >= 0, not ${this.maxReadBytes}`);
    // setTimeout's own range: a longer delay would fire at once.
    if (!(this.timeoutMs > 0 && this.timeoutMs <= 2 ** 31 - 1)) throw new RangeError(`FsSandbox: timeoutMs must be in 1..${2 ** 31 - 1}, not ${this.timeoutMs}`);
  }

  /**
   * The sandbox of `roots`: `roots[0]` is the session's cwd, and relative paths are resolved
   * against it. The roots are resolved here, once — open the sandbox when the session opens —
   * and off the event loop, so a session opening on a slow disk does not stall the others.
   */
  static async open(roots: string[], options: FsSandboxOptions = {}): Promise<FsSandbox> {
    if (roots.length === 0) throw new Error('FsSandbox needs at least one root');
    const procFd = options.procFd ?? procFdAvailable;
    return new FsSandbox(await Promise.all(roots.map((root) => resolveRoot(root, procFd))), procFd, options);
  }

  /** Opens `request`'s file and checks what was opened (a regular file, one link, inside a root); closes it on refusal. */
  private async openServable(request: Request, mode: 'read' | 'write') {
    const opened = await this.openFile(request, mode);
    try {
      const stats = await opened.handle.stat({ bigint: true });
      request.signal.throwIfAborted();
      this.assertServable(request, opened.real, stats);
      return { handle: opened.handle, stats };
    } catch (error) {
      await opened.handle.close();
      throw error;
    }
  }

  /**
   * Reads a text file inside the sandbox; `line` is 1-based, `limit` counts lines. Reads
   * stop once the lines are collected; an answer beyond `maxReadBytes` is refused.
   */
  async readTextFile(path: string, options: { line?: number | null; limit?: number | null } = {}): Promise<string> {
    return this.withDeadline('read', path, async (request) => {
      const { handle, stats } = await this.openServable(request, 'read');
      try {
        return await this.readWindow(request, handle, stats.size, options);
      } finally {
        await handle.close();
      }
    });
  }

  /** Writes a text file inside the sandbox, creating missing parent directories there. */
  async writeTextFile(path: string, content: string): Promise<void> {
    return this.withDeadline('write', path, async (request) => {
      const { handle } = await this.openServable(request, 'write');
      try {
        await handle.truncate(0);
        const data = Buffer.from(content, 'utf8');
        for (let offset = 0; offset < data.length; ) {
          request.signal.throwIfAborted();
          const { bytesWritten } = await handle.write(data, offset, Math.min(WRITE_CHUNK, data.length - offset), offset);
          offset += bytesWritten;
        }
      } finally {
        await handle.close();
      }
    });
  }

  /**
   * The directory `path` names, opened and verified inside a root, for a terminal to run in:
   * `path` of the answer is `/proc/self/fd/<fd>`, which a child's chdir follows to the very
   * directory that was opened — no name is resolved a second time, so a path swapped after
   * this check cannot move the command elsewhere. `close()` it once the command was spawned.
   * Without /proc (not Linux) the answer is the checked real path, followed again by chdir.
   */
  async openWorkingDirectory(operation: 'read' | 'write', path: string): Promise<OpenedDirectory> {
    return this.withDeadline(operation, path, async (request) => {
      const { handle, real } = await this.walk(request, 'open-directory');
      try {
        if (!(await handle.stat()).isDirectory()) throw fsError('ENOTDIR', `not a directory`, request);
        // The deadline passed meanwhile: nobody takes this descriptor.
        request.signal.throwIfAborted();
      } catch (error) {
        await handle.close();
        throw error;
      }
      return { path: this.procFd ? `/proc/self/fd/${handle.fd}` : real, real, close: () => handle.close() };
    });
  }

  /** Runs one request with the deadline: answered at once when it passes, and stopped at its next step. */
  private async withDeadline<T>(operation: 'read' | 'write', path: string, work: (request: Request) => Promise<T>): Promise<T> {
    if (typeof path !== 'string' || path.includes('\0')) {
      throw new SandboxViolation(operation, String(path), String(path), 'invalid_path', `Access denied: ${JSON.stringify(path)} is not a valid path`);
    }
    const controller = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const timeout = new FsRequestTimeout(operation, path, this.timeoutMs);
        controller.abort(timeout);
        reject(timeout);
      }, this.timeoutMs);
    });
    const request = { operation, path, signal: controller.signal };
    // Whatever failed on the way is answered in terms of the requested path.
    const running = work(request).catch((error: unknown) => {
      if (error instanceof SandboxViolation || error instanceof FsRequestError || typeof (error as NodeJS.ErrnoException | null)?.code !== 'string') throw error;
      throw fsError(errorCode(error), error, request);
    });
    try {
      return await Promise.race([running, deadline]);
    } finally {
      clearTimeout(timer);
      running.catch(() => {});
    }
  }

  /** The regular file `request.path` names, opened and verified inside a root. */
  private openFile(request: Request, intent: 'read' | 'write'): Promise<{ handle: FileHandle; real: string }> {
    return this.walk(request, intent);
  }

  /** Resolves `request.path` pass by pass (one per symlink met) to an opened, verified descriptor. */
  private async walk(request: Request, intent: Intent): Promise<{ handle: FileHandle; real: string }> {
    let target = resolve(this.roots[0]!.given, request.path);
    for (let hops = 0; hops <= MAX_HOPS; hops++) {
      request.signal.throwIfAborted();
      const { root, names } = this.locate(request, target);
      const pass = await this.pass(request, intent, root, names);
      if (pass.kind === 'opened') return { handle: pass.handle, real: pass.real };
      if (pass.kind === 'link') target = pass.target;
    }
    throw fsError('ELOOP', 'too many symbolic links encountered (or the path kept changing)', request);
  }

  /**
   * The root a normalised absolute path lies in, lexically, and the names below it. Nothing
   * is touched yet: a path outside is refused before its existence can show.
   */
  private locate(request: Request, target: string): { root: Root; names: string[] } {
    let unavailable: Root | undefined;
    for (const root of this.roots) {
      for (const base of root.real === root.given ? [root.given] : [root.given, root.real]) {
        if (!isInside(target, base)) continue;
        if (root.identity === undefined) {
          unavailable ??= root;
          continue;
        }
        return { root, names: relative(base, target).split(sep).filter((name) => name !== '') };
      }
    }
    if (unavailable) {
      throw new SandboxViolation(
        request.operation,
        request.path,
        target,
        'root_changed',
        `Access denied: the session's directory ${unavailable.given} could not be resolved when the session opened (${unavailable.unavailable ?? 'unknown'})`,
      );
    }
    throw new SandboxViolation(request.operation, request.path, target);
  }

  /** Opens the root by its real path and checks it is still the same directory. */
  private async openRoot(request: Request, root: Root): Promise<Dir> {
    const changed = () =>
      new SandboxViolation(request.operation, request.path, root.real, 'root_changed', `Access denied: the session's directory ${root.given} was replaced after the session opened`);
    let handle: FileHandle;
    try {
      handle = await open(root.real, OPEN_DIRECTORY);
    } catch (error) {
      // Gone, or no longer a directory (ELOOP/ENOTDIR: a symlink in its place).
      if (['ENOENT', 'ENOTDIR', 'ELOOP'].includes(errorCode(error))) throw changed();
      throw fsError(errorCode(error), error, request);
    }
    try {
      const stats = await handle.stat({ bigint: true });
      if (stats.dev !== root.identity!.dev || stats.ino !== root.identity!.ino) throw changed();
      request.signal.throwIfAborted();
    } catch (error) {
      await handle.close();
      throw error;
    }
    return { handle, path: root.real };
  }

  /** One walk from `root` down `names`, never letting the kernel follow a symlink. */
  private async pass(request: Request, intent: Intent, root: Root, names: string[]): Promise<Pass> {
    let dir = await this.openRoot(request, root);
    try {
      if (names.length === 0) {
        // The root itself, as a descriptor of its own ('.' under the root's: the same directory).
        if (intent === 'open-directory') {
          const handle = await open(this.at(dir, '.'), OPEN_DIRECTORY);
          try {
            return { kind: 'opened', handle, real: await this.verifiedPath(request, dir.handle, dir.path) };
          } catch (error) {
            await handle.close();
            throw error;
          }
        }
        throw fsError('EISDIR', 'illegal operation on a directory', request);
      }
      for (let index = 0; index < names.length - 1; index++) {
        const name = names[index]!;
        const rest = names.slice(index + 1);
        const next = await this.openDirectory(request, intent, dir, name, rest);
        if (!('handle' in next)) return next;
        const previous = dir;
        dir = next;
        await previous.handle.close();
      }
      return await this.openLast(request, intent, dir, names[names.length - 1]!);
    } finally {
      await dir.handle.close();
    }
  }

  /** The directory `name` in `dir`, created when a write needs it; or why the pass ends there. */
  private async openDirectory(request: Request, intent: Intent, dir: Dir, name: string, rest: string[]): Promise<Dir | Exclude<Pass, { kind: 'opened' }>> {
    for (let attempt = 0; ; attempt++) {
      request.signal.throwIfAborted();
      try {
        const handle = await open(this.at(dir, name), OPEN_DIRECTORY);
        return { handle, path: join(dir.path, name) };
      } catch (error) {
        const code = errorCode(error);
        if (code === 'ENOTDIR' || code === 'ELOOP') return this.linkOrFail(request, dir, name, rest, code, error);
        if (code !== 'ENOENT') throw fsError(code, error, request);
        if (intent !== 'write' || attempt > 0) throw fsError(code, error, request);
      }
      // Create one level, in a directory verified inside the root, then open it like any other.
      await this.verifiedPath(request, dir.handle, dir.path);
      try {
        await mkdir(this.at(dir, name), 0o777);
      } catch (error) {
        if (errorCode(error) !== 'EEXIST') throw fsError(errorCode(error), error, request);
      }
    }
  }

  /** Opens the last name for the intent and verifies the descriptor. */
  private async openLast(request: Request, intent: Intent, dir: Dir, name: string): Promise<Pass> {
    // A FIFO, socket or device is refused without being opened at all (opening some devices
    // has effects); one swapped in after this look is opened non-blocking and refused by fstat.
    let seen;
    try {
      seen = await lstat(this.at(dir, name));
    } catch {
      seen = undefined; // missing: the open below answers (or creates it)
    }
    if (seen?.isSymbolicLink()) return this.linkOrFail(request, dir, name, [], 'ELOOP', undefined);
    if (seen && !seen.isFile() && !seen.isDirectory()) throw notRegular(request, join(dir.path, name), describeType(seen));
    // Nothing is ever created in a directory that is not verified inside a root first.
    if (intent === 'write') await this.verifiedPath(request, dir.handle, dir.path);
    let handle: FileHandle;
    try {
      handle = intent === 'write' ? await open(this.at(dir, name), OPEN_WRITE, 0o644) : await open(this.at(dir, name), OPEN_READ);
    } catch (error) {
      const code = errorCode(error);
      if (code === 'ELOOP') return this.linkOrFail(request, dir, name, [], code, error);
      // ENXIO: a socket, or a FIFO without a reader opened for writing.
      if (code === 'ENXIO') throw notRegular(request, join(dir.path, name), 'a socket or a FIFO');
      throw fsError(code, error, request);
    }
    try {
      const real = await this.verifiedPath(request, handle, join(dir.path, name));
      return { kind: 'opened', handle, real };
    } catch (error) {
      await handle.close();
      throw error;
    }
  }

  /**
   * After ELOOP/ENOTDIR on `name`: a symlink continues the walk at its target (checked from
   * the top like a requested path); anything else is the error it was. An entry that changed
   * meanwhile makes the pass start again.
   */
  private async linkOrFail(request: Request, dir: Dir, name: string, rest: string[], code: string, error: unknown): Promise<Exclude<Pass, { kind: 'opened' }>> {
    let stats;
    try {
      stats = await lstat(this.at(dir, name));
    } catch {
      return { kind: 'again' };
    }
    if (!stats.isSymbolicLink()) {
      if (code === 'ENOTDIR' && !stats.isDirectory()) throw fsError(code, error, request);
      return { kind: 'again' };
    }
    let link: string;
    try {
      link = await readlink(this.at(dir, name));
    } catch {
      return { kind: 'again' };
    }
    const base = this.procFd ? await readlink(fdPath(dir.handle)) : dir.path;
    return { kind: 'link', target: resolve(base, link, ...rest) };
  }

  /** Where `name` in the open directory `dir` is: relative to the descriptor on Linux, by name elsewhere. */
  private at(dir: Dir, name: string): string {
    return this.procFd ? `${fdPath(dir.handle)}/${name}` : join(dir.path, name);
  }

  /** The real path of an open descriptor, which must lie inside a root. */
  private async verifiedPath(request: Request, handle: FileHandle, walked: string): Promise<string> {
    let real: string;
    if (this.procFd) {
      real = await readlink(fdPath(handle));
    } else {
      // Portable fallback: the walked name, resolved, must still name the opened file.
      try {
        real = await realpath(walked);
        const [opened, named] = await Promise.all([handle.stat({ bigint: true }), stat(real, { bigint: true })]);
        if (opened.dev !== named.dev || opened.ino !== named.ino) real = '';
      } catch {
        real = '';
      }
    }
    request.signal.throwIfAborted();
    if (real === '' || !this.roots.some((root) => root.identity !== undefined && isInside(real, root.real))) {
      throw new SandboxViolation(request.operation, request.path, real || walked);
    }
    return real;
  }

  /** Only regular files with one link are read or written; a directory is an error, the rest refusals. */
  private assertServable(request: Request, real: string, stats: BigIntStats): void {
    if (stats.isDirectory()) throw fsError('EISDIR', 'illegal operation on a directory', request);
    if (!stats.isFile()) throw notRegular(request, real, describeType(stats));
    if (stats.nlink > 1n) {
      throw new SandboxViolation(
        request.operation,
        request.path,
        real,
        'hardlink',
        `Access denied: ${request.path} has ${stats.nlink} hard links; fs/* refuses hard-linked files, since another name of the same file may lie outside the session's allowed directories`,
      );
    }
  }

  /**
   * Lines `[line - 1, line - 1 + limit)` of the `\n`-separated pieces, joined again by `\n`
   * (the whole file without either). Reads in chunks and stops once the window is complete.
   */
  private async readWindow(request: Request, handle: FileHandle, size: bigint, options: { line?: number | null; limit?: number | null }): Promise<string> {
    const tooLarge = () =>
      new SandboxViolation(
        request.operation,
        request.path,
        request.path,
        'too_large',
        `Refused: reading ${request.path} would answer more than ${this.maxReadBytes} bytes (the read limit); read it in parts with line and limit`,
      );
    const whole = options.line == null && options.limit == null;
    if (whole && size > BigInt(this.maxReadBytes)) throw tooLarge();
    const start = options.line == null ? 0 : Math.max(0, Math.trunc(options.line) - 1);
    const end = options.limit == null ? Infinity : start + Math.max(0, Math.trunc(options.limit));
    if (end <= start) return '';
    // The window is one contiguous run of bytes of the file: at most one copy per chunk.
    const kept: Buffer[] = [];
    let keptBytes = 0;
    /** The index of the line the next byte belongs to. */
    let piece = 0;
    const buffer = Buffer.allocUnsafe(READ_CHUNK);
    for (let done = false; !done; ) {
      const { bytesRead } = await handle.read(buffer, 0, READ_CHUNK, null);
      request.signal.throwIfAborted();
      if (bytesRead === 0) break;
      const chunk = buffer.subarray(0, bytesRead);
      let from = 0;
      while (piece < start && from < bytesRead) {
        const newline = chunk.indexOf(NEWLINE, from);
        if (newline === -1) from = bytesRead;
        else {
          piece++;
          from = newline + 1;
        }
      }
      if (piece < start) continue; // still before the window: nothing of this chunk is kept
      let to = bytesRead;
      for (let at = from; end !== Infinity; ) {
        const newline = chunk.indexOf(NEWLINE, at);
        if (newline === -1) break;
        if (piece + 1 >= end) {
          to = newline; // the last selected line ends here, without its newline
          done = true;
          break;
        }
        piece++;
        at = newline + 1;
      }
      if (to === from) continue;
      keptBytes += to - from;
      if (keptBytes > this.maxReadBytes) throw tooLarge();
      kept.push(Buffer.from(chunk.subarray(from, to)));
    }
    return Buffer.concat(kept).toString('utf8');
  }
}

/** A root that could not be resolved, and why: its requests are refused (`root_changed`). */
function unavailableRoot(given: string, error: unknown): Root {
  const code = errorCode(error);
  const why = code === 'ENOENT' ? 'it did not exist' : code === 'ENOTDIR' ? 'not a directory' : code;
  return { given, real: given, identity: undefined, unavailable: why };
}

/**
 * Resolves a root once, on the thread pool: its real path and identity, both from one opened
 * descriptor (so they describe the same directory), or why it has none.
 */
async function resolveRoot(root: string, procFd: boolean): Promise<Root> {
  const given = resolve(root);
  let handle: FileHandle | undefined;
  try {
    handle = await open(given, O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_NOCTTY);
    const stats = await handle.stat({ bigint: true });
    const real = procFd ? await readlink(`/proc/self/fd/${handle.fd}`) : await realpath(given);
    if (!procFd) {
      const named = await stat(real, { bigint: true });
      if (named.dev !== stats.dev || named.ino !== stats.ino) return { given, real: given, identity: undefined, unavailable: 'it changed while it was resolved' };
    }
    return { given, real, identity: { dev: stats.dev, ino: stats.ino } };
  } catch (error) {
    return unavailableRoot(given, error);
  } finally {
    await handle?.close();
  }
}

function isInside(path: string, root: string): boolean {
  const rel = relative(root, path);
  return rel === '' || (!rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel));
}

function fdPath(handle: FileHandle): string {
  return `/proc/self/fd/${handle.fd}`;
}

function errorCode(error: unknown): string {
  return String((error as NodeJS.ErrnoException | null)?.code ?? 'EIO');
}

/**
 * An errno failure worded like Node's, but naming the requested path (never a
 * `/proc/self/fd/…` name of the walk).
 */
function fsError(code: string, detail: unknown, request: Request): FsRequestError {
  const description =
    typeof detail === 'string' ? detail : ((detail as Error | undefined)?.message ?? code).replace(/^[A-Z0-9_]+: /, '').replace(/, \w+ '.*$/s, '');
  return new FsRequestError(code, `${code}: ${description}, open '${request.path}'`, typeof detail === 'string' ? undefined : { cause: detail });
}

function notRegular(request: Request, real: string, kind: string): SandboxViolation {
  return new SandboxViolation(request.operation, request.path, real, 'not_regular', `Access denied: ${request.path} is ${kind}, not a regular file; fs/* reads and writes regular files only`);
}

function describeType(stats: Stats | BigIntStats): string {
  if (stats.isFIFO()) return 'a FIFO';
  if (stats.isSocket()) return 'a socket';
  if (stats.isCharacterDevice()) return 'a character device';
  if (stats.isBlockDevice()) return 'a block device';
  return 'not a file';
}
