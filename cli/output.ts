/**
 * How the CLI writes: the output formats, when to colour (a TTY, no `NO_COLOR`, `FORCE_COLOR`
 * honoured), the few styles it uses, and the handshake spinner on stderr.
 */

/** What a command prints: readable text, one JSON document (or NDJSON for streams), or the bare result. */
export type OutputFormat = 'text' | 'json' | 'quiet';

/** Every {@link OutputFormat}, for the `--format` option's choices. */
export const outputFormats: readonly OutputFormat[] = ['text', 'json', 'quiet'];

/** The environment variables the colour decision reads. */
export interface ColorEnvironment {
  NO_COLOR?: string | undefined;
  FORCE_COLOR?: string | undefined;
  TERM?: string | undefined;
}

/**
 * Whether to colour what goes to `stream`. `NO_COLOR` set to anything but the empty string
 * turns colour off (no-color.org), whatever else is set; then `FORCE_COLOR` turns it on
 * (off for `0` or `false`) even when the stream is not a terminal; otherwise colour only
 * on a TTY whose `TERM` is not `dumb`.
 */
export function colorEnabled(stream: { isTTY?: boolean | undefined }, env: ColorEnvironment = process.env): boolean {
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false;
  if (env.FORCE_COLOR !== undefined) return !['0', 'false'].includes(env.FORCE_COLOR.toLowerCase());
  return stream.isTTY === true && env.TERM !== 'dumb';
}

/** The styles the CLI uses; each returns its text unchanged when colour is off. */
export interface Style {
  enabled: boolean;
  bold(text: string): string;
  dim(text: string): string;
  red(text: string): string;
  green(text: string): string;
  yellow(text: string): string;
  cyan(text: string): string;
}

const sgr = (open: number, close: number) => (text: string) => `\u001b[${open}m${text}\u001b[${close}m`;

/** The styles, coloured or plain. */
export function styleOf(enabled: boolean): Style {
  const plain = (text: string) => text;
  return {
    enabled,
    bold: enabled ? sgr(1, 22) : plain,
    dim: enabled ? sgr(2, 22) : plain,
    red: enabled ? sgr(31, 39) : plain,
    green: enabled ? sgr(32, 39) : plain,
    yellow: enabled ? sgr(33, 39) : plain,
    cyan: enabled ? sgr(36, 39) : plain,
  };
}

/** The styles for a stream, decided by {@link colorEnabled}. */
export function styleFor(stream: { isTTY?: boolean | undefined }): Style {
  return styleOf(colorEnabled(stream));
}

/** Removes colour codes: the visible text. */
export function stripAnsi(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/\u001b\[[0-9;]*m/g, '');
}

/** A running spinner: `stop()` clears its line. */
export interface Spinner {
  stop(): void;
}

const frames = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/**
 * Shows `text` with a spinner on `stream` while something runs (a handshake, a stop). Only
 * on a TTY: elsewhere it writes nothing, so a pipe or a log file gets no control codes.
 */
export function startSpinner(text: string, stream: NodeJS.WriteStream = process.stderr): Spinner {
  if (!stream.isTTY) return { stop() {} };
  const style = styleFor(stream);
  let frame = 0;
  const draw = () => stream.write(`\r\u001b[2K${style.cyan(frames[frame++ % frames.length]!)} ${text}`);
  draw();
  const timer = setInterval(draw, 80);
  timer.unref(); // never what keeps the CLI alive
  let stopped = false;
  return {
    stop() {
      if (stopped) return;
      stopped = true;
      clearInterval(timer);
      stream.write('\r\u001b[2K');
    },
  };
}

/** A duration as one short unit: `45s`, `12m`, `3h`, `2d`. */
export function formatDuration(ms: number): string {
  const seconds = Math.max(0, Math.floor(ms / 1000));
  if (seconds < 60) return `${seconds}s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m`;
  if (seconds < 86_400) return `${Math.floor(seconds / 3600)}h`;
  return `${Math.floor(seconds / 86_400)}d`;
}

/** A size in bytes, binary units, three significant digits at most: `512 B`, `41.2 MiB`, `1.50 GiB`. */
export function formatBytes(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = Math.max(0, bytes);
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  if (unit === 0) return `${Math.round(value)} B`;
  const digits = value >= 100 ? 0 : value >= 10 ? 1 : 2;
  return `${value.toFixed(digits)} ${units[unit]}`;
}

/** A CPU share in % of one core, one decimal: `0.0%`, `12.5%`, `187.3%`. */
export function formatPercent(percent: number): string {
  return `${Math.max(0, percent).toFixed(1)}%`;
}

/** Writes one JSON document (NDJSON when called per item) to stdout. */
export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}

/** `text` on one line: each line break, with the blanks around it, made one space; cut to `maxLength` with an ellipsis. */
export function oneLine(text: string, maxLength = Infinity): string {
  const flat = text.replace(/\s*\n\s*/g, ' ');
  return flat.length > maxLength ? `${flat.slice(0, maxLength - 1)}…` : flat;
}
