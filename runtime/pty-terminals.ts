/**
 * The terminals of the supervisor's `protocol: 'pty'` agents (docs/pty.md): per agent one
 * screen (its scrollback outlives every process: a restart adds a separator line and goes
 * on) and one activity machine (starting, running, needsInput, stale, exited) on the
 * supervisor's clock, fed by the process actor with what the terminal prints and how the
 * process ended. `supervisor.terminal(agent)` is a view of one of these.
 */
import { createActor, type Actor } from 'xstate';
import type { Clock } from '../core/clock.js';
import { activityOf, ptyActivityMachine, type PtyActivityState } from '../machines/pty-activity.machine.js';
import { PtyScreen } from '../services/pty/pty.service.js';
import { EventHub } from '../util/event-hub.js';

/** A pty agent's terminal settings (its spec's `pty`). */
export interface PtySettings {
  cols?: number;
  rows?: number;
  scrollbackLines?: number;
  needsInputTimeoutMs?: number;
  staleTimeoutMs?: number;
}

/** What listeners of one terminal hear. */
export interface TerminalEvents {
  /** What the process printed (raw: escape sequences and all). */
  output: { data: string };
  activity: { state: PtyActivityState; exitCode?: number | null; signal?: string | null };
}

interface Terminal {
  screen: PtyScreen;
  activity: Actor<typeof ptyActivityMachine>;
  /** How many processes this terminal has shown (a second one gets a separator). */
  processes: number;
  /** How the last process ended, for the separator before the next. */
  lastExit: string | null;
  /** Types into the current process (none between processes). */
  write: ((input: string) => void) | null;
  resize: ((cols: number, rows: number) => void) | null;
  events: EventHub<TerminalEvents>;
}

export class PtyTerminals {
  private readonly byAgent = new Map<string, Terminal>();

  constructor(
    private readonly deps: {
      clock: Clock;
      settings(agent: string): PtySettings;
      /** Every activity change of every terminal (the supervisor's `pty:activity`). */
      activity(agent: string, event: TerminalEvents['activity']): void;
    },
  ) {}

  /** The agent's terminal, made on first use. */
  private terminal(agent: string): Terminal {
    let terminal = this.byAgent.get(agent);
    if (terminal) return terminal;
    const settings = this.deps.settings(agent);
    const events = new EventHub<TerminalEvents>();
    const activity = createActor(ptyActivityMachine, {
      clock: this.deps.clock,
      input: {
        ...(settings.needsInputTimeoutMs !== undefined ? { needsInputTimeoutMs: settings.needsInputTimeoutMs } : {}),
        ...(settings.staleTimeoutMs !== undefined ? { staleTimeoutMs: settings.staleTimeoutMs } : {}),
      },
    });
    activity.on('activity', ({ state, exitCode, signal }) => {
      const event = state === 'exited' ? { state, exitCode: exitCode ?? null, signal: signal ?? null } : { state };
      events.emit('activity', event);
      this.deps.activity(agent, event);
    });
    terminal = {
      screen: new PtyScreen({
        ...(settings.cols !== undefined ? { cols: settings.cols } : {}),
        ...(settings.rows !== undefined ? { rows: settings.rows } : {}),
        ...(settings.scrollbackLines !== undefined ? { scrollbackLines: settings.scrollbackLines } : {}),
      }),
      activity,
      processes: 0,
      lastExit: null,
      write: null,
      resize: null,
      events,
    };
    this.byAgent.set(agent, terminal);
    return terminal;
  }

  /** The screen a new process of `agent` renders on; a restart's separator first. */
  screenForProcess(agent: string): PtyScreen {
    const terminal = this.terminal(agent);
    if (terminal.processes > 0) terminal.screen.separator(`──── restarted${terminal.lastExit ? ` (${terminal.lastExit})` : ''} ────`);
    return terminal.screen;
  }

  /**
   * A process of `agent` runs: input and resizes go to it; its activity starts over. What it
   * prints and how it ends go through the attachment, which stops counting once a newer
   * process has attached (a process released before it died may still exit later).
   */
  attach(agent: string, io: { write(input: string): void; resize(cols: number, rows: number): void }) {
    const terminal = this.terminal(agent);
    // The activity machine starts with the first process (its timers run from the spawn).
    if (terminal.processes > 0) terminal.activity.send({ type: 'restarted' });
    else terminal.activity.start();
    const attempt = ++terminal.processes;
    terminal.write = io.write;
    terminal.resize = io.resize;
    const current = () => terminal.processes === attempt;
    return {
      output: (data: string) => {
        if (!current()) return;
        terminal.activity.send({ type: 'output' });
        terminal.events.emit('output', { data });
      },
      exited: (exit: { exitCode: number | null; signal: string | null }) => {
        if (!current()) return;
        terminal.write = null;
        terminal.resize = null;
        terminal.lastExit = exit.signal ? `killed by ${exit.signal}` : `exited with code ${exit.exitCode ?? 'unknown'}`;
        terminal.activity.send({ type: 'exited', ...exit });
      },
    };
  }

  /** Calls `listener` each time the agent's CLI waits for input again (or exits); returns the unsubscribe. */
  onIdle(agent: string, listener: () => void): () => void {
    return this.terminal(agent).events.on('activity', ({ state }) => {
      if (state === 'needsInput' || state === 'stale' || state === 'exited') listener();
    });
  }

  /** The public view of one agent's terminal. */
  view(agent: string): AgentTerminal {
    const terminal = this.terminal(agent);
    return {
      get activity() {
        return activityOf(terminal.activity.getSnapshot().value);
      },
      get cols() {
        return terminal.screen.cols;
      },
      get rows() {
        return terminal.screen.rows;
      },
      write: (input) => {
        if (!terminal.write) return false;
        terminal.write(input);
        terminal.activity.send({ type: 'input' });
        return true;
      },
      resize: (cols, rows) => {
        if (terminal.resize) terminal.resize(cols, rows);
        else terminal.screen.resize(cols, rows);
      },
      screen: async () => {
        await terminal.screen.settled();
        return terminal.screen.text();
      },
      scrollback: async () => {
        await terminal.screen.settled();
        return terminal.screen.scrollback();
      },
      on: (type, listener) => terminal.events.on(type, listener),
    };
  }

  /** Stops every activity machine and frees every screen. */
  dispose(): void {
    for (const terminal of this.byAgent.values()) {
      terminal.activity.stop();
      terminal.screen.dispose();
    }
    this.byAgent.clear();
  }
}

/** One pty agent's terminal: `supervisor.terminal(agent)` (docs/pty.md). */
export interface AgentTerminal {
  /** What the CLI is doing, inferred from output and time. */
  readonly activity: PtyActivityState;
  readonly cols: number;
  readonly rows: number;
  /** Types into the terminal (`\r` is Enter); false when no process runs. */
  write(input: string): boolean;
  /** Resizes the terminal (the process gets SIGWINCH). */
  resize(cols: number, rows: number): void;
  /** The rendered screen as text. */
  screen(): Promise<string>;
  /** Every line kept, oldest first, across restarts (with their separators). */
  scrollback(): Promise<string[]>;
  on<K extends keyof TerminalEvents>(type: K, listener: (event: TerminalEvents[K]) => void): () => void;
}
