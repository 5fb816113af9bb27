/**
 * Terminals an agent runs through `terminal/*` (docs/terminals.md): commands spawned inside
 * the session's sandbox and inside the supervisor's containment mechanism (the one its agents
 * run in), with output kept up to a byte limit (the oldest bytes are dropped, as ACP
 * specifies). Nothing a terminal starts outlives it: kill, release, the session's close and
 * the supervisor's shutdown empty its container (`killAll()`); without a mechanism the
 * command's process group is killed, and a process that left the group (setsid, `set -m`, a
 * detached child) survives.
 *
 * Bounded per session: at most `maxTerminals` terminals live at once (from create until
 * release, whether or not the command still runs), at most `maxOutputBytes` of output kept
 * across them, and a spawn that fails for want of resources (EMFILE, EAGAIN, ENOMEM...) is
 * an error answered to the agent, never a crash of the host.
 *
 * This file is the session's set of terminals; one terminal is terminal.ts, its kept output
 * terminal-output.ts, the refusals terminal-errors.ts.
 */
import { randomUUID } from 'node:crypto';
import { realClock, type Clock } from '../../core/clock.js';
import type { ContainmentMechanism } from '../containment/containment.js';
import type { OpenedDirectory } from '../fs-sandbox.service.js';
import { Terminal, type RecordProcess, type TerminalCommand, type TerminalExit } from './terminal.js';
import { TerminalLimitReached, TerminalsClosed, TerminalTimeout, UnknownTerminal } from './terminal-errors.js';
import { OutputBudget } from './terminal-output.js';
import { bounded } from '../../util/grace.js';

/** A `terminal/create` request: the command, where it runs, and how much output it keeps. */
export interface TerminalRequest extends Omit<TerminalCommand, 'cwd'> {
  /**
   * The working directory, or a check that resolves with it (bounded by the request timeout):
   * a path, or a directory the check opened (`FsSandbox.openWorkingDirectory`), which the
   * command is spawned in and which is closed once it was.
   */
  cwd: string | (() => Promise<string | OpenedDirectory>);
  outputByteLimit?: number | null;
}

/** The limits of one session's terminals; each has a default (docs/terminals.md). */
export interface TerminalSetOptions {
  /** The mechanism every terminal runs in (the supervisor's); null or absent: process groups only. */
  containment?: ContainmentMechanism | null;
  /** How many terminals may be live at once, from create until release. Default 16. */
  maxTerminals?: number;
  /**
   * How many bytes of output the session's terminals keep in all, exited ones included until
   * they are released. Default 8 MiB, or the per-terminal limit when that is larger.
   */
  maxOutputBytes?: number;
  /**
   * How long `create` may take (the cwd check and the spawn), and how long `kill`, `release`
   * and the session's close wait for the processes to be gone before they answer anyway.
   * `waitForExit` is never timed out. Default 10 s.
   */
  requestTimeoutMs?: number;
  /** The clock `create`'s timeout runs on: the supervisor's (a SimulatedClock in tests). Default real time. */
  clock?: Clock;
  /**
   * Records each spawned command for the orphan sweep (`<stateDir>/processes/`), so that a
   * terminal outlives no crashed host either; the record is removed once nothing the
   * command started runs. Absent: not recorded.
   */
  recordProcess?: RecordProcess;
}

/** The defaults of {@link TerminalSetOptions}. */
export const terminalDefaults = {
  maxTerminals: 16,
  maxOutputBytes: 8 * 1024 * 1024,
  requestTimeoutMs: 10_000,
} as const;

/** How many released terminals' last output a session keeps, for the tool calls that show them. */
const keptReleasedOutputs = 8;

/** The terminals of one session. */
export class TerminalSet {
  private readonly terminals = new Map<string, Terminal>();
  /** The output of the last few released terminals, as it was at release, oldest first. */
  private readonly releasedOutputs = new Map<string, ReturnType<Terminal['output']>>();
  /** Creates admitted and still under way: they count against the limit. */
  private starting = 0;
  private closed = false;
  private readonly mechanism: ContainmentMechanism | null;
  private readonly budget: OutputBudget;
  readonly maxTerminals: number;
  readonly requestTimeoutMs: number;
  private readonly clock: Clock;
  private readonly recordProcess: TerminalSetOptions['recordProcess'];

  constructor(
    private readonly defaultByteLimit: number,
    options: TerminalSetOptions = {},
  ) {
    this.mechanism = options.containment ?? null;
    this.maxTerminals = options.maxTerminals ?? terminalDefaults.maxTerminals;
    this.requestTimeoutMs = options.requestTimeoutMs ?? terminalDefaults.requestTimeoutMs;
    this.clock = options.clock ?? realClock;
    this.recordProcess = options.recordProcess;
    this.budget = new OutputBudget(options.maxOutputBytes ?? Math.max(terminalDefaults.maxOutputBytes, defaultByteLimit));
  }

  /** The session's cap on kept output, in bytes. */
  get maxOutputBytes(): number {
    return this.budget.cap;
  }

  /** The bytes of output its terminals keep now, exited ones included. */
  get keptBytes(): number {
    return this.budget.kept;
  }

  /** Live terminals (created and not yet released). */
  get size(): number {
    return this.terminals.size;
  }

  /**
   * Starts a terminal and resolves with its id. Refused with {@link TerminalsClosed} after
   * the session closed, {@link TerminalLimitReached} at the limit, {@link TerminalSpawnFailed}
   * when the command could not be started, {@link TerminalTimeout} when the cwd check and
   * the spawn take longer than the request timeout (then nothing is started).
   */
  async create(request: TerminalRequest): Promise<string> {
    if (this.closed) throw new TerminalsClosed();
    if (this.terminals.size + this.starting >= this.maxTerminals) throw new TerminalLimitReached(this.maxTerminals);
    this.starting++;
    try {
      let abandoned = false;
      const starting = (async () => {
        const cwd = typeof request.cwd === 'string' ? request.cwd : await request.cwd();
        try {
          if (abandoned) throw new TerminalTimeout('terminal/create', this.requestTimeoutMs);
          if (this.closed) throw new TerminalsClosed();
          const limit = Math.min(request.outputByteLimit ?? this.defaultByteLimit, this.defaultByteLimit);
          return await Terminal.start({ ...request, cwd: typeof cwd === 'string' ? cwd : cwd.path }, limit, this.budget, this.mechanism, this.recordProcess);
        } finally {
          // The command runs in the opened directory (its cwd is set at the spawn): the descriptor is
          // no longer needed. Not awaited: the terminal is registered at once, so a session closing
          // meanwhile releases it with the others.
          if (typeof cwd !== 'string') void cwd.close().catch(() => {});
        }
      })();
      let terminal: Terminal;
      try {
        // A command that starts after the bound is killed at once (nobody knows its id).
        terminal = await bounded(starting, this.requestTimeoutMs, () => new TerminalTimeout('terminal/create', this.requestTimeoutMs), this.clock, (late) => void late.release(this.requestTimeoutMs).catch(() => {}));
      } catch (error) {
        // Timed out (or failed): a cwd check that answers later starts nothing.
        abandoned = true;
        throw error;
      }
      if (this.closed) {
        await terminal.release(this.requestTimeoutMs);
        throw new TerminalsClosed();
      }
      const id = `term-${randomUUID()}`;
      this.terminals.set(id, terminal);
      return id;
    } finally {
      this.starting--;
    }
  }

  /** The output kept so far: answered from memory, at once. */
  output(id: string) {
    return this.get(id).output();
  }

  /**
   * What a terminal shows: a live one's output now, or a released one's as it was when it
   * was released (the last {@link keptReleasedOutputs} of the session are kept, so a tool
   * call's terminal content can still be shown). {@link UnknownTerminal} otherwise.
   */
  lastOutput(id: string): ReturnType<Terminal['output']> {
    const kept = this.releasedOutputs.get(id);
    return kept ?? this.get(id).output();
  }

  /** Resolves when the command exits, however long that takes (never timed out). */
  waitForExit(id: string): Promise<TerminalExit> {
    return this.get(id).exited;
  }

  /** Kills everything the command started and keeps the terminal (its output and exit status). */
  kill(id: string): Promise<void> {
    return this.get(id).kill(this.requestTimeoutMs);
  }

  /** Kills everything the command started and forgets the terminal (its output stops counting). */
  async release(id: string): Promise<void> {
    const terminal = this.get(id);
    this.terminals.delete(id);
    this.keepReleasedOutput(id, terminal.output()); // what it showed: release kills what still runs
    await terminal.release(this.requestTimeoutMs);
  }

  /**
   * Keeps a released terminal's output: the last {@link keptReleasedOutputs}, and no more bytes
   * in all than the session's cap on kept output (oldest dropped first) — released terminals
   * cannot grow a session past the bound its live ones have.
   */
  private keepReleasedOutput(id: string, output: ReturnType<Terminal['output']>): void {
    this.releasedOutputs.set(id, output);
    let bytes = 0;
    for (const kept of this.releasedOutputs.values()) bytes += Buffer.byteLength(kept.output);
    for (const [oldest, kept] of this.releasedOutputs) {
      if (this.releasedOutputs.size <= keptReleasedOutputs && bytes <= this.budget.cap) break;
      this.releasedOutputs.delete(oldest);
      bytes -= Buffer.byteLength(kept.output);
    }
  }

  /** Kills every terminal, waits for them to be gone, and refuses new ones (session close, shutdown). */
  async releaseAll(): Promise<void> {
    this.closed = true;
    const all = [...this.terminals.values()];
    for (const [id, terminal] of this.terminals) this.keepReleasedOutput(id, terminal.output()); // readable after the session closed
    this.terminals.clear();
    await Promise.all(all.map((terminal) => terminal.release(this.requestTimeoutMs)));
  }

  private get(id: string): Terminal {
    const terminal = this.terminals.get(id);
    if (!terminal) throw new UnknownTerminal(id);
    return terminal;
  }
}
