/**
 * The PID-namespace mechanism on real processes: the agent behaves as before (its pid on
 * this host is found, stdin and stdout reach it, the group's SIGTERM reaches it), and when
 * it dies every process it started dies with the namespace — a child, a setsid escapee and
 * a double-forked daemon — without anyone hunting for them.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { pidNamespaceContainment, pidNamespaceSupport, signalOfInitExit } from '../../services/containment/pid-namespace.containment.js';
import { eventually, isRunning } from '../support/real-agents.js';

const support = pidNamespaceSupport();
if (!support) console.warn('pid-namespace tests skipped: util-linux unshare cannot create a PID namespace on this host');

/** An agent that starts a child, a setsid escapee and a double-forked daemon, prints their pids, echoes stdin. */
const agentScript = `
const { spawn } = require('node:child_process');
const keep = ['-e', 'setInterval(() => {}, 1000)'];
const child = spawn(process.execPath, keep, { stdio: 'ignore' });
const escapee = spawn('setsid', [process.execPath, ...keep], { stdio: 'ignore' });
const daemon = spawn('sh', ['-c', '(' + process.execPath + ' -e "setInterval(() => {}, 1000)" & echo $! ) | head -1'], { stdio: ['ignore', 'pipe', 'ignore'] });
let daemonPid = '';
daemon.stdout.on('data', (chunk) => (daemonPid += chunk));
daemon.on('exit', () => setTimeout(() => console.log(JSON.stringify({ self: process.pid, pids: [child.pid, escapee.pid, Number(daemonPid)] })), 100));
process.on('SIGTERM', () => { console.log('got SIGTERM'); process.exit(3); });
process.stdin.on('data', (chunk) => process.stdout.write('echo:' + chunk));
`;

const started: ChildProcess[] = [];
const stray: number[] = [];
afterEach(() => {
  const groups = started.splice(0).flatMap((child) => (child.pid ? [-child.pid] : []));
  for (const pid of [...stray.splice(0), ...groups]) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
});

async function startContained(script = agentScript) {
  const mechanism = pidNamespaceContainment(support!);
  const spawnRequest = mechanism.wrap({ command: process.execPath, args: ['-e', script], agent: 'test' });
  expect(spawnRequest.lifeline, 'the wrapper asks for a lifeline on fd 3').toBe(true);
  const wrapper = spawn(spawnRequest.command, spawnRequest.args, { detached: true, stdio: ['pipe', 'pipe', 'inherit', 'pipe'] });
  started.push(wrapper);
  const containment = mechanism.contain(wrapper.pid!, { command: process.execPath, args: [], agent: 'test' });
  let output = '';
  wrapper.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => wrapper.once('exit', (code) => resolve(code)));
  await eventually(() => output.includes('"pids"'), 'the agent to report its processes');
  const report = JSON.parse(output.split('\n').find((line) => line.includes('"pids"'))!) as { self: number; pids: number[] };
  return { wrapper, containment, exited, output: () => output, report };
}

/** The agent's pids as /proc sees them: on this host, then inside its namespace. */
function nsPids(hostPid: number): number[] {
  const line = readFileSync(`/proc/${hostPid}/status`, 'utf8').split('\n').find((entry) => entry.startsWith('NSpid:'));
  return (line ?? '').split(/\s+/).slice(1).filter(Boolean).map(Number);
}

describe.skipIf(!support)('pid-namespace containment', () => {
  it('finds the agent\'s own pid on this host; stdin and stdout pass through', async () => {
    const { wrapper, containment, output, report } = await startContained();
    const agentPid = await containment.agentPid;
    expect(agentPid).not.toBe(wrapper.pid);
    expect(readFileSync(`/proc/${agentPid}/cmdline`, 'utf8')).toContain('setInterval');
    expect(report.self, 'inside its namespace the agent is pid 2').toBe(2);
    expect(nsPids(agentPid)).toEqual([agentPid, 2]);
    wrapper.stdin!.write('hello\n');
    await eventually(() => output().includes('echo:hello'), 'the echo through the namespace');
  });

  it('the process group\'s SIGTERM reaches the agent; its exit code comes back; everything it started dies', async () => {
    const { wrapper, containment, exited, output } = await startContained();
    const agentPid = await containment.agentPid;
    const children = childrenOnHost(agentPid);
    expect(children.length).toBeGreaterThanOrEqual(2);
    stray.push(...children);
    process.kill(-wrapper.pid!, 'SIGTERM');
    expect(await exited).toBe(3);
    expect(output()).toContain('got SIGTERM');
    await eventually(() => children.every((pid) => !isRunning(pid)), 'the namespace to be emptied');
  });

  it('a crash from outside (SIGKILL to the agent) empties the namespace: escapees and daemons die too', async () => {
    const { containment, exited } = await startContained();
    const agentPid = await containment.agentPid;
    const everything = descendantsOnHost(agentPid);
    expect(everything.length, 'a child, a setsid escapee and a double-forked daemon').toBeGreaterThanOrEqual(3);
    stray.push(...everything);
    process.kill(agentPid, 'SIGKILL');
    const code = await exited;
    expect(signalOfInitExit(code)).toBe('SIGKILL');
    await eventually(() => everything.every((pid) => !isRunning(pid)), 'every process of the namespace to die');
  });

  it('killAll empties the namespace while the agent runs', async () => {
    const { containment, exited } = await startContained();
    const agentPid = await containment.agentPid;
    const everything = [agentPid, ...descendantsOnHost(agentPid)];
    stray.push(...everything);
    await containment.killAll();
    await exited;
    expect(everything.filter((pid) => isRunning(pid))).toEqual([]);
    expect(containment.handle()).toMatchObject({ kind: 'pid-namespace' });
  });
});

describe.skipIf(!support)('pid-namespace containment: the pipes and the host', () => {
  it('an agent that closes its stdout but keeps running is seen at once: no wrapper holds the pipe', async () => {
    // Closes its stdout 200 ms after its report (not after its start: under load the report itself can take longer).
    const closesStdout = `const log = console.log; console.log = (...line) => { log(...line); setTimeout(() => require('node:fs').closeSync(1), 200); };\n${agentScript}`;
    const { wrapper, containment } = await startContained(closesStdout);
    const agentPid = await containment.agentPid;
    stray.push(agentPid, ...descendantsOnHost(agentPid));
    await new Promise((resolve) => wrapper.stdout!.once('end', resolve));
    expect(isRunning(agentPid), 'the agent still runs after closing its stdout').toBe(true);
    await containment.killAll();
  });

  it('the host\'s end of the lifeline closing (a host killed by SIGKILL) kills an agent that ignores stdin EOF and SIGTERM, and empties the namespace', async () => {
    const stubborn = `${agentScript}\nprocess.removeAllListeners('SIGTERM'); process.on('SIGTERM', () => {}); process.stdin.on('end', () => {});`;
    const { wrapper, containment, exited } = await startContained(stubborn);
    const agentPid = await containment.agentPid;
    const everything = [agentPid, ...descendantsOnHost(agentPid)];
    stray.push(...everything);
    process.kill(-wrapper.pid!, 'SIGTERM'); // the ladder's first step does not end it
    wrapper.stdin!.end(); // nor does its stdin closing, as when the host dies
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(isRunning(agentPid), 'the agent ignored SIGTERM and EOF').toBe(true);
    (wrapper.stdio[3] as NodeJS.ReadableStream & { destroy(): void }).destroy(); // what the kernel does when the host dies
    expect(signalOfInitExit(await exited)).toBe('SIGKILL');
    await eventually(() => everything.every((pid) => !isRunning(pid)), 'every process of the namespace to die');
  });
});

/** Direct children of `pid` on this host. */
function childrenOnHost(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(' ').filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** Every process in the same PID namespace as `pid`, other than `pid` and the namespace's init. */
function descendantsOnHost(pid: number): number[] {
  let namespace: string;
  try {
    namespace = readlinkSync(`/proc/${pid}/ns/pid`);
  } catch {
    return [];
  }
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .map(Number)
    .filter((candidate) => {
      if (candidate === pid) return false;
      try {
        return readlinkSync(`/proc/${candidate}/ns/pid`) === namespace && nsPids(candidate)[1] !== 1;
      } catch {
        return false;
      }
    });
}
