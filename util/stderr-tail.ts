/**
 * The last lines a process wrote to stderr, bounded in lines and in line length, so a
 * chatty agent cannot grow memory and a failure still comes with its reason.
 */
const maxLineLength = 1000;

export class StderrTail {
  private readonly lines: string[] = [];
  private partial = '';

  /** `onLine` hears every line as it completes (blank ones excepted), beyond the kept tail. */
  constructor(
    private readonly maxLines: number,
    private readonly onLine?: (line: string) => void,
  ) {}

  /** Appends a chunk of output, splitting it into lines. */
  push(chunk: Buffer | string): void {
    const text = this.partial + chunk.toString();
    const parts = text.split(/\r?\n/);
    this.partial = (parts.pop() ?? '').slice(-maxLineLength);
    for (const line of parts) this.add(line);
  }

  /** Moves an unterminated last line into the tail (at exit). */
  flush(): void {
    if (this.partial !== '') this.add(this.partial);
    this.partial = '';
  }

  /** The kept lines, oldest first, including an unterminated last line. */
  snapshot(): string[] {
    return this.partial === '' ? [...this.lines] : [...this.lines, this.partial];
  }

  private add(line: string): void {
    if (line.trim() === '') return;
    const kept = line.length > maxLineLength ? `${line.slice(0, maxLineLength)}…` : line;
    this.lines.push(kept);
    this.onLine?.(kept);
    if (this.lines.length > this.maxLines) this.lines.shift();
  }
}
