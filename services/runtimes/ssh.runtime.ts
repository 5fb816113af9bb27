/**
 * The `ssh` runtime (docs/runtimes-ssh.md): the agent runs on a remote host, and ACP flows
 * over the SSH channel (the remote command's stdin and stdout). This module only builds the
 * command and the closures of a {@link RuntimeCommand}; nothing is spawned when it is called.
 *
 * The local process is `ssh -T` with options that never prompt (BatchMode), never accept a
 * host key blindly (StrictHostKeyChecking=yes against the spec's knownHostsFile only, no
 * global file, no key updates), forward nothing (agent, X11, ports), share no connection
 * (ControlMaster=no, ControlPath=none) and notice a dropped connection (ServerAlive*). The
 * user's ssh_config still applies to what is not set here (a ProxyJump, a HostName).
 *
 * The remote command is one string for the remote login shell (which must be a POSIX shell:
 * sh, bash, dash, zsh, ksh). Its two scripts are constants; every value of the spec (cwd, env,
 * command, arguments) travels as a separate single-quoted word, a positional parameter:
 *
 *   exec /bin/sh -c WRAPPER agentvisor-remote CWD LAUNCH INDEX COMMAND ARGS…
 *
 * and the agent's env comes first on the channel, one line before the agent's stream
 * (`stdinPreamble`, runtime.ts `envPreamble`): in no argv, on this host or the remote one.
 *
 * The wrapper (a /bin/sh whose parent is sshd's session process, in a session of its own):
 * - `cd`s to CWD when given (a failure: a `agentvisor-remote-failure spawn_failed …` line on
 *   stderr, exit 126), and needs `setsid` (util-linux or busybox; missing: `runtime_missing`);
 * - starts `setsid /bin/sh -c LAUNCH …` in the background with the channel as its stdin (a
 *   background job of a shell without job control would otherwise read /dev/null). setsid
 *   does not fork (the job is not a group leader) and the launcher execs `env`, which execs
 *   the agent: one pid, the agent's, leading its own session and process group remotely;
 * - the launcher reads the env line from its stdin, the channel (sh's `read` takes a pipe a
 *   byte at a time: nothing of the agent's stream after it), decodes it into `NAME=VALUE`
 *   operands of env (runtime.ts `envDecodeScript`), checks that COMMAND (the INDEXth operand)
 *   is found on the agent's PATH (else `agentvisor-remote-failure not_installed …`, exit
 *   127), prints `agentvisor-remote-pid <its pid>` to stderr and execs `env -- [NAME=VALUE…]
 *   COMMAND ARGS…`: the marker is always the first line that pid writes, so the agent cannot
 *   forge one ahead of it;
 * - lets go of stdin and stdout (so the agent's own EOF and its closing stdout reach this
 *   host unchanged) and waits for the agent; then SIGKILLs whatever is left of its group (as
 *   the local stop ladder does after the leader exits), waits until the watcher below and
 *   the group are gone (the group at most 2 s, in 50 ms steps where `sleep` takes
 *   fractions), and only then exits with the agent's code (128 + n when a signal n ended
 *   it): when the local ssh sees its session end, nothing of the agent is left to outlive it;
 * - containment: a watcher subshell checks every second that the wrapper's parent is still
 *   the sshd session process it started under (/proc/<wrapper>/stat, `ps` without /proc).
 *   sshd's session process exits when the connection ends (the local ssh killed, the
 *   connection dropped and noticed by sshd, the channel closed), and does not signal the
 *   children of a session without a tty: the wrapper is reparented, the watcher sends
 *   SIGTERM to the agent's group, and SIGKILL 2 s later if it is still there. HUP, INT, TERM
 *   and PIPE sent to the wrapper itself do the same (SIGTERM, SIGKILL after 2 s) before it
 *   exits. The wrapper does not act on the EOF of stdin: the agent shares that pipe (the
 *   wrapper cannot read it without taking the agent's input), and EOF is the first rung of
 *   the stop ladder, which the agent answers by itself.
 *
 * Stop ladder: closing the local ssh's stdin sends EOF over the channel to the agent's stdin;
 * `signalInside` runs a second, short ssh with the same options: `kill -s SIG -- -<pgid>` on
 * the remote host (the pgid from the marker). A failure of ssh itself (exit 255) is read from
 * its stderr by `failureOf`.
 */
import { shellJoin, shellQuote } from './shell-quote.js';
import { execa } from 'execa';
import type { AgentSpec } from '../../core/agent-spec.js';
import type { AgentErrorKind } from '../../core/errors.js';
import type { RuntimeSpec } from '../../core/runtime-spec.js';
import { envDecodeScript, envPreamble, envSafeCommand, remotePidMarker, type RuntimeCommand } from './runtime.js';

export type SshRuntimeSpec = Extract<RuntimeSpec, { kind: 'ssh' }>;

export interface SshCommandOptions {
  /** The ssh client to run (default `ssh`, looked up on PATH). */
  sshCommand?: string;
}

export { remotePidMarker };
/** The line the remote wrapper or launcher prints when the agent could not be started at all. */
export const remoteFailureMarker = 'agentvisor-remote-failure';

export const defaultConnectTimeoutMs = 10_000;
export const defaultAliveTimeoutMs = 15_000;
/** How long `signalInside`'s own ssh may take at most (connecting included). */
export const maxSignalTimeoutMs = 20_000;

/**
 * The remote wrapper (see the header). $1: the cwd ('' for the login directory); $2: the
 * launcher script; the rest: the launcher's arguments. Every line ends in a token after which
 * a space may follow (`;`, `&`, `then`, `do`, `{`, `(`), so the script is sent as one line.
 * After the launch it keeps none of the channel's fds: nothing it or its shell prints (a
 * "Killed" from `wait`) can reach this host, or raise SIGPIPE in it once sshd is gone.
 */
const wrapperScript = `
cwd=$1; launch=$2; shift 2;
if [ -n "$cwd" ]; then cd -- "$cwd" >/dev/null 2>&1 || { printf "%s\\n" "${remoteFailureMarker} spawn_failed cwd $cwd is not a directory" >&2; exit 126; }; fi;
command -v setsid >/dev/null 2>&1 || { printf "%s\\n" "${remoteFailureMarker} runtime_missing setsid is not installed on the remote host" >&2; exit 127; };
parent=$PPID;
exec 3<&0;
setsid /bin/sh -c "$launch" agentvisor-agent "$@" <&3 3<&- &
agent=$!;
exec 0</dev/null 1>/dev/null 2>/dev/null 3<&-;
settle() {
  n=0;
  while [ "$n" -lt 40 ] && kill -s 0 -- "-$agent" 2>/dev/null; do sleep 0.05 2>/dev/null || n=40; n=$((n + 1)); done;
};
end_agent() {
  trap "" HUP INT TERM PIPE;
  kill -s TERM -- "-$agent" 2>/dev/null;
  ( sleep 2; kill -s KILL -- "-$agent" ) </dev/null >/dev/null 2>&1 &
  killer=$!;
  wait "$agent";
  kill -s KILL -- "-$agent" "$killer" "$watcher" 2>/dev/null;
  wait "$killer" "$watcher" 2>/dev/null;
  settle;
  exit "$1";
};
trap "end_agent 129" HUP; trap "end_agent 130" INT; trap "end_agent 143" TERM; trap "end_agent 141" PIPE;
(
  while kill -s 0 "$agent" 2>/dev/null; do
    p=;
    if [ -d /proc/self ]; then read -r _ _ _ p _ <"/proc/$$/stat"; else p=$(ps -o ppid= -p "$$"); set -- $p; p=\${1-}; fi;
    if [ "$p" != "$parent" ]; then
      kill -s TERM -- "-$agent";
      n=0; while [ "$n" -lt 2 ] && kill -s 0 -- "-$agent"; do sleep 1; n=$((n + 1)); done;
      kill -s KILL -- "-$agent"; exit 0;
    fi;
    sleep 1;
  done;
) </dev/null >/dev/null 2>&1 &
watcher=$!;
wait "$agent"; code=$?;
kill -s KILL -- "-$agent" 2>/dev/null; kill "$watcher" 2>/dev/null;
wait "$watcher" 2>/dev/null;
settle;
exit "$code"
`;

/**
 * The launcher, in the agent's own session. $1: the index of the agent's command among the
 * rest, env's operands (the command, its arguments). It reads the env line first and puts
 * its pairs before them as NAME=VALUE operands (the index moves): env, not this shell, sets
 * the agent's variables — a shell drops names it cannot hold (`A-B`), and its own variables
 * (read-only, dynamic, the script's) must not meet the agent's. Its own variables are `av_*`.
 */
const launchScript = `
av_index=$1; shift;
IFS= read -r av_line;
${envDecodeScript}
av_index=$((av_index + av_count));
av_i=0; av_lookup=$PATH; av_command=;
for av_word in "$@"; do
  if [ "$av_i" -eq "$av_index" ]; then av_command=$av_word; break; fi;
  case $av_word in PATH=*) av_lookup=\${av_word#PATH=} ;; esac;
  av_i=$((av_i + 1));
done;
( PATH=$av_lookup; command -v -- "$av_command" ) >/dev/null 2>&1 ||
  { printf "%s\\n" "${remoteFailureMarker} not_installed $av_command: command not found" >&2; exit 127; };
printf "%s\\n" "${remotePidMarker} $$" >&2;
exec env -- "$@"
`;

/** A script as one line (see wrapperScript). */
const oneLine = (script: string) => script.trim().replace(/\n\s*/g, ' ');

export { shellJoin, shellQuote };

/** The command the remote login shell runs (see the header): the wrapper, then the agent under its launcher. */
export function remoteCommand(spec: AgentSpec): string {
  // The env is not here: it travels on stdin (envPreamble), never in an argv.
  const command = envSafeCommand(spec.command);
  const operands = [...command, ...(spec.args ?? [])];
  return [
    'exec /bin/sh -c',
    shellQuote(oneLine(wrapperScript)),
    'agentvisor-remote',
    shellQuote(spec.cwd ?? ''),
    shellQuote(oneLine(launchScript)),
    String(command.length - 1),
    shellJoin(operands),
  ].join(' ');
}

/**
 * ServerAliveInterval and ServerAliveCountMax for a timeout: ssh gives up when count + 1
 * intervals pass without a word from the server, so interval × (count + 1) ≤ the timeout
 * (at least 2 s: 1 s × 2).
 */
export function aliveSettings(aliveTimeoutMs: number): { interval: number; countMax: number } {
  const total = Math.max(2, Math.floor(aliveTimeoutMs / 1000));
  const countMax = total >= 3 ? 2 : 1;
  return { interval: Math.max(1, Math.floor(total / (countMax + 1))), countMax };
}

/** The ssh options, before the destination: shared by the agent's session and `signalInside`'s. */
export function sshOptions(runtime: SshRuntimeSpec): string[] {
  const connectS = Math.max(1, Math.ceil((runtime.connectTimeoutMs ?? defaultConnectTimeoutMs) / 1000));
  const alive = aliveSettings(runtime.aliveTimeoutMs ?? defaultAliveTimeoutMs);
  const option = (name: string, value: string | number) => ['-o', `${name}=${value}`];
  return [
    '-T',
    ...option('BatchMode', 'yes'),
    ...option('StrictHostKeyChecking', 'yes'),
    ...option('UserKnownHostsFile', runtime.knownHostsFile),
    ...option('GlobalKnownHostsFile', '/dev/null'),
    ...option('UpdateHostKeys', 'no'),
    ...option('CheckHostIP', 'no'),
    ...option('VerifyHostKeyDNS', 'no'),
    ...option('ConnectTimeout', connectS),
    ...option('ServerAliveInterval', alive.interval),
    ...option('ServerAliveCountMax', alive.countMax),
    ...option('ForwardAgent', 'no'),
    ...option('ForwardX11', 'no'),
    ...option('ClearAllForwardings', 'yes'),
    ...option('PermitLocalCommand', 'no'),
    ...option('ControlMaster', 'no'),
    ...option('ControlPath', 'none'),
    ...option('RequestTTY', 'no'),
    ...option('RemoteCommand', 'none'),
    ...option('EscapeChar', 'none'),
    // INFO: "Timeout, server … not responding" is logged at that level.
    ...option('LogLevel', 'INFO'),
    ...(runtime.port !== undefined ? ['-p', String(runtime.port)] : []),
    ...(runtime.identityFile !== undefined ? ['-i', runtime.identityFile, ...option('IdentitiesOnly', 'yes')] : []),
    ...(runtime.user !== undefined ? ['-l', runtime.user] : []),
  ];
}

/** ssh's arguments to run `command` on the host: `--` first, so a host can never be read as an option. */
function sshArgs(runtime: SshRuntimeSpec, command: string): string[] {
  return [...sshOptions(runtime), '--', runtime.host, command];
}

type Failure = { kind: AgentErrorKind; detail: string };

/**
 * What ssh prints for its own failures (exit 255), by kind, most telling line first: the
 * first kind with a matching line wins, and its first pattern that matches names the detail.
 */
const sshFailures: ReadonlyArray<{ kind: AgentErrorKind; patterns: RegExp[] }> = [
  {
    kind: 'runtime_host_key_changed',
    patterns: [/Host key for .* has changed/, /No \S+ host key is known for/, /REMOTE HOST IDENTIFICATION HAS CHANGED/, /Host key verification failed/i],
  },
  { kind: 'runtime_auth_failed', patterns: [/Permission denied \(/, /Too many authentication failures/i] },
  {
    kind: 'runtime_unreachable',
    patterns: [
      /Timeout, server .* not responding/i,
      /Could not resolve hostname/i,
      /^ssh: connect to host .* port \d+:/, // a connect(2) failure, whatever the locale says of it
      /Connection refused/i,
      /Connection timed out/i,
      /^Connection to .* timed out/i,
      /No route to host/i,
      /Network is unreachable/i,
      /Connection closed by/i,
      /closed by remote host/i,
      /Connection reset by/i,
      /Broken pipe/i,
      /kex_exchange_identification/i,
    ],
  },
];

/**
 * Reads ssh's own failure from its stderr lines; null: nothing ssh says of itself. Once the
 * agent has `started` (its session was opened), only a lost connection can be ssh's failure:
 * a login or host key text among its lines is the agent's own output.
 */
export function sshFailureOf(stderr: readonly string[], started = false): Failure | null {
  for (const { kind, patterns } of sshFailures) {
    if (started && kind !== 'runtime_unreachable') continue;
    for (const pattern of patterns) {
      const line = stderr.find((text) => pattern.test(text));
      if (line !== undefined) return { kind, detail: line.replace(/^[@\s]+|[@\s]+$/g, '') };
    }
  }
  return null;
}

const pidLine = new RegExp(`^${remotePidMarker} ([1-9][0-9]*)$`);
const failureLine = new RegExp(`^${remoteFailureMarker} (spawn_failed|not_installed|runtime_missing) (.*)$`);

/** The command to spawn on this host to run `spec` on `runtime`'s host over SSH. */
export function sshCommand(spec: AgentSpec, runtime: SshRuntimeSpec, options: SshCommandOptions = {}): RuntimeCommand {
  const ssh = options.sshCommand ?? 'ssh';
  let remotePid: number | undefined;
  let startFailure: Failure | null = null;
  const signalTimeoutMs = Math.min((runtime.connectTimeoutMs ?? defaultConnectTimeoutMs) + 5_000, maxSignalTimeoutMs);

  return {
    command: ssh,
    args: sshArgs(runtime, remoteCommand(spec)),
    localContainment: false,
    stdinPreamble: envPreamble(spec.env ?? {}),
    onStderrLine(line) {
      if (remotePid !== undefined) return false; // everything after the marker is the agent's
      const pid = pidLine.exec(line.trim());
      if (pid) {
        remotePid = Number(pid[1]);
        return true;
      }
      const failure = failureLine.exec(line.trim());
      if (failure) {
        startFailure ??= { kind: failure[1] as AgentErrorKind, detail: `${runtime.host}: ${failure[2]}` };
        return true;
      }
      return false;
    },
    async signalInside(signal) {
      if (remotePid === undefined) return; // not started there (yet): ending the local ssh ends the session, and the wrapper the rest
      const name = signal === 'SIGKILL' ? 'KILL' : 'TERM';
      await execa(ssh, sshArgs(runtime, `kill -s ${name} -- -${remotePid}`), {
        stdin: 'ignore',
        stdout: 'ignore',
        stderr: 'ignore',
        reject: false,
        timeout: signalTimeoutMs,
        killSignal: 'SIGKILL',
      }).catch(() => {});
    },
    failureOf(exit, stderr) {
      if (startFailure) return startFailure;
      // The same reading from the lines themselves, for a caller that did not pass them through onStderrLine.
      let started = remotePid !== undefined;
      for (const line of started ? [] : stderr) {
        if (pidLine.test(line.trim())) {
          started = true;
          break;
        }
        const failure = failureLine.exec(line.trim());
        if (failure) return { kind: failure[1] as AgentErrorKind, detail: `${runtime.host}: ${failure[2]}` };
      }
      if (exit.exitCode !== 255) return null; // ssh exits 255 for its own errors only; any other code is the agent's
      return sshFailureOf(stderr, started);
    },
  };
}
