/**
 * The seam between an agent's runtime (docs/runtimes.md) and the process actor: what to
 * spawn on this host so that the agent runs where its spec says, how the stop ladder's
 * signals reach it there, and how a failure of the runtime itself (an unreachable host, a
 * refused login, a changed host key, a missing container) is told apart from the agent's.
 */
import type { Readable, Writable } from 'node:stream';
import type { AgentSpec } from '../../core/agent-spec.js';
import type { AgentErrorKind } from '../../core/errors.js';

/**
 * The line a runtime's wrapper (ssh, docker, kubectl) prints on stderr before the agent's own
 * output: `agentvisor-remote-pid <pid>`, the agent's pid (and process group) where it runs.
 */
export const remotePidMarker = 'agentvisor-remote-pid';

export interface RuntimeCommand {
  /** What this host spawns (bwrap, ssh, docker, kubectl), and its arguments: the agent's command is inside them. */
  command: string;
  args: string[];
  /** The environment of that local process (the agent's own env travels inside `args` where the runtime needs it). */
  env?: Record<string, string>;
  /** Whether the supervisor's containment applies to the local process (false: the runtime contains the agent itself, or it is remote). */
  localContainment: boolean;
  /**
   * Delivers a stop-ladder signal to the agent's process group inside the runtime (a remote
   * host, a container). Absent: signalling the local process group reaches the agent.
   */
  signalInside?(signal: 'SIGTERM' | 'SIGKILL'): Promise<void>;
  /** Reads a line of the local process's stderr (a marker the runtime's wrapper prints); true: it is not the agent's. */
  onStderrLine?(line: string): boolean;
  /** A failure of the runtime itself, from how the local process ended before the agent answered; null: the agent's own. */
  failureOf?(exit: { exitCode: number | null; signal: string | null }, stderr: readonly string[]): { kind: AgentErrorKind; detail: string } | null;
  /**
   * Written to the local process's stdin before anything else: the agent's env
   * ({@link envPreamble}) for the runtime's wrapper to read, so that no value is in an argv
   * `ps` shows, here or where the agent runs (ssh, kubectl).
   */
  stdinPreamble?: string;
  /**
   * What this command leaves in the runtime that must be removed even when this host's
   * process is gone (a container `docker run` started): written into the process record,
   * so the orphan sweep removes it after a host crash.
   */
  leftover?: DockerLeftover;
  /**
   * Runs once the local process is gone, before its exit is reported (and its record
   * removed): removes what it left in the runtime. Bounded; never rejects. False: something
   * may be left (the engine did not answer): the process record stays for a later sweep.
   */
  cleanup?(exit: { exitCode: number | null; signal: string | null }): Promise<boolean>;
}

/** What outlives this host's process unless removed: a `docker run` container, or a pod made through the Kubernetes API. */
export type RemoteLeftover = DockerLeftover | PodLeftover;

/** A container that outlives its local client unless removed (container.runtime.ts `sweepContainer`). No secret: addresses only. */
export interface DockerLeftover {
  kind: 'docker-container';
  /** The client that started it (`docker`, or the path it was given). */
  client: string;
  /** The value of its `io.agentvisor.container` label: what it is selected by. */
  token: string;
  /** Which engine, and how: DOCKER_HOST, DOCKER_CONTEXT, DOCKER_CONFIG, DOCKER_CERT_PATH, DOCKER_TLS_VERIFY as the client had them ('' = not set). */
  engine: Record<string, string>;
}

/**
 * A pod the supervisor made for an agent (kubernetes-pod.runtime.ts `sweepPods`): where it
 * is, and how the cluster is reached (paths and names only, never a credential).
 */
export interface PodLeftover {
  kind: 'kubernetes-pod';
  namespace: string;
  name: string;
  /** The value of its `agentvisor.io/pod` label. */
  token: string;
  /** The kubeconfig file and context the agent's spec named ('' = the default one). */
  kubeconfig: string;
  context: string;
}

/** A failure of the runtime itself, typed: what a start that never got to the agent reports. */
export interface RuntimeFailure {
  kind: AgentErrorKind;
  detail: string;
}

/**
 * An agent whose byte streams the runtime supplies itself: no process on this host (the
 * Kubernetes API's exec stream, kubernetes-pod.runtime.ts). The process actor drives it as
 * it drives a spawned process: ACP over `stdin`/`stdout`, the stop ladder's rungs as methods.
 */
export interface RuntimeTransport {
  /** The agent's process group where it runs (the wrapper's marker): what the reports and the in-runtime kill name. */
  readonly pid: number;
  readonly stdin: Writable;
  readonly stdout: Readable;
  /** The agent's stderr (the wrapper's marker already taken out). */
  readonly stderr: Readable;
  /** Settles once the agent's stream has ended: its exit status, or nulls when the stream dropped (the agent lost). Never rejects. */
  readonly exited: Promise<{ exitCode: number | null; signal: string | null }>;
  /** The ladder's first rung: stdin EOF where the stream can carry it; else straight to the in-runtime SIGTERM. */
  closeInput(): void;
  /** Delivers a ladder signal to the agent's process group where it runs. Bounded; never rejects. */
  signalInside(signal: 'SIGTERM' | 'SIGKILL'): Promise<void>;
  /** Drops the stream from this end (after a SIGKILL, or when the actor is released). */
  close(): void;
  /** A failure of the runtime itself, from how the stream ended before the agent answered; null: the agent's own. */
  failureOf(exit: { exitCode: number | null; signal: string | null }, stderr: readonly string[]): RuntimeFailure | null;
}

/**
 * A runtime that places the agent itself before it runs (a pod through the Kubernetes API),
 * and hands the process actor the agent's streams instead of a command to spawn.
 */
export interface RuntimeConnector {
  /** Whether this connector runs agents of `spec`. */
  handles(spec: AgentSpec): boolean;
  /**
   * Makes (or reuses) the agent's place and starts the agent there. Rejects with a
   * {@link RuntimeFailure}-shaped error (`kind`, `detail`), or with `signal`'s reason once
   * it fires (then nothing is left started).
   */
  open(agent: string, spec: AgentSpec, signal: AbortSignal): Promise<RuntimeTransport>;
}

/** The bytes an encoded name or value keeps as they are; every other byte is written `\0ooo`. */
const plainByte = /[A-Za-z0-9_]/;

/**
 * The agent's env as one line for a remote shell's `read`: `NAME=VALUE` pairs separated by
 * spaces, every byte of a name or value but [A-Za-z0-9_] written as `\0ooo` (octal, as
 * `printf %b` reads it) — so the line holds no space, newline, quote, `=` of a value, glob
 * or backslash of its own, and {@link envDecodeScript} splits and decodes it exactly.
 */
export function envPreamble(env: Readonly<Record<string, string>>): string {
  const encode = (text: string) => {
    let out = '';
    for (const byte of Buffer.from(text, 'utf8')) {
      const char = String.fromCharCode(byte);
      out += plainByte.test(char) ? char : `\\0${byte.toString(8).padStart(3, '0')}`;
    }
    return out;
  };
  return `${Object.entries(env).map(([name, value]) => `${encode(name)}=${encode(value)}`).join(' ')}\n`;
}

/**
 * POSIX sh that decodes `$av_line` ({@link envPreamble}'s line, read from stdin by the same
 * shell right before it execs the agent) into `NAME=VALUE` operands for `env`, put before
 * "$@"; `$av_count` counts them. Every pair is an operand — none is exported by the shell —
 * so no name can clash with the script's own variables, a shell's read-only or dynamic ones
 * (`PPID`, `RANDOM`, `BASHOPTS`) or its PATH lookups; a value is in an argv only for the
 * instant between `env`'s exec and its exec of the agent. Globbing is off while the line is
 * split. No single quote (it runs inside a single-quoted script too), and every line ends in
 * a token a space may follow.
 */
export const envDecodeScript = [
  'av_count=0; set -f;',
  'for av_pair in $av_line; do',
  'av_name=$(printf "%bx" "${av_pair%%=*}"); av_name=${av_name%x};',
  'av_value=$(printf "%bx" "${av_pair#*=}"); av_value=${av_value%x};',
  'set -- "$av_name=$av_value" "$@"; av_count=$((av_count + 1));',
  'done;',
  'set +f; av_line=;',
].join('\n');

/**
 * What goes before an agent's command among `env`'s operands: `env` would read a command
 * with `=` in it as one more variable, so such a command runs under `nice -n 0 --` (which
 * changes nothing).
 */
export function envSafeCommand(command: string): string[] {
  return command.includes('=') ? ['nice', '-n', '0', '--', command] : [command];
}
