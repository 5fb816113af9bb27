/**
 * Spawning one agent process with execa: its own process group, piped stdio, a bounded
 * tail of its stderr, and the stop ladder's rungs as plain methods. No XState here.
 */
import { execa } from 'execa';
import { statSync } from 'node:fs';
import { PassThrough, type Readable, type Writable } from 'node:stream';
import type { AgentSpec } from '../core/agent-spec.js';
import type { AgentErrorKind } from '../core/errors.js';
import { withinGrace } from '../util/grace.js';
import { StderrTail } from '../util/stderr-tail.js';
import { recordSpawned, type AgentRecords } from './agent-records.service.js';
import type { ContainedSpawn, Containment, ContainmentKind, ContainmentMechanism, SpawnRequest } from './containment/containment.js';
import { signalOfInitExit } from './containment/pid-namespace.containment.js';
import { commandProblem, describeCommandProblem, type CommandProblem } from './executable.js';
import { signalGroup, waitForGroupExit } from './process-group.service.js';
import type { RuntimeCommand, RuntimeTransport } from './runtimes/runtime.js';

/** How a spawned process ended. */
export interface ProcessExit {
  exitCode: number | null;
  signal: string | null;
}

/** Why a process could not be spawned at all. */
export interface SpawnFailure {
  kind: Extract<AgentErrorKind, 'not_installed' | 'spawn_failed'>;
  detail: string;
  /** With kind `not_installed`: the command that was not found, and the spec's install hint. */
  command?: string;
  installHint?: string;
}

/**
 * What the process actor drives, whatever the process runs in (pipes here, a PTY in
 * services/pty/pty.service.ts): the pids, the outcome, and the stop ladder's rungs.
 */
export interface SupervisedProcess {
  /**
   * The spawned pid, which is also the process group id; undefined when the spawn failed.
   * Under a containment wrapper it is the wrapper's pid: see `agentPid`.
   */
  readonly pid: number | undefined;
  /** The agent's own pid on this host (the spawned pid unless a wrapper runs it). */
  readonly agentPid: Promise<number | undefined>;
  /** The containment in effect for this process; null: its process group only. */
  readonly containment: ContainmentKind | null;
  /** Resolves with the spawn failure, or null once the process is running. */
  readonly spawnFailure: Promise<SpawnFailure | null>;
  /**
   * For a process that ended before its agent answered: the spawn failure its exit stands
   * for, or null. A wrapper (a containment's shell) execs the agent itself and tells a failed
   * exec only by its exit code (126: cannot execute, 127: not found); a command changed
   * between the check before the spawn and the exec is then told as without a wrapper.
   */
  spawnFailureOfExit?(exit: ProcessExit): SpawnFailure | null;
  /**
   * Resolves once the group leader has exited and the rest of its group has been killed
   * and is gone (never rejects).
   */
  readonly exited: Promise<ProcessExit>;
  /** True until `exited` resolves. */
  isRunning(): boolean;
  /** First rung of the stop ladder: end stdin so a well-behaved agent exits by itself. */
  closeInput(): void;
  /** Signals the whole process group; no-op once its leader has exited (the group is reaped then). */
  signalGroup(signal: NodeJS.Signals): void;
}

/** A running (or failed-to-spawn) agent process, talked to over pipes. */
export interface AgentProcess extends SupervisedProcess {
  readonly stdin: Writable;
  readonly stdout: Readable;
  readonly stderr: StderrTail;
}

/** How long output pipes may stay open after the process group is gone (held by an escapee). */
const pipeDrainGraceMs = 200;

export interface SpawnOptions {
  stderrLines?: number;
  /** Runs the agent inside this mechanism (see services/containment/); none: its process group. */
  containment?: ContainmentMechanism | null;
  /** The agent's name (names its cgroup). */
  agent?: string;
  /** Where the process is recorded while it runs, for a sweep after a host crash; none: not recorded. */
  records?: AgentRecords | null;
  /** Hears every stderr line as it completes (at most 1000 characters each). */
  onStderrLine?: (line: string) => void;
  /** Written to the process's stdin before anything else (a runtime's env line: runtime.ts `envPreamble`). */
  stdinPreamble?: string;
  /** What the process leaves in its runtime (runtime.ts): recorded, and cleaned up once the process is gone, before `exited` resolves. */
  remote?: Pick<RuntimeCommand, 'leftover' | 'cleanup'>;
}

/** Spawns `spec` as the leader of a new process group. Never throws for a missing command. */
export function spawnAgentProcess(spec: AgentSpec, options: SpawnOptions = {}): AgentProcess {
  const stderr = new StderrTail(options.stderrLines ?? 20, options.onStderrLine);
  if (spec.cwd !== undefined && !isDirectory(spec.cwd)) {
    return notSpawned(stderr, { kind: 'spawn_failed', detail: `cwd ${spec.cwd} is not a directory` });
  }
  const mechanism = options.containment ?? null;
  const request: SpawnRequest = { command: spec.command, args: spec.args ?? [], agent: options.agent ?? spec.displayName ?? spec.command };
  // The command is looked at before the spawn, under every containment alike: a wrapper always
  // starts (and would tell a failed exec only as an exit code), and the spawn's own EACCES does
  // not say whether the path is a directory or a file without execute permission.
  const problemNow = () => commandProblem(spec.command, spec.cwd, spec.env?.PATH ?? process.env.PATH ?? '');
  const problem = problemNow();
  if (problem) return notSpawned(stderr, commandFailure(spec, problem));
  const launch: ContainedSpawn = mechanism ? mechanism.wrap(request) : request;
  const wrapped = launch.command !== request.command;
  // fd 3, when asked for, is the wrapper's lifeline: this process holds the other end.
  const stdio: ['pipe', 'pipe', 'pipe', ...'pipe'[]] = launch.lifeline ? ['pipe', 'pipe', 'pipe', 'pipe'] : ['pipe', 'pipe', 'pipe'];
  let child: ReturnType<typeof spawnWithExeca>;
  try {
    child = spawnWithExeca(launch, spec, stdio);
  } catch (error) {
    // execa throws synchronously for some bad input (a NUL byte in an argument, EMFILE):
    // a spawn failure like any other, never an exception out of the actor.
    return notSpawned(stderr, { kind: 'spawn_failed', detail: `${spec.command}: ${error instanceof Error ? error.message : String(error)}` });
  }
  const pid = child.pid;
  const contained: Containment | null = mechanism && pid !== undefined ? mechanism.contain(pid, request) : null;
  // Late writes to a dead child raise EPIPE on these streams; the exit is reported instead.
  child.stdin.on('error', () => {});
  child.stdout.on('error', () => {});
  child.stderr.on('error', () => {});
  child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
  if (pid !== undefined && options.stdinPreamble) child.stdin.write(options.stdinPreamble);

  const leftover = options.remote?.leftover;
  const record = pid !== undefined ? recordSpawned(options.records, { agent: request.agent, command: request.command, pid, contained, ...(leftover ? { remote: leftover } : {}) }) : null;
  let running = pid !== undefined;
  const settled = child.then(
    (result) => result,
    (error: unknown) => error as Awaited<typeof child>,
  );
  // The 'exit' event, not execa's promise: execa settles only once every stdio pipe is
  // closed, and a process left in (or escaped from) the group may hold them open.
  const exitEvent = new Promise<ProcessExit>((resolve) => {
    child.once('exit', (exitCode, signal) => {
      // A PID namespace's init reports an agent killed by signal n as exit code 128 + n.
      const initSignal = mechanism?.kind === 'pid-namespace' && signal === null ? signalOfInitExit(exitCode) : null;
      resolve(initSignal ? { exitCode: null, signal: initSignal } : { exitCode, signal });
    });
  });
  const exited: Promise<ProcessExit> =
    pid === undefined
      ? settled.then(() => ((running = false), { exitCode: null, signal: null }))
      : exitEvent.then(async (exit) => {
          running = false;
          // Whatever the agent started dies with it: its container, then its group.
          await contained?.killAll().catch(() => {});
          contained?.release();
          await reap(pid);
          // What it left in its runtime (a container) goes before the exit is told. The record
          // stays until then, so a crash meanwhile is swept — and stays if the removal failed.
          const nothingLeft = (await options.remote?.cleanup?.(exit).catch(() => false)) ?? true;
          // The record's removal runs on the thread pool while the pipes drain; both are done before the exit is told.
          const removed = nothingLeft ? record?.remove() : undefined;
          // Let the last output arrive, but do not wait on pipes an escapee holds open.
          await withinGrace(settled, pipeDrainGraceMs);
          // Under load the grace can pass before the loop reads what the kernel already holds in
          // the pipes (its timer comes before the poll in a turn): one more poll reads it, so a
          // failure keeps its stderr (a handshake failure's reason).
          await new Promise((resolve) => setImmediate(resolve));
          await removed;
          child.stdout.destroy();
          child.stderr.destroy();
          child.stdin.destroy();
          child.stdio.at(3)?.destroy(); // the lifeline, if any
          stderr.flush();
          return exit;
        });
  const spawnFailure: Promise<SpawnFailure | null> =
    pid !== undefined
      ? Promise.resolve(null)
      : settled.then((result) => {
          const code = (result as { code?: string }).code;
          const cause = (result as { cause?: unknown }).cause;
          // The system's words without the argument list (execa's message repeats the command line).
          const detail = cause instanceof Error ? cause.message : (result.shortMessage ?? result.message ?? `spawn failed (${code ?? 'unknown'})`);
          // The command changed since the check above: told as the check would have.
          const changed = code === 'ENOENT' || code === 'EACCES' ? problemNow() : null;
          if (changed) return commandFailure(spec, changed);
          if (code !== 'ENOENT') return { kind: 'spawn_failed', detail: `${spec.command}: ${detail}` };
          return { ...notInstalled(spec), detail };
        });

  return {
    pid,
    agentPid: contained ? contained.agentPid : Promise.resolve(pid),
    containment: contained ? contained.kind : null,
    stdin: child.stdin,
    stdout: child.stdout,
    stderr,
    spawnFailure,
    spawnFailureOfExit: (exit) => {
      if (!wrapped || exit.signal !== null || (exit.exitCode !== 126 && exit.exitCode !== 127)) return null;
      const changed = problemNow();
      return changed ? commandFailure(spec, changed) : null;
    },
    exited,
    isRunning: () => running,
    closeInput: () => {
      if (!child.stdin.destroyed) child.stdin.end();
    },
    signalGroup: (signal) => {
      // Once the leader has exited, its group is reaped above; its number may be reused soon after.
      if (pid !== undefined && running) signalGroup(pid, signal);
    },
  };
}

/**
 * An agent whose streams its runtime supplies (runtime.ts `RuntimeTransport`: an exec into a
 * pod over the Kubernetes API), as the process actor drives any agent process: no process of
 * this host, so no containment and no record of its own (the runtime records what it made);
 * the ladder's signals reach the agent's process group where it runs.
 */
export function transportAgentProcess(transport: RuntimeTransport, options: Pick<SpawnOptions, 'stderrLines' | 'onStderrLine'> = {}): AgentProcess {
  const stderr = new StderrTail(options.stderrLines ?? 20, options.onStderrLine);
  transport.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
  transport.stderr.on('error', () => {});
  transport.stdout.on('error', () => {});
  transport.stdin.on('error', () => {});
  let running = true;
  const exited = transport.exited.then(async (exit) => {
    running = false;
    // The last of stderr is in the stream already (it ended with the exec): one turn lets it be read.
    await new Promise((resolve) => setImmediate(resolve));
    transport.close();
    stderr.flush();
    return exit;
  });
  return {
    pid: transport.pid,
    agentPid: Promise.resolve(transport.pid),
    containment: null,
    stdin: transport.stdin,
    stdout: transport.stdout,
    stderr,
    spawnFailure: Promise.resolve(null),
    exited,
    isRunning: () => running,
    closeInput: () => transport.closeInput(),
    signalGroup: (signal) => {
      if (!running) return;
      // The actor's last word (after the in-runtime SIGKILL, or on release): make sure, then drop the stream.
      if (signal === 'SIGKILL') void transport.signalInside('SIGKILL').finally(() => transport.close());
      else void transport.signalInside('SIGTERM');
    },
  };
}

/** The spawn itself: the agent (or its wrapper) as the leader of a new process group. */
function spawnWithExeca(launch: ContainedSpawn, spec: AgentSpec, stdio: ['pipe', 'pipe', 'pipe', ...'pipe'[]]) {
  return execa(launch.command, launch.args, {
    cwd: spec.cwd,
    env: spec.env,
    extendEnv: true,
    detached: true, // its own process group: one signal reaches the agent and its tools
    stdio,
    buffer: false,
    reject: false,
    cleanup: false, // the supervisor owns the lifetime; the ladder and cleanup kill the group
    stripFinalNewline: false,
  });
}

/** A process that was never spawned: `spawnFailure` says why. */
function notSpawned(stderr: StderrTail, failure: SpawnFailure): AgentProcess {
  return {
    pid: undefined,
    agentPid: Promise.resolve(undefined),
    containment: null,
    stdin: new PassThrough(),
    stdout: new PassThrough(),
    stderr,
    // Told on a later turn of the event loop, as a real spawn's error is: the caller sees the
    // agent starting first, whichever way the spawn fails.
    spawnFailure: new Promise((resolve) => setImmediate(() => resolve(failure))),
    exited: new Promise((resolve) => setImmediate(() => resolve({ exitCode: null, signal: null }))),
    isRunning: () => false,
    closeInput: () => {},
    signalGroup: () => {},
  };
}

/** SIGKILLs what is left of the group after its leader exited, and waits until nothing runs. */
async function reap(pgid: number, timeoutMs = 2000): Promise<void> {
  signalGroup(pgid, 'SIGKILL');
  await waitForGroupExit(pgid, timeoutMs);
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

function notInstalled(spec: Pick<AgentSpec, 'command' | 'installHint'>): SpawnFailure {
  return { kind: 'not_installed', detail: `${spec.command}: command not found`, command: spec.command, ...(spec.installHint ? { installHint: spec.installHint } : {}) };
}

/** A command that cannot be run: not installed when nothing has its name, else a spawn failure naming the path and what is wrong with it. */
export function commandFailure(spec: Pick<AgentSpec, 'command' | 'installHint'>, problem: CommandProblem): SpawnFailure {
  if (problem.problem === 'missing') return notInstalled(spec);
  return { kind: 'spawn_failed', detail: describeCommandProblem(spec.command, problem) };
}
