/**
 * The `sandbox` runtime (docs/runtimes-sandbox-containers.md): the agent under bubblewrap, in
 * PID, IPC and (unless `network: true`) network namespaces of its own, seeing a file system
 * built for it: the system's directories read-only, a fresh /dev, /proc and /tmp, its working
 * directory read-write, the spec's extra paths, and an empty directory over each hidden path.
 *
 *   /bin/sh -c 'trap "" TERM; exec "$@"' agentvisor-sandbox bwrap --die-with-parent --unshare-pid …
 *     <mounts> --chdir <cwd> -- /usr/bin/env --default-signal=TERM <command> <args…>
 *
 * Pure but for reading this host's file system (what exists, what links where): tests pass a
 * `host` of their own. Nothing here spawns.
 */
import { accessSync, constants, lstatSync, readlinkSync, realpathSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, dirname, join, posix } from 'node:path';
import type { AgentSpec } from '../../core/agent-spec.js';
import type { AgentErrorKind } from '../../core/errors.js';
import type { RuntimeSpec } from '../../core/runtime-spec.js';
import type { RuntimeCommand } from './runtime.js';

export type SandboxRuntime = Extract<RuntimeSpec, { kind: 'sandbox' }>;

/** What the sandbox reads of this host; {@link nodeSandboxHost} by default. */
export interface SandboxHost {
  /** What `path` itself is, a final symlink not followed; null: nothing is there. */
  lstat(path: string): { type: 'symlink'; target: string } | { type: 'dir' | 'file' | 'other' } | null;
  /** What `path` leads to, symlinks followed; null: nothing (or a dangling link). */
  stat(path: string): 'dir' | 'file' | 'other' | null;
  /** Whether `path` is a file this process may execute. */
  executable(path: string): boolean;
  /** `path` with every symlink resolved; null when it does not exist. */
  realpath(path: string): string | null;
  homedir: string;
  /** Where this process's node is (node-based agents run on it). */
  execPath: string;
  /** This process's PATH (the spec's own `env.PATH` wins). */
  path: string;
}

export interface SandboxOptions {
  /** The agent's working directory on this host, already resolved (a workspace, or the host's cwd). */
  cwd: string;
  /** The bubblewrap binary (default `bwrap`, looked up on PATH by /bin/sh). */
  bwrap?: string;
  host?: SandboxHost;
}

/**
 * The system's own directories, read-only. Not `/`: a read-only bind of the whole root would
 * still let the agent connect() to every Unix socket on the host (the Docker socket, an ssh
 * agent, D-Bus): a read-only mount does not stop that, and `--unshare-net` does not cover
 * sockets in the file system. It would also show /home, /root, /var and /run.
 */
export const systemPaths = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32', '/etc'] as const;

/** The program that restores SIGTERM for the agent (GNU coreutils ≥ 8.31); see {@link sandboxCommand}. */
export const sandboxEnv = '/usr/bin/env';

/** The outer shell's script and its $0 (a marker in `ps` and in the shell's own error messages). */
export const sandboxShell = { script: 'trap "" TERM; exec "$@"', name: 'agentvisor-sandbox' } as const;

/** How one entry of the sandbox's file system is made, in bwrap's terms. */
export interface SandboxMount {
  kind: 'ro-bind' | 'bind' | 'tmpfs' | 'symlink' | 'dev' | 'proc' | 'hide-file';
  /** Where it appears inside the sandbox (an absolute, normalised path). */
  path: string;
  /** With `ro-bind`/`bind`: the host path; with `symlink`: the link's target. */
  source?: string;
  /** Why it is there: the system, the agent's own program, the spec's lists, the cwd. */
  origin: 'system' | 'program' | 'network' | 'hide' | 'readOnly' | 'readWrite' | 'cwd';
}

/** At one depth, the later of these wins (is mounted last): a spec's choice over a default, the cwd over all. */
const precedence: Record<SandboxMount['origin'], number> = { system: 0, program: 1, network: 2, hide: 3, readOnly: 4, readWrite: 5, cwd: 6 };

/**
 * The mounts of the sandbox for `spec`, in the order bwrap applies them: shallower paths
 * first, so that a deeper path always wins over the one it lies in, whichever list it
 * comes from (a hidden home with a read-only `~/.codex` in it; a workspace inside the hidden
 * home; a hidden `.env` inside the workspace). At one depth, {@link precedence} decides.
 */
export function sandboxMounts(spec: AgentSpec, runtime: SandboxRuntime, options: SandboxOptions): SandboxMount[] {
  const host = options.host ?? nodeSandboxHost();
  const cwd = posix.resolve(options.cwd);
  const at = (path: string) => posix.resolve(cwd, path);
  const mounts: SandboxMount[] = [];
  for (const path of systemPaths) {
    const entry = host.lstat(path);
    if (entry?.type === 'symlink') mounts.push({ kind: 'symlink', path, source: entry.target, origin: 'system' });
    else if (entry?.type === 'dir') mounts.push({ kind: 'ro-bind', path, source: path, origin: 'system' });
  }
  mounts.push({ kind: 'dev', path: '/dev', origin: 'system' }, { kind: 'proc', path: '/proc', origin: 'system' }, { kind: 'tmpfs', path: '/tmp', origin: 'system' });

  const visible = (path: string) => mounts.some((mount) => (mount.kind === 'ro-bind' || mount.kind === 'bind') && isWithin(path, mount.path)) || isWithin(path, cwd);
  // Never a top-level directory or a home (a program lying right in /opt or ~ needs readOnly).
  const broad = (path: string) => depth(path) < 2 || isWithin(host.homedir, path);
  const expose = (path: string | null, origin: SandboxMount['origin']) => {
    if (path && !broad(path) && !visible(path) && host.stat(path) === 'dir') mounts.push({ kind: 'ro-bind', path, source: path, origin });
  };
  for (const path of programPaths(spec, cwd, host)) expose(path, 'program');
  if (runtime.network) {
    // /etc/resolv.conf is often a link into /run (systemd-resolved): the agent needs its target to resolve names.
    const resolvConf = host.lstat('/etc/resolv.conf');
    const target = resolvConf?.type === 'symlink' ? host.realpath('/etc/resolv.conf') : null;
    if (target && !visible(target) && host.stat(target) === 'file') mounts.push({ kind: 'ro-bind', path: target, source: target, origin: 'network' });
  }

  for (const path of (runtime.hide ?? [host.homedir]).map(at)) {
    if (path === '/') continue; // an empty root would hide the sandbox itself
    const kind = host.stat(path);
    if (kind === 'dir') mounts.push({ kind: 'tmpfs', path, origin: 'hide' });
    else if (kind !== null) mounts.push({ kind: 'hide-file', path, source: '/dev/null', origin: 'hide' });
    // Nothing there: nothing to hide (and no directory made for it).
  }
  for (const path of (runtime.readOnly ?? []).map(at)) mounts.push({ kind: 'ro-bind', path, source: path, origin: 'readOnly' });
  for (const path of (runtime.readWrite ?? []).map(at)) mounts.push({ kind: 'bind', path, source: path, origin: 'readWrite' });
  mounts.push({ kind: 'bind', path: cwd, source: cwd, origin: 'cwd' });

  return mounts
    .map((mount, index) => ({ mount, index }))
    .sort((a, b) => depth(a.mount.path) - depth(b.mount.path) || precedence[a.mount.origin] - precedence[b.mount.origin] || a.index - b.index)
    .map(({ mount }) => mount);
}

/** bwrap's arguments for one mount. */
function mountArgs(mount: SandboxMount): string[] {
  switch (mount.kind) {
    case 'ro-bind':
      return ['--ro-bind', mount.source ?? mount.path, mount.path];
    case 'bind':
      return ['--bind', mount.source ?? mount.path, mount.path];
    case 'hide-file':
      return ['--ro-bind', '/dev/null', mount.path];
    case 'symlink':
      return ['--symlink', mount.source ?? '', mount.path];
    case 'tmpfs':
      return ['--tmpfs', mount.path];
    case 'dev':
      return ['--dev', mount.path];
    case 'proc':
      return ['--proc', mount.path];
  }
}

/**
 * What to spawn for an agent in the sandbox.
 *
 * - **Process tree.** `--unshare-pid`: bwrap's own init is pid 1 of a new PID namespace and
 *   the agent pid 2. `--die-with-parent` gives the outer bwrap *and* that init a parent-death
 *   SIGKILL: when the agent exits, bwrap exits with its status, the init is killed, and the
 *   kernel kills everything left in the namespace (a setsid'd, double-forked escapee too);
 *   when bwrap is killed (the ladder's SIGKILL, anyone's), the same; when the supervisor itself
 *   dies (even by SIGKILL), bwrap gets SIGKILL and the same follows. So `localContainment` is
 *   false: the supervisor's own mechanisms would only wrap a process that is already a
 *   namespace's keeper (and look for the agent's pid where bwrap's init is).
 * - **The stop ladder.** No `--new-session`: the agent stays in the spawned process group,
 *   so the group's SIGTERM and SIGKILL reach it directly (the group has no terminal, so the
 *   TIOCSTI concern `--new-session` addresses does not arise). bwrap forwards no signal and
 *   dies of SIGTERM, and its death SIGKILLs the sandbox at once: the agent would never get to
 *   act on the SIGTERM. So the outer shell sets SIGTERM to ignored before it becomes bwrap;
 *   ignored dispositions are inherited, so `env --default-signal=TERM` restores it just before
 *   the agent's own command. A SIGTERM then reaches the agent alone; bwrap exits when the
 *   agent does. Stdin is the spawned pipe itself: its EOF reaches the agent as it is.
 * - **Exit status.** bwrap exits with the agent's code, or 128 + n when a signal n killed it
 *   (like the PID-namespace containment's init: `signalOfInitExit` maps it back).
 * - **Environment.** Inherited: bwrap's own environment (this host's, with `spec.env` over it,
 *   as for a local agent) passes to the agent unchanged, so no value appears in an argv
 *   that `ps` shows. No `--clearenv`: agents need their API keys, and the sandbox is about
 *   what the agent can reach, not what it was given.
 */
export function sandboxCommand(spec: AgentSpec, runtime: SandboxRuntime, options: SandboxOptions): RuntimeCommand {
  const cwd = posix.resolve(options.cwd);
  const bwrapArgs = [
    '--die-with-parent',
    '--unshare-pid',
    '--unshare-ipc',
    ...(runtime.network ? [] : ['--unshare-net']),
    ...sandboxMounts(spec, runtime, options).flatMap(mountArgs),
    '--chdir',
    cwd,
    '--',
    sandboxEnv,
    '--default-signal=TERM',
    spec.command,
    ...(spec.args ?? []),
  ];
  return {
    command: '/bin/sh',
    args: ['-c', sandboxShell.script, sandboxShell.name, options.bwrap ?? 'bwrap', ...bwrapArgs],
    ...(spec.env ? { env: spec.env } : {}),
    localContainment: false,
    failureOf: (exit, stderr) => sandboxFailure(exit, stderr, spec.command),
  };
}

/**
 * A failure of the sandbox itself, from how the spawned process ended and its stderr: bwrap's
 * own errors (it exits 1 after `bwrap: <reason>`), bwrap not installed (the shell's exit 127),
 * an `env` without `--default-signal` (125), or the agent's command not visible inside (127,
 * 126). Null: the agent's own failure.
 */
export function sandboxFailure(
  exit: { exitCode: number | null; signal: string | null },
  stderr: readonly string[],
  command: string,
): { kind: AgentErrorKind; detail: string } | null {
  const missing = (detail: string) => ({ kind: 'runtime_missing' as const, detail });
  for (const line of stderr) {
    const bwrap = /^bwrap: (.+)$/.exec(line);
    if (bwrap && exit.exitCode === 1) {
      const reason = bwrap[1] ?? '';
      if (/new namespace|user namespace|uid map|setting up uid|Operation not permitted/i.test(reason)) {
        return missing(`bubblewrap cannot create the sandbox's namespaces on this host: ${reason}`);
      }
      return missing(`bubblewrap could not set up the sandbox: ${reason}`);
    }
    if (line.startsWith(`${sandboxShell.name}:`) && /\bnot found$/.test(line) && exit.exitCode === 127) {
      return missing(`bubblewrap is not installed: ${line}`);
    }
    if (line.startsWith(`${sandboxEnv}:`)) {
      if (exit.exitCode === 125 && /--default-signal/.test(line)) {
        return missing(`${sandboxEnv} has no --default-signal (GNU coreutils 8.31 or later is needed): ${line}`);
      }
      if ((exit.exitCode === 127 || exit.exitCode === 126) && /: (No such file or directory|Permission denied)$/.test(line)) {
        return missing(`the agent's command ${command} cannot be run inside the sandbox (not visible there: add its directory to readOnly): ${line}`);
      }
    }
  }
  return null;
}

/**
 * What the agent's own program needs to start, when it lies outside the system's directories:
 * the directories of its command (as found on PATH, and as its real path) and, for a program
 * in an npm package, the package's root; and this node's `bin` and `lib/node_modules` (a
 * node-based agent's `#!/usr/bin/env node` finds the same node, e.g. under ~/.nvm).
 */
function programPaths(spec: AgentSpec, cwd: string, host: SandboxHost): string[] {
  const paths: string[] = [];
  const command = findCommand(spec.command, cwd, spec.env?.PATH ?? host.path, host);
  for (const file of [command, command && host.realpath(command), host.execPath, host.realpath(host.execPath)]) {
    if (!file) continue;
    paths.push(dirname(file));
    const pkg = /^(.*\/node_modules\/(?:@[^/]+\/)?[^/]+)\//.exec(file)?.[1];
    if (pkg) paths.push(pkg);
  }
  const node = host.realpath(host.execPath);
  if (node && posix.basename(dirname(node)) === 'bin') paths.push(join(dirname(dirname(node)), 'lib', 'node_modules'));
  // One bind for a directory and what lies in it.
  return [...new Set(paths)].filter((path, _, all) => !all.some((other) => other !== path && isWithin(path, other)));
}

/** `command` as a spawn would find it (relative to the cwd with a slash, else on PATH), when it is an executable file. */
function findCommand(command: string, cwd: string, path: string, host: SandboxHost): string | null {
  if (command.includes('/')) return host.executable(posix.resolve(cwd, command)) ? posix.resolve(cwd, command) : null;
  for (const dir of path.split(delimiter).filter(Boolean)) {
    const candidate = posix.resolve(cwd, dir, command);
    if (host.executable(candidate)) return candidate;
  }
  return null;
}

function isWithin(path: string, root: string): boolean {
  return root === '/' || path === root || path.startsWith(`${root}/`);
}

function depth(path: string): number {
  return path.split('/').filter(Boolean).length;
}

/** This host, read through node:fs. */
export function nodeSandboxHost(): SandboxHost {
  return {
    lstat(path) {
      try {
        const stats = lstatSync(path);
        if (stats.isSymbolicLink()) return { type: 'symlink', target: readlinkSync(path) };
        return { type: stats.isDirectory() ? 'dir' : stats.isFile() ? 'file' : 'other' };
      } catch {
        return null;
      }
    },
    stat(path) {
      try {
        const stats = statSync(path);
        return stats.isDirectory() ? 'dir' : stats.isFile() ? 'file' : 'other';
      } catch {
        return null;
      }
    },
    executable(path) {
      try {
        if (!statSync(path).isFile()) return false;
        accessSync(path, constants.X_OK);
        return true;
      } catch {
        return false;
      }
    },
    realpath(path) {
      try {
        return realpathSync(path);
      } catch {
        return null;
      }
    },
    homedir: homedir(),
    execPath: process.execPath,
    path: process.env.PATH ?? '',
  };
}
