/**
 * The sandbox runtime's command, on a fake host (what exists and links where is the test's):
 * the exact argv for each option, the order of the mounts (a deeper path wins), hostile
 * values passed through untouched, and which endings are the sandbox's failures.
 */
import { describe, expect, it } from 'vitest';
import type { AgentSpec } from '../../core/agent-spec.js';
import { sandboxCommand, sandboxFailure, sandboxMounts, type SandboxHost, type SandboxRuntime } from '../../services/runtimes/sandbox.runtime.js';

type Entry = { type: 'symlink'; target: string } | { type: 'dir' | 'file' | 'other' };

/** A host of a merged-/usr Debian: /bin, /lib, /lib64 and /sbin link into /usr; no /lib32, /libx32. */
function fakeHost(extra: Record<string, Entry> = {}, overrides: Partial<SandboxHost> = {}): SandboxHost {
  const entries: Record<string, Entry> = {
    '/usr': { type: 'dir' },
    '/usr/bin': { type: 'dir' },
    '/usr/bin/node': { type: 'file' },
    '/usr/bin/env': { type: 'file' },
    '/bin': { type: 'symlink', target: 'usr/bin' },
    '/sbin': { type: 'symlink', target: 'usr/sbin' },
    '/lib': { type: 'symlink', target: 'usr/lib' },
    '/lib64': { type: 'symlink', target: 'usr/lib64' },
    '/etc': { type: 'dir' },
    '/etc/resolv.conf': { type: 'file' },
    '/home/ada': { type: 'dir' },
    '/work/project': { type: 'dir' },
    ...extra,
  };
  const links = (path: string): string | null => {
    const entry = entries[path];
    if (entry?.type !== 'symlink') return entry ? path : null;
    return links(entry.target.startsWith('/') ? entry.target : `/${entry.target}`);
  };
  return {
    lstat: (path) => entries[path] ?? null,
    stat: (path) => {
      const real = links(path);
      const entry = real === null ? undefined : entries[real];
      return entry && entry.type !== 'symlink' ? entry.type : null;
    },
    executable: (path) => {
      const real = links(path);
      return real !== null && entries[real]?.type === 'file';
    },
    realpath: links,
    homedir: '/home/ada',
    execPath: '/usr/bin/node',
    path: '/usr/local/bin:/usr/bin:/bin',
    ...overrides,
  };
}

const system = [
  ['--ro-bind', '/usr', '/usr'],
  ['--symlink', 'usr/bin', '/bin'],
  ['--symlink', 'usr/sbin', '/sbin'],
  ['--symlink', 'usr/lib', '/lib'],
  ['--symlink', 'usr/lib64', '/lib64'],
  ['--ro-bind', '/etc', '/etc'],
  ['--dev', '/dev'],
  ['--proc', '/proc'],
  ['--tmpfs', '/tmp'],
].flat();

const agent: AgentSpec = { command: 'node', args: ['agent.js', '--acp'] };
const sandbox: SandboxRuntime = { kind: 'sandbox' };

/** The bwrap arguments of a command: after the shell's script, its $0 and the bwrap path. */
const bwrapArgs = (args: string[]) => args.slice(4);

describe('sandboxCommand', () => {
  it('defaults: its own PID, IPC and network namespaces; the system read-only; home hidden; the cwd read-write', () => {
    const command = sandboxCommand(agent, sandbox, { cwd: '/work/project', host: fakeHost() });
    expect(command.command).toBe('/bin/sh');
    expect(command.args.slice(0, 4)).toEqual(['-c', 'trap "" TERM; exec "$@"', 'agentvisor-sandbox', 'bwrap']);
    expect(bwrapArgs(command.args)).toEqual([
      '--die-with-parent',
      '--unshare-pid',
      '--unshare-ipc',
      '--unshare-net',
      ...system,
      '--tmpfs',
      '/home/ada',
      '--bind',
      '/work/project',
      '/work/project',
      '--chdir',
      '/work/project',
      '--',
      '/usr/bin/env',
      '--default-signal=TERM',
      'node',
      'agent.js',
      '--acp',
    ]);
    expect(command.localContainment).toBe(false);
    expect(command.signalInside).toBeUndefined();
    expect(command.env).toBeUndefined();
  });

  it('network: true keeps the host network (and no --unshare-net)', () => {
    const args = bwrapArgs(sandboxCommand(agent, { kind: 'sandbox', network: true }, { cwd: '/work/project', host: fakeHost() }).args);
    expect(args).not.toContain('--unshare-net');
    expect(args.slice(0, 3)).toEqual(['--die-with-parent', '--unshare-pid', '--unshare-ipc']);
  });

  it('network: true makes a resolv.conf that links into /run readable (systemd-resolved)', () => {
    const host = fakeHost({
      '/etc/resolv.conf': { type: 'symlink', target: '/run/systemd/resolve/stub-resolv.conf' },
      '/run/systemd/resolve/stub-resolv.conf': { type: 'file' },
    });
    const withNetwork = bwrapArgs(sandboxCommand(agent, { kind: 'sandbox', network: true }, { cwd: '/work/project', host }).args);
    expect(withNetwork.join(' ')).toContain('--ro-bind /run/systemd/resolve/stub-resolv.conf /run/systemd/resolve/stub-resolv.conf');
    const without = bwrapArgs(sandboxCommand(agent, sandbox, { cwd: '/work/project', host }).args);
    expect(without.join(' ')).not.toContain('/run/');
  });

  it('skips system directories this host does not have, and binds real ones that are not links', () => {
    const host = fakeHost({ '/lib64': { type: 'dir' }, '/lib32': { type: 'dir' } });
    const args = bwrapArgs(sandboxCommand(agent, sandbox, { cwd: '/work/project', host }).args).join(' ');
    expect(args).toContain('--ro-bind /lib32 /lib32');
    expect(args).toContain('--ro-bind /lib64 /lib64');
    expect(args).not.toContain('libx32');
  });

  it('readOnly, readWrite and hide: shallower paths first, so the deeper one always wins', () => {
    const host = fakeHost({
      '/home/ada/.codex': { type: 'dir' },
      '/home/ada/project': { type: 'dir' },
      '/home/ada/project/.env': { type: 'file' },
      '/data': { type: 'dir' },
      '/data/out': { type: 'dir' },
      '/etc/ssh': { type: 'dir' },
    });
    const runtime: SandboxRuntime = {
      kind: 'sandbox',
      readOnly: ['/home/ada/.codex', '/data'],
      readWrite: ['/data/out'],
      hide: ['/home/ada', '/etc/ssh', '.env'],
    };
    const mounts = sandboxMounts(agent, runtime, { cwd: '/home/ada/project', host }).filter((mount) => mount.origin !== 'system');
    expect(mounts.map((mount) => [mount.kind, mount.path])).toEqual([
      ['ro-bind', '/data'], // depth 1
      ['tmpfs', '/home/ada'], // depth 2: hide before the spec's binds and the cwd at that depth
      ['tmpfs', '/etc/ssh'],
      ['bind', '/data/out'], // writable inside the read-only /data
      ['ro-bind', '/home/ada/.codex'], // depth 3: inside the hidden home, shown again
      ['bind', '/home/ada/project'], // the cwd, inside the hidden home
      ['hide-file', '/home/ada/project/.env'], // depth 4: a hidden file inside the cwd (relative paths are the cwd's)
    ]);
    const args = bwrapArgs(sandboxCommand(agent, runtime, { cwd: '/home/ada/project', host }).args).join(' ');
    expect(args).toContain('--ro-bind /dev/null /home/ada/project/.env');
    expect(args).toContain('--chdir /home/ada/project --');
  });

  it('at one depth the later origin wins: hide < readOnly < readWrite < cwd', () => {
    const host = fakeHost({ '/srv': { type: 'dir' } });
    const mounts = sandboxMounts(agent, { kind: 'sandbox', hide: ['/srv'], readOnly: ['/srv'], readWrite: ['/srv'] }, { cwd: '/srv', host });
    expect(mounts.filter((mount) => mount.path === '/srv').map((mount) => mount.origin)).toEqual(['hide', 'readOnly', 'readWrite', 'cwd']);
  });

  it('hide: [] shows no home at all; a hidden path that does not exist is skipped; / is never hidden', () => {
    const args = bwrapArgs(sandboxCommand(agent, { kind: 'sandbox', hide: [] }, { cwd: '/work/project', host: fakeHost() }).args).join(' ');
    expect(args).not.toContain('/home/ada');
    const skipped = bwrapArgs(sandboxCommand(agent, { kind: 'sandbox', hide: ['/nope', '/'] }, { cwd: '/work/project', host: fakeHost() }).args);
    expect(skipped.filter((arg) => arg === '--tmpfs')).toHaveLength(1); // /tmp only
  });

  it('binds extra paths as given, existing or not: a missing one is bwrap\'s error, reported as runtime_missing', () => {
    const args = bwrapArgs(sandboxCommand(agent, { kind: 'sandbox', readOnly: ['/missing'], readWrite: ['rel/dir'] }, { cwd: '/work/project', host: fakeHost() }).args);
    expect(args.join(' ')).toContain('--ro-bind /missing /missing');
    expect(args.join(' ')).toContain('--bind /work/project/rel/dir /work/project/rel/dir');
  });

  it('shows the agent\'s own program when it lies outside the system: its directories, its npm package, this node', () => {
    const host = fakeHost(
      {
        '/home/ada/.nvm/versions/node/v20/bin': { type: 'dir' },
        '/home/ada/.nvm/versions/node/v20/bin/node': { type: 'file' },
        '/home/ada/.nvm/versions/node/v20/bin/codex-acp': { type: 'symlink', target: '/home/ada/.nvm/versions/node/v20/lib/node_modules/@zed/codex-acp/bin/cli.js' },
        '/home/ada/.nvm/versions/node/v20/lib/node_modules': { type: 'dir' },
        '/home/ada/.nvm/versions/node/v20/lib/node_modules/@zed/codex-acp': { type: 'dir' },
        '/home/ada/.nvm/versions/node/v20/lib/node_modules/@zed/codex-acp/bin': { type: 'dir' },
        '/home/ada/.nvm/versions/node/v20/lib/node_modules/@zed/codex-acp/bin/cli.js': { type: 'file' },
      },
      { execPath: '/home/ada/.nvm/versions/node/v20/bin/node', path: '/home/ada/.nvm/versions/node/v20/bin:/usr/bin' },
    );
    const mounts = sandboxMounts({ command: 'codex-acp' }, sandbox, { cwd: '/work/project', host }).filter((mount) => mount.origin === 'program');
    // The package lies in this node's lib/node_modules: one bind covers it.
    expect(mounts.map((mount) => mount.path)).toEqual(['/home/ada/.nvm/versions/node/v20/bin', '/home/ada/.nvm/versions/node/v20/lib/node_modules']);
    // With the system's node, a package installed under the home (npm's prefix there): its root.
    const npmGlobal = fakeHost(
      {
        '/home/ada/.npm-global/bin': { type: 'dir' },
        '/home/ada/.npm-global/bin/codex-acp': { type: 'symlink', target: '/home/ada/.npm-global/lib/node_modules/@zed/codex-acp/bin/cli.js' },
        '/home/ada/.npm-global/lib/node_modules/@zed/codex-acp': { type: 'dir' },
        '/home/ada/.npm-global/lib/node_modules/@zed/codex-acp/bin': { type: 'dir' },
        '/home/ada/.npm-global/lib/node_modules/@zed/codex-acp/bin/cli.js': { type: 'file' },
      },
      { path: '/home/ada/.npm-global/bin:/usr/bin' },
    );
    expect(sandboxMounts({ command: 'codex-acp' }, sandbox, { cwd: '/work/project', host: npmGlobal }).filter((m) => m.origin === 'program').map((m) => m.path)).toEqual([
      '/home/ada/.npm-global/bin',
      '/home/ada/.npm-global/lib/node_modules/@zed/codex-acp',
    ]);
    // …never a whole home or a top-level directory
    const broad = fakeHost({ '/home/ada/agent': { type: 'file' }, '/opt': { type: 'dir' }, '/opt/agent': { type: 'file' } });
    expect(sandboxMounts({ command: '/home/ada/agent' }, sandbox, { cwd: '/work/project', host: broad }).filter((m) => m.origin === 'program')).toEqual([]);
    expect(sandboxMounts({ command: '/opt/agent' }, sandbox, { cwd: '/work/project', host: broad }).filter((m) => m.origin === 'program')).toEqual([]);
  });

  it('passes hostile arguments through untouched, after bwrap\'s "--": no shell parses them', () => {
    const hostile = ["'; rm -rf / #", '$(id)', '`id`', 'a\nb', '--bind', '/ /', '-'];
    const command = sandboxCommand({ command: '--ro-bind', args: hostile }, sandbox, { cwd: '/work/project', host: fakeHost() });
    const args = command.args;
    const dash = args.indexOf('--');
    expect(args.slice(dash + 1)).toEqual(['/usr/bin/env', '--default-signal=TERM', '--ro-bind', ...hostile]);
    // The outer shell's script is a constant: the values are positional parameters of "exec "$@"".
    expect(args[1]).toBe('trap "" TERM; exec "$@"');
  });

  it('keeps env values out of argv: they travel in the spawned process\'s environment', () => {
    const command = sandboxCommand({ ...agent, env: { API_KEY: 'sk-secret', EMPTY: '' } }, sandbox, { cwd: '/work/project', host: fakeHost() });
    expect(command.env).toEqual({ API_KEY: 'sk-secret', EMPTY: '' });
    expect(command.args.join('\n')).not.toContain('sk-secret');
    expect(command.args).not.toContain('--setenv');
    expect(command.args).not.toContain('--clearenv');
  });

  it('uses the bwrap it is given', () => {
    expect(sandboxCommand(agent, sandbox, { cwd: '/work/project', bwrap: '/opt/bin/bwrap', host: fakeHost() }).args[3]).toBe('/opt/bin/bwrap');
  });
});

describe('sandboxFailure', () => {
  const ended = (exitCode: number | null, signal: string | null = null) => ({ exitCode, signal });

  it("reads bubblewrap's own errors (exit 1) as runtime_missing, with the reason", () => {
    expect(sandboxFailure(ended(1), ["bwrap: Can't find source path /nope: No such file or directory"], 'node')).toEqual({
      kind: 'runtime_missing',
      detail: "bubblewrap could not set up the sandbox: Can't find source path /nope: No such file or directory",
    });
    expect(sandboxFailure(ended(1), ['bwrap: Can\'t mount proc on /newroot/proc: Operation not permitted'], 'node')?.detail).toMatch(/cannot create the sandbox's namespaces/);
    const userns =
      'bwrap: No permissions to creating new namespace, likely because the kernel does not allow non-privileged user namespaces. ' +
      "On e.g. debian this can be enabled with 'sysctl kernel.unprivileged_userns_clone=1'.";
    expect(sandboxFailure(ended(1), [userns], 'node')).toMatchObject({ kind: 'runtime_missing' });
    expect(sandboxFailure(ended(1), ['bwrap: setting up uid map: Permission denied'], 'node')).toMatchObject({ kind: 'runtime_missing' });
  });

  it('reads a missing bwrap (the shell\'s 127), an env without --default-signal (125), an invisible command (127/126)', () => {
    expect(sandboxFailure(ended(127), ['agentvisor-sandbox: 1: exec: bwrap: not found'], 'node')?.detail).toMatch(/bubblewrap is not installed/);
    expect(sandboxFailure(ended(127), ['agentvisor-sandbox: line 1: exec: bwrap: not found'], 'node')?.detail).toMatch(/bubblewrap is not installed/);
    expect(sandboxFailure(ended(125), ["/usr/bin/env: unrecognized option '--default-signal=TERM'", "Try '/usr/bin/env --help' for more information."], 'node')?.detail).toMatch(
      /coreutils 8\.31/,
    );
    expect(sandboxFailure(ended(127), ['/usr/bin/env: ‘codex-acp’: No such file or directory'], 'codex-acp')?.detail).toMatch(/codex-acp cannot be run inside the sandbox/);
    expect(sandboxFailure(ended(126), ["/usr/bin/env: '/work/agent': Permission denied"], '/work/agent')).toMatchObject({ kind: 'runtime_missing' });
  });

  it("is null for the agent's own endings, whatever it printed", () => {
    expect(sandboxFailure(ended(1), ['Error: API key missing'], 'node')).toBeNull();
    expect(sandboxFailure(ended(143), [], 'node')).toBeNull();
    expect(sandboxFailure(ended(null, 'SIGKILL'), [], 'node')).toBeNull();
    // bwrap's words with another status are the agent's (it printed them itself)
    expect(sandboxFailure(ended(0), ['bwrap: something'], 'node')).toBeNull();
  });
});
