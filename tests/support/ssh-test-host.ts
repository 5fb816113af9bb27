/**
 * A real SSH host for the ssh runtime's integration tests, made by the test itself: a
 * network namespace joined to this one by a veth pair (10.200.x.y/30, a /24 nothing here
 * uses), throwaway host and client keys, and an `sshd` with its own config listening inside
 * the namespace. The namespace shares the pid namespace and the filesystem with this host, so
 * the "remote" agent runs the same node and fixture, and its processes are found in /proc:
 * they are the ones in the namespace's network namespace.
 *
 * Needs root, iproute2 (`ip netns`), openssh-server and openssh-client. Where any of it is
 * missing or refused, `startSshTestHost` says precisely why instead of a host.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { accessSync, constants, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SshRuntimeSpec } from '../../services/runtimes/ssh.runtime.js';

export interface SshTestHost {
  /** The network namespace (`avtest-<hex>`) and the veth end in this namespace. */
  readonly namespace: string;
  readonly hostVeth: string;
  /** sshd's address (inside the namespace) and port. */
  readonly address: string;
  readonly port: number;
  /** The temp directory holding keys, config, known_hosts files and sshd's log. */
  readonly dir: string;
  /** A client key in authorized_keys, and one that is not. */
  readonly clientKey: string;
  readonly strangerKey: string;
  /** known_hosts with the host's key; with another key for the same host; empty. */
  readonly knownHosts: string;
  readonly wrongKnownHosts: string;
  readonly emptyKnownHosts: string;
  /** A runtime spec for this host: the right key and known_hosts, short timeouts. */
  runtime(overrides?: Partial<SshRuntimeSpec>): SshRuntimeSpec;
  /** Cuts the link (this side of the veth down) and restores it. */
  linkDown(): void;
  linkUp(): void;
  /**
   * Live processes on the "remote" side (in the namespace, sshd's listener aside) whose
   * environment (`'environ'`: an agent given a marker variable, and its children), command
   * line (`'cmdline'`: the remote wrapper, which carries it as an argument) or either contains `pattern`.
   */
  remotePids(pattern?: string, where?: 'environ' | 'cmdline' | 'either'): number[];
  /** sshd's log so far. */
  sshdLog(): string;
  /** Kills sshd and every process left in the namespace, deletes namespace, veth and temp dir. Idempotent. */
  destroy(): void;
}

export type SshTestHostResult = { host: SshTestHost; unavailable?: undefined } | { host?: undefined; unavailable: string };

const sshdPath = '/usr/sbin/sshd';

/** Makes the host, or says why this machine cannot. */
export async function startSshTestHost(): Promise<SshTestHostResult> {
  const missing = prerequisitesMissing();
  if (missing) return { unavailable: missing };

  const id = randomBytes(3).toString('hex');
  const namespace = `avtest-${id}`;
  const hostVeth = `avt${id}h`;
  const peerVeth = `avt${id}p`;
  const dir = mkdtempSync(join(tmpdir(), 'agentvisor-ssh-'));
  const port = 2222;
  let sshd: ChildProcess | undefined;
  let destroyed = false;

  const destroy = () => {
    if (destroyed) return;
    destroyed = true;
    process.off('exit', destroy);
    // Everything in the namespace: sshd, its sessions, any agent that survived.
    for (let round = 0; round < 50; round++) {
      const left = namespacePids(namespace);
      if (left.length === 0) break;
      for (const pid of left) kill(pid, 'SIGKILL');
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 50); // a synchronous pause: this also runs on 'exit'
    }
    if (sshd?.pid !== undefined) kill(sshd.pid, 'SIGKILL');
    run('ip', ['link', 'del', hostVeth], true);
    run('ip', ['netns', 'del', namespace], true);
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', destroy);

  try {
    const subnet = freeSubnet();
    if (!subnet) throw new Unavailable('no free /30 in 10.200.0.0/16 on this host');
    const { hostAddress, peerAddress } = subnet;

    try {
      run('ip', ['netns', 'add', namespace]);
    } catch (error) {
      throw new Unavailable(`cannot create a network namespace (ip netns add): ${message(error)}`);
    }
    try {
      run('ip', ['link', 'add', hostVeth, 'type', 'veth', 'peer', 'name', peerVeth, 'netns', namespace]);
    } catch (error) {
      throw new Unavailable(`cannot create a veth pair into the namespace (ip link add … type veth): ${message(error)}`);
    }
    run('ip', ['addr', 'add', `${hostAddress}/30`, 'dev', hostVeth]);
    run('ip', ['link', 'set', hostVeth, 'up']);
    run('ip', ['-n', namespace, 'addr', 'add', `${peerAddress}/30`, 'dev', peerVeth]);
    run('ip', ['-n', namespace, 'link', 'set', peerVeth, 'up']);
    run('ip', ['-n', namespace, 'link', 'set', 'lo', 'up']);

    const key = (name: string) => {
      run('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', `agentvisor-test-${name}`, '-f', join(dir, name)]);
      return join(dir, name);
    };
    const hostKey = key('host_ed25519');
    const otherHostKey = key('other_host_ed25519');
    const clientKey = key('client_ed25519');
    const strangerKey = key('stranger_ed25519');
    writeFileSync(join(dir, 'authorized_keys'), readFileSync(`${clientKey}.pub`));
    const hostLine = (pub: string) => `[${peerAddress}]:${port} ${readFileSync(pub, 'utf8').trim().split(' ').slice(0, 2).join(' ')}\n`;
    writeFileSync(join(dir, 'known_hosts'), hostLine(`${hostKey}.pub`));
    writeFileSync(join(dir, 'wrong_known_hosts'), hostLine(`${otherHostKey}.pub`));
    writeFileSync(join(dir, 'empty_known_hosts'), '');

    const config = join(dir, 'sshd_config');
    writeFileSync(
      config,
      [
        `Port ${port}`,
        `ListenAddress ${peerAddress}`,
        `HostKey ${hostKey}`,
        `AuthorizedKeysFile ${join(dir, 'authorized_keys')}`,
        `PidFile ${join(dir, 'sshd.pid')}`,
        'AuthenticationMethods publickey',
        'PubkeyAuthentication yes',
        'PasswordAuthentication no',
        'KbdInteractiveAuthentication no',
        'PermitRootLogin prohibit-password',
        'UsePAM no',
        'StrictModes no',
        'UseDNS no',
        'PermitUserRC no',
        'PermitUserEnvironment no',
        'PrintMotd no',
        'PrintLastLog no',
        'X11Forwarding no',
        'AllowAgentForwarding no',
        'AllowTcpForwarding no',
        // The server notices a dead client within ~3 s, so a dropped link ends the remote session.
        'ClientAliveInterval 1',
        'ClientAliveCountMax 2',
        'MaxStartups 50',
        'LogLevel VERBOSE',
        '',
      ].join('\n'),
    );
    mkdirSync('/run/sshd', { recursive: true, mode: 0o755 }); // sshd's privilege separation directory
    try {
      run(sshdPath, ['-t', '-f', config]);
    } catch (error) {
      throw new Unavailable(`sshd refuses its test config (sshd -t): ${message(error)}`);
    }
    const log = join(dir, 'sshd.log');
    sshd = spawn('ip', ['netns', 'exec', namespace, sshdPath, '-D', '-f', config, '-E', log], { stdio: 'ignore' });
    const exited = new Promise<string>((resolve) => sshd?.once('exit', (code, signal) => resolve(`sshd exited (${signal ?? code})`)));
    const listening = await Promise.race([waitForPort(peerAddress, port, 5_000), exited]);
    if (listening !== true) throw new Unavailable(`sshd did not listen on ${peerAddress}:${port} in the namespace: ${listening}; log: ${readLog(log)}`);

    const host: SshTestHost = {
      namespace,
      hostVeth,
      address: peerAddress,
      port,
      dir,
      clientKey,
      strangerKey,
      knownHosts: join(dir, 'known_hosts'),
      wrongKnownHosts: join(dir, 'wrong_known_hosts'),
      emptyKnownHosts: join(dir, 'empty_known_hosts'),
      runtime: (overrides = {}) => ({
        kind: 'ssh',
        host: peerAddress,
        port,
        user: 'root',
        identityFile: clientKey,
        knownHostsFile: join(dir, 'known_hosts'),
        connectTimeoutMs: 3_000,
        aliveTimeoutMs: 3_000,
        ...overrides,
      }),
      linkDown: () => run('ip', ['link', 'set', hostVeth, 'down']),
      linkUp: () => run('ip', ['link', 'set', hostVeth, 'up']),
      remotePids: (pattern, where = 'either') =>
        namespacePids(namespace).filter((pid) => pid !== sshd?.pid && (pattern === undefined || processMentions(pid, pattern, where))),
      sshdLog: () => readLog(log),
      destroy,
    };
    return { host };
  } catch (error) {
    destroy();
    if (error instanceof Unavailable) return { unavailable: error.message };
    return { unavailable: `setting up the test host failed: ${message(error)}` };
  }
}

class Unavailable extends Error {}

/** Why this machine cannot make the host, or null. */
function prerequisitesMissing(): string | null {
  if (process.platform !== 'linux') return `needs Linux network namespaces (this is ${process.platform})`;
  if (process.getuid?.() !== 0) return 'needs root (ip netns, a veth pair, sshd on a namespace address)';
  const tools: Array<[string, string]> = [
    ['ip', 'iproute2'],
    ['ssh', 'openssh-client'],
    ['ssh-keygen', 'openssh-client'],
    ['setsid', 'util-linux'],
  ];
  const absent = tools.filter(([tool]) => !onPath(tool)).map(([tool, pkg]) => `${tool} (${pkg})`);
  if (!isExecutable(sshdPath)) absent.push(`${sshdPath} (openssh-server)`);
  if (absent.length > 0) return `this host lacks ${absent.join(', ')}`;
  return null;
}

function onPath(tool: string): boolean {
  const dirs = [...(process.env.PATH ?? '').split(':'), '/usr/sbin', '/sbin'].filter(Boolean);
  return dirs.some((dir) => isExecutable(join(dir, tool)));
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Runs a command to completion; throws with its stderr unless `quiet`. */
function run(command: string, args: string[], quiet = false): string {
  try {
    return execFileSync(command, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 10_000 });
  } catch (error) {
    if (quiet) return '';
    const stderr = (error as { stderr?: string }).stderr?.trim();
    throw new Error(`${command} ${args.join(' ')}: ${stderr || message(error)}`);
  }
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function readLog(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '(no log)';
  }
}

/** A /30 in a 10.200.x.0/24 that no address or route of this host touches. */
function freeSubnet(): { hostAddress: string; peerAddress: string } | null {
  const used = run('ip', ['-o', '-4', 'addr', 'show']) + run('ip', ['-4', 'route', 'show', 'table', 'all']);
  for (let attempt = 0; attempt < 100; attempt++) {
    const x = randomBytes(1)[0]!;
    if (used.includes(`10.200.${x}.`)) continue;
    const base = (randomBytes(1)[0]! % 64) * 4;
    return { hostAddress: `10.200.${x}.${base + 1}`, peerAddress: `10.200.${x}.${base + 2}` };
  }
  return null;
}

/** Resolves true once something accepts TCP connections there, or with why not after `ms`. */
async function waitForPort(address: string, port: number, ms: number): Promise<true | string> {
  const deadline = Date.now() + ms;
  let last = 'nothing tried';
  while (Date.now() < deadline) {
    const result = await new Promise<true | string>((resolve) => {
      const socket = connect({ host: address, port, timeout: 500 });
      socket.once('connect', () => (socket.destroy(), resolve(true)));
      socket.once('timeout', () => (socket.destroy(), resolve('timeout')));
      socket.once('error', (error) => resolve(error.message));
    });
    if (result === true) return true;
    last = result;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return last;
}

/** The network namespace's identity (`net:[inode]`), as /proc/<pid>/ns/net reads. */
function namespaceId(namespace: string): string | null {
  try {
    return `net:[${statSync(`/run/netns/${namespace}`).ino}]`;
  } catch {
    return null;
  }
}

/** Live (not zombie) processes whose network namespace is `namespace`. */
function namespacePids(namespace: string): number[] {
  const id = namespaceId(namespace);
  if (!id) return [];
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readlinkSync(`/proc/${entry}/ns/net`) !== id) continue;
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const state = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
      if (state !== 'Z' && state !== 'X') pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

function processMentions(pid: number, pattern: string, where: 'environ' | 'cmdline' | 'either'): boolean {
  for (const file of where === 'either' ? ['cmdline', 'environ'] : [where]) {
    try {
      if (readFileSync(`/proc/${pid}/${file}`, 'utf8').includes(pattern)) return true;
    } catch {
      // gone meanwhile
    }
  }
  return false;
}

function kill(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // already gone
  }
}
