/**
 * The `docker` and `kubernetes` runtimes (docs/runtimes-sandbox-containers.md): the agent runs
 * in a container through the engine's client on this host, `docker exec -i` / `docker run -i
 * --init` (never `--rm`: agentvisor removes its containers itself) or `kubectl exec -i`,
 * under a small POSIX-sh wrapper that gives the agent a process group of its own inside the
 * container, so the stop ladder and "nothing outlives it" hold there as they do here. What
 * spawns here is only the short client calls that reach into the engine: the ladder's
 * signals (`signalInside`), the removal of an agent's container once its client is gone
 * (`cleanup`), and the orphan sweep's (`sweepContainer`).
 */
import { randomBytes } from 'node:crypto';
import { execa } from 'execa';
import type { AgentSpec } from '../../core/agent-spec.js';
import { invalidOptions, type AgentErrorKind } from '../../core/errors.js';
import type { RuntimeSpec } from '../../core/runtime-spec.js';
import { envDecodeScript, envPreamble, envSafeCommand, remotePidMarker, type DockerLeftover, type RuntimeCommand } from './runtime.js';

export type DockerRuntime = Extract<RuntimeSpec, { kind: 'docker' }>;
export type KubernetesRuntime = Extract<RuntimeSpec, { kind: 'kubernetes' }>;

/** A container runtime's command, and what its wrapper reported: the pid of the agent's process group leader inside. */
export interface ContainerRuntimeCommand extends RuntimeCommand {
  /** The process group id inside the container (from the wrapper's marker); null until it is printed. */
  remotePid(): number | null;
  signalInside(signal: 'SIGTERM' | 'SIGKILL'): Promise<void>;
  onStderrLine(line: string): boolean;
  failureOf(exit: { exitCode: number | null; signal: string | null }, stderr: readonly string[]): { kind: AgentErrorKind; detail: string } | null;
  cleanup(exit: { exitCode: number | null; signal: string | null }): Promise<boolean>;
}

/**
 * The labels on every container `docker run` starts for an agent: which agent, which
 * supervisor process (`<hostname>/<pid>-<start time>`, as the process records name their
 * owner), and the container's own token (its generated name, or a fresh one with a `--name`
 * of runArgs), which is what the removal and the orphan sweep select by — never a name
 * alone, which a later container may have taken.
 */
export const containerLabels = {
  agent: 'io.agentvisor.agent',
  supervisor: 'io.agentvisor.supervisor',
  container: 'io.agentvisor.container',
} as const;

export { remotePidMarker };
const markerLine = new RegExp(`^${remotePidMarker} ([0-9]+)$`);

/**
 * The wrapper, run as `/bin/sh -c <script> agentvisor-wrapper <eofGraceS> <killGraceS> <readsEnv> <command> <args…>`
 * (the agent's argv travels as positional parameters: no value is ever parsed by a shell;
 * with `readsEnv` 1 the agent's env comes first on stdin, one line — runtime.ts `envPreamble`).
 *
 * - The *outer* shell makes a fifo in a private directory, then starts the agent under
 *   `setsid`: a new session and process group led by the agent itself, whose pid it prints as
 *   the marker. Before the agent's shell execs the agent (stdin: the fifo), it starts a
 *   *feeder* in that group, which ignores SIGTERM, SIGINT and SIGHUP and copies the client's
 *   stdin into the fifo (`cat`), then removes the directory.
 * - So the agent reads the client's stdin as it is, and EOF once the client closes it (the
 *   ladder's first rung). The feeder then waits: after `eofGraceS` it sends SIGTERM to the
 *   group, after `killGraceS` more SIGKILL. A client that is gone for good (a supervisor that
 *   crashed, a dropped connection) thus still ends an agent that ignores EOF; with a live
 *   supervisor its own ladder (`signalInside`) comes first.
 * - The outer shell exits with the agent's status (128 + n for a signal n), after it SIGKILLs
 *   whatever is left in the group (the feeder, the agent's children that stayed in it). Once
 *   the marker is out it writes nothing, so a client that is gone cannot SIGPIPE it first.
 * - SIGTERM, SIGINT or SIGHUP to the outer shell (`docker run`'s signal proxy through
 *   `--init`) is sent on to the group as SIGTERM.
 *
 * Needs `/bin/sh`, `setsid` (util-linux or busybox), `mkfifo`, `cat`, `sleep` and a writable
 * $TMPDIR, /tmp or /dev/shm in the container.
 */
export const wrapperScript = [
  'g=$1 k=$2 e=$3; shift 3',
  'command -v setsid >/dev/null 2>&1 || { echo "agentvisor-wrapper: setsid not found in the container" >&2; exit 127; }',
  'd=; for t in "${TMPDIR:-/tmp}" /tmp /dev/shm; do d=$t/agentvisor-wrapper.$$; mkdir -m 700 "$d" 2>/dev/null && mkfifo "$d/in" && break; d=; done',
  '[ -n "$d" ] || { echo "agentvisor-wrapper: cannot make a fifo in ${TMPDIR:-/tmp}, /tmp or /dev/shm" >&2; exit 125; }',
  'exec 3<&0 0</dev/null',
  "setsid /bin/sh -c '" +
    'av_g=$1 av_k=$2 av_f=$3 av_e=$4; shift 4; ' +
    // kubectl: the agent's env is the first line on the client's stdin (runtime.ts envPreamble), read before the feeder copies the rest.
    'av_line=; if [ "$av_e" = 1 ]; then IFS= read -r av_line <&3; fi; ' +
    '{ trap "" HUP INT TERM; exec 4>"$av_f"; rm -rf "${av_f%/*}"; cat >&4; exec 4>&-; sleep "$av_g"; kill -s TERM 0; sleep "$av_k"; kill -s KILL 0; } <&3 >/dev/null 2>&1 & ' +
    'exec 3<&-; ' +
    envDecodeScript.replace(/\n/g, ' ') +
    ' if [ "$av_count" -gt 0 ]; then set -- env -- "$@"; fi; exec "$@" <"$av_f"' +
    '\' agentvisor-agent "$g" "$k" "$d/in" "$e" "$@" &',
  'p=$!',
  'exec 3<&-',
  `echo "${remotePidMarker} $p" >&2`,
  // The outer shell says nothing more: a client gone for good must not kill it by SIGPIPE (dash reports a job killed by a signal).
  'exec >/dev/null 2>&1',
  'trap \'kill -s TERM -- "-$p" 2>/dev/null\' HUP INT TERM',
  'wait "$p"; c=$?',
  'while kill -s 0 "$p" 2>/dev/null; do wait "$p"; c=$?; done',
  'kill -s KILL -- "-$p" 2>/dev/null; rm -rf "$d"',
  'exit "$c"',
].join('\n');

/**
 * The signal the ladder sends into the container: `kill` of the shell, not a `kill` binary
 * (slim images have none), in the one form dash, bash and busybox all accept for a group.
 */
export const signalScript = 'kill -s "$1" -- "-$2"';

/** How long a client's `signalInside` call may take before it is killed. */
export const signalTimeoutMs = 5_000;

/** How long the removal of an agent's container (after its client is gone, or by the sweep) may take. */
export const removeTimeoutMs = 10_000;

/** The supervisor's own defaults (api/options.ts), for a spec that sets no ladder timing. */
export const defaultShutdownTimeoutMs = 5_000;
export const defaultKillTimeoutMs = 2_000;

/**
 * The wrapper's argv around the agent's: its grace periods are one second longer than the
 * spec's ladder, so a live supervisor acts first; `readsEnv`: the env comes on stdin first.
 */
export function wrapperArgv(spec: AgentSpec, agentArgv: readonly string[], readsEnv = false): string[] {
  const seconds = (ms: number) => String(Math.ceil(ms / 1000) + 1);
  const eofGrace = seconds(spec.shutdownTimeoutMs ?? defaultShutdownTimeoutMs);
  const killGrace = seconds(spec.killTimeoutMs ?? defaultKillTimeoutMs);
  return ['/bin/sh', '-c', wrapperScript, 'agentvisor-wrapper', eofGrace, killGrace, readsEnv ? '1' : '0', ...agentArgv];
}

/**
 * `docker exec -i [-e K…] [-w cwd] -- <container> <wrapper>` into a running container, or
 * `docker run -i --init --label … --name <name> [runArgs…] [-e K…] [-w cwd] -- <image> <wrapper>`.
 *
 * Env: `-e K` names only; docker's client takes each value from its own environment
 * (`RuntimeCommand.env`), so no value is in an argv `ps` shows, here or in the container.
 * `cwd` is a path inside the container. `--` ends docker's options, so a container or image
 * named like an option is never read as one. `run` names its container (`agentvisor-<hex>`,
 * or the `--name` in `runArgs`) so that `signalInside` can reach it, and labels it
 * ({@link containerLabels}).
 *
 * No `--rm`: the container is removed by `cleanup` once its client is gone — a client killed
 * by a signal leaves a running container behind, which must be gone before the restart's
 * starts — and by the orphan sweep after a host crash. (`--rm` would also lose the exit
 * status on Podman's Docker API, 4.3.1 here: the client then reports 0 for every container.)
 */
export function dockerCommand(
  spec: AgentSpec,
  runtime: DockerRuntime,
  options: { docker?: string; name?: string; agent?: string; supervisor?: string } = {},
): ContainerRuntimeCommand {
  const docker = options.docker ?? 'docker';
  const env = Object.keys(spec.env ?? {}).flatMap((name) => ['-e', name]);
  const workdir = spec.cwd !== undefined ? ['-w', spec.cwd] : [];
  const wrapper = wrapperArgv(spec, [spec.command, ...(spec.args ?? [])]);
  let target: string;
  let args: string[];
  /** The container `run` started (its label token), for removal; null with `exec` (not ours to remove). */
  let started: DockerLeftover | null = null;
  if (runtime.container !== undefined) {
    target = runtime.container;
    args = ['exec', '-i', ...env, ...workdir, '--', runtime.container, ...wrapper];
  } else if (runtime.image !== undefined) {
    const runArgs = runtime.runArgs ?? [];
    const named = nameIn(runArgs);
    const token = options.name ?? `agentvisor-${randomBytes(6).toString('hex')}`;
    target = named ?? token;
    const labels = [
      ['--label', `${containerLabels.agent}=${options.agent ?? spec.displayName ?? spec.command}`],
      ...(options.supervisor !== undefined ? [['--label', `${containerLabels.supervisor}=${options.supervisor}`]] : []),
      ['--label', `${containerLabels.container}=${token}`],
    ].flat();
    // The labels after runArgs: a label of the same key there cannot replace the token.
    args = ['run', '-i', '--init', ...(named ? [] : ['--name', target]), ...runArgs, ...labels, ...env, ...workdir, '--', runtime.image, ...wrapper];
    started = { kind: 'docker-container', client: docker, token, engine: engineOf(spec.env) };
  } else {
    throw invalidOptions('A docker runtime needs a container (docker exec) or an image (docker run)');
  }
  const leftover = started;
  return containerCommand({
    command: docker,
    args,
    ...(spec.env ? { env: spec.env } : {}),
    signalArgs: (signal, pgid) => ['exec', '--', target, '/bin/sh', '-c', signalScript, 'agentvisor-signal', signal, pgid],
    failureOf: dockerFailure,
    ...(leftover ? { leftover } : {}),
  });
}

/** The variables that say which engine docker's client talks to, and how: addresses and paths, never credentials. */
export const engineVariables = ['DOCKER_HOST', 'DOCKER_CONTEXT', 'DOCKER_CONFIG', 'DOCKER_CERT_PATH', 'DOCKER_TLS_VERIFY'] as const;

/**
 * The engine settings of the agent's client (the spec's env over this process's), recorded
 * so that a sweep by a later process reaches the same engine the same way; one the client
 * did not have is recorded empty, so the sweeping process's own value is not used instead.
 */
function engineOf(specEnv: Readonly<Record<string, string>> | undefined): DockerLeftover['engine'] {
  const engine: DockerLeftover['engine'] = {};
  for (const name of engineVariables) engine[name] = specEnv?.[name] ?? process.env[name] ?? '';
  return engine;
}

/**
 * Removes the container a record names (`docker rm --force`, selected by its label token:
 * never a container that merely took the same name later), bounded (each of the two client
 * calls {@link removeTimeoutMs}), never rejecting: `'removed'`, `'absent'` (nothing carries
 * the token), or `'failed'` (the engine did not answer, or refused). `clientEnv`: the agent's
 * client's own env (the live removal); the sweep has only the recorded engine settings.
 */
export async function sweepContainer(leftover: DockerLeftover, clientEnv?: Readonly<Record<string, string>>): Promise<'removed' | 'absent' | 'failed'> {
  const env: Record<string, string | undefined> = { ...process.env, ...clientEnv, ...leftover.engine };
  for (const [name, value] of Object.entries(env)) if (value === '') delete env[name]; // recorded as not set
  const run = (args: string[]) =>
    execa(leftover.client, args, { env, extendEnv: false, stdin: 'ignore', reject: false, timeout: removeTimeoutMs, forceKillAfterDelay: 1_000 }).catch(() => null);
  const listed = await run(['ps', '--all', '--quiet', '--no-trunc', '--filter', `label=${containerLabels.container}=${leftover.token}`]);
  if (listed?.exitCode !== 0 || typeof listed.stdout !== 'string') return 'failed';
  const ids = listed.stdout.split('\n').map((line) => line.trim()).filter(Boolean);
  if (ids.length === 0) return 'absent';
  const removed = await run(['rm', '--force', '--', ...ids]);
  return removed?.exitCode === 0 ? 'removed' : 'failed';
}

/**
 * `kubectl [--kubeconfig K] [--context C] exec -i [-n ns] <pod> [-c container] -- <wrapper>`.
 *
 * Env: `kubectl exec` has no flag for it and the pod's spec cannot change, so the values
 * travel on the exec's stdin, one line before the agent's stream (`stdinPreamble`, runtime.ts
 * `envPreamble`), read by the agent's shell, which execs `env -- NAME=VALUE… <command>`: a
 * value is in an argv only for the instant before `env` execs the agent, of the local kubectl
 * never.
 */
export function kubernetesCommand(spec: AgentSpec, runtime: KubernetesRuntime, options: { kubectl?: string } = {}): ContainerRuntimeCommand {
  // A template's pod is made through the API (kubernetes-pod.runtime.ts), never by kubectl.
  if (runtime.pod === undefined) throw invalidOptions('A kubernetes runtime without a pod is made from its template through the API, not with kubectl');
  const kubectl = options.kubectl ?? 'kubectl';
  const global = [
    ...(runtime.kubeconfig !== undefined ? ['--kubeconfig', runtime.kubeconfig] : []),
    ...(runtime.context !== undefined ? ['--context', runtime.context] : []),
  ];
  // A pod named like an option ("-x", never valid in Kubernetes) is named as pod/-x: never read as a flag.
  const pod = runtime.pod.startsWith('-') ? `pod/${runtime.pod}` : runtime.pod;
  const where = [...(runtime.namespace !== undefined ? ['-n', runtime.namespace] : []), pod, ...(runtime.container !== undefined ? ['-c', runtime.container] : [])];
  return containerCommand({
    command: kubectl,
    args: [...global, 'exec', '-i', ...where, '--', ...podAgentArgv(spec)],
    stdinPreamble: envPreamble(spec.env ?? {}),
    signalArgs: (signal, pgid) => {
      const timeout = ['--request-timeout', `${signalTimeoutMs / 1000}s`];
      return [...global, ...timeout, 'exec', ...where, '--', '/bin/sh', '-c', signalScript, 'agentvisor-signal', signal, pgid];
    },
    failureOf: kubernetesFailure,
  });
}

/**
 * What an exec into a pod runs for the agent (kubectl's, and the API's exec stream's): the
 * wrapper, reading the agent's env from the first line of stdin, around the agent's command,
 * in the spec's cwd (a path in the pod).
 */
export function podAgentArgv(spec: AgentSpec): string[] {
  // Without a cwd shim, env runs the command itself.
  const agentArgv = [...(spec.cwd === undefined ? envSafeCommand(spec.command) : [spec.command]), ...(spec.args ?? [])];
  // CDPATH (the agent's, set by env before this shim runs) would make cd print the directory onto the agent's stdout.
  const cd = spec.cwd !== undefined ? ['/bin/sh', '-c', 'CDPATH= cd -- "$1" && shift && exec "$@"', 'agentvisor-cwd', spec.cwd] : [];
  return wrapperArgv(spec, [...cd, ...agentArgv], true);
}

interface ContainerParts {
  command: string;
  args: string[];
  env?: Record<string, string>;
  stdinPreamble?: string;
  signalArgs(signal: 'TERM' | 'KILL', pgid: string): string[];
  failureOf(exit: { exitCode: number | null; signal: string | null }, stderr: readonly string[]): { kind: AgentErrorKind; detail: string } | null;
  /** The container this command starts (docker run): in the process record, and removed by `cleanup`. */
  leftover?: DockerLeftover;
}

/**
 * The parts every container runtime shares. `localContainment` is true: the local client is
 * an ordinary process here, and containing it means a supervisor that dies takes its clients
 * with it, which closes each wrapper's stdin, which ends each agent (see {@link wrapperScript}).
 */
function containerCommand(parts: ContainerParts): ContainerRuntimeCommand {
  let pgid: number | null = null;
  let killedInside = false;
  const signalInside = async (signal: 'SIGTERM' | 'SIGKILL') => {
    if (pgid === null) return; // the wrapper has not started the agent: the local signal is all there is
    if (signal === 'SIGKILL') killedInside = true;
    // The client's own env (the spec's over this process's): the engine the agent's client talks to.
    await execa(parts.command, parts.signalArgs(signal === 'SIGTERM' ? 'TERM' : 'KILL', String(pgid)), {
      ...(parts.env ? { env: parts.env } : {}),
      stdin: 'ignore',
      stdout: 'ignore',
      stderr: 'ignore',
      reject: false,
      timeout: signalTimeoutMs,
      forceKillAfterDelay: 1_000,
    }).catch(() => {});
  };
  return {
    command: parts.command,
    args: parts.args,
    ...(parts.env ? { env: parts.env } : {}),
    ...(parts.stdinPreamble !== undefined ? { stdinPreamble: parts.stdinPreamble } : {}),
    localContainment: true,
    remotePid: () => pgid,
    onStderrLine(line) {
      const marker = markerLine.exec(line.trim());
      if (!marker) return false;
      pgid ??= Number(marker[1]);
      return true;
    },
    signalInside,
    failureOf: parts.failureOf,
    ...(parts.leftover ? { leftover: parts.leftover } : {}),
    /**
     * The local client is gone. A container `run` started is removed, whatever the ending: a
     * client killed by a signal (the ladder's last rung, a crash, anyone) leaves it running,
     * and the restart must not start a second next to it. An `exec` client killed by a signal
     * leaves the agent's group running in a container that is not ours: it gets the SIGKILL
     * the wrapper would send only after its grace. An `exec` client that exited by itself
     * carries the wrapper's status: its group is gone already (the wrapper killed it).
     * True: nothing is left (false: a removal that failed; the process record is kept).
     */
    async cleanup(exit) {
      if (parts.leftover) return (await sweepContainer(parts.leftover, parts.env)) !== 'failed';
      if (exit.signal !== null && !killedInside) await signalInside('SIGKILL');
      return true;
    },
  };
}

/** The `--name` in docker run arguments, if any. */
function nameIn(runArgs: readonly string[]): string | null {
  for (let i = 0; i < runArgs.length; i++) {
    const arg = runArgs[i] ?? '';
    if (arg === '--name') return runArgs[i + 1] ?? null;
    if (arg.startsWith('--name=')) return arg.slice('--name='.length);
  }
  return null;
}

type Failure = { kind: AgentErrorKind; detail: string } | null;

/** The wrapper's own failures, in any container. */
export function wrapperFailure(exit: { exitCode: number | null }, stderr: readonly string[], where: string): Failure {
  for (const line of stderr) {
    if (line.startsWith('agentvisor-wrapper: setsid not found')) {
      return { kind: 'runtime_missing', detail: `${where} has no setsid (util-linux or busybox): ${line}` };
    }
    if (exit.exitCode === 127 && /^agentvisor-(agent|cwd): .*not found$|^(\/usr\/bin\/)?env: .*: No such file or directory$/.test(line)) {
      return { kind: 'runtime_missing', detail: `the agent's command is not installed in ${where}: ${line}` };
    }
    if (/^agentvisor-cwd: .*\bcd\b/.test(line)) return { kind: 'runtime_missing', detail: `the agent's cwd does not exist in ${where}: ${line}` };
    if (/exec: "?\/bin\/sh"?: .*(no such file|not found)/i.test(line)) return { kind: 'runtime_missing', detail: `${where} has no /bin/sh: ${line}` };
    if (line.startsWith('agentvisor-wrapper: cannot make a fifo')) {
      return { kind: 'runtime_missing', detail: `the agent's wrapper cannot start in ${where}: it needs a writable $TMPDIR, /tmp or /dev/shm for its fifo (${line})` };
    }
  }
  return null;
}

/**
 * docker's own failures: the container, the image, the engine. Null: the agent's. Docker
 * Engine's words and Podman's (its Docker API, 4.3.1: "no container with name or ID … found:
 * no such container", "no such image: … image not known", "can only create exec sessions on
 * running containers") both count.
 */
export function dockerFailure(exit: { exitCode: number | null; signal: string | null }, stderr: readonly string[]): Failure {
  const text = (pattern: RegExp) => stderr.find((line) => pattern.test(line));
  let line: string | undefined;
  if ((line = text(/Cannot connect to the Docker daemon|error during connect|Is the docker daemon running/i))) return { kind: 'runtime_unreachable', detail: line };
  // The client could not attach to the container it made: Podman answers 409 (or 500) when the
  // container cannot be started — found here with a mount point it could not make (a
  // read-only mount over a directory holding another mount's target) — and says no more.
  if ((line = text(/unable to upgrade to tcp, received (409|5\d\d)/))) {
    return { kind: 'runtime_missing', detail: `the engine could not start the container (check its runArgs: mounts, devices, user): ${line}` };
  }
  if ((line = text(/permission denied while trying to connect to the Docker daemon/i))) return { kind: 'runtime_auth_failed', detail: line };
  if ((line = text(/No such container|no container with name or ID/i))) return { kind: 'runtime_missing', detail: line };
  const notRunning = /Error response from daemon: .*(is not running|is paused|is restarting|can only create exec sessions on running containers|container state improper)/i;
  if ((line = text(notRunning))) return { kind: 'runtime_missing', detail: line };
  const noImage = /Unable to find image|pull access denied|manifest unknown|repository does not exist|invalid reference format|no such image|image not known/i;
  if (exit.exitCode === 125 && (line = text(noImage))) {
    return { kind: 'runtime_missing', detail: stderr.filter((l) => /image|pull access|manifest|repository|reference|registry/i.test(l)).join(' ') || line };
  }
  if ((line = text(/^OCI runtime exec failed|^docker: Error response from daemon: failed to create (shim|task)/))) return { kind: 'runtime_missing', detail: line };
  // Docker: `Conflict. The container name "/x" is already in use by container …`; Podman: `… the container name "x" is already in use by …`.
  if (exit.exitCode === 125 && (line = text(/container name .* is already in use/i))) {
    return { kind: 'runtime_missing', detail: `the container name is taken by another container (a --name in runArgs): ${line}` };
  }
  return wrapperFailure(exit, stderr, 'the container');
}

/** kubectl's own failures: the pod, the cluster, the credentials. Null: the agent's. */
export function kubernetesFailure(exit: { exitCode: number | null; signal: string | null }, stderr: readonly string[]): Failure {
  const text = (pattern: RegExp) => stderr.find((line) => pattern.test(line));
  let line: string | undefined;
  if ((line = text(/Unable to connect to the server|The connection to the server .* was refused|dial tcp .*(connection refused|i\/o timeout|no such host)/i))) {
    return { kind: 'runtime_unreachable', detail: line };
  }
  if ((line = text(/You must be logged in to the server|\(Unauthorized\)/))) return { kind: 'runtime_auth_failed', detail: line };
  if ((line = text(/Error from server \(Forbidden\)|\bis forbidden\b/))) return { kind: 'runtime_auth_failed', detail: line };
  if ((line = text(/Error from server \(NotFound\)/))) return { kind: 'runtime_missing', detail: line };
  const notThere = /container not found|is not valid for pod|cannot exec into a container in a completed pod|does not have a host assigned|pod .* is not running/i;
  if ((line = text(notThere))) {
    return { kind: 'runtime_missing', detail: line };
  }
  if ((line = text(/^error: (context .* does not exist|no context exists)|^Error in configuration:|^error: stat .*: no such file or directory/))) {
    return { kind: 'runtime_missing', detail: line };
  }
  return wrapperFailure(exit, stderr, 'the pod');
}
