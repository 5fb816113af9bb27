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
import { signalGroup, waitForGroupExit } from './process-group.service.js';

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

/** A running (or failed-to-spawn) agent process. */
export interface AgentProcess {
  /** The pid, which is also the process group id; undefined when the spawn failed. */
  readonly pid: number | undefined;
  readonly stdin: Writable;
  readonly stdout: Readable;
  readonly stderr: StderrTail;
  /** Resolves with the spawn failure, or null once the process is running. */
  readonly spawnFailure: Promise<SpawnFailure | null>;
  /**
   * Resolves once the group leader has exited and the rest of its group has been killed
   * and is gone (never rejects).
   */
  readonly exited: Promise<ProcessExit>;
  /** True until `exited` resolves. */
  isRunning(): boolean;
  /** First rung of the stop ladder: end stdin so a well-behaved agent exits by itself. */
  closeInput(): void;
  /** Signals the whole process group; no-op once it is gone. */
  signalGroup(signal: NodeJS.Signals): void;
}

/** How long output pipes may stay open after the process group is gone (held by an escapee). */
const pipeDrainGraceMs = 200;

/** Spawns `spec` as the leader of a new process group. Never throws for a missing command. */
export function spawnAgentProcess(spec: AgentSpec, options: { stderrLines?: number } = {}): AgentProcess {
  const stderr = new StderrTail(options.stderrLines ?? 20);
  if (spec.cwd !== undefined && !isDirectory(spec.cwd)) {
    return notSpawned(stderr, { kind: 'spawn_failed', detail: `cwd ${spec.cwd} is not a directory` });
  }
  const child = execa(spec.command, spec.args ?? [], {
    cwd: spec.cwd,
    env: spec.env,
    extendEnv: true,
    detached: true, // its own process group: one signal reaches the agent and its tools
    stdin: 'pipe',
    stdout: 'pipe',
    stderr: 'pipe',
    buffer: false,
    reject: false,
    cleanup: false, // the supervisor owns the lifetime; the ladder and cleanup kill the group
    stripFinalNewline: false,
  });
  const pid = child.pid;
  // Late writes to a dead child raise EPIPE on these streams; the exit is reported instead.
  child.stdin.on('error', () => {});
  child.stdout.on('error', () => {});
  child.stderr.on('error', () => {});
  child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));

  let running = pid !== undefined;
  const settled = child.then(
    (result) => result,
    (error: unknown) => error as Awaited<typeof child>,
  );
  // The 'exit' event, not execa's promise: execa settles only once every stdio pipe is
  // closed, and a process left in (or escaped from) the group may hold them open.
  const exitEvent = new Promise<ProcessExit>((resolve) => {
    child.once('exit', (exitCode, signal) => resolve({ exitCode, signal }));
  });
  const exited: Promise<ProcessExit> =
    pid === undefined
      ? settled.then(() => ((running = false), { exitCode: null, signal: null }))
      : exitEvent.then(async (exit) => {
          running = false;
          await reap(pid);
          // Let the last output arrive, but do not wait on pipes an escapee holds open.
          await withinGrace(settled, pipeDrainGraceMs);
          child.stdout.destroy();
          child.stderr.destroy();
          child.stdin.destroy();
          stderr.flush();
          return exit;
        });
  const spawnFailure: Promise<SpawnFailure | null> =
    pid !== undefined
      ? Promise.resolve(null)
      : settled.then((result) => {
          const code = (result as { code?: string }).code;
          const detail = result.shortMessage ?? result.message ?? `spawn failed (${code ?? 'unknown'})`;
          if (code !== 'ENOENT') return { kind: 'spawn_failed', detail };
          return { kind: 'not_installed', detail, command: spec.command, ...(spec.installHint ? { installHint: spec.installHint } : {}) };
        });

  return {
    pid,
    stdin: child.stdin,
    stdout: child.stdout,
    stderr,
    spawnFailure,
    exited,
    isRunning: () => running,
    closeInput: () => {
      if (!child.stdin.destroyed) child.stdin.end();
    },
    signalGroup: (signal) => {
      if (pid !== undefined) signalGroup(pid, signal);
    },
  };
}

/** A process that was never spawned: `spawnFailure` says why. */
function notSpawned(stderr: StderrTail, failure: SpawnFailure): AgentProcess {
  return {
    pid: undefined,
    stdin: new PassThrough(),
    stdout: new PassThrough(),
    stderr,
    spawnFailure: Promise.resolve(failure),
    exited: Promise.resolve({ exitCode: null, signal: null }),
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
