/**
 * Containment in a PID namespace of the agent's own, through util-linux:
 *
 *   setpriv --pdeathsig KILL  unshare [--user --map-current-user] --pid --fork --kill-child
 *     /bin/sh -c <init shim>  agentvisor-init <command> <args...>
 *
 * The shim is the namespace's init (pid 1 inside). It starts the agent as pid 2, forwards
 * SIGTERM, SIGINT and SIGHUP to it (the kernel drops signals to a namespace init that has no
 * handler, so without a shim the stop ladder's SIGTERM would be lost), and exits with the
 * agent's status. When the init exits, the kernel SIGKILLs everything left in the namespace:
 * setsid escapees and double-forked daemons included. `--kill-child` kills the init when
 * `unshare` dies, and `setpriv --pdeathsig KILL` kills `unshare` when the host process dies
 * (even by SIGKILL), so a crashed host leaves nothing running either.
 *
 * Known limits (docs/containment.md): `unshare` waits for the init with the agent's stdio
 * still open, so an agent that closes its stdout but keeps running is only noticed when it
 * exits; and an agent killed by signal n is reported as exit code 128 + n by the shim
 * (`signalOfInitExit` maps it back).
 */
import { execFileSync } from 'node:child_process';
import { constants } from 'node:os';
import { readFileSync } from 'node:fs';
import type { Containment, ContainmentMechanism, SpawnRequest } from './containment.js';
import { isRunningEntry, readProcEntry, startTimeOf } from './proc-table.js';

/**
 * The namespace's init. fd 3 keeps stdin for the agent (an asynchronous list in a
 * non-interactive shell would get /dev/null); the init then closes its own stdio, so it
 * holds none of the agent's pipes open.
 */
const initShim = [
  'trap "kill -TERM \\$c 2>/dev/null" TERM',
  'trap "kill -INT \\$c 2>/dev/null" INT',
  'trap "kill -HUP \\$c 2>/dev/null" HUP',
  'exec 3<&0',
  '"$@" <&3 3<&- & c=$!',
  'exec 0<&- 1>&- 2>&- 3<&-',
  'while :; do wait $c; s=$?; kill -0 $c 2>/dev/null || exit $s; done',
].join('\n');

/** How `unshare` can be run here: as it is (root), or in a user namespace of its own. */
export interface PidNamespaceSupport {
  unshareArgs: string[];
  /** setpriv is there to tie unshare's life to the host's. */
  pdeathsig: boolean;
}

let cachedSupport: PidNamespaceSupport | null | undefined;

/** Probes (once per process) whether a PID namespace can be made; null when it cannot. */
export function pidNamespaceSupport(): PidNamespaceSupport | null {
  if (cachedSupport !== undefined) return cachedSupport;
  cachedSupport = null;
  if (process.platform !== 'linux') return cachedSupport;
  const runs = (command: string, args: string[]) => {
    try {
      execFileSync(command, args, { stdio: 'ignore', timeout: 5_000 });
      return true;
    } catch {
      return false;
    }
  };
  const namespaceFlags = ['--pid', '--fork', '--kill-child'];
  for (const userFlags of [[], ['--user', '--map-current-user']]) {
    if (!runs('unshare', [...userFlags, ...namespaceFlags, 'true'])) continue;
    cachedSupport = { unshareArgs: [...userFlags, ...namespaceFlags], pdeathsig: runs('setpriv', ['--pdeathsig', 'KILL', 'true']) };
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

/** True while `pid` runs (a zombie has finished running). */
function isRunning(pid: number): boolean {
  const entry = readProcEntry(pid);
  return entry !== null && isRunningEntry(entry);
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
      const unshare = [...support.unshareArgs, '/bin/sh', '-c', initShim, 'agentvisor-init', request.command, ...request.args];
      return support.pdeathsig
        ? { command: 'setpriv', args: ['--pdeathsig', 'KILL', 'unshare', ...unshare] }
        : { command: 'unshare', args: unshare };
    },
    contain(wrapperPid: number): Containment {
      let initPid: number | null = null;
      const agentPid = poll(() => (initPid ??= childOf(wrapperPid)) && childOf(initPid), 2_000).then((pid) => pid ?? wrapperPid);
      return {
        kind: 'pid-namespace',
        agentPid,
        handle: () => {
          const pid = initPid ?? wrapperPid;
          return { kind: 'pid-namespace', initPid: pid, initStartTime: startTimeOf(pid) ?? 0 };
        },
        async killAll() {
          // SIGKILL reaches a namespace init from outside; its death empties the namespace.
          // Without a known init, killing unshare kills the init (--kill-child).
          const target = initPid ?? wrapperPid;
          try {
            process.kill(target, 'SIGKILL');
          } catch {
            // already gone
          }
          await poll(() => (isRunning(target) || isRunning(wrapperPid) ? null : true), 2_000);
        },
        release() {},
      };
    },
  };
}
