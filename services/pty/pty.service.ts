/**
 * Any interactive CLI in a pseudo-terminal (docs/pty.md): `spawnPtyProcess` runs one process
 * under node-pty as the leader of its own session and process group, with the stop ladder's
 * rungs shaped like `AgentProcess`'s; `PtyScreen` is the headless terminal (@xterm/headless)
 * that renders what it prints. A screen belongs to an agent and outlives its processes: a
 * restart writes a separator and the next process goes on below. No XState here.
 */
import { spawn as forkPty, type IDisposable, type IPty } from '@lydell/node-pty';
import xterm, { type Terminal } from '@xterm/headless';
import { statSync } from 'node:fs';
import { constants } from 'node:os';
import { commandFailure, type ProcessExit, type SpawnFailure, type SupervisedProcess } from '../agent-process.service.js';
import type { AgentRecords } from '../agent-records.service.js';
import { commandProblem } from '../executable.js';
import { signalGroup, waitForGroupExit } from '../process-group.service.js';

export type { ProcessExit, SpawnFailure } from '../agent-process.service.js';

// @xterm/headless is CommonJS that Node cannot read named exports from: take the default.
const { Terminal: HeadlessTerminal } = xterm;

export const defaultPtyCols = 80;
export const defaultPtyRows = 24;
export const defaultScrollbackLines = 10_000;
/** What a PTY child sees in TERM unless its spec sets one: what the screen emulates. */
export const defaultPtyTerm = 'xterm-256color';

export interface PtyScreenOptions {
  cols?: number;
  rows?: number;
  /** Lines kept above the screen (xterm's `scrollback`); the oldest are dropped. Default 10,000. */
  scrollbackLines?: number;
}

/**
 * Leaves the alternate screen (without restoring a saved cursor, which could move it up onto
 * old lines) and soft-resets the terminal (DECSTR: attributes, scroll margins, cursor
 * visibility, charsets), so whatever mode a process died in does not leak into the next one.
 */
const resetForSeparator = '\x1b[?1047l\x1b[!p';

/**
 * A headless terminal that renders what processes print, with a bounded scrollback. Writes
 * are parsed asynchronously (xterm's write queue): `text()` and `scrollback()` show what is
 * parsed so far; `await settled()` first to see everything written.
 */
export class PtyScreen {
  private readonly terminal: Terminal;
  /** While a separator waits for the cursor position: what was written meanwhile, in order. */
  private held: Array<string | { separator: string }> | null = null;
  /** Resolves once the separator in progress is written. */
  private separating: { done: Promise<void>; release(): void } | null = null;
  private disposed = false;

  constructor(options: PtyScreenOptions = {}) {
    this.terminal = new HeadlessTerminal({
      cols: options.cols ?? defaultPtyCols,
      rows: options.rows ?? defaultPtyRows,
      scrollback: options.scrollbackLines ?? defaultScrollbackLines,
      allowProposedApi: true,
    });
  }

  get cols(): number {
    return this.terminal.cols;
  }

  get rows(): number {
    return this.terminal.rows;
  }

  get isDisposed(): boolean {
    return this.disposed;
  }

  /** Renders output of the process (escape sequences included). */
  write(data: string): void {
    if (this.disposed) return;
    if (this.held) this.held.push(data);
    else this.terminal.write(data);
  }

  /** Resolves once everything written so far (separators included) is parsed. */
  async settled(): Promise<void> {
    while (this.separating) await this.separating.done;
    if (this.disposed) return;
    await new Promise<void>((resolve) => this.terminal.write('', resolve));
  }

  /** The screen as plain text: one line per row, trailing spaces and trailing empty rows trimmed. */
  text(): string {
    if (this.disposed) return '';
    const buffer = this.terminal.buffer.active;
    const rows: string[] = [];
    for (let y = 0; y < this.terminal.rows; y++) rows.push((buffer.getLine(buffer.baseY + y)?.translateToString(true) ?? '').trimEnd());
    return trimTrailingEmpty(rows).join('\n');
  }

  /**
   * Every line kept, oldest first: the scrollback and the screen of the normal buffer (a
   * full-screen program's alternate screen has no history and is not included). A line the
   * terminal wrapped is one line here; trailing spaces and the unused rows below the last
   * line are trimmed. At most `scrollbackLines` + `rows` rows.
   */
  scrollback(): string[] {
    if (this.disposed) return [];
    const buffer = this.terminal.buffer.normal;
    const lines: string[] = [];
    for (let y = 0; y < buffer.length; y++) {
      const line = buffer.getLine(y);
      if (!line) continue;
      const text = line.translateToString(buffer.getLine(y + 1)?.isWrapped !== true);
      if (line.isWrapped && lines.length > 0) lines[lines.length - 1] += text;
      else lines.push(text);
    }
    return trimTrailingEmpty(lines.map((line) => line.trimEnd()));
  }

  /**
   * Ends what the last process left (alternate screen, modes, a line without its newline)
   * and appends one line, e.g. `──── restarted: exited with code 3 ────`. The separator
   * and everything above it then scroll into the scrollback, so the next process starts on
   * an empty screen and clearing it does not erase the old lines. Writes arriving meanwhile
   * (the next process's first output) are held back and follow the separator.
   */
  separator(text: string): void {
    if (this.disposed) return;
    if (this.held) return void this.held.push({ separator: text });
    let release = () => {};
    const done = new Promise<void>((resolve) => (release = resolve));
    this.separating = { done, release };
    this.held = [];
    this.terminal.write(resetForSeparator, () => {
      if (this.disposed) return;
      // The separator goes on the row below the last one with text on the screen (a program
      // may have left the cursor anywhere); from the bottom row, a new line scrolls first.
      const buffer = this.terminal.buffer.normal;
      const rows = this.terminal.rows;
      let below = 0;
      for (let y = rows - 1; y >= 0; y--) {
        if (buffer.getLine(buffer.baseY + y)?.translateToString(true).trim()) {
          below = y + 1;
          break;
        }
      }
      const position = below < rows ? `\x1b[${below + 1};1H` : `\x1b[${rows};1H\r\n`;
      // `rows` line feeds from the separator's (last) row scroll it, and all above it, off the screen.
      this.terminal.write(`${position}\x1b[2K${text}${'\n'.repeat(rows)}\r\x1b[H`);
      const held = this.held ?? [];
      this.held = null;
      this.separating = null;
      release();
      for (const item of held) {
        if (typeof item === 'string') this.write(item);
        else this.separator(item.separator);
      }
    });
  }

  /** Resizes the screen (xterm reflows wrapped lines). A running process's PTY: `PtyProcess.resize`. */
  resize(cols: number, rows: number): void {
    if (this.disposed) return;
    this.terminal.resize(cols, rows);
  }

  /** Frees the terminal; later writes are ignored, and the text reads empty. */
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.held = null;
    this.separating?.release();
    this.separating = null;
    this.terminal.dispose();
  }
}

function trimTrailingEmpty(lines: string[]): string[] {
  let end = lines.length;
  while (end > 0 && lines[end - 1] === '') end--;
  return lines.slice(0, end);
}

/** What to run in the PTY: the fields of an `AgentSpec` that matter here. */
export interface PtySpawnSpec {
  command: string;
  args?: string[];
  /** Merged over this process's environment; TERM defaults to `xterm-256color`. */
  env?: Record<string, string>;
  cwd?: string;
  /** Reported with a `not_installed` failure. */
  installHint?: string;
}

export interface PtySpawnOptions {
  /** The PTY's size; default the screen's. Given, the screen is resized to it. */
  cols?: number;
  rows?: number;
  /** Renders everything the process prints. */
  screen: PtyScreen;
  /** Hears every chunk of output (after the screen got it). */
  onData?(data: string): void;
  /** The agent's name (names its record). */
  agent?: string;
  /** Where the process is recorded while it runs, for a sweep after a host crash; none: not recorded. */
  records?: AgentRecords | null;
}

/**
 * A process in a PTY, driven by the same stop ladder as `AgentProcess`: its pid is also its
 * session and process group id; `agentPid` is the same pid; `containment` is always null (a
 * PTY child runs in its own session and process group only: docs/pty.md); `exited` also
 * waits for node-pty's listeners and file descriptor to be released; `closeInput` types
 * Ctrl-D (end of input for a line-reading CLI).
 */
export interface PtyProcess extends SupervisedProcess {
  /** Types into the terminal (as keystrokes: `\r` is Enter). Ignored once the process exited. */
  write(input: string): void;
  /** Resizes the PTY (the process gets SIGWINCH) and the screen. */
  resize(cols: number, rows: number): void;
}

/** End of input, as a terminal sends it: Ctrl-D. */
const endOfInput = '\x04';

/** What node-pty would drop from an inherited environment: a terminal of ours, not the parent's. */
const inheritedButWrong = ['TMUX', 'TMUX_PANE', 'STY', 'WINDOW', 'WINDOWID', 'TERMCAP', 'COLUMNS', 'LINES'];

/** Spawns `spec` in a new PTY, rendering its output on `options.screen`. Never throws for a missing command. */
export function spawnPtyProcess(spec: PtySpawnSpec, options: PtySpawnOptions): PtyProcess {
  const { screen } = options;
  if (spec.cwd !== undefined && !isDirectory(spec.cwd)) {
    return notSpawned({ kind: 'spawn_failed', detail: `cwd ${spec.cwd} is not a directory` });
  }
  // node-pty forks first and reports a failed exec only as an exit (code 1, a message on
  // the terminal): a missing command, a directory or a file that may not be executed must be
  // found here, and told as for an agent on pipes.
  const problem = commandProblem(spec.command, spec.cwd, spec.env?.PATH ?? process.env.PATH ?? '');
  if (problem) return notSpawned(commandFailure(spec, problem));

  const cols = options.cols ?? screen.cols;
  const rows = options.rows ?? screen.rows;
  if (cols !== screen.cols || rows !== screen.rows) screen.resize(cols, rows);
  const env = ptyEnvironment(spec.env);
  let pty: IPty;
  try {
    pty = forkPty(spec.command, spec.args ?? [], { name: env.TERM ?? defaultPtyTerm, cols, rows, cwd: spec.cwd ?? process.cwd(), env });
  } catch (error) {
    // forkpty can fail (no PTY left, EAGAIN): a spawn failure, never an exception out of the actor.
    return notSpawned({ kind: 'spawn_failed', detail: `${spec.command}: ${error instanceof Error ? error.message : String(error)}` });
  }
  const pid = pty.pid;
  // The PTY's process is the agent itself (no containment): its record names it in the first write.
  const record = options.records ? options.records.create(options.agent ?? spec.command, spec.command, pid, null) : null;

  let running = true;
  let gone = false;
  const listeners: IDisposable[] = [];
  // node-pty rethrows a read error other than EIO out of its own handler (an uncaught
  // exception) unless someone else listens: the exit that follows reports it instead.
  const socket = pty as unknown as { on(event: 'error', listener: () => void): void; removeListener(event: 'error', listener: () => void): void };
  const ignoreReadError = () => {};
  socket.on('error', ignoreReadError);
  listeners.push({ dispose: () => socket.removeListener('error', ignoreReadError) });
  listeners.push(
    pty.onData((data) => {
      screen.write(data);
      options.onData?.(data);
    }),
  );
  const exited = new Promise<ProcessExit>((resolve) => {
    // node-pty reports the exit once the PTY's reading end closed (all output delivered) or
    // 200 ms after the process was reaped when a descendant holds the terminal open.
    listeners.push(
      pty.onExit(({ exitCode, signal }) => {
        running = false;
        void reap(pid).finally(async () => {
          gone = true;
          for (const listener of listeners.splice(0)) listener.dispose();
          await record?.remove();
          resolve(signal ? { exitCode: null, signal: signalName(signal) } : { exitCode, signal: null });
        });
      }),
    );
  });

  return {
    pid,
    agentPid: Promise.resolve(pid),
    containment: null,
    spawnFailure: Promise.resolve(null),
    exited,
    isRunning: () => running,
    write: (input) => {
      if (running) pty.write(input);
    },
    resize: (newCols, newRows) => {
      try {
        if (running) pty.resize(newCols, newRows);
      } catch {
        // The PTY closed a moment before the exit is reported: nothing left to resize.
      }
      screen.resize(newCols, newRows);
    },
    closeInput: () => {
      if (running) pty.write(endOfInput);
    },
    signalGroup: (signal) => {
      if (!gone) signalGroup(pid, signal);
    },
  };
}

/**
 * SIGKILLs what is left of the group after its leader exited (the kernel's SIGHUP to the
 * terminal's foreground group may not have ended it), and waits until nothing of it runs.
 */
async function reap(pgid: number, timeoutMs = 2000): Promise<void> {
  try {
    signalGroup(pgid, 'SIGKILL');
  } catch {
    // EPERM: a member changed its credentials; nothing more this process can do.
  }
  await waitForGroupExit(pgid, timeoutMs);
}

/** A process that was never spawned: `spawnFailure` says why. */
function notSpawned(failure: SpawnFailure): PtyProcess {
  return {
    pid: undefined,
    agentPid: Promise.resolve(undefined),
    containment: null,
    spawnFailure: Promise.resolve(failure),
    exited: Promise.resolve({ exitCode: null, signal: null }),
    isRunning: () => false,
    write: () => {},
    resize: () => {},
    closeInput: () => {},
    signalGroup: () => {},
  };
}

/** This process's environment without what describes its own terminal, then the spec's, then TERM. */
function ptyEnvironment(overrides: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (value !== undefined && !inheritedButWrong.includes(name)) env[name] = value;
  }
  Object.assign(env, overrides);
  env.TERM = overrides.TERM ?? defaultPtyTerm;
  return env;
}

/** node-pty reports a signal by number. */
function signalName(signal: number): string {
  const entry = Object.entries(constants.signals).find(([, number]) => number === signal);
  return entry ? entry[0] : `SIG${signal}`;
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}
