/**
 * The pieces of pm2's habits that need no daemon: what an agent's processes cost, read from
 * /proc (against real processes this test spawns: one burning CPU, one holding memory), the
 * units `ls` shows them in, the prefix and order of `logs` without a name, and `describe`'s text.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { SimulatedClock } from 'xstate';
import { describeText } from '../../cli/commands/describe.js';
import { linePrefix, mergeByTime } from '../../cli/commands/logs.js';
import { formatBytes, formatPercent, styleOf } from '../../cli/output.js';
import type { AgentDescribeBody } from '../../daemon/api-types.js';
import { freshWindowMs, ResourceSampler } from '../../runtime/resource-usage.js';
import { parseStat, readProcTable, type ProcEntry, type ProcTable } from '../../services/containment/proc-table.js';
import { parseRssBytes, processTreeOf, readProcessCost } from '../../services/containment/proc-usage.js';

const linux = process.platform === 'linux';
const spawned: ChildProcess[] = [];
afterEach(() => {
  for (const child of spawned.splice(0)) {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // gone
    }
  }
});

/** A process group of its own: a shell that starts `script` in node in the background, then sleeps. */
function spawnTree(script: string): ChildProcess {
  const child = spawn('/bin/sh', ['-c', `"${process.execPath}" -e '${script}' & exec sleep 30`], { detached: true, stdio: ['ignore', 'pipe', 'ignore'] });
  spawned.push(child);
  return child;
}

/** Until `child` prints `line`; fails when it has not within `ms`. */
function printed(child: ChildProcess, line: string, ms: number): Promise<void> {
  return new Promise((resolve, reject) => {
    let text = '';
    const timer = setTimeout(() => reject(new Error(`no "${line}" from pid ${child.pid} within ${ms} ms (got ${JSON.stringify(text)})`)), ms);
    child.stdout!.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      if (text.split('\n').includes(line)) {
        clearTimeout(timer);
        resolve();
      }
    });
  });
}

const entry = (pid: number, ppid: number, pgid: number, sid: number, startTime = 100): ProcEntry => ({ pid, ppid, pgid, sid, state: 'S', startTime, comm: 'x' });

describe('/proc parsing', () => {
  it('reads utime + stime after the last ")" of a stat line, and VmRSS in bytes', () => {
    const stat = '4242 (a (weird) name) S 1 4242 4242 0 -1 4194304 500 0 0 0 1234 56 0 0 20 0 1 0 98765 1000000 2000 18446744073709551615';
    expect(parseStat(stat)?.cpuTicks).toBe(1234 + 56);
    expect(parseStat('garbage')).toBeNull();
    expect(parseRssBytes('Name:\tnode\nVmRSS:\t   41236 kB\nThreads:\t7\n')).toBe(41236 * 1024);
    expect(parseRssBytes('Name:\tkworker\n')).toBe(0);
  });

  it.runIf(linux)("reads this process's own cost: nonzero CPU time and memory", () => {
    const self = readProcTable().get(process.pid)!;
    const cost = readProcessCost(self)!;
    expect(cost.cpuTicks).toBeGreaterThan(0);
    expect(cost.rssBytes).toBeGreaterThan(10 * 1024 * 1024);
    expect(readProcessCost({ pid: process.pid, startTime: self.startTime + 1 })).toBeNull(); // another process by that pid
  });
});

describe("an agent's processes", () => {
  const table = (...entries: ProcEntry[]): ProcTable => new Map(entries.map((each) => [each.pid, each]));

  it('are its group leader (the wrapper), its descendants, and the groups and sessions they lead; never the supervisor nor older strangers', () => {
    const procs = table(
      entry(1, 0, 1, 1),
      entry(50, 1, 50, 50), // the supervisor
      entry(100, 50, 100, 100), // the wrapper it spawned (a group of its own)
      entry(101, 100, 100, 100), // the agent
      entry(102, 101, 100, 100), // its tool
      entry(103, 1, 103, 102, 150), // left by a double fork, in a session its tool made
      entry(104, 1, 100, 100, 150), // reparented, still in the group
      entry(200, 1, 200, 200), // a stranger
      entry(300, 1, 101, 101, 50), // older than the wrapper: cannot be in a group one of them leads
    );
    expect(processTreeOf(101, procs, 50).map((each) => each.pid).sort()).toEqual([100, 101, 102, 103, 104]);
    // An agent in the supervisor's own group (spawned without a group of its own): itself and below.
    expect(processTreeOf(51, table(entry(50, 1, 50, 50), entry(51, 50, 50, 50), entry(52, 51, 50, 50)), 50).map((each) => each.pid).sort()).toEqual([51, 52]);
    expect(processTreeOf(999, procs, 50)).toEqual([]);
  });

  it.runIf(linux)('cost the CPU and memory of the whole tree: a child burning a core counts, one holding memory too', async () => {
    const burner = spawnTree('const end = Date.now() + 20000; while (Date.now() < end);');
    const holder = spawnTree('const keep = Buffer.alloc(96 * 1024 * 1024, 1); console.log("ready"); setInterval(() => keep[0]++, 1000);');
    // Until node has started and touched its memory (a loaded host starts it slowly).
    await printed(holder, 'ready', 10_000);
    const sampler = new ResourceSampler();
    const first = await sampler.sample([
      { name: 'burner', pid: burner.pid! },
      { name: 'holder', pid: holder.pid! },
      { name: 'idle', pid: null },
    ]);
    expect(first.get('idle')).toBeNull();
    const burning = first.get('burner')!;
    expect(burning.processes).toBe(2); // the shell (sleep) and node
    expect(burning.windowMs).toBeGreaterThanOrEqual(200); // a fresh window: there was no sample before
    expect(burning.cpuPercent).toBeGreaterThan(5); // a core, shared with whatever else this (busy) host runs
    const holding = first.get('holder')!;
    expect(holding.memoryBytes).toBeGreaterThan(96 * 1024 * 1024);
    // On the supervisor's clock: a fresh window is 250 ms on it; asked again later, measured since
    // the last sample at no extra wait; asked again within 100 ms, the last answer, nothing read.
    const clock = new SimulatedClock();
    clock.set(1_000_000);
    const timed = new ResourceSampler(clock);
    const fresh = timed.sample([{ name: 'burner', pid: burner.pid! }]);
    clock.increment(freshWindowMs); // the wait is on the clock
    expect((await fresh).get('burner')!.windowMs).toBe(freshWindowMs);
    clock.increment(700);
    const later = (await timed.sample([{ name: 'burner', pid: burner.pid! }])).get('burner')!;
    expect(later.windowMs).toBe(700); // since the last sample, not a fresh window
    clock.increment(99);
    expect((await timed.sample([{ name: 'burner', pid: burner.pid! }])).get('burner')).toBe(later);
    // Gone: null.
    process.kill(-burner.pid!, 'SIGKILL');
    await new Promise((resolve) => burner.once('exit', resolve));
    clock.increment(100); // past the window in which the last answer is repeated
    expect((await timed.sample([{ name: 'burner', pid: burner.pid! }])).get('burner')).toBeNull();
  });
});

describe('human units', () => {
  it('memory in binary units, three digits; CPU in % with one decimal', () => {
    expect([0, 512, 1536, 43_200_000, 150 * 1024 * 1024, 1_610_612_736].map(formatBytes)).toEqual(['0 B', '512 B', '1.50 KiB', '41.2 MiB', '150 MiB', '1.50 GiB']);
    expect([0, 0.04, 12.34, 187.25].map(formatPercent)).toEqual(['0.0%', '0.0%', '12.3%', '187.3%']);
  });
});

describe('logs of every agent', () => {
  it('prefix each line with its agent, padded to the longest name; merge by time, then store order', () => {
    const prefix = linePrefix(['fx', 'codex'], styleOf(false));
    expect(`${prefix('fx')}hello`).toBe('fx    | hello');
    expect(`${prefix('codex')}hi`).toBe('codex | hi');
    const merged = mergeByTime([
      [{ seq: 1, at: 10, agent: 'a', line: 'a1' }, { seq: 4, at: 30, agent: 'a', line: 'a2' }],
      [{ seq: 3, at: 20, agent: 'b', line: 'b1' }, { seq: 5, at: 30, agent: 'b', line: 'b2' }],
    ]);
    expect(merged.map((entry) => entry.line)).toEqual(['a1', 'b1', 'a2', 'b2']);
  });
});

describe('describe', () => {
  const body: AgentDescribeBody = {
    agent: {
      name: 'codex',
      displayName: 'Codex',
      status: 'disconnected',
      state: 'disconnected.waiting',
      pid: null,
      attempt: 2,
      since: null,
      lastExit: null,
      restart: 'always',
      credential: null,
      lastError: { kind: 'agent_exited', message: 'Codex exited with code 1', stderr: ['boom'], class: 'crash', retryable: true, retryAt: null },
      containment: null,
      agentInfo: null,
      agentCapabilities: null,
      authMethods: null,
      connectedAt: null,
      restarts: 3,
      sessions: 0,
      usage: null,
    },
    spec: { command: 'codex-acp', args: ['--model', 'gpt 5'], cwd: null, protocol: 'acp', runtime: 'local', envNames: ['OPENAI_API_KEY'], workspace: null, handshakeTimeoutMs: null, shutdownTimeoutMs: 500, killTimeoutMs: null },
    sessions: [],
    sessionsTotal: 0,
    workspaces: [],
  };

  it('shows the status, the last error with its class, the spec without env values, and no sessions', () => {
    const text = describeText(body, 0, styleOf(false));
    expect(text.split('\n')).toEqual(
      expect.arrayContaining([
        'codex (Codex)',
        '  status          disconnected',
        '  restart policy  always',
        '  last exit       -',
        '  state           disconnected.waiting',
        '  pid             -',
        '  restarts        3',
        '  attempt         2',
        '  cpu             -',
        '  last error      agent_exited: Codex exited with code 1 (class crash, retried)',
        '  stderr          boom',
        '  args            --model \'gpt 5\'',
        '  env             OPENAI_API_KEY (values hidden)',
        '  timeouts        shutdown 500 ms',
        'sessions (0 open, 0 in all)',
        '  none',
      ]),
    );
  });
});
