/**
 * Containment by /proc tracking (services/containment/proc-tracking.containment.ts) on real
 * processes: an agent-like `sh` that starts a child, a setsid child, double-forked daemons
 * and a child in a group of its own; all of them die by killAll(), none of a reused pid.
 * No test waits for something not to happen: a scan is forced with `scanNow()`, everything
 * else is polled with a deadline. Every process a test starts is killed after it.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseStat, readProcTable, startTimeOf, type ProcEntry, type ProcessIdentity } from '../../services/containment/proc-table.js';
import {
  killTracked,
  ProcessTracker,
  ProcScanner,
  procScanner,
  procTrackingContainment,
  createProcTrackingContainment,
  scanView,
} from '../../services/containment/proc-tracking.containment.js';
import type { Containment } from '../../services/containment/containment.js';
import { eventually, isRunning, scratch } from '../support/real-agents.js';

const onPath = (command: string) => (process.env.PATH ?? '').split(':').some((dir) => existsSync(join(dir, command)));
/** What the tests on real processes need; on a host that lacks any, they are skipped. */
const missing = [...(existsSync('/proc/self/stat') ? [] : ['/proc']), ...['setsid', 'perl'].filter((command) => !onPath(command))];
if (missing.length > 0) console.warn(`proc-tracking tests on real processes skipped: this host lacks ${missing.join(', ')}`);

let files: ReturnType<typeof scratch>;
let containments: Containment[];
/** Every process a test starts carries it in its environment: how survivors are found, whatever they did. */
let marker: string;
let tests = 0;

beforeEach(() => {
  files = scratch();
  containments = [];
  marker = `AGENTVISOR_PROC_TRACKING_TEST=${process.pid}.${++tests}`;
});

afterEach(async () => {
  for (const containment of containments) containment.release();
  if (missing.length === 0) {
    await eventually(() => {
      const running = survivors();
      for (const pid of running) process.kill(pid, 'SIGKILL');
      return running.length === 0;
    }, 'the test processes to be killed');
  }
  files.cleanup();
});

/** The processes of this test that still run (zombies do not), found by the marker in their environment. */
function survivors(): number[] {
  return [...readProcTable().keys()].filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0').includes(marker) && isRunning(pid);
    } catch {
      return false; // gone, or another user's
    }
  });
}

/** Starts `script` in `sh` as an agent is started: detached, the leader of its own group and session. */
function startAgent(script: string): ProcessIdentity {
  const [name, value] = marker.split('=') as [string, string];
  const child = spawn('sh', ['-c', script], { cwd: files.dir, detached: true, stdio: 'ignore', env: { ...process.env, [name]: value } });
  return { pid: child.pid!, startTime: startTimeOf(child.pid!)! };
}

/** The `label pid` lines the agent scripts write to `pids`, by label. */
function pids(): Map<string, number> {
  let text = '';
  try {
    text = readFileSync(files.path('pids'), 'utf8');
  } catch {
    // not written yet
  }
  const lines = text.split('\n').filter((line) => line.includes(' '));
  return new Map(lines.map((line) => line.split(' ') as [string, string]).map(([label, pid]) => [label, Number(pid)]));
}

async function waitForPids(...labels: string[]): Promise<Map<string, number>> {
  await eventually(() => labels.every((label) => pids().has(label)), `the agent to write ${labels.join(', ')}`);
  return pids();
}

function contain(agent: ProcessIdentity, mechanism = procTrackingContainment): Containment {
  const containment = mechanism.contain(agent.pid, { command: 'sh', args: [], agent: 'test' });
  containments.push(containment);
  return containment;
}

const trackedPids = (containment: Containment) => {
  const handle = containment.handle();
  return handle.kind === 'proc-tracking' ? handle.pids.map(({ pid }) => pid) : [];
};

/** What a pid-file line's process runs in: its session and group ids. */
const sessionAndGroup = (pid: number) => {
  const entry = readProcTable().get(pid)!;
  return { sid: entry.sid, pgid: entry.pgid };
};

describe.skipIf(missing.length > 0)('procTrackingContainment on real processes', () => {
  it('kills a child, a setsid child, double-forked daemons and a child in its own group once the agent is killed', async () => {
    const agent = startAgent(`
      sleep 1000 & echo "child $!" >> pids
      setsid sh -c 'echo "session $$" >> pids; exec sleep 1000' &
      sh -c 'sleep 1000 & echo "daemon $!" >> pids' &
      perl -e 'setpgrp(0, 0); open(my $f, ">>", "pids"); print $f "group $$\\n"; close $f; exec "sleep", "1000"' &
      setsid sh -c 'echo "intermediate $$" >> pids; while [ ! -e go ]; do sleep 0.01; done; sleep 1000 & echo "daemon2 $!" >> pids' &
      echo "ready $$" >> pids
      wait
    `);
    const containment = contain(agent);
    expect(containment.kind).toBe('proc-tracking');
    await expect(containment.agentPid).resolves.toBe(agent.pid);

    const found = await waitForPids('child', 'session', 'daemon', 'group', 'intermediate', 'ready');
    // Each escapes differently: a session of its own, the agent's session kept by an orphan, a group of its own.
    expect(sessionAndGroup(found.get('session')!)).toEqual({ sid: found.get('session'), pgid: found.get('session') });
    const daemon = found.get('daemon')!;
    await eventually(() => {
      const table = readProcTable();
      return table.get(table.get(daemon)!.ppid)?.ppid !== agent.pid;
    }, 'the daemon to be orphaned');
    expect(sessionAndGroup(daemon)).toEqual({ sid: agent.pid, pgid: agent.pid });
    expect(sessionAndGroup(found.get('group')!)).toEqual({ sid: agent.pid, pgid: found.get('group') });
    procScanner.scanNow();
    const seen = trackedPids(containment);
    for (const label of ['child', 'session', 'daemon', 'group', 'intermediate']) expect(seen, label).toContain(found.get(label));
    expect(seen).toContain(agent.pid);

    // The classic daemon: the intermediate (setsid, seen by the last scan) forks and exits.
    writeFileSync(files.path('go'), '');
    const daemon2 = (await waitForPids('daemon2')).get('daemon2')!;
    await eventually(() => !isRunning(found.get('intermediate')!), 'the intermediate to exit');
    expect(readProcTable().get(daemon2)).toMatchObject({ sid: found.get('intermediate'), pgid: found.get('intermediate') });
    procScanner.scanNow();
    expect(trackedPids(containment)).toContain(daemon2);

    process.kill(agent.pid, 'SIGKILL');
    await eventually(() => !isRunning(agent.pid), 'the agent to die');
    await containment.killAll();
    expect(survivors()).toEqual([]);
    expect(JSON.parse(JSON.stringify(containment.handle()))).toEqual(containment.handle());
  });

  it('catches at killAll what appeared since the last scan: a chain of children, a daemon in the agent session', async () => {
    const scanner = new ProcScanner({ intervalMs: 3_600_000 }); // no timer scan: only killAll's
    const agent = startAgent(`
      sh -c 'sleep 1000 & echo "daemon $!" >> pids'
      sh -c 'sh -c "sleep 1000 & echo grandchild \\$! >> pids; wait" & echo "parent $!" >> pids; wait' &
      echo "ready $$" >> pids
      wait
    `);
    const containment = contain(agent, createProcTrackingContainment(scanner));
    const found = await waitForPids('daemon', 'parent', 'grandchild', 'ready');
    expect(found.size).toBe(4);
    await containment.killAll();
    expect(survivors()).toEqual([]);
  });

  it('kills an agent that keeps forking children into sessions of their own while it is being killed', async () => {
    const agent = startAgent(`echo "ready $$" >> pids; while :; do setsid sleep 1000 & done`);
    const containment = contain(agent);
    await waitForPids('ready');
    await eventually(() => survivors().length > 20, 'the agent to fork');
    await containment.killAll();
    expect(survivors()).toEqual([]);
  });

  it('documents its limit: a daemon whose setsid parent exits between two scans escapes', async () => {
    const scanner = new ProcScanner({ intervalMs: 3_600_000 });
    const agent = startAgent(`
      setsid sh -c 'echo "intermediate $$" >> pids; sleep 1000 & echo "daemon $!" >> pids'
      echo "ready $$" >> pids
      wait
    `);
    const containment = contain(agent, createProcTrackingContainment(scanner));
    const found = await waitForPids('intermediate', 'daemon', 'ready');
    await eventually(() => !isRunning(found.get('intermediate')!), 'the intermediate to exit');
    scanner.scanNow();
    expect(trackedPids(containment)).not.toContain(found.get('daemon'));
    await containment.killAll();
    expect(isRunning(agent.pid)).toBe(false);
    expect(survivors()).toEqual([found.get('daemon')]); // the cleanup kills it
  });

  it('wraps nothing', () => {
    expect(procTrackingContainment.wrap({ command: 'codex', args: ['acp'], agent: 'codex' })).toEqual({ command: 'codex', args: ['acp'] });
  });
});

describe.skipIf(missing.length > 0)('killTracked', () => {
  it('kills only the processes whose pid and start time still match: never a reused pid', async () => {
    const victim = startAgent('sleep 1000');
    const bystander = startAgent('sleep 1000');
    const result = await killTracked([
      victim,
      { pid: bystander.pid, startTime: bystander.startTime - 1 }, // its pid, another process's start time
      { pid: process.pid, startTime: startTimeOf(process.pid)! + 1 },
    ]);
    expect(result).toEqual({ killed: [victim.pid], skipped: [bystander.pid, process.pid] });
    expect(isRunning(victim.pid)).toBe(false);
    expect(isRunning(bystander.pid)).toBe(true);
  });
});

describe.skipIf(missing.length > 0)('the shared scanner', () => {
  it('runs one unref’d timer while any agent is tracked, and none once all are released', async () => {
    const timers = () => process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length;
    const before = timers();
    expect(procScanner.timerActive).toBe(false);
    const first = contain(startAgent('sleep 1000'));
    const second = contain(startAgent('sleep 1000'));
    expect(procScanner.tracked).toBe(2);
    expect(procScanner.timerActive).toBe(true);
    expect((procScanner as unknown as { timer: NodeJS.Timeout }).timer.hasRef()).toBe(false);
    await first.killAll();
    first.release();
    expect(procScanner.timerActive).toBe(true);
    await second.killAll();
    second.release();
    second.release(); // twice is harmless
    expect(procScanner.tracked).toBe(0);
    expect(procScanner.timerActive).toBe(false);
    expect(timers()).toBeLessThanOrEqual(before); // other code may have ended a timer meanwhile, never added ours
  });
});

describe('ProcessTracker rules, on tables of our own', () => {
  const entry = (pid: number, ppid: number, sid: number, pgid: number, startTime: number, state = 'S'): ProcEntry => ({ pid, ppid, sid, pgid, startTime, state, comm: 'x' });
  const view = (...entries: ProcEntry[]) => scanView(new Map(entries.map((each) => [each.pid, each])));
  const pidsOf = (tracker: ProcessTracker) => tracker.identities().map(({ pid }) => pid).sort((a, b) => a - b);

  it('never takes a reused pid: not the agent’s, not a member’s, not their children', () => {
    const tracker = new ProcessTracker(100, 1_000);
    tracker.update(view(entry(100, 1, 100, 100, 1_000), entry(101, 100, 100, 100, 1_001)));
    expect(pidsOf(tracker)).toEqual([100, 101]);
    // Both exit; by the next scan their pids are unrelated processes (other start times) with a child.
    tracker.update(view(entry(100, 1, 5, 5, 9_000), entry(101, 100, 5, 5, 9_001), entry(102, 101, 5, 5, 9_002)));
    expect(pidsOf(tracker)).toEqual([]);
    // Later, even sessions and groups led by the reused pids are not the agent's.
    tracker.update(view(entry(100, 1, 100, 100, 9_000), entry(101, 100, 101, 101, 9_001), entry(102, 101, 101, 101, 9_002)));
    expect(pidsOf(tracker)).toEqual([]);
  });

  it('keeps a reparented member, and adopts an orphan of a session one scan after its holders died, not later', () => {
    const tracker = new ProcessTracker(100, 1_000);
    tracker.update(view(entry(100, 1, 100, 100, 1_000), entry(101, 100, 101, 101, 1_001)));
    // 101 (a setsid child) forked 102 and exited, then the agent died; 101's session lives on in 102.
    tracker.update(view(entry(102, 1, 101, 101, 1_002)));
    expect(pidsOf(tracker)).toEqual([102]);
    tracker.update(view(entry(102, 1, 101, 101, 1_002), entry(103, 1, 101, 101, 1_003)));
    expect(pidsOf(tracker)).toEqual([102, 103]);
    // Everyone gone: session 101 is no one's; a scan later it is no longer the agent's.
    tracker.update(view());
    tracker.update(view());
    tracker.update(view(entry(104, 1, 101, 101, 1_004)));
    expect(pidsOf(tracker)).toEqual([]);
  });

  it('adopts nothing older than the agent, and never init or the supervisor', () => {
    const tracker = new ProcessTracker(100, 1_000);
    tracker.update(
      view(entry(100, 1, 100, 100, 1_000), entry(50, 1, 100, 100, 999), entry(1, 0, 100, 100, 1_000), entry(process.pid, 100, 100, 100, 1_001)),
    );
    expect(pidsOf(tracker)).toEqual([100]);
  });

  it('takes what holds the session of an agent gone before it was contained, if younger than the supervisor', () => {
    const supervisorStart = startTimeOf(process.pid)!;
    const tracker = new ProcessTracker(100, null);
    tracker.update(view(entry(101, 1, 100, 100, supervisorStart + 1), entry(102, 1, 100, 100, supervisorStart - 1), entry(103, 101, 103, 103, supervisorStart + 2)));
    expect(pidsOf(tracker)).toEqual([101, 103]);
  });

  it('tells its listeners after an update that changed the tracked processes, and only then (what refreshes a record)', () => {
    const tracker = new ProcessTracker(100, 1_000);
    const seen: number[][] = [];
    const unsubscribe = tracker.onChange(() => seen.push(pidsOf(tracker)));
    const agent = entry(100, 1, 100, 100, 1_000);
    tracker.update(view(agent));
    tracker.update(view(agent, entry(101, 100, 100, 100, 1_001)));
    tracker.update(view(agent, entry(101, 100, 100, 100, 1_001)));
    // Same pid, another process (a reused pid): a change, though the pid list reads the same.
    tracker.update(view(agent, entry(101, 100, 100, 100, 1_005)));
    tracker.update(view(agent));
    expect(seen).toEqual([[100, 101], [100, 101], [100]]);
    unsubscribe();
    tracker.update(view(agent, entry(102, 100, 100, 100, 1_006)));
    expect(seen).toHaveLength(3);
  });
});

describe('parseStat', () => {
  it('splits at the last parenthesis: a command name may hold spaces and parentheses', () => {
    const fields = Array.from({ length: 49 }, (_, index) => String(index + 3));
    fields.splice(0, 4, 'S', '7', '8', '9');
    fields[19] = '123456';
    expect(parseStat(`42 (a) b (c ) ${fields.join(' ')}\n`)).toEqual({ pid: 42, ppid: 7, pgid: 8, sid: 9, state: 'S', startTime: 123456, comm: 'a) b (c ', cpuTicks: 14 + 15 }); // utime + stime: fields 14 and 15
    expect(parseStat('not a stat line')).toBeNull();
  });

  it.skipIf(missing.length > 0)('reads this very process', () => {
    const self = readProcTable().get(process.pid)!;
    expect(self).toMatchObject({ pid: process.pid, ppid: process.ppid, state: 'R' });
    expect(self.startTime).toBe(startTimeOf(process.pid));
  });
});
