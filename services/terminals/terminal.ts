/**
 * One terminal: a command spawned in the supervisor's containment mechanism (or as its own
 * process group), its output kept, its exit read, and everything it started killed at kill
 * and release.
 *
 * Spawned with node's `child_process.spawn`, not execa: at the open-file limit node returns
 * from `spawn()` without stdio and emits `error` on the next tick, and execa 9 then throws
 * synchronously while reading the missing stdio — losing the ChildProcess, whose `error`
 * event has no listener and kills the host. Here the listener is attached before that tick.
 */
import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import type { Readable } from 'node:stream';
import { withinGrace } from '../../util/grace.js';
import type { ContainedSpawn, Containment, ContainmentMechanism, SpawnRequest } from '../containment/containment.js';
import { signalOfInitExit } from '../containment/pid-namespace.containment.js';
import { executableProblem } from '../executable.js';
import { signalGroup } from '../process-group.service.js';
import { TerminalSpawnFailed } from './terminal-errors.js';
import { TerminalOutput, type OutputBudget } from './terminal-output.js';

/** How a terminal's command ended: its exit code, or the signal that killed it. */
export interface TerminalExit {
  exitCode: number | null;
  signal: string | null;
}

/** A command to run in a terminal, in a working directory already checked. */
export interface TerminalCommand {
  command: string;
  args?: string[];
  env?: Array<{ name: string; value: string }>;
  cwd: string;
}

/** A terminal's record for the orphan sweep (services/agent-records.service.ts). */
export interface ProcessRecord {
  /** Resolves once the record is gone (never rejects); asked again, the same removal. */
  remove(): Promise<void>;
}

/** Records a spawned command for the orphan sweep; null when it is not recorded. */
export type RecordProcess = (command: string, pid: number, contained: Containment | null) => ProcessRecord | null;

/** How long output may still arrive after a command exited. */
const outputGraceMs = 200;

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

/** A command started in a terminal, or found missing (a terminal that exited 127 or 126 at once). */
export class Terminal {
  private readonly kept: TerminalOutput;
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
    byteLimit: number,
    budget: OutputBudget,
    notFound?: { exit: TerminalExit; message: string },
  ) {
    this.kept = new TerminalOutput(byteLimit, budget);
    if (!spawned) {
      this.exitSeen = true;
      this.kept.append(Buffer.from(notFound?.message ?? ''));
      this.exit = notFound?.exit ?? { exitCode: null, signal: null };
      this.exited = Promise.resolve(this.exit);
      return;
    }
    const { child, contained, initExit } = spawned;
    const streams = [child.stdout, child.stderr].filter((stream): stream is Readable => stream !== null);
    for (const stream of streams) stream.on('data', (chunk: Buffer) => this.kept.append(chunk));
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
      const recordRemoved = this.removeRecordWhenDone();
      // The output still in flight gets a short grace; a job left in the group may hold the pipes.
      await withinGrace(drained, outputGraceMs);
      await recordRemoved;
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
    request: TerminalCommand,
    byteLimit: number,
    budget: OutputBudget,
    mechanism: ContainmentMechanism | null,
    recordProcess: RecordProcess | undefined,
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
    return { ...this.kept.read(), exitStatus: this.exit };
  }

  /** The bytes kept now (counted against the session's cap until release). */
  get keptBytes(): number {
    return this.kept.keptBytes;
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
    this.releasing ??= this.kill(waitMs).then(async () => {
      this.released = true;
      this.closeStreams();
      this.releaseContainment();
      this.kept.drop();
      await this.removeRecordWhenDone();
    });
    return this.releasing;
  }

  /**
   * Removes the command's record once nothing it started can run: it exited and its
   * container was emptied — or, without one, its group was killed at release (a background
   * job may live on in the group until then). A kill that timed out leaves the record.
   */
  private removeRecordWhenDone(): Promise<void> | undefined {
    const spawned = this.spawned;
    if (!spawned?.record || !this.exitSeen) return;
    if (spawned.contained ? this.containmentReleased : this.released) return spawned.record.remove();
  }

  private closeStreams(): void {
    for (const stream of this.spawned?.child.stdio ?? []) stream?.destroy(); // stdout, stderr and the lifeline
  }

  private releaseContainment(): void {
    if (this.containmentReleased || !this.spawned?.contained) return;
    this.containmentReleased = true;
    this.spawned.contained.release();
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
