/**
 * Terminals an agent runs through `terminal/*`: commands spawned with execa in their own
 * process group, inside the session's sandbox, with output kept up to a byte limit (the
 * oldest bytes are dropped, as ACP specifies). Every terminal dies with its session.
 */
import { execa } from 'execa';
import { randomUUID } from 'node:crypto';
import { withinGrace } from '../util/grace.js';
import { signalGroup } from './process-group.service.js';

export interface TerminalExit {
  exitCode: number | null;
  signal: string | null;
}

export interface TerminalRequest {
  command: string;
  args?: string[];
  env?: Array<{ name: string; value: string }>;
  cwd: string;
  outputByteLimit?: number | null;
}

class Terminal {
  private chunks: Buffer[] = [];
  private bytes = 0;
  private truncatedOutput = false;
  exit: TerminalExit | null = null;
  readonly exited: Promise<TerminalExit>;
  readonly pid: number | undefined;

  private released = false;

  constructor(request: TerminalRequest, private readonly byteLimit: number) {
    const child = execa(request.command, request.args ?? [], {
      cwd: request.cwd,
      env: Object.fromEntries((request.env ?? []).map((variable) => [variable.name, variable.value])),
      extendEnv: true,
      detached: true,
      stdin: 'ignore',
      all: true,
      buffer: false,
      reject: false,
      cleanup: false,
    });
    this.pid = child.pid;
    child.all?.on('data', (chunk: Buffer) => this.append(chunk));
    child.all?.on('error', () => {});
    const settled = child.then(
      (result) => result,
      (error: unknown) => error as Awaited<typeof child>,
    );
    // The command's own exit, not its pipes closing (a background job may hold them);
    // the output that is still in flight gets a short grace.
    const exitEvent = new Promise<{ exitCode: number | null; signal: string | null } | null>((resolve) => {
      if (child.pid === undefined) resolve(null);
      else child.once('exit', (exitCode, signal) => resolve({ exitCode, signal }));
    });
    this.exited = exitEvent.then(async (exit) => {
      const result = await withinGrace(settled, outputGraceMs);
      return this.finish(exit ?? result ?? (await settled));
    });
  }

  output(): { output: string; truncated: boolean; exitStatus: TerminalExit | null } {
    const buffer = Buffer.concat(this.chunks);
    return { output: decodeFromCharBoundary(buffer), truncated: this.truncatedOutput, exitStatus: this.exit };
  }

  /**
   * SIGKILLs the command's whole group — also after the command itself exited, since a
   * background job may live on in it. Never after release: the group id may be reused.
   */
  kill(): void {
    if (!this.released && this.pid !== undefined) signalGroup(this.pid, 'SIGKILL');
  }

  release(): void {
    this.kill();
    this.released = true;
  }

  private append(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.bytes += chunk.length;
    while (this.bytes > this.byteLimit && this.chunks.length > 0) {
      const excess = this.bytes - this.byteLimit;
      const first = this.chunks[0]!;
      this.truncatedOutput = true;
      if (first.length <= excess) {
        this.chunks.shift();
        this.bytes -= first.length;
      } else {
        this.chunks[0] = first.subarray(excess);
        this.bytes -= excess;
      }
    }
  }

  private finish(result: { exitCode?: number | null; signal?: string | null; code?: string }): TerminalExit {
    this.exit ??= { exitCode: result.exitCode ?? (result.code === 'ENOENT' ? 127 : null), signal: result.signal ?? null };
    if (result.code === 'ENOENT') this.append(Buffer.from(`command not found\n`));
    return this.exit;
  }
}

/** How long output may still arrive after a command exited. */
const outputGraceMs = 200;

/** Drops a partial UTF-8 sequence left at the start by truncation. */
function decodeFromCharBoundary(buffer: Buffer): string {
  let start = 0;
  while (start < buffer.length && start < 4 && (buffer[start]! & 0xc0) === 0x80) start++;
  return buffer.subarray(start).toString('utf8');
}

/** The terminals of one session. */
export class TerminalSet {
  private readonly terminals = new Map<string, Terminal>();
  private closed = false;

  constructor(private readonly defaultByteLimit: number) {}

  create(request: TerminalRequest): string {
    if (this.closed) throw new TerminalsClosed();
    const id = `term-${randomUUID()}`;
    const limit = request.outputByteLimit ?? this.defaultByteLimit;
    this.terminals.set(id, new Terminal(request, Math.min(limit, this.defaultByteLimit)));
    return id;
  }

  output(id: string) {
    return this.get(id).output();
  }

  waitForExit(id: string): Promise<TerminalExit> {
    return this.get(id).exited;
  }

  kill(id: string): void {
    this.get(id).kill();
  }

  /** Kills the terminal if it still runs and forgets it. */
  release(id: string): void {
    this.get(id).release();
    this.terminals.delete(id);
  }

  /** Kills every terminal, waits for them to exit, and refuses new ones (session close). */
  async releaseAll(): Promise<void> {
    this.closed = true;
    const all = [...this.terminals.values()];
    this.terminals.clear();
    for (const terminal of all) terminal.kill();
    await Promise.all(all.map((terminal) => terminal.exited));
    for (const terminal of all) terminal.release();
  }

  private get(id: string): Terminal {
    const terminal = this.terminals.get(id);
    if (!terminal) throw new UnknownTerminal(id);
    return terminal;
  }
}

/** A terminal asked for after its session closed. */
export class TerminalsClosed extends Error {
  constructor() {
    super('The session is closed: no new terminals');
  }
}

export class UnknownTerminal extends Error {
  constructor(readonly terminalId: string) {
    super(`Unknown terminal ${terminalId}`);
  }
}
