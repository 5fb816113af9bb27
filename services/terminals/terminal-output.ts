/** A terminal's kept output: the newest bytes, within its own limit and what the session's budget leaves it. */

/** Reads smaller than this are merged into the chunk before them. */
const mergeBelowBytes = 8 * 1024;

/** The bytes kept by the terminals of one session, against the session's cap. */
export class OutputBudget {
  kept = 0;
  constructor(readonly cap: number) {}
}

/** One terminal's output, counted against its session's {@link OutputBudget} until it is dropped. */
export class TerminalOutput {
  private chunks: Buffer[] = [];
  private bytes = 0;
  private truncated = false;
  private dropped = false;

  constructor(
    private readonly byteLimit: number,
    private readonly budget: OutputBudget,
  ) {}

  /** The bytes kept now. */
  get keptBytes(): number {
    return this.bytes;
  }

  /** What is kept, as text, and whether older bytes were dropped. */
  read(): { output: string; truncated: boolean } {
    return { output: decodeFromCharBoundary(Buffer.concat(this.chunks)), truncated: this.truncated };
  }

  /**
   * Keeps the newest bytes: at most this terminal's limit, and at most what the session's
   * cap leaves beside what its other terminals keep. The oldest bytes go first.
   */
  append(chunk: Buffer): void {
    if (this.dropped || chunk.length === 0) return;
    // Small reads are merged, so that output written a byte at a time is not a Buffer a byte.
    const last = this.chunks.at(-1);
    if (last && last.length + chunk.length <= mergeBelowBytes) this.chunks[this.chunks.length - 1] = Buffer.concat([last, chunk]);
    else this.chunks.push(chunk);
    this.bytes += chunk.length;
    this.budget.kept += chunk.length;
    const allowed = Math.max(0, Math.min(this.byteLimit, this.budget.cap - (this.budget.kept - this.bytes)));
    while (this.bytes > allowed && this.chunks.length > 0) {
      const excess = this.bytes - allowed;
      const first = this.chunks[0]!;
      this.truncated = true;
      const dropped = Math.min(first.length, excess);
      if (dropped === first.length) this.chunks.shift();
      else this.chunks[0] = first.subarray(dropped);
      this.bytes -= dropped;
      this.budget.kept -= dropped;
    }
  }

  /** Forgets the output and keeps no more (the terminal was released): it stops counting against the budget. */
  drop(): void {
    this.dropped = true;
    this.budget.kept -= this.bytes;
    this.bytes = 0;
    this.chunks = [];
  }
}

/** Drops a partial UTF-8 sequence left at the start by truncation. */
function decodeFromCharBoundary(buffer: Buffer): string {
  let start = 0;
  while (start < buffer.length && start < 4 && (buffer[start]! & 0xc0) === 0x80) start++;
  return buffer.subarray(start).toString('utf8');
}
