/**
 * The cgroup containment mechanism on real processes and real cgroups, on every flavor this
 * host offers (cgroup v2 with cgroup.kill, v1 freezer, v1 pids). Skipped, with the reason
 * printed, where no cgroup is writable (not root, no delegation).
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, rmdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterEach, describe, expect, it } from 'vitest';
import {
  cgroupContainment,
  cgroupJoinFailedExitCode,
  cgroupRootCandidates,
  findCgroupRoot,
  killCgroup,
  probeCgroupRoot,
  type CgroupFlavor,
  type CgroupRoot,
} from '../../services/containment/cgroup.containment.js';
import type { Containment, SpawnRequest } from '../../services/containment/containment.js';
import { readProcEntry, type ProcEntry } from '../../services/containment/proc-table.js';
import { eventually, isRunning } from '../support/real-agents.js';

const root = findCgroupRoot();
if (!root) {
  console.warn(
    'cgroup-containment tests skipped: findCgroupRoot() found no usable cgroup — needs cgroup v2 (kernel ≥ 5.14, ' +
      'cgroup.kill) with a writable or delegated cgroup, or root with a cgroup v1 freezer or pids hierarchy',
  );
}
/** One usable root per flavor, strongest first. */
const roots: CgroupRoot[] = root
  ? cgroupRootCandidates()
      .filter(probeCgroupRoot)
      .filter((each, index, all) => all.findIndex((other) => other.flavor === each.flavor) === index)
  : [];

/**
 * The agent: starts (a) a plain child, (b) a setsid child, (c) a double-forked daemon in its
 * own session, (d) a child in a process group of its own; prints their pids; echoes stdin.
 */
const descendantsAgent = `
const { spawn, execFileSync } = require('node:child_process');
const quiet = { stdio: 'ignore' };
const pids = {
  normal: spawn('sleep', ['300'], quiet).pid,
  session: spawn('setsid', ['sleep', '300'], quiet).pid,
  daemon: Number(execFileSync('/bin/sh', ['-c', 'setsid sleep 300 </dev/null >/dev/null 2>&1 & echo $!'], { encoding: 'utf8' })),
  group: spawn('perl', ['-e', 'setpgrp(0, 0); exec "sleep", "300"'], quiet).pid,
};
console.log(JSON.stringify(pids));
require('node:readline').createInterface({ input: process.stdin }).on('line', (line) => console.log('echo:' + line));
`;

interface Started {
  child: ChildProcessWithoutNullStreams;
  pid: number;
  path: string;
  containment: Containment;
  lines: AsyncIterator<string>;
}

const cleanups: Array<() => Promise<void>> = [];
/** Pids the agents reported: killed after each test should one have escaped its cgroup. */
const reported = new Set<number>();

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
  for (const pid of reported) {
    if (isRunning(pid) && readText(`/proc/${pid}/comm`).trim() === 'sleep') process.kill(pid, 'SIGKILL');
  }
  reported.clear();
});

/**
 * Spawns `node -e script` the way the process service does (detached, piped), contained;
 * `beforeSpawn` may tamper with the fresh cgroup.
 */
function startContained(cgroupRoot: CgroupRoot, script: string, agent = 'test agent', beforeSpawn = (_path: string) => {}): Started {
  const request: SpawnRequest = { command: process.execPath, args: ['-e', script], agent };
  const mechanism = cgroupContainment(cgroupRoot);
  const wrapped = mechanism.wrap(request);
  const path = wrapped.args[2]!;
  beforeSpawn(path);
  const child = spawn(wrapped.command, wrapped.args, { detached: true, stdio: 'pipe' });
  const containment = mechanism.contain(child.pid!, request);
  expect(containment.handle()).toEqual({ kind: 'cgroup', path });
  cleanups.push(async () => {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // The group is gone.
    }
    await containment.killAll().catch(() => {});
    containment.release();
    await forceRemove(path);
  });
  return { child, pid: child.pid!, path, containment, lines: createInterface({ input: child.stdout })[Symbol.asyncIterator]() };
}

/**
 * The test's own cleanup, independent of the code under test: thaws, SIGKILLs every member
 * of the cgroup and those below it until they can be removed, then removes the shared
 * agentvisor directory if empty.
 */
async function forceRemove(path: string): Promise<void> {
  const deadline = Date.now() + 3000;
  const tree = (dir: string): string[] => [
    dir,
    ...readdirSync(dir, { withFileTypes: true }).flatMap((entry) => (entry.isDirectory() ? tree(join(dir, entry.name)) : [])),
  ];
  while (existsSync(path) && Date.now() < deadline) {
    try {
      if (existsSync(join(path, 'freezer.state'))) writeFileSync(join(path, 'freezer.state'), 'THAWED');
      const dirs = tree(path);
      dirs.flatMap(cgroupMembers).forEach((pid) => process.kill(pid, 'SIGKILL'));
      dirs.reverse().forEach((dir) => rmdirSync(dir));
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
  try {
    rmdirSync(dirname(path));
  } catch {
    // Another cgroup is still in it, or it is gone.
  }
}

/** The pids in a cgroup's `cgroup.procs`, zombies included. */
function cgroupMembers(path: string): number[] {
  return readText(join(path, 'cgroup.procs')).split('\n').filter(Boolean).map(Number);
}

/** The descendants' pids the agent prints first; recorded for the cleanup. */
async function descendantPids(started: Started): Promise<Record<'normal' | 'session' | 'daemon' | 'group', number>> {
  const pids = JSON.parse(await nextLine(started)) as Record<'normal' | 'session' | 'daemon' | 'group', number>;
  Object.values(pids).forEach((pid) => reported.add(pid));
  await eventually(() => Object.values(pids).every((pid) => stat(pid).comm === 'sleep'), 'the descendants to exec sleep');
  return pids;
}

async function nextLine(started: Started): Promise<string> {
  const next = await Promise.race([
    started.lines.next(),
    new Promise<never>((_resolve, reject) => setTimeout(() => reject(new Error('no line from the agent within 10 s')), 10_000).unref()),
  ]);
  if (next.done) throw new Error(`the agent closed stdout; stderr: ${started.child.stderr.read()?.toString() ?? ''}`);
  return next.value;
}

/** comm, ppid, pgid, sid... of a live process (empty when it is gone). */
function stat(pid: number): Partial<ProcEntry> {
  return readProcEntry(pid) ?? {};
}

/** The path of `pid`'s cgroup in the hierarchy of `flavor`, from /proc/<pid>/cgroup. */
function cgroupOf(pid: number, flavor: CgroupFlavor): string | undefined {
  const controller = flavor === 'v1-freezer' ? 'freezer' : 'pids';
  for (const line of readText(`/proc/${pid}/cgroup`).split('\n')) {
    const [id, controllers = '', ...path] = line.split(':');
    if (flavor === 'v2' ? id === '0' : controllers.split(',').includes(controller)) return path.join(':');
  }
  return undefined;
}

function readText(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

describe.skipIf(!root)('cgroup containment', () => {
  it('findCgroupRoot picks the strongest usable flavor, and caches it', () => {
    expect(root).toEqual(roots[0]);
    expect(findCgroupRoot()).toBe(root);
  });

  describe.each(roots)('$flavor at $path', (cgroupRoot) => {
    it('keeps children, setsid children, daemons and other groups in the cgroup; killAll after a crash leaves none', async () => {
      const agent = startContained(cgroupRoot, descendantsAgent);
      const pids = await descendantPids(agent);
      // Each is in the session and group it was meant to be.
      await eventually(() => stat(pids.session).sid === pids.session && stat(pids.group).pgid === pids.group, 'setsid and setpgrp');
      expect(stat(pids.normal).pgid).toBe(agent.pid);
      expect(stat(pids.daemon)).toMatchObject({ sid: pids.daemon });
      expect(stat(pids.daemon).ppid).not.toBe(agent.pid);
      expect(stat(pids.group).sid).toBe(agent.pid);

      for (const pid of [agent.pid, ...Object.values(pids)]) {
        expect(cgroupOf(pid, cgroupRoot.flavor), `pid ${pid}`).toMatch(new RegExp(`/agentvisor/${basename(agent.path)}$`));
      }

      process.kill(agent.pid, 'SIGKILL'); // the agent crashes; its descendants live on
      await once(agent.child, 'exit');
      expect(Object.values(pids).filter((pid) => !isRunning(pid))).toEqual([]);

      await agent.containment.killAll();
      expect(Object.values(pids).filter(isRunning)).toEqual([]);
      agent.containment.release();
      await eventually(() => !existsSync(agent.path), 'release() to remove the cgroup', 3000);
    });

    it('killAll leaves none while the agent is still forking', async () => {
      const loop = 'i=0; while [ $i -lt 1000 ]; do sleep 300 & i=$((i+1)); done; wait';
      const forker = `require('node:child_process').spawn('/bin/sh', ['-c', '${loop}'], { stdio: 'ignore' }); setInterval(() => {}, 1000);`;
      const agent = startContained(cgroupRoot, forker, 'forker');
      await eventually(() => cgroupMembers(agent.path).length > 20, 'the agent to fork');
      await agent.containment.killAll();
      expect(cgroupMembers(agent.path).filter(isRunning)).toEqual([]);
      agent.containment.release();
      await eventually(() => !existsSync(agent.path), 'release() to remove the cgroup', 3000);
    });

    it('killAll reaches the cgroups an agent made inside its own (a nested agentvisor)', async () => {
      const nestingAgent = `
        require('node:readline').createInterface({ input: process.stdin }).once('line', (dir) => {
          require('node:fs').mkdirSync(dir + '/nested');
          const join = 'echo $$ > "$0/cgroup.procs" && exec sleep 300';
          const child = require('node:child_process').spawn('/bin/sh', ['-c', join, dir + '/nested'], { stdio: 'ignore' });
          console.log(child.pid);
        });
        setInterval(() => {}, 1000);`;
      const agent = startContained(cgroupRoot, nestingAgent, 'nesting');
      agent.child.stdin.write(`${agent.path}\n`);
      const nested = Number(await nextLine(agent));
      reported.add(nested);
      await eventually(() => stat(nested).comm === 'sleep', 'the nested child to exec sleep');
      expect(cgroupOf(nested, cgroupRoot.flavor)).toMatch(new RegExp(`/agentvisor/${basename(agent.path)}/nested$`));

      process.kill(agent.pid, 'SIGKILL');
      await once(agent.child, 'exit');
      await agent.containment.killAll();
      expect(isRunning(nested)).toBe(false);
      agent.containment.release();
      await eventually(() => !existsSync(agent.path), 'release() to remove the cgroup and the one inside it', 3000);
    });

    it('killAll right after spawn leaves nothing, whether or not the wrapper had joined yet', async () => {
      const agent = startContained(cgroupRoot, descendantsAgent);
      const exited = once(agent.child, 'exit');
      await agent.containment.killAll();
      const [, signal] = (await exited) as [number | null, string | null];
      expect(signal).toBe('SIGKILL');
      expect(cgroupMembers(agent.path).filter(isRunning)).toEqual([]);
      agent.containment.release();
      await eventually(() => !existsSync(agent.path), 'release() to remove the cgroup', 3000);
    });

    it('keeps the agent itself: same pid and group, stdio round trip, group signals reach it', async () => {
      const agent = startContained(cgroupRoot, descendantsAgent);
      await descendantPids(agent);
      expect(await agent.containment.agentPid).toBe(agent.pid);
      expect(stat(agent.pid)).toMatchObject({ comm: 'node', pgid: agent.pid, sid: agent.pid });
      agent.child.stdin.write('hello through the wrapper\n');
      expect(await nextLine(agent)).toBe('echo:hello through the wrapper');

      process.kill(-agent.pid, 'SIGTERM'); // the stop ladder's rung
      const [exitCode, signal] = (await once(agent.child, 'exit')) as [number | null, string | null];
      expect({ exitCode, signal }).toEqual({ exitCode: null, signal: 'SIGTERM' });
      await agent.containment.killAll();
      agent.containment.release();
      await eventually(() => !existsSync(agent.path), 'release() to remove the cgroup', 3000);
    });

    it('a wrapper that cannot join its cgroup exits non-zero and never runs the agent', async () => {
      const scratch = mkdtempSync(join(tmpdir(), 'agentvisor-cgroup-'));
      cleanups.push(async () => rmSync(scratch, { recursive: true, force: true }));
      const marker = join(scratch, 'agent-ran');
      const writeMarker = `require('node:fs').writeFileSync(${JSON.stringify(marker)}, 'ran')`;
      const agent = startContained(cgroupRoot, writeMarker, 'doomed', (path) => rmdirSync(path));
      let stderr = '';
      agent.child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const [exitCode] = (await once(agent.child, 'close')) as [number | null];
      expect(exitCode).toBe(cgroupJoinFailedExitCode);
      expect(stderr).toContain(`agentvisor: could not join cgroup ${agent.path}; the agent was not started`);
      expect(existsSync(marker)).toBe(false);
      await agent.containment.killAll();
      expect(() => agent.containment.release()).not.toThrow();
    });

    it('killCgroup sweeps a recorded cgroup: kills what is left and removes it', async () => {
      const agent = startContained(cgroupRoot, descendantsAgent, 'swept');
      const pids = await descendantPids(agent);

      const handle = agent.containment.handle(); // as a record would keep it
      const { killed } = await killCgroup(handle.kind === 'cgroup' ? handle.path : '');
      expect(killed).toEqual(expect.arrayContaining([agent.pid, ...Object.values(pids)]));
      expect([agent.pid, ...Object.values(pids)].filter(isRunning)).toEqual([]);
      expect(existsSync(agent.path)).toBe(false);
      expect(await killCgroup(agent.path)).toEqual({ killed: [] });
    });
  });

  it('killCgroup refuses anything but an agentvisor cgroup', async () => {
    const scratch = mkdtempSync(join(tmpdir(), 'agentvisor-cgroup-'));
    cleanups.push(async () => rmSync(scratch, { recursive: true, force: true }));
    mkdirSync(join(scratch, 'agentvisor', 'not-a-cgroup'), { recursive: true });
    await expect(killCgroup(join(scratch, 'agentvisor', 'not-a-cgroup'))).rejects.toThrow(/is not an agentvisor cgroup/);
    await expect(killCgroup(scratch)).rejects.toThrow(/is not an agentvisor cgroup/);
  });
});
