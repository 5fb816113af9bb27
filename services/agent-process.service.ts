/**
 * Spawning one agent process with execa: its own process group, piped stdio, a bounded
 * tail of its stderr, and the stop ladder's rungs as plain methods. No XState here.
 */
import { execa } from 'execa';
import type { Readable, Writable } from 'node:stream';
import type { AgentSpec } from './agent-spec.js';
import type { AgentErrorKind } from './errors.js';
import { signalGroup, waitForGroupExit } from './process-group.service.js';
import { StderrTail } from './stderr-tail.js';

/** How a spawned process ended. */
export interface ProcessExit {
  exitCode: number | null;
  signal: string | null;
}

/** Why a process could not be spawned at all. */
export interface SpawnFailure {
  kind: Extract<AgentErrorKind, 'not_installed' | 'spawn_failed'>;
  detail: string;
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
  /** Resolves when the group leader has exited (never rejects). */
  readonly exited: Promise<ProcessExit>;
  /** True until `exited` resolves. */
  isRunning(): boolean;
  /** First rung of the stop ladder: end stdin so a well-behaved agent exits by itself. */
  closeInput(): void;
  /** Signals the whole process group; no-op once it is gone. */
  signalGroup(signal: NodeJS.Signals): void;
  /** SIGKILLs what is left of the group after the leader exited, and waits until nothing runs. */
  reapGroup(timeoutMs?: number): Promise<void>;
}

/** Spawns `spec` as the leader of a new process group. Never throws for a missing command. */
export function spawnAgentProcess(spec: AgentSpec, options: { stderrLines?: number } = {}): AgentProcess {
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
  const stderr = new StderrTail(options.stderrLines ?? 20);
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
  const exited: Promise<ProcessExit> = settled.then((result) => {
    running = false;
    stderr.flush();
    return { exitCode: result.exitCode ?? null, signal: result.signal ?? null };
  });
  const spawnFailure: Promise<SpawnFailure | null> =
    pid !== undefined
      ? Promise.resolve(null)
      : settled.then((result) => {
          const code = (result as { code?: string }).code;
          return {
            kind: code === 'ENOENT' ? 'not_installed' : 'spawn_failed',
            detail: result.shortMessage ?? result.message ?? `spawn failed (${code ?? 'unknown'})`,
          };
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
    reapGroup: async (timeoutMs = 2000) => {
      if (pid === undefined) return;
      signalGroup(pid, 'SIGKILL');
      await waitForGroupExit(pid, timeoutMs);
    },
  };
}
