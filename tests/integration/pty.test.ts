/**
 * Real processes in real pseudo-terminals (docs/pty.md): tests/fixtures/interactive-cli.mjs
 * and small shells under `spawnPtyProcess`, rendered on a `PtyScreen`, their activity
 * inferred by `ptyActivityMachine` on a SimulatedClock fed with their output and exits.
 * Between them these runs take every state and transition of the activity machine.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createActor, SimulatedClock } from 'xstate';
import { activityOf, ptyActivityMachine, type PtyActivityEmitted, type PtyActivityInput } from '../../machines/pty-activity.machine.js';
import { AgentRecords } from '../../services/agent-records.service.js';
import { readProcEntry, readProcTable } from '../../services/containment/proc-table.js';
import { groupIsAlive } from '../../services/process-group.service.js';
import { PtyScreen, spawnPtyProcess, type PtyProcess, type PtySpawnSpec } from '../../services/pty/pty.service.js';

const cliPath = fileURLToPath(new URL('../fixtures/interactive-cli.mjs', import.meta.url));
const cli: PtySpawnSpec = { command: process.execPath, args: [cliPath] };
const banner = 'interactive-cli 1.0';
const separator = '──── restarted: exited with code 3 ────';

/** Every pid this file spawned: none may run once it is done. */
const spawnedPids: number[] = [];
/** The processes of the running test: each must have ended by its end. */
const live: PtyProcess[] = [];

afterEach(async () => {
  const left = live.splice(0).filter((child) => child.isRunning());
  for (const child of left) child.signalGroup('SIGKILL');
  await Promise.all(left.map((child) => child.exited));
  expect(left.map((child) => child.pid), 'processes the test left running (now killed)').toEqual([]);
});

afterAll(async () => {
  for (const pid of spawnedPids) {
    await until(() => !isAlive(pid) && !groupIsAlive(pid), 2_000).catch(() => {});
    expect(isAlive(pid), `pid ${pid} still runs`).toBe(false);
    expect(groupIsAlive(pid), `process group ${pid} still runs`).toBe(false);
  }
});

/**
 * `process.kill(pid, 0)` succeeds, and it is not a zombie: a killed grandchild is reparented
 * to a PID 1 that may be slow to reap it (or never does, in some containers), yet runs no code.
 */
function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== 'ESRCH';
  }
  return readProcEntry(pid)?.state !== 'Z';
}

async function until(condition: () => boolean, timeoutMs = 5_000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * An activity actor on a SimulatedClock and the processes it watches, one after another on
 * one screen, wired as the runtime would: output → `output`, typing → `input`, exit →
 * `exited`, a new process → `restarted`.
 */
function watch(screen: PtyScreen, input: PtyActivityInput = {}) {
  const clock = new SimulatedClock();
  const actor = createActor(ptyActivityMachine, { clock, input });
  const reports: PtyActivityEmitted[] = [];
  actor.on('activity', (report) => reports.push(report));
  actor.start();
  let output = '';
  let current: PtyProcess | null = null;
  const self = {
    actor,
    clock,
    reports,
    states: () => reports.map((report) => report.state),
    value: () => activityOf(actor.getSnapshot().value),
    /** Everything printed since the last `mark()`. */
    output: () => output,
    mark: () => void (output = ''),
    spawn(spec: PtySpawnSpec): PtyProcess {
      if (current) actor.send({ type: 'restarted' });
      output = '';
      const child = spawnPtyProcess(spec, {
        screen,
        onData: (data) => {
          output += data;
          actor.send({ type: 'output' });
        },
      });
      if (child.pid !== undefined) spawnedPids.push(child.pid);
      live.push(child);
      void child.exited.then((exit) => child.pid !== undefined && actor.send({ type: 'exited', ...exit }));
      current = child;
      return child;
    },
    /** Types a line (Enter is `\r` on a terminal) and tells the machine. */
    type(line: string) {
      current?.write(`${line}\r`);
      actor.send({ type: 'input' });
    },
    /** Waits until the output since the last mark contains `text`. */
    printed: (text: string, timeoutMs = 5_000) => until(() => output.includes(text), timeoutMs, JSON.stringify(text)),
    /** Waits until the CLI printed its prompt after `text` (readline ends it with `> ` and a cursor move). */
    prompted: (after: string) => until(() => output.includes(after) && output.endsWith('> \x1b[3G'), 5_000, `the prompt after ${after}`),
    advance: (ms: number) => clock.increment(ms),
  };
  return self;
}

describe('a CLI in a pseudo-terminal', () => {
  it('runs, needs input, goes stale, comes back, exits with its code, and restarts below a separator', async () => {
    const screen = new PtyScreen();
    const pty = watch(screen);
    const first = pty.spawn(cli);
    expect(first.pid).toBeTypeOf('number');
    expect(await first.spawnFailure).toBeNull();
    expect(first.isRunning()).toBe(true);
    await pty.prompted(banner);
    expect(pty.value()).toBe('running');

    pty.mark();
    pty.type('hello');
    await pty.prompted('you said: hello');
    await screen.settled();
    expect(screen.text()).toContain('you said: hello');

    // The output has stopped at the prompt: silence is timed from the last chunk.
    pty.advance(4_999);
    expect(pty.value()).toBe('running');
    pty.advance(1);
    expect(pty.value()).toBe('needsInput');
    pty.advance(60_000);
    expect(pty.value()).toBe('stale');

    // Typing answers a stale CLI; its late output then answers needsInput by itself.
    pty.mark();
    pty.type('later 1000');
    expect(pty.value()).toBe('running');
    await pty.printed('later 1000\r\r\n');
    pty.advance(5_000);
    expect(pty.value()).toBe('needsInput');
    expect(pty.output(), 'the late output came too early').not.toContain('later done');
    await pty.prompted('later done');
    expect(pty.value()).toBe('running');

    // Late output after a stale wait.
    pty.mark();
    pty.type('later 1000');
    await pty.printed('later 1000\r\r\n');
    pty.advance(5_000);
    pty.advance(60_000);
    expect(pty.value()).toBe('stale');
    expect(pty.output(), 'the late output came too early').not.toContain('later done');
    await pty.prompted('later done');
    expect(pty.value()).toBe('running');

    // Typing answers needsInput; `silent` then prints nothing but its echo.
    pty.advance(5_000);
    expect(pty.value()).toBe('needsInput');
    pty.mark();
    pty.type('silent');
    expect(pty.value()).toBe('running');
    await pty.printed('silent\r\r\n');

    pty.type('fail');
    expect(await first.exited).toEqual({ exitCode: 3, signal: null });
    expect(first.isRunning()).toBe(false);
    expect(pty.value()).toBe('exited');
    expect(pty.reports.at(-1)).toEqual({ type: 'activity', state: 'exited', exitCode: 3, signal: null });
    expect(pty.states()).toEqual([
      ...['starting', 'running', 'needsInput', 'stale'],
      ...['running', 'needsInput', 'running'], // later 1000, answered in needsInput
      ...['needsInput', 'stale', 'running'], // later 1000, answered in stale
      ...['needsInput', 'running', 'exited'], // silent, fail
    ]);

    // The restart: a separator, then the new process on the same screen.
    screen.separator(separator);
    const second = pty.spawn(cli);
    expect(pty.value()).toBe('starting');
    await pty.prompted(banner);
    expect(pty.value()).toBe('running');
    await screen.settled();
    const lines = screen.scrollback();
    expect(lines[0]).toContain(banner);
    const hello = lines.indexOf('you said: hello');
    const cut = lines.indexOf(separator);
    const newBanner = lines.findLastIndex((line) => line.includes(banner));
    expect(hello).toBeGreaterThan(0);
    expect(cut).toBeGreaterThan(hello);
    expect(lines[cut - 1]).toBe('fail'); // typed after `silent`, which prints no prompt
    expect(newBanner).toBe(cut + 1);
    // The new process starts on a screen of its own; the old lines are above it.
    expect(screen.text().split('\n')[0]).toContain(banner);
    expect(screen.text()).not.toContain('you said: hello');

    pty.type('quit');
    expect(await second.exited).toEqual({ exitCode: 0, signal: null });
    expect(pty.states().slice(-3)).toEqual(['starting', 'running', 'exited']);
    expect(pty.reports.at(-1)).toMatchObject({ exitCode: 0 });
    screen.dispose();
  });

  it('resizes the PTY (the CLI sees it) and the screen', async () => {
    const screen = new PtyScreen({ cols: 80, rows: 24 });
    const pty = watch(screen);
    const child = pty.spawn(cli);
    await pty.prompted(banner);
    pty.type('size');
    await pty.prompted('size: 80x24');
    pty.mark();
    child.resize(100, 30);
    expect([screen.cols, screen.rows]).toEqual([100, 30]);
    // Node learns the size on SIGWINCH (readline then redraws its prompt): ask after that.
    await pty.prompted('');
    pty.type('size');
    await pty.prompted('size: 100x30');
    screen.resize(90, 20);
    expect([screen.cols, screen.rows]).toEqual([90, 20]);
    pty.type('quit');
    await child.exited;
    const sized = pty.spawn({ ...cli, args: [cliPath] });
    sized.resize(70, 10);
    await pty.prompted(banner);
    expect([screen.cols, screen.rows]).toEqual([70, 10]);
    sized.closeInput();
    await sized.exited;
    // Given a size, the spawn resizes the screen to it.
    const other = new PtyScreen();
    const given = spawnPtyProcess({ command: 'sh', args: ['-c', 'stty size'] }, { screen: other, cols: 50, rows: 12 });
    spawnedPids.push(given.pid ?? -1);
    live.push(given);
    expect(await given.exited).toEqual({ exitCode: 0, signal: null });
    await other.settled();
    expect([other.cols, other.rows]).toEqual([50, 12]);
    expect(other.text()).toBe('12 50');
    other.dispose();
    screen.dispose();
  });

  it('keeps a burst of output in the scrollback, in order, bounded by scrollbackLines', async () => {
    const screen = new PtyScreen({ cols: 80, rows: 24 });
    const pty = watch(screen);
    const child = pty.spawn(cli);
    await pty.prompted(banner);
    pty.mark();
    pty.type('burst');
    await pty.prompted('burst line 100');
    await screen.settled();
    const lines = screen.scrollback();
    const first = lines.indexOf('burst line 1');
    expect(lines.slice(first, first + 100)).toEqual(Array.from({ length: 100 }, (_, i) => `burst line ${i + 1}`));
    expect(screen.text().split('\n')).toHaveLength(24);
    expect(screen.text()).toContain('burst line 100');
    pty.type('quit');
    await child.exited;
    screen.dispose();

    const small = new PtyScreen({ cols: 40, rows: 5, scrollbackLines: 20 });
    for (let i = 1; i <= 100; i++) small.write(`line ${i}\r\n`);
    await small.settled();
    const kept = small.scrollback();
    expect(kept.length).toBeLessThanOrEqual(25);
    expect(kept.at(-1)).toBe('line 100');
    expect(kept[0]).toBe(`line ${100 - kept.length + 1}`);
    small.dispose();
    expect(small.scrollback()).toEqual([]);
  });

  it('joins wrapped lines in the scrollback, and a separator ends a line left open and a full-screen program', async () => {
    const screen = new PtyScreen({ cols: 10, rows: 4 });
    screen.write('0123456789abcdef\r\nprompt> ');
    // A program that died in the alternate screen, in red, with a scroll region there.
    screen.write('\x1b[?1049h\x1b[31m\x1b[2;3rfull screen');
    screen.separator('-- cut --');
    screen.write('next');
    await screen.settled();
    expect(screen.scrollback()).toEqual(['0123456789abcdef', 'prompt>', '-- cut --', 'next']);
    expect(screen.text()).toBe('next');
    // One that left a scroll region and the cursor at the top of the normal screen; two separators in a row.
    screen.write('\r\nmore\r\n\x1b[1;2r');
    screen.separator('-- one --');
    screen.separator('-- two --');
    screen.write('last');
    await screen.settled();
    expect(screen.scrollback()).toEqual(['0123456789abcdef', 'prompt>', '-- cut --', 'next', 'more', '-- one --', '-- two --', 'last']);
    screen.dispose();
  });

  it('closeInput (Ctrl-D) ends a line-reading CLI', async () => {
    const screen = new PtyScreen();
    const pty = watch(screen);
    const child = pty.spawn(cli);
    await pty.prompted(banner);
    child.closeInput();
    expect(await child.exited).toEqual({ exitCode: 0, signal: null });
    screen.dispose();
  });

  it('ends a CLI that ignores SIGTERM with SIGKILL of its group (silent from the start: needsInput, then stale)', async () => {
    const screen = new PtyScreen();
    const pty = watch(screen);
    const child = pty.spawn({ command: 'sh', args: ['-c', 'trap "" TERM; sleep 30; echo survived'] });
    // The trap is set once sh runs its child `sleep`: in the same session and group as sh.
    const group = () => [...readProcTable().values()].filter((entry) => entry.pgid === child.pid);
    await until(() => group().some((entry) => entry.comm === 'sleep'), 5_000, 'sleep to run');
    expect(group().every((entry) => entry.sid === child.pid)).toBe(true);
    pty.advance(5_000);
    expect(pty.value()).toBe('needsInput');
    pty.advance(60_000);
    expect(pty.value()).toBe('stale');
    child.signalGroup('SIGTERM');
    await sleep(300);
    expect(child.isRunning()).toBe(true);
    child.signalGroup('SIGKILL');
    expect(await child.exited).toEqual({ exitCode: null, signal: 'SIGKILL' });
    expect(child.isRunning()).toBe(false);
    expect(groupIsAlive(child.pid ?? -1)).toBe(false);
    expect(pty.states()).toEqual(['starting', 'needsInput', 'stale', 'exited']);
    expect(pty.reports.at(-1)).toEqual({ type: 'activity', state: 'exited', exitCode: null, signal: 'SIGKILL' });
    child.signalGroup('SIGKILL'); // no-op once gone
    child.write('ignored\r');
    screen.dispose();
  });

  it('kills what is left of the group when the process exits, but not a descendant in a session of its own', async () => {
    const screen = new PtyScreen();
    // A background child that ignores the kernel's SIGHUP: only the reap after the exit ends it.
    const pty = watch(screen);
    const leader = pty.spawn({ command: 'sh', args: ['-c', 'trap "" HUP; sleep 30 & echo "child $!"'] });
    await pty.printed('\r\n');
    const child = Number(/child (\d+)/.exec(pty.output())?.[1]);
    spawnedPids.push(child);
    expect(await leader.exited).toEqual({ exitCode: 0, signal: null });
    expect(isAlive(child)).toBe(false);

    // setsid: a new session and group, out of reach of the group's signals (docs/pty.md).
    const escaping = watch(screen);
    const parent = escaping.spawn({ command: 'sh', args: ['-c', 'setsid sleep 30 & echo "escapee $!"; wait'] });
    await escaping.printed('\r\n');
    const escapee = Number(/escapee (\d+)/.exec(escaping.output())?.[1]);
    spawnedPids.push(escapee);
    await until(() => readProcTable().get(escapee)?.comm === 'sleep', 5_000, 'the escapee to run');
    parent.signalGroup('SIGKILL');
    expect(await parent.exited).toEqual({ exitCode: null, signal: 'SIGKILL' });
    expect(isAlive(escapee)).toBe(true);
    expect(readProcTable().get(escapee)?.sid).toBe(escapee);
    process.kill(escapee, 'SIGKILL');
    screen.dispose();
  });

  it('SIGTERM ends a CLI waiting for input; an exit before any output leaves starting', async () => {
    const screen = new PtyScreen();
    const pty = watch(screen);
    const child = pty.spawn(cli);
    await pty.prompted(banner);
    pty.advance(5_000);
    expect(pty.value()).toBe('needsInput');
    child.signalGroup('SIGTERM');
    expect(await child.exited).toEqual({ exitCode: null, signal: 'SIGTERM' });
    expect(pty.states()).toEqual(['starting', 'running', 'needsInput', 'exited']);

    const quiet = watch(screen);
    const silent = quiet.spawn({ command: 'sh', args: ['-c', 'exit 5'] });
    expect(await silent.exited).toEqual({ exitCode: 5, signal: null });
    expect(quiet.states()).toEqual(['starting', 'exited']);
    screen.dispose();
  });

  it('reports a command that does not exist as not_installed, and a bad cwd as spawn_failed, without throwing', async () => {
    const screen = new PtyScreen();
    const missing = spawnPtyProcess({ command: 'agentvisor-no-such-command', installHint: 'npm i -g nothing' }, { screen });
    expect(missing.pid).toBeUndefined();
    expect(missing.isRunning()).toBe(false);
    expect(await missing.spawnFailure).toEqual({
      kind: 'not_installed',
      detail: 'agentvisor-no-such-command: command not found',
      command: 'agentvisor-no-such-command',
      installHint: 'npm i -g nothing',
    });
    expect(await missing.exited).toEqual({ exitCode: null, signal: null });
    missing.write('x');
    missing.closeInput();
    missing.signalGroup('SIGKILL');
    expect(await spawnPtyProcess({ command: './nowhere/cli' }, { screen }).spawnFailure).toMatchObject({ kind: 'not_installed' });
    expect(await spawnPtyProcess({ command: 'sh', cwd: '/nonexistent-dir' }, { screen }).spawnFailure).toMatchObject({ kind: 'spawn_failed' });
    expect(await spawnPtyProcess({ command: cliPath }, { screen }).spawnFailure).toMatchObject({ kind: 'spawn_failed' });
    screen.dispose();
  });

  it('records the process while it runs, for a sweep after a host crash', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'agentvisor-pty-records-'));
    try {
      const records = new AgentRecords(dir);
      const screen = new PtyScreen();
      const child = spawnPtyProcess(cli, { screen, records, agent: 'cli' });
      spawnedPids.push(child.pid ?? -1);
      live.push(child);
      const [entry] = records.read();
      expect(entry?.record).toMatchObject({ agent: 'cli', command: process.execPath, pgid: child.pid, sid: child.pid, containment: null });
      expect(entry?.record.agentProcess?.pid).toBe(child.pid);
      child.signalGroup('SIGKILL');
      await child.exited;
      expect(records.read()).toEqual([]);
      screen.dispose();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('leaves no handle, listener or file descriptor behind', async () => {
    const cycle = async () => {
      const screen = new PtyScreen();
      const child = spawnPtyProcess({ command: 'sh', args: ['-c', 'echo hi'] }, { screen });
      spawnedPids.push(child.pid ?? -1);
      live.push(child);
      expect(await child.exited).toEqual({ exitCode: 0, signal: null });
      await screen.settled();
      expect(screen.text()).toBe('hi');
      screen.dispose();
    };
    await cycle(); // load node-pty and xterm once
    await sleep(50);
    const handles = process.getActiveResourcesInfo().length;
    const fds = readdirSync('/proc/self/fd').length;
    for (let i = 0; i < 20; i++) await cycle();
    await sleep(50);
    expect(process.getActiveResourcesInfo().length).toBeLessThanOrEqual(handles);
    expect(readdirSync('/proc/self/fd').length).toBeLessThanOrEqual(fds);
  });
});
