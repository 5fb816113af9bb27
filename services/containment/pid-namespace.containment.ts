/**
 * Containment in a PID namespace of the agent's own, through util-linux:
 *
 *   unshare [--user --map-current-user] --pid  /bin/sh -c <shim>  agentvisor-init <command> <args...>
 *
 * `unshare` without `--fork` makes the namespace and becomes the shim's outer shell, which
 * stays in the host's namespace (it is the spawned process: its pid and process group are
 * the handle's). The outer shell's first child is the namespace's init (pid 1 inside); the
 * init starts the agent (pid 2), forwards SIGTERM, SIGINT and SIGHUP to it (the kernel drops
 * signals to a namespace init that has no handler, so an agent running as init would never
 * see the stop ladder's SIGTERM), and exits with the agent's status. When the init exits,
 * the kernel SIGKILLs everything left in the namespace: setsid escapees and double-forked
 * daemons included. The outer shell forwards the same signals to the init and exits with
 * its status.
 *
 * Both shells close their own stdio once the agent has it, so the agent is the only holder
 * of its pipes: an agent that closes its stdout is noticed at once, as without containment.
 *
 * A host that dies (even by SIGKILL) takes its agents with it through a lifeline: the host
 * passes one end of a pipe as fd 3 and holds the other; a watcher in the namespace blocks
 * reading fd 3, and when the host's end closes it SIGKILLs the agent, the init exits and the
 * namespace is emptied. The watcher ignores the stop ladder's signals, so it keeps watching
 * until the very end.
 *
 * Known limit (docs/containment.md): an agent killed by signal n is reported as exit code
 * 128 + n by the shim (`signalOfInitExit` maps it back).
 */
import { execFileSync } from 'node:child_process';
import { constants } from 'node:os';
import { readFileSync } from 'node:fs';
import type { Containment, ContainmentMechanism, SpawnRequest } from './containment.js';
import { isRunningProcess, isSameProcess, readProcEntry, startTimeOf, type ProcessIdentity } from './proc-table.js';

/** `trap` lines that forward the signals the stop ladder and a terminal send to `$target`. */
const forwardSignals = (target: string) => ['TERM', 'INT', 'HUP'].map((signal) => `trap 'kill -${signal} $${target} 2>/dev/null' ${signal}`);

/** Waits for `$child` until it has exited (a trapped signal interrupts `wait`), then exits with its status. */
const exitWith = (child: string) => `while :; do wait $${child}; s=$?; kill -0 $${child} 2>/dev/null || exit $s; done`;

/**
 * The shim. fd 4 keeps stdin for the agent (an asynchronous list in a non-interactive shell
 * would get /dev/null); fd 3 is the host's lifeline. Traps are set before the init is forked:
 * a subshell resets caught signals to their defaults, so the init sets its own.
 */
export const namespaceShim = [
  ...forwardSignals('i'),
  'exec 4<&0',
  '(',
  ...forwardSignals('c'),
  '"$@" <&4 3<&- 4<&- & c=$!',
  "{ trap '' TERM INT HUP; read -r _ <&3; kill -KILL $c 2>/dev/null; } </dev/null >/dev/null 2>&1 4<&- &",
  'exec 0<&- 1>&- 2>&- 3<&- 4<&-',
  exitWith('c'),
  ') & i=$!',
  'exec 0<&- 1>&- 2>&- 3<&- 4<&-',
  exitWith('i'),
].join('\n');

/** How `unshare` can be run here: as it is (root), or in a user namespace of its own. */
export interface PidNamespaceSupport {
  unshareArgs: string[];
}

let cachedSupport: PidNamespaceSupport | null | undefined;

/** Probes (once per process) whether a PID namespace can be made; null when it cannot. */
export function pidNamespaceSupport(): PidNamespaceSupport | null {
  if (cachedSupport !== undefined) return cachedSupport;
  cachedSupport = null;
  if (process.platform !== 'linux') return cachedSupport;
  for (const userFlags of [[], ['--user', '--map-current-user']]) {
    const unshareArgs = [...userFlags, '--pid'];
    try {
      // The namespace is made by unshare, its init by the shell's first fork: probe both.
      execFileSync('unshare', [...unshareArgs, '/bin/sh', '-c', 'true & wait $!'], { stdio: 'ignore', timeout: 5_000 });
    } catch {
      continue;
    }
    cachedSupport = { unshareArgs };
    break;
  }
  return cachedSupport;
}

/** The agent's exit as the init reports it: 128 + n means killed by signal n. */
export function signalOfInitExit(exitCode: number | null): NodeJS.Signals | null {
  if (exitCode === null || exitCode <= 128) return null;
  const number = exitCode - 128;
  const entry = Object.entries(constants.signals).find(([, value]) => value === number);
  return entry ? (entry[0] as NodeJS.Signals) : null;
}

/** The first child of `pid` (from /proc/<pid>/task/<pid>/children), if it has one yet. */
function childOf(pid: number): number | null {
  try {
    const first = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(' ')[0];
    return first ? Number(first) : null;
  } catch {
    return null;
  }
}

/** The process `pid` is now, to be told apart from a later one with the same pid. */
function identityOf(pid: number | null): ProcessIdentity | null {
  const startTime = pid === null ? null : startTimeOf(pid);
  return pid === null || startTime === null ? null : { pid, startTime };
}

/** Sends `signal` to `target` unless it is gone or its pid now names another process. */
function signalIfSame(target: ProcessIdentity, signal: NodeJS.Signals): void {
  if (!isSameProcess(target)) return;
  try {
    process.kill(target.pid, signal);
  } catch {
    // gone in between
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `find` every few ms until it answers, or null after `ms`. */
async function poll<T>(find: () => T | null, ms: number): Promise<T | null> {
  const deadline = Date.now() + ms;
  for (;;) {
    const found = find();
    if (found !== null || Date.now() >= deadline) return found;
    await sleep(2);
  }
}

/** The mechanism, for a host where {@link pidNamespaceSupport} found a way. */
export function pidNamespaceContainment(support: PidNamespaceSupport): ContainmentMechanism {
  return {
    kind: 'pid-namespace',
    wrap(request: SpawnRequest) {
      return { command: 'unshare', args: [...support.unshareArgs, '/bin/sh', '-c', namespaceShim, 'agentvisor-init', request.command, ...request.args], lifeline: true };
    },
    contain(wrapperPid: number): Containment {
      const wrapper = identityOf(wrapperPid);
      let init: ProcessIdentity | null = null;
      const findInit = () => (init ??= identityOf(childOf(wrapperPid)));
      const agentPid = poll(() => {
        const found = findInit();
        return found && childOf(found.pid);
      }, 2_000).then((pid) => pid ?? wrapperPid);
      return {
        kind: 'pid-namespace',
        agentPid,
        handle: () => {
          const known = init ?? wrapper;
          return { kind: 'pid-namespace', initPid: known?.pid ?? wrapperPid, initStartTime: known?.startTime ?? 0 };
        },
        async killAll() {
          // SIGKILL reaches a namespace init from outside; its death empties the namespace and
          // ends the outer shell. The outer shell is stopped first, so that it cannot fork the
          // init between the look for it and the kill. Every signal checks the start time:
          // a pid that has been reused is never signalled.
          if (wrapper) {
            signalIfSame(wrapper, 'SIGSTOP');
            await poll(() => (isRunningProcess(wrapper) && readProcEntry(wrapper.pid)?.state !== 'T' ? null : true), 500);
          }
          const found = findInit();
          for (const target of [found, wrapper]) if (target) signalIfSame(target, 'SIGKILL');
          await poll(() => ([found, wrapper].some((target) => target && isRunningProcess(target)) ? null : true), 2_000);
        },
        release() {},
      };
    },
  };
}
