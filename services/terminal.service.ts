/**
 * Terminals an agent runs through `terminal/*`: commands spawned with execa in their own
 * process group, inside the session's sandbox, with output kept up to a byte limit (the
 * oldest bytes are dropped, as ACP specifies). Every terminal dies with its session.
 */
import { execa } from 'execa';
import { randomUUID } from 'node:crypto';
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
    this.exited = child.then(
      (result) => this.finish(result),
      (error: unknown) => this.finish(error as Awaited<typeof child>),
    );
  }

  output(): { output: string; truncated: boolean; exitStatus: TerminalExit | null } {
    const buffer = Buffer.concat(this.chunks);
    return { output: decodeFromCharBoundary(buffer), truncated: this.truncatedOutput, exitStatus: this.exit };
  }

  kill(): void {
    if (this.exit === null && this.pid !== undefined) signalGroup(this.pid, 'SIGKILL');
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

  private finish(result: { exitCode?: number; signal?: string; code?: string; failed?: boolean }): TerminalExit {
    this.exit = { exitCode: result.exitCode ?? (result.code === 'ENOENT' ? 127 : null), signal: result.signal ?? null };
    if (result.code === 'ENOENT') this.append(Buffer.from(`command not found\n`));
    return this.exit;
  }
}

/** Drops a partial UTF-8 sequence left at the start by truncation. */
function decodeFromCharBoundary(buffer: Buffer): string {
  let start = 0;
  while (start < buffer.length && start < 4 && (buffer[start]! & 0xc0) === 0x80) start++;
  return buffer.subarray(start).toString('utf8');
}

/** The terminals of one session. */
export class TerminalSet {
  private readonly terminals = new Map<string, Terminal>();

  constructor(private readonly defaultByteLimit: number) {}

  create(request: TerminalRequest): string {
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
    this.get(id).kill();
    this.terminals.delete(id);
  }

  /** Kills every terminal and waits for them to exit (session close). */
  async releaseAll(): Promise<void> {
    const all = [...this.terminals.values()];
    this.terminals.clear();
    for (const terminal of all) terminal.kill();
    await Promise.all(all.map((terminal) => terminal.exited));
  }

  get size(): number {
    return this.terminals.size;
  }

  private get(id: string): Terminal {
    const terminal = this.terminals.get(id);
    if (!terminal) throw new UnknownTerminal(id);
    return terminal;
  }
}

export class UnknownTerminal extends Error {
  constructor(readonly terminalId: string) {
    super(`Unknown terminal ${terminalId}`);
  }
}
