/**
 * The adapter between the pty activity model and the real runtime: one `PtyActivityRun` per
 * path owns a fresh supervisor (SimulatedClock, a fixed 1 s restart backoff) with one
 * `protocol: 'pty'` agent, `cli`: tests/fixtures/interactive-cli.mjs in a real PTY, behind a
 * start gate. It causes each model event for real (executors) and checks each model state on
 * `supervisor.terminal('cli')`, the `pty:activity` events and the agent (assertions).
 *
 * **The start gate.** Node runs the CLI with `--import <gate>`: a module (a data: URL) that
 * appends its pid to a pid file, then waits — printing nothing — until the harness writes
 * `go` (the CLI starts: BANNER) or `fail` (exit 3 before any output: EXITS from starting) to
 * the gate file. Without it the banner would follow the spawn at once and `starting` could
 * not be held, timed out or exited from.
 *
 * **Time passes before every stimulus.** Every executor that types, opens the gate or waits
 * for output first advances the clock by as much as the state allows without changing
 * anything (needsInputTimeoutMs − 1 in starting and running, staleTimeoutMs − 1 in
 * needsInput, staleTimeoutMs in stale) and checks that nothing changed. The timer events
 * that follow then show that output re-armed the needsInput timer and that leaving a state
 * cancelled its timer: a timer armed earlier would fire 1 ms into them.
 */
import { appendFileSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import { SimulatedClock } from 'xstate';
import { createSupervisor, presets, type AgentTerminal, type Supervisor } from '../../index.js';
import { isRunning, scratch } from '../support/real-agents.js';
import { expectedEmissions, type ModelCoverage, type ModelPath, type ModelSnapshot, type ModelStep } from './model-paths.js';
import { ModelRun } from './model-run.js';
import { ptyActivityModel, ptyActivityModelEvents, ptyActivityModelStates, type PtyActivityModelContext, type PtyActivityModelEvent } from './pty-activity.model.js';
import { dispose, settle, within } from './sut.js';

/** The agent's terminal settings: not the defaults, so the spec's values are shown to reach the machine. */
export const ptySettings = { cols: 100, rows: 30, needsInputTimeoutMs: 7_000, staleTimeoutMs: 45_000 };
/** The supervisor's options; factor 1: every restart waits the same 1 s. */
export const sutOptions = {
  restart: { maxAttempts: 20, initialDelayMs: 1_000, factor: 1, maxDelayMs: 1_000, jitter: 0, stableAfterMs: 30_000 },
  handshakeTimeoutMs: 30_000,
  shutdownTimeoutMs: 5_000,
  killTimeoutMs: 2_000,
};
const backoffMs = sutOptions.restart.initialDelayMs;
/** Real time before `later` prints: longer than the steps a path takes meanwhile (clock steps and checks). */
const laterMs = 2_000;

const interactiveCli = fileURLToPath(new URL('../fixtures/interactive-cli.mjs', import.meta.url));
const banner = 'interactive-cli 1.0 — type a line; quit, fail, silent, burst, later, size\n> ';
const separator = '──── restarted (exited with code 3) ────';
const agentName = 'cli';

/**
 * The start gate, run by node before the CLI (`--import`): records its pid, then polls the
 * gate file (written by rename, so never read half-written) and consumes it: `go` lets the
 * CLI run, `fail` exits 3 without printing. Gives up after a minute, so it never lingers.
 */
const gateSource = `
import { appendFileSync, readFileSync, rmSync } from 'node:fs';
appendFileSync(process.env.PTY_GATE_PIDS, process.pid + '\\n');
const word = await new Promise((resolve) => {
  const deadline = Date.now() + 60000;
  const timer = setInterval(() => {
    let text = null;
    try { text = readFileSync(process.env.PTY_GATE_FILE, 'utf8'); } catch {}
    if (text === null && Date.now() < deadline) return;
    clearInterval(timer);
    rmSync(process.env.PTY_GATE_FILE, { force: true });
    resolve(text === null ? 'timeout' : text.trim());
  }, 10);
});
if (word !== 'go') process.exit(word === 'fail' ? 3 : 1);
`;
const gateModule = `data:text/javascript,${encodeURIComponent(gateSource)}`;

/** Terminal output as plain text: CSI/OSC sequences, two-character escapes and carriage returns removed. */
// eslint-disable-next-line no-control-regex
const escapeSequences = /\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]|\r/g;
const plain = (data: string) => data.replace(escapeSequences, '');

/** A `pty:activity` event as a trace entry: the state, or `exited(exitCode 3, signal null)`. */
function traceEntry(event: { state: string; exitCode?: number | null; signal?: string | null }): string {
  return event.state === 'exited' ? `exited(exitCode ${String(event.exitCode)}, signal ${String(event.signal)})` : event.state;
}

type ActivityState = (typeof ptyActivityModelStates)[number];
const leafOf = (state: ModelSnapshot) => ptyActivityModelStates.find((key) => state.matches(key))!;
/** How paths show the model context. */
export const showContext = (context: Record<string, unknown>) =>
  [context.restarted ? 'restarted' : '', context.gated ? 'gated' : '', context.laterPending ? 'later pending' : ''].filter(Boolean).join(', ');

export class PtyActivityRun extends ModelRun {
  private readonly files = scratch();
  private readonly clock = new SimulatedClock();
  private readonly supervisor: Supervisor;
  private readonly terminal: AgentTerminal;
  private readonly gateFile = this.files.path('gate');
  private readonly pidFile = this.files.path('pids.txt');
  /** Everything the CLI printed, as plain text. */
  private output = '';
  /** `pty:activity` of the supervisor (agent cli) and `activity` of the terminal, as trace entries. */
  private readonly trace: string[] = [];
  private readonly terminalTrace: string[] = [];
  private readonly expected: string[] = ['starting'];
  /** Processes started and restarts so far, as the harness caused them. */
  private spawns = 0;
  private restarts = 0;
  private lines = 0;
  /** Where the output stood when `later` was typed (its answer must come after, and not before PRINTS_BY_ITSELF). */
  private laterFrom = -1;

  constructor(
    path: ModelPath,
    private readonly coverage: ModelCoverage,
  ) {
    super(path, showContext);
    appendFileSync(this.pidFile, '');
    this.supervisor = createSupervisor({
      clock: this.clock,
      stateDir: false,
      ...sutOptions,
      agents: {
        [agentName]: presets.pty(process.execPath, ['--import', gateModule, interactiveCli], {
          displayName: 'CLI',
          env: { PTY_GATE_FILE: this.gateFile, PTY_GATE_PIDS: this.pidFile },
          pty: ptySettings,
        }),
      },
    });
    this.terminal = this.supervisor.terminal(agentName);
    this.supervisor.on('pty:activity', (event) => event.agent === agentName && this.trace.push(traceEntry(event)));
    this.terminal.on('activity', (event) => this.terminalTrace.push(traceEntry(event)));
    this.terminal.on('output', ({ data }) => (this.output += plain(data)));
  }

  /** Starts the agent: the path begins in `starting`, the CLI held by the gate. */
  override async start(): Promise<void> {
    await within(this.supervisor.ensureAgent(agentName), 'ensureAgent()');
    this.spawns = 1;
    const initial = this.path.steps[0]!.state;
    await settle(() => this.mismatches(initial).length === 0, () => `starting: ${this.mismatches(initial).join('; ')}`);
  }

  /** The `{ states, events }` parameter of `testPath`: an assertion per state, an executor per event. */
  params() {
    return this.testParams(ptyActivityModelStates, ptyActivityModelEvents);
  }

  /** Shuts down, cleans up, and returns the pids of CLI processes that were still running. */
  override async dispose(): Promise<number[]> {
    await dispose(this.supervisor, this.clock, []);
    const leaked = this.pids().filter((pid) => isRunning(pid));
    for (const pid of leaked) process.kill(pid, 'SIGKILL');
    this.files.cleanup();
    return leaked;
  }

  private get summary() {
    return this.supervisor.list()[0]!;
  }

  /** Pids of every CLI process started, oldest first (written by the start gate). */
  private pids(): number[] {
    return readFileSync(this.pidFile, 'utf8').split('\n').filter(Boolean).map(Number);
  }

  protected async execute(step: ModelStep): Promise<void> {
    const previous = this.path.steps[this.index - 1]!.state;
    const from = leafOf(previous);
    const event = step.event as PtyActivityModelEvent;
    const { needsInputTimeoutMs, staleTimeoutMs } = ptySettings;

    switch (event.type) {
      case 'BANNER': {
        this.pause(from);
        const at = this.output.length;
        this.openGate('go');
        await this.outputAfter(at, banner, 'the banner and the prompt');
        break;
      }
      case 'PRINTS': {
        this.pause(from);
        const line = `hello ${++this.lines}`;
        await this.type(`${line}\r`, `you said: ${line}\n> `, 'the answer and the prompt');
        break;
      }
      case 'TYPES_TO_SILENT':
        this.pause(from);
        await this.type('silent\r', 'silent\n', 'the echo of silent');
        break;
      case 'SCHEDULES_LATER':
        this.pause(from);
        this.laterFrom = this.output.length;
        await this.type(`later ${laterMs}\r`, `later ${laterMs}\n`, 'the echo of later');
        break;
      case 'PRINTS_BY_ITSELF':
        this.pause(from);
        await this.outputAfter(this.laterFrom, 'later done\n> ', 'the output of later');
        this.laterFrom = -1;
        break;
      case 'SILENCE_ELAPSES':
        this.elapse(needsInputTimeoutMs, from, 'needsInputTimeoutMs');
        break;
      case 'STALE_ELAPSES':
        if (from === 'stale') this.pause(from); // no timer runs: nothing may change
        else this.elapse(staleTimeoutMs, from, 'staleTimeoutMs');
        break;
      case 'EXITS':
        this.pause(from);
        if ((previous.context as PtyActivityModelContext).gated) this.openGate('fail');
        else expect(this.terminal.write('fail\r'), 'write() to a live terminal').toBe(true);
        break;
      case 'RESTARTS':
        this.clock.increment(backoffMs - 1);
        expect(this.summary.status, `still reconnecting 1 ms before the ${backoffMs} ms backoff`).toBe('reconnecting');
        expect(this.terminal.activity, 'activity 1 ms before the backoff').toBe('exited');
        expect(this.pids().length, 'no new process 1 ms before the backoff').toBe(this.spawns);
        this.clock.increment(1);
        this.spawns++;
        this.restarts++;
        break;
      case 'RECONNECTS': {
        const handle = await within(this.supervisor.reconnect(agentName), 'reconnect()');
        this.spawns++;
        this.restarts++;
        expect(isRunning(handle.pid), 'reconnect() resolves with a live process').toBe(true);
        break;
      }
    }
    // What the step must have reported (checked by the state assertion once settled).
    this.expected.push(...expectedEmissions(ptyActivityModel, previous, event));
    await settle(() => this.mismatches(step.state).length === 0, () => `${leafOf(step.state)}: ${this.mismatches(step.state).join('; ')}`);
  }

  /**
   * Time passes that changes nothing: as long as the state allows (its timer 1 ms short), so
   * that the next timer event shows the stimulus re-armed or cancelled it.
   */
  private pause(from: ActivityState): void {
    const { needsInputTimeoutMs, staleTimeoutMs } = ptySettings;
    const ms = { starting: needsInputTimeoutMs - 1, running: needsInputTimeoutMs - 1, needsInput: staleTimeoutMs - 1, stale: staleTimeoutMs, exited: 0 }[from];
    this.clock.increment(ms);
    expect(this.terminal.activity, `activity after ${ms} ms of silence in ${from}`).toBe(from);
    expect([...this.trace], `no pty:activity event after ${ms} ms of silence in ${from}`).toEqual(this.expected);
    this.expectLaterStillPending();
  }

  /** A timer elapses: 1 ms before it nothing has changed; then it fires. */
  private elapse(ms: number, from: ActivityState, name: string): void {
    this.clock.increment(ms - 1);
    expect(this.terminal.activity, `activity 1 ms before ${name} in ${from}`).toBe(from);
    expect([...this.trace], `no pty:activity event 1 ms before ${name} in ${from}`).toEqual(this.expected);
    this.expectLaterStillPending();
    this.clock.increment(1);
  }

  /** A pending `later` has not printed yet: the real-time delay outlasted what happened meanwhile. */
  private expectLaterStillPending(): void {
    if (this.laterFrom < 0) return;
    expect(this.output.slice(this.laterFrom), `later ${laterMs} must not have printed yet (the path took too long in real time)`).not.toContain('later done');
  }

  /** Lets the gated process go on (`go`) or exit 3 (`fail`). */
  private openGate(word: 'go' | 'fail'): void {
    writeFileSync(`${this.gateFile}.tmp`, word);
    renameSync(`${this.gateFile}.tmp`, this.gateFile);
  }

  /** Types into the terminal and waits until the CLI has printed `expected` after it. */
  private async type(input: string, expected: string, what: string): Promise<void> {
    const at = this.output.length;
    expect(this.terminal.write(input), 'write() to a live terminal').toBe(true);
    await this.outputAfter(at, expected, what);
  }

  private async outputAfter(at: number, expected: string, what: string): Promise<void> {
    await settle(() => this.output.slice(at).includes(expected), () => `${what} (${JSON.stringify(expected)}); printed since: ${JSON.stringify(this.output.slice(at))}`);
    // Readline may follow its prompt with a cursor move in a chunk of its own, a moment later:
    // wait until the output holds still, so that no late chunk lands after the next clock step.
    for (let length = -1; length !== this.output.length; ) {
      length = this.output.length;
      await new Promise((resolve) => setTimeout(resolve, 30));
    }
  }

  /** What differs between the real terminal and agent and the model state (empty once settled). */
  private mismatches(state: ModelSnapshot): string[] {
    const leaf = leafOf(state);
    const problems: string[] = [];
    if (this.terminal.activity !== leaf) problems.push(`activity is ${this.terminal.activity}`);
    if (this.trace.length < this.expected.length) problems.push(`pty:activity so far ${JSON.stringify(this.trace)}`);
    const { status, pid } = this.summary;
    if (leaf === 'exited') {
      if (status !== 'reconnecting') problems.push(`agent is ${status}, not reconnecting`);
    } else {
      if (status !== 'connected') problems.push(`agent is ${status}, not connected`);
      if (pid === null || !isRunning(pid)) problems.push(`no live agent process (pid ${pid})`);
      if (this.pids().length < this.spawns) problems.push('the new process has not reached the start gate yet');
    }
    return problems;
  }

  /** The assertion of every model state on the real terminal, its events and the agent. */
  protected async check(state: ModelSnapshot): Promise<void> {
    const leaf = leafOf(state);
    expect(this.terminal.activity, 'terminal.activity').toBe(leaf);
    // Copies: a failure message must show the trace at the check, not after the shutdown that follows.
    expect([...this.trace], "supervisor 'pty:activity' events").toEqual(this.expected);
    expect([...this.terminalTrace], "terminal 'activity' events").toEqual(this.expected);

    const { status, pid, lastError } = this.summary;
    const pids = this.pids();
    expect(pids.length, 'CLI processes started').toBe(this.spawns);
    if (leaf === 'exited') {
      expect(status, 'agent status').toBe('reconnecting');
      expect(pid, 'no agent process').toBeNull();
      expect(lastError, 'the agent\'s lastError').toMatchObject({ kind: 'agent_exited', exitCode: 3, signal: null, class: 'crash' });
      expect(this.terminal.write('ignored\r'), 'write() without a process').toBe(false);
    } else {
      expect(status, 'agent status').toBe('connected');
      expect(pid, 'the agent pid is the last CLI started').toBe(pids.at(-1));
      expect(isRunning(pid!), 'a live CLI process').toBe(true);
    }
    expect(pids.filter((one) => one !== pid && isRunning(one)), 'no other CLI process runs').toEqual([]);
    if ((state.context as PtyActivityModelContext).laterPending) this.expectLaterStillPending();
    else expect(this.laterFrom, 'no later pending in the harness').toBe(-1);

    // The scrollback outlives the processes: one separator per restart, and nothing printed after the last while held at the gate.
    const scrollback = await this.terminal.scrollback();
    expect(scrollback.filter((line) => line.includes('──── restarted')), 'restart separators in the scrollback').toEqual(Array<string>(this.restarts).fill(separator));
    if ((state.context as PtyActivityModelContext).gated) {
      const lastSeparator = scrollback.lastIndexOf(separator);
      expect(scrollback.slice(lastSeparator + 1).filter((line) => line.trim() !== ''), 'nothing printed by a process held at the gate').toEqual([]);
    }

    const previous = this.index > 0 ? this.path.steps[this.index - 1]!.state : undefined;
    this.coverage.recordStep(previous, this.path.steps[this.index]!);
  }
}
