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
 * Spawned with node's `child_process.spawn`, not execa: at the open-file limit node returns
 * from `spawn()` without stdio and emits `error` on the next tick, and execa 9 then throws
 * synchronously while reading the missing stdio — losing the ChildProcess, whose `error`
 * event has no listener and kills the host. Here the listener is attached before that tick.
 */
import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import { withinGrace } from '../util/grace.js';
import type { ContainedSpawn, Containment, ContainmentMechanism, SpawnRequest } from './containment/containment.js';
import { signalOfInitExit } from './containment/pid-namespace.containment.js';
import { executableProblem } from './executable.js';
import { realClock, type Clock } from '../core/clock.js';
import { signalGroup } from './process-group.service.js';
import type { OpenedDirectory } from './fs-sandbox.service.js';

export interface TerminalExit {
  exitCode: number | null;
  signal: string | null;
}

export interface TerminalRequest {
  command: string;
  args?: string[];
  env?: Array<{ name: string; value: string }>;
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
  recordProcess?: (command: string, pid: number, contained: Containment | null) => ProcessRecord | null;
}

/** A terminal's record for the orphan sweep (services/agent-records.service.ts). */
export interface ProcessRecord {
  remove(): void;
}

/** The defaults of {@link TerminalSetOptions}. */
export const terminalDefaults = {
  maxTerminals: 16,
  maxOutputBytes: 8 * 1024 * 1024,
  requestTimeoutMs: 10_000,
} as const;

/** How long output may still arrive after a command exited. */
const outputGraceMs = 200;
/** Reads smaller than this are merged into the chunk before them. */
const mergeBelowBytes = 8 * 1024;

/** The bytes kept by the terminals of one session, against the session's cap. */
class OutputBudget {
  kept = 0;
  constructor(readonly cap: number) {}
}

/** A command that was spawned: the process (the wrapper, under a mechanism) and its container. */
interface Spawned {
  child: ChildProcess;
  pid: number;
  contained: Containment | null;
  /** Under a PID namespace the wrapper reports a command killed by signal n as 128 + n. */
  initExit: boolean;
  /** Its record for the orphan sweep, until nothing it started runs. */
  record: ProcessRecord | null;
}

class Terminal {
  private chunks: Buffer[] = [];
  private bytes = 0;
  private truncatedOutput = false;
  /** Published once the output that came with the exit has been read. */
  exit: TerminalExit | null = null;
  readonly exited: Promise<TerminalExit>;
  /** True once the command's exit was seen: its pid (the group id) is no longer ours. */
  private exitSeen = false;
  private released = false;
  private releasing: Promise<void> | undefined;
  private containmentReleased = false;

  private constructor(
    private readonly spawned: Spawned | null,
    private readonly byteLimit: number,
    private readonly budget: OutputBudget,
    notFound?: { exit: TerminalExit; message: string },
  ) {
    if (!spawned) {
      this.exitSeen = true;
      this.append(Buffer.from(notFound?.message ?? ''));
      this.exit = notFound?.exit ?? { exitCode: null, signal: null };
      this.exited = Promise.resolve(this.exit);
      return;
    }
    const { child, contained, initExit } = spawned;
    const streams = [child.stdout, child.stderr].filter((stream): stream is Readable => stream !== null);
    for (const stream of streams) stream.on('data', (chunk: Buffer) => this.append(chunk));
    const drained = Promise.all(streams.map((stream) => new Promise<void>((resolve) => (stream.readableEnded || stream.destroyed ? resolve() : stream.once('close', () => resolve())))));
    // The command's own exit, not its pipes closing (a background job may hold them).
    const exitEvent = new Promise<TerminalExit>((resolve) => {
      child.once('exit', (exitCode, signal) => {
        this.exitSeen = true;
        const initSignal = initExit && signal === null ? signalOfInitExit(exitCode) : null;
        resolve(initSignal ? { exitCode: null, signal: initSignal } : { exitCode, signal });
      });
    });
    this.exited = exitEvent.then(async (exit) => {
      // In a container, what the command left running dies with it (as in a PID namespace,
      // where the kernel does it anyway): its pipes close, and every descriptor is freed.
      if (contained) {
        await contained.killAll().catch(() => {});
        this.releaseContainment();
      }
      this.removeRecordWhenDone();
      // The output still in flight gets a short grace; a job left in the group may hold the pipes.
      await withinGrace(drained, outputGraceMs);
      if (contained) this.closeStreams();
      this.exit = exit;
      return exit;
    });
  }

  /**
   * Spawns the command in `mechanism` (or as its own process group). Resolves once it runs;
   * rejects with {@link TerminalSpawnFailed} when it could not be started. A missing command
   * is a terminal that exited 127 at once, as in a shell.
   */
  static start(
    request: Omit<TerminalRequest, 'cwd'> & { cwd: string },
    byteLimit: number,
    budget: OutputBudget,
    mechanism: ContainmentMechanism | null,
    recordProcess: TerminalSetOptions['recordProcess'],
  ): Promise<Terminal> {
    const env: NodeJS.ProcessEnv = { ...process.env, ...Object.fromEntries((request.env ?? []).map((variable) => [variable.name, variable.value])) };
    // A wrapper always starts: a missing command is found missing here, under every mechanism alike.
    const problem = executableProblem(request.command, request.cwd, env.PATH ?? '');
    if (problem) {
      const notFound = problem === 'ENOENT'
        ? { exit: { exitCode: 127, signal: null }, message: `${request.command}: command not found\n` }
        : { exit: { exitCode: 126, signal: null }, message: `${request.command}: permission denied\n` };
      return Promise.resolve(new Terminal(null, byteLimit, budget, notFound));
    }
    const spawnRequest: SpawnRequest = { command: request.command, args: request.args ?? [], agent: 'terminal' };
    let launch: ContainedSpawn;
    try {
      launch = mechanism ? mechanism.wrap(spawnRequest) : spawnRequest;
    } catch (error) {
      return Promise.reject(new TerminalSpawnFailed(request.command, error));
    }
    // fd 3, when asked for, is the wrapper's lifeline: this process holds the other end.
    const stdio: StdioOptions = launch.lifeline ? ['ignore', 'pipe', 'pipe', 'pipe'] : ['ignore', 'pipe', 'pipe'];
    let child: ChildProcess;
    try {
      child = spawn(launch.command, launch.args, { cwd: request.cwd, env, detached: true, stdio });
    } catch (error) {
      abandonWrap(mechanism, spawnRequest);
      return Promise.reject(new TerminalSpawnFailed(request.command, error));
    }
    // Listened to before the next tick, where node reports a spawn that failed (EMFILE,
    // EAGAIN, ENOENT...); later errors (a failed kill) change nothing: the exit is reported.
    const failed = new Promise<Error>((resolve) => child.on('error', resolve));
    // After a failed spawn node has set up no stdio at all (null, not an array).
    for (const stream of (child.stdio as ChildProcess['stdio'] | null) ?? []) stream?.on('error', () => {});
    const pid = child.pid;
    if (pid === undefined) {
      abandonWrap(mechanism, spawnRequest);
      return failed.then((error) => Promise.reject(new TerminalSpawnFailed(request.command, error)));
    }
    let contained: Containment | null = null;
    try {
      contained = mechanism ? mechanism.contain(pid, spawnRequest) : null;
    } catch {
      // Not contained (it could not be): its process group is still killed.
    }
    const record = recordProcess?.(request.command, pid, contained) ?? null;
    return Promise.resolve(new Terminal({ child, pid, contained, initExit: mechanism?.kind === 'pid-namespace', record }, byteLimit, budget));
  }

  output(): { output: string; truncated: boolean; exitStatus: TerminalExit | null } {
    const buffer = Buffer.concat(this.chunks);
    return { output: decodeFromCharBoundary(buffer), truncated: this.truncatedOutput, exitStatus: this.exit };
  }

  /** The bytes kept now (counted against the session's cap until release). */
  get keptBytes(): number {
    return this.bytes;
  }

  /**
   * SIGKILLs everything the command started: its container (and its process group while
   * the command runs); without a container its process group — also after the command
   * itself exited, since a background job may live on in it, but never after release (the
   * group id may be reused). Resolves once the command has exited and its container is
   * empty, or after `waitMs`.
   */
  async kill(waitMs: number): Promise<void> {
    const spawned = this.spawned;
    if (this.released || !spawned) return;
    const deadline = Date.now() + waitMs;
    // The container first: /proc tracking must see the command alive to find its children.
    if (spawned.contained && !this.exitSeen) await withinGrace(spawned.contained.killAll().catch(() => {}), waitMs);
    // Without a container, or should the container have missed the command: its group.
    if (!spawned.contained || !this.exitSeen) killGroup(spawned.pid);
    await withinGrace(this.exited, Math.max(0, deadline - Date.now()));
  }

  /** Kills what is left, frees the pipes, the lifeline and the container, and drops the output. */
  release(waitMs: number): Promise<void> {
    this.releasing ??= this.kill(waitMs).then(() => {
      this.released = true;
      this.closeStreams();
      this.releaseContainment();
      this.removeRecordWhenDone();
      this.budget.kept -= this.bytes;
      this.bytes = 0;
      this.chunks = [];
    });
    return this.releasing;
  }

  /**
   * Removes the command's record once nothing it started can run: it exited and its
   * container was emptied — or, without one, its group was killed at release (a background
   * job may live on in the group until then). A kill that timed out leaves the record.
   */
  private removeRecordWhenDone(): void {
    const spawned = this.spawned;
    if (!spawned?.record || !this.exitSeen) return;
    if (spawned.contained ? this.containmentReleased : this.released) spawned.record.remove();
  }

  private closeStreams(): void {
    for (const stream of this.spawned?.child.stdio ?? []) stream?.destroy(); // stdout, stderr and the lifeline
  }

  private releaseContainment(): void {
    if (this.containmentReleased || !this.spawned?.contained) return;
    this.containmentReleased = true;
    this.spawned.contained.release();
  }

  /**
   * Keeps the newest bytes: at most this terminal's limit, and at most what the session's
   * cap leaves beside what its other terminals keep. The oldest bytes go first.
   */
  private append(chunk: Buffer): void {
    if (this.released || chunk.length === 0) return;
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
      this.truncatedOutput = true;
      const dropped = Math.min(first.length, excess);
      if (dropped === first.length) this.chunks.shift();
      else this.chunks[0] = first.subarray(dropped);
      this.bytes -= dropped;
      this.budget.kept -= dropped;
    }
  }
}

/**
 * A wrap whose spawn failed: the cgroup mechanism made a cgroup for it that no contain()
 * will claim. Claimed here with pid 0 — no process has it (/proc/0 does not exist), so
 * nothing is signalled — emptied (it is empty) and removed.
 */
function abandonWrap(mechanism: ContainmentMechanism | null, request: SpawnRequest): void {
  if (mechanism?.kind !== 'cgroup') return;
  try {
    const orphan = mechanism.contain(0, request);
    void orphan.killAll().catch(() => {}).then(() => orphan.release());
  } catch {
    // Nothing was left to claim.
  }
}

/** SIGKILL to a process group; gone already (or not ours to signal) is fine. */
function killGroup(pgid: number): void {
  try {
    signalGroup(pgid, 'SIGKILL');
  } catch {
    // EPERM: not ours any more.
  }
}

/** Drops a partial UTF-8 sequence left at the start by truncation. */
function decodeFromCharBoundary(buffer: Buffer): string {
  let start = 0;
  while (start < buffer.length && start < 4 && (buffer[start]! & 0xc0) === 0x80) start++;
  return buffer.subarray(start).toString('utf8');
}

/** Rejects with {@link TerminalTimeout} when `promise` takes longer than `ms` on `clock`. */
async function bounded<T>(promise: Promise<T>, ms: number, what: string, clock: Clock): Promise<T> {
  let timer: unknown;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = clock.setTimeout(() => reject(new TerminalTimeout(what, ms)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clock.clearTimeout(timer);
  }
}

/** The terminals of one session. */
/** How many released terminals' last output a session keeps, for the tool calls that show them. */
const keptReleasedOutputs = 8;

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
        terminal = await bounded(starting, this.requestTimeoutMs, 'terminal/create', this.clock);
      } catch (error) {
        // Timed out (or failed): a cwd check that answers later starts nothing, and a
        // command that started in the last instant is killed at once (nobody knows its id).
        abandoned = true;
        void starting.then((late) => late.release(this.requestTimeoutMs)).catch(() => {});
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

/** A terminal request refused or failed for a reason the agent should hear as it is. */
export class TerminalFailure extends Error {
  constructor(
    readonly reason: 'terminal_limit' | 'spawn_failed' | 'timeout',
    message: string,
  ) {
    super(message);
  }
}

/** `terminal/create` when the session already has `limit` live terminals. */
export class TerminalLimitReached extends TerminalFailure {
  constructor(readonly limit: number) {
    super('terminal_limit', `Too many terminals: this session already has ${limit} (the limit); release one first`);
  }
}

/** The command could not be started (EMFILE, EAGAIN, ENOMEM...); nothing runs. */
export class TerminalSpawnFailed extends TerminalFailure {
  readonly code: string | undefined;
  constructor(command: string, cause: unknown) {
    const code = (cause as NodeJS.ErrnoException | null)?.code;
    const detail = code ? `${code}${spawnErrorText[code] ? ` (${spawnErrorText[code]})` : ''}` : cause instanceof Error ? cause.message : String(cause);
    super('spawn_failed', `Could not start ${command}: ${detail}`);
    this.code = code;
  }
}

const spawnErrorText: Record<string, string> = {
  EMFILE: 'too many open files in the supervisor',
  ENFILE: 'too many open files on this host',
  EAGAIN: 'no more processes can be created now',
  ENOMEM: 'out of memory',
  EACCES: 'permission denied',
  ENOENT: 'no such file or directory',
};

/** A terminal request that did not complete within the request timeout. */
export class TerminalTimeout extends TerminalFailure {
  constructor(what: string, ms: number) {
    super('timeout', `${what} did not complete within ${ms} ms`);
  }
}
