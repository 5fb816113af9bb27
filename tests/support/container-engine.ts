/**
 * A real container engine for the docker runtime's integration tests, and the image they run.
 *
 * The engine: Podman's Docker-compatible API (`podman system service`), started by the tests
 * themselves on a private socket with a private configuration and storage under
 * node_modules/.cache/agentvisor/container-engine (so the image is imported once per
 * checkout), and stopped after them with every container it ran. Where Podman is not
 * installed, a Docker engine the `docker` client already reaches (DOCKER_HOST or its default
 * socket) is used as it is. Where neither is there, `startContainerEngine` says what is
 * missing instead of an engine.
 *
 * The image: no registry is reachable here, so it is made locally — a root file system
 * holding this host's `node` (at the same path, so `process.execPath` names it there too),
 * `/bin/sh` and the few programs the runtime's wrapper needs (docs/runtimes-sandbox-containers.md),
 * each with the shared libraries `ldd` lists, imported with `docker import`. Tests mount the
 * checkout read-only at its own path, so the fixture agent finds its script and node_modules.
 *
 * Podman needs, on these hosts: `runc` (crun refuses their hybrid cgroup layout),
 * `cgroup_manager = "cgroupfs"` (no systemd), ulimits within the machine's own (its defaults
 * are above them), and `catatonit` for `docker run --init`. `.ci/run` installs
 * `podman runc catatonit` when they are missing; `npx tsx scripts/container-engine.ts` starts
 * the same engine by hand.
 */
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { supervisorInstance } from '../../services/agent-records.service.js';
import { containerLabels } from '../../services/runtimes/container.runtime.js';

export const checkout = fileURLToPath(new URL('../..', import.meta.url)).replace(/\/$/, '');

/** What the image holds besides node: the wrapper's programs, and what the tests' agents run. */
const imagePrograms = ['sh', 'setsid', 'mkdir', 'mkfifo', 'cat', 'sleep', 'rm', 'env', 'nice'];

export interface ContainerEngine {
  /** The engine's address for the `docker` client (`unix://…`). */
  readonly dockerHost: string;
  /** What runs it: Podman started here, or a Docker engine that was already there. */
  readonly engine: string;
  /** The test image (`localhost/agentvisor-test:<hash>`). */
  readonly image: string;
  /** `docker …` against this engine, synchronously: stdout, stderr and the exit status. */
  docker(args: string[]): { stdout: string; stderr: string; status: number | null };
  /** The containers (running or not) labelled for `agent`, or every agentvisor container. */
  containers(agent?: string): Array<{ id: string; name: string; state: string; labels: Record<string, string> }>;
  /** The label every container this process starts carries (the runtime's supervisor label): `stop()` removes those. */
  readonly ownLabel: string;
  /** Removes the containers this process started, then stops an engine started here. Idempotent. */
  stop(): void;
}

export type ContainerEngineResult = { engine: ContainerEngine; unavailable?: undefined } | { engine?: undefined; unavailable: string };

const cacheDir = join(checkout, 'node_modules', '.cache', 'agentvisor', 'container-engine');
/**
 * The engine's storage (images, containers, its database). Podman refuses a storage whose
 * database was made with other storage settings: a change to them takes a new directory.
 */
const storageRoot = join(cacheDir, 'storage-overlay-skip-mount-home');

/** Podman's configuration for this engine (CONTAINERS_CONF): the settings these hosts need. */
const containersConf = `[containers]
default_ulimits = ["nofile=1024:1024", "nproc=4096:4096"]

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
`;

function found(command: string): boolean {
  return spawnSync('sh', ['-c', 'command -v "$1"', 'sh', command], { encoding: 'utf8' }).status === 0;
}

function dockerWith(dockerHost: string | undefined, args: string[], input?: string) {
  const env = { ...process.env };
  if (dockerHost !== undefined) env.DOCKER_HOST = dockerHost;
  const result = spawnSync('docker', args, { encoding: 'utf8', env, timeout: 60_000, ...(input !== undefined ? { input } : {}) });
  return { stdout: result.stdout ?? '', stderr: result.stderr ?? (result.error ? String(result.error) : ''), status: result.status };
}

/** Starts (or finds) an engine and makes sure the test image is in it; or says why not. */
export async function startContainerEngine(): Promise<ContainerEngineResult> {
  if (!found('docker')) return { unavailable: 'the docker client is not installed (the docker runtime spawns it)' };
  let service: ChildProcess | null = null;
  let runDir: string | null = null;
  let dockerHost: string;
  let engineName: string;
  if (found('podman')) {
    if (process.getuid?.() !== 0) return { unavailable: 'podman is installed, but the tests run it as root only (rootless Podman needs subuids the tests do not set up)' };
    const missing = ['runc', 'catatonit'].filter((tool) => !found(tool) && !existsSync(`/usr/libexec/podman/${tool}`) && !existsSync(`/usr/bin/${tool}`));
    if (missing.length > 0) return { unavailable: `podman is installed but ${missing.join(' and ')} is not: apt-get install podman runc catatonit` };
    mkdirSync(cacheDir, { recursive: true });
    // Podman keeps its run root in its database (a different one later is refused) and wants
    // it at most 50 characters long: one short, fixed directory per checkout, this run's socket in it.
    const stateRoot = join(tmpdir(), `agentvisor-engine-${createHash('sha256').update(checkout).digest('hex').slice(0, 8)}`);
    runDir = join(stateRoot, `service-${process.pid}`);
    mkdirSync(runDir, { recursive: true });
    const conf = join(runDir, 'containers.conf');
    writeFileSync(conf, containersConf);
    dockerHost = `unix://${join(runDir, 'docker.sock')}`;
    // skip_mount_home: containers/storage would otherwise leave its storage directory bind-mounted
    // after the engine is gone, and node_modules (where it lies) could not be removed.
    const storage = ['--root', storageRoot, '--runroot', join(stateRoot, 'run'), '--storage-driver', 'overlay', '--storage-opt', 'overlay.skip_mount_home=true'];
    const args = [...storage, '--tmpdir', join(stateRoot, 'tmp'), 'system', 'service', '--time=0', dockerHost];
    // setpriv --pdeathsig: a test process that dies by SIGKILL takes the service with it.
    service = spawn('setpriv', ['--pdeathsig', 'SIGKILL', '--', 'podman', ...args], {
      env: { ...process.env, CONTAINERS_CONF: conf },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let log = '';
    service.stderr?.on('data', (chunk: Buffer) => void (log = (log + chunk.toString()).slice(-4000)));
    const version = await answering(dockerHost, service);
    if (!version) {
      service.kill('SIGKILL');
      rmSync(runDir, { recursive: true, force: true });
      return { unavailable: `podman system service did not answer on ${dockerHost}: ${log.trim().split('\n').slice(-3).join(' | ') || 'no output'}` };
    }
    engineName = `podman ${version} (Docker API), started here`;
  } else {
    const reached = dockerWith(undefined, ['version', '--format', '{{.Server.Version}}']);
    if (reached.status !== 0) {
      return { unavailable: 'no container engine: podman is not installed (apt-get install podman runc catatonit) and no Docker engine answers the docker client' };
    }
    dockerHost = process.env.DOCKER_HOST ?? 'unix:///var/run/docker.sock';
    engineName = `Docker engine ${reached.stdout.trim()} (already running)`;
  }

  const docker = (args: string[]) => dockerWith(dockerHost, args);
  let image: string;
  try {
    image = ensureTestImage(docker);
  } catch (error) {
    service?.kill('SIGKILL');
    if (runDir) rmSync(runDir, { recursive: true, force: true });
    return { unavailable: `the test image could not be made: ${String(error)}` };
  }
  const containers = (agent?: string) => {
    const filter = agent !== undefined ? `label=${containerLabels.agent}=${agent}` : `label=${containerLabels.container}`;
    const listed = docker(['ps', '--all', '--no-trunc', '--filter', filter, '--format', '{{json .}}']);
    return listed.stdout
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { ID: string; Names: string; State: string; Labels: string | Record<string, string> })
      .map((row) => ({ id: row.ID, name: row.Names, state: row.State, labels: parseLabels(row.Labels) }));
  };
  let stopped = false;
  // Only what this process started: on an engine that was already there, a user's own agents are not ours to remove.
  const ownLabel = `${containerLabels.supervisor}=${supervisorInstance()}`;
  const engine: ContainerEngine = {
    dockerHost,
    engine: engineName,
    image,
    docker,
    containers,
    ownLabel,
    stop() {
      if (stopped) return;
      stopped = true;
      const ids = docker(['ps', '--all', '--quiet', '--no-trunc', '--filter', `label=${ownLabel}`]).stdout.split('\n').filter(Boolean);
      if (ids.length > 0) docker(['rm', '--force', ...ids]);
      service?.kill('SIGTERM');
      // conmon keeps each finished exec session's monitor for 5 minutes (--exit-delay 300):
      // those of the containers this run started go with them.
      if (service) for (const id of ids) killProcessesNaming(`\0-c\0${id}\0`);
      if (runDir) rmSync(runDir, { recursive: true, force: true });
    },
  };
  return { engine };
}

/** SIGKILLs every process whose command line (NUL-separated) holds `text`. */
function killProcessesNaming(text: string): void {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(text)) process.kill(Number(entry), 'SIGKILL');
    } catch {
      // gone, or not ours
    }
  }
}

/** The engine's version once it answers (up to 30 s), or null. */
async function answering(dockerHost: string, service: ChildProcess): Promise<string | null> {
  let exited = false;
  service.once('exit', () => void (exited = true));
  for (let attempt = 0; attempt < 150 && !exited; attempt++) {
    const reached = dockerWith(dockerHost, ['version', '--format', '{{.Server.Version}}']);
    if (reached.status === 0) return reached.stdout.trim();
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return null;
}

/** `docker ps --format '{{json .}}'` gives labels as `k=v,k=v` (Docker) or an object (Podman). */
function parseLabels(labels: string | Record<string, string>): Record<string, string> {
  if (typeof labels !== 'string') return labels ?? {};
  return Object.fromEntries(
    labels
      .split(',')
      .filter(Boolean)
      .map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]),
  );
}

/** The files of the image: each program (node at its own path) and the libraries it loads. */
function imageFiles(): Array<{ from: string; to: string }> {
  const files = new Map<string, string>();
  const programs = [{ from: process.execPath, to: process.execPath }];
  for (const name of imagePrograms) {
    const path = execFileSync('sh', ['-c', 'command -v "$1"', 'sh', name], { encoding: 'utf8' }).trim();
    programs.push({ from: path, to: join('/usr/bin', name) });
  }
  for (const program of programs) {
    files.set(program.to, realpathSync(program.from));
    const ldd = spawnSync('ldd', [program.from], { encoding: 'utf8' });
    for (const match of (ldd.stdout ?? '').matchAll(/(\/[^\s]+) \(0x/g)) {
      const library = match[1]!;
      files.set(library, realpathSync(library));
    }
  }
  return [...files].map(([to, from]) => ({ from, to }));
}

/** Makes the test image unless the engine has it: its tag is a hash of what it holds. */
function ensureTestImage(docker: (args: string[]) => { stdout: string; stderr: string; status: number | null }): string {
  const files = imageFiles();
  const hash = createHash('sha256').update(JSON.stringify({ files, node: process.version, layout: 3 })).digest('hex').slice(0, 12);
  const image = `localhost/agentvisor-test:${hash}`;
  if (docker(['image', 'inspect', image]).status === 0) return image;
  const stage = mkdtempSync(join(tmpdir(), 'agentvisor-image-'));
  try {
    const root = join(stage, 'root');
    mkdirSync(join(root, 'usr', 'bin'), { recursive: true });
    symlinkSync('usr/bin', join(root, 'bin'));
    for (const dir of ['tmp', 'etc', 'proc', 'dev', 'sys']) mkdirSync(join(root, dir), { recursive: true });
    // Writable by root only: the tests run their agents as root, and one as nobody to find it unwritable.
    chmodSync(join(root, 'tmp'), 0o755);
    writeFileSync(join(root, 'etc', 'passwd'), 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/sh\n');
    for (const { from, to } of files) {
      // /bin is usr/bin in the image: a /bin path lands there.
      const target = join(root, to.startsWith('/bin/') ? `/usr${to}` : to);
      mkdirSync(dirname(target), { recursive: true });
      copyFileSync(from, target);
      chmodSync(target, 0o755);
    }
    const tar = join(stage, 'root.tar');
    execFileSync('tar', ['-C', root, '-cf', tar, '.']);
    const imported = docker(['import', tar, image]);
    if (imported.status !== 0) throw new Error(`docker import: ${imported.stderr.trim()}`);
    return image;
  } finally {
    rmSync(stage, { recursive: true, force: true });
  }
}
