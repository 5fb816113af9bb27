/**
 * Crash-safe records and the orphan sweep (docs/containment.md), on real processes: a host
 * supervisor killed with SIGKILL leaves its agents behind, and a new supervisor on the same
 * state directory kills them from the records; a live host's agents and reused pids are
 * never touched; records come and go with the processes; the automatic sweep runs before the
 * first spawn.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { createSupervisor, type ContainmentKind, type OrphanSweepResult } from '../../index.js';
import type { AgentRecord } from '../../services/agent-records.service.js';
import { startTimeOf } from '../../services/containment/proc-table.js';
import { chooseContainment } from '../../services/containment/select.js';
import { eventually, fixtureAgentScript, fixtureSpec, isRunning, useRealAgentEnvironment } from '../support/real-agents.js';

const env = useRealAgentEnvironment();
const root = fileURLToPath(new URL('../..', import.meta.url));

const kinds: ContainmentKind[] = ['pid-namespace', 'cgroup', 'proc-tracking'];
const available = new Set(kinds.filter((kind) => chooseContainment(kind).mechanism?.kind === kind));
const hostKinds: Array<ContainmentKind | 'none'> = [...kinds.filter((kind) => available.has(kind)), 'none'];

const stateDir = () => env.files.path('state');
/** The records written so far: `.json` files (a record is written to a `.tmp` file and renamed, so a `.json` is always whole). */
const recordFiles = () => (existsSync(join(stateDir(), 'processes')) ? readdirSync(join(stateDir(), 'processes')).filter((name) => name.endsWith('.json')) : []);
/** Their contents; a record removed between the listing and the read is skipped. */
const readRecords = () =>
  recordFiles().flatMap((name) => {
    try {
      return [JSON.parse(readFileSync(join(stateDir(), 'processes', name), 'utf8')) as AgentRecord];
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw error;
    }
  });

/** A supervisor in a node process of its own, importing the built package as a consumer does. */
const hostScript = `
  import { createSupervisor } from 'agentvisor';
  const { stateDir, containment, command, args } = JSON.parse(process.env.HOST_SETTINGS);
  const supervisor = createSupervisor({ stateDir, containment, sweepOnStart: false, agents: { fixture: { command, args } } });
  const agent = await supervisor.ensureAgent('fixture');
  console.log(JSON.stringify({ pid: agent.pid }));
  setInterval(() => {}, 1 << 30);
`;

/** Writes a record as a crashed supervisor (owner: this process, with a start time it never had) would have. */
function writeOrphanRecord(name: string, record: Partial<AgentRecord> & Pick<AgentRecord, 'wrapper'>): string {
  const dir = join(stateDir(), 'processes');
  mkdirSync(dir, { recursive: true });
  const full: AgentRecord = {
    version: 1,
    agent: name,
    command: 'sleep',
    agentProcess: record.wrapper,
    pgid: record.wrapper.pid,
    sid: record.wrapper.pid,
    containment: null,
    handle: null,
    owner: { pid: process.pid, startTime: startTimeOf(process.pid)! + 1 },
    createdAt: new Date().toISOString(),
    ...record,
  };
  const path = join(dir, `${name}.json`);
  writeFileSync(path, JSON.stringify(full));
  return path;
}

describe.each(hostKinds)('a crashed host, containment %s', (kind) => {
  it('leaves records from which a new supervisor kills every leftover process', async () => {
    // Without containment an escapee (own session) is out of reach; the grandchild stays in the group.
    const flags = ['--spawn-grandchild', ...(kind === 'none' ? [] : ['--grandchild-escapes']), '--linger', '--pid-file', env.files.path('pids.txt')];
    const settings = { stateDir: stateDir(), containment: kind, command: process.execPath, args: [fixtureAgentScript, ...flags] };
    const host = execa(process.execPath, ['--input-type=module', '-e', hostScript], { cwd: root, env: { HOST_SETTINGS: JSON.stringify(settings) }, reject: false, buffer: false });
    const started = await new Promise<{ pid: number }>((resolve, reject) => {
      host.stdout!.once('data', (chunk: Buffer) => resolve(JSON.parse(chunk.toString()) as { pid: number }));
      void host.then((result) => reject(new Error(`the host exited: ${String(result.exitCode)}`)));
    });
    const [agentPid, grandchild] = env.files.pidLines()[0] as [number, number];
    expect(started.pid).toBe(agentPid);
    // A /proc-tracked container is recorded as it grows: wait until the record holds the escapee.
    await eventually(() => readRecords().some((record) => record.agentProcess?.pid === agentPid && (kind !== 'proc-tracking' || JSON.stringify(record.handle).includes(`"pid":${grandchild}`))), 'the record to name the agent and its container');

    host.kill('SIGKILL');
    await host;

    const sweeper = createSupervisor({ stateDir: stateDir(), sweepOnStart: false });
    const result = await sweeper.sweepOrphans();
    await sweeper.shutdown();
    await eventually(() => !isRunning(agentPid) && !isRunning(grandchild), 'the agent and its grandchild to be gone');
    expect(recordFiles()).toEqual([]);
    expect(result.skipped.filter((entry) => entry.reason === 'owner alive')).toEqual([]);
    // Under a PID namespace the agent dies with its host (the lifeline on fd 3): nothing may be left to kill.
    if (kind !== 'pid-namespace') expect(result.killed).toEqual([expect.objectContaining({ agent: 'fixture', pid: agentPid, command: process.execPath })]);
  });
});

/** The running processes (not zombies) whose command line contains `token`, other than this one. */
function pidsMentioning(token: string): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name) && Number(name) !== process.pid)
    .map(Number)
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(token) && isRunning(pid);
      } catch {
        return false;
      }
    });
}

/** A host whose agent runs a long terminal command (through terminal/create) and then is killed. */
const terminalHostScript = `
  import { createSupervisor } from 'agentvisor';
  const { stateDir, containment, command, args, cwd, script } = JSON.parse(process.env.HOST_SETTINGS);
  const supervisor = createSupervisor({ stateDir, containment, sweepOnStart: false, agents: { fixture: { command, args } } });
  const session = await supervisor.newSession('fixture', { cwd });
  void session.prompt(JSON.stringify({ op: 'terminal', command: '/bin/sh', args: ['-c', script] })).catch(() => {});
  console.log(JSON.stringify({ session: session.id }));
  setInterval(() => {}, 1 << 30);
`;

describe.each(hostKinds)("a crashed host's terminals, containment %s", (kind) => {
  it('are recorded as they run, and a new supervisor kills them and what they started', async () => {
    // A command and a job it started; under a mechanism the job leaves the command's session.
    // Found by a token in their command lines: pids written from inside a PID namespace are not the host's.
    const token = String(100_000 + Math.floor(Math.random() * 800_000));
    const job = kind === 'none' ? `sleep ${token} &` : `setsid sleep ${token} &`;
    const script = `${job} wait # ${token}`;
    const settings = { stateDir: stateDir(), containment: kind, command: process.execPath, args: [fixtureAgentScript, '--linger'], cwd: env.files.dir, script };
    const host = execa(process.execPath, ['--input-type=module', '-e', terminalHostScript], { cwd: root, env: { HOST_SETTINGS: JSON.stringify(settings) }, reject: false, buffer: false });
    try {
      const argv = (pid: number) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      const find = () => {
        const pids = pidsMentioning(token);
        return { command: pids.find((pid) => argv(pid)[0] === '/bin/sh' && argv(pid)[2] === script), jobPid: pids.find((pid) => argv(pid)[0] === 'sleep') };
      };
      await eventually(() => find().command !== undefined && find().jobPid !== undefined, 'the terminal command and its job to run');
      const { command, jobPid } = find() as { command: number; jobPid: number };
      await eventually(
        () => readRecords().some((record) => record.terminal === true && record.agent === 'fixture' && record.command === '/bin/sh' && (kind !== 'proc-tracking' || JSON.stringify(record.handle).includes(`"pid":${jobPid}`))),
        "the terminal's record (with its job, under /proc tracking)",
      );
      host.kill('SIGKILL');
      await host;
      // Under a PID namespace the terminal dies with its host (the lifeline); anywhere else it outlives it until swept.
      if (kind !== 'pid-namespace') expect([isRunning(command), isRunning(jobPid)]).toEqual([true, true]);

      const sweeper = createSupervisor({ stateDir: stateDir(), sweepOnStart: false });
      const result = await sweeper.sweepOrphans();
      await sweeper.shutdown();
      await eventually(() => !isRunning(command) && !isRunning(jobPid), 'the terminal command and its job to be gone');
      expect(recordFiles()).toEqual([]);
      if (kind !== 'pid-namespace') expect(result.killed).toContainEqual({ agent: 'fixture', pid: command, command: '/bin/sh', terminal: true });
    } finally {
      host.kill('SIGKILL');
      await host;
      for (const pid of pidsMentioning(token)) process.kill(pid, 'SIGKILL');
    }
  });
});

describe('the orphan sweep', () => {
  it("leaves a live host's agents alone", async () => {
    env.supervisor = createSupervisor({ stateDir: stateDir(), agents: { fixture: fixtureSpec() } });
    const agent = await env.supervisor.ensureAgent('fixture');
    await eventually(() => readRecords().some((record) => record.agentProcess?.pid === agent.pid), 'the record to name the agent');
    const second = createSupervisor({ stateDir: stateDir(), sweepOnStart: false });
    const result = await second.sweepOrphans();
    await second.shutdown();
    expect(result).toEqual({ killed: [], skipped: [{ agent: 'fixture', pid: agent.pid, reason: 'owner alive' }] });
    expect(isRunning(agent.pid)).toBe(true);
    expect(recordFiles()).toHaveLength(1);
  });

  it('without containment, kills what stayed in a recorded group after its leader exited', async () => {
    // A leader that starts a job in its own group and exits (as `sh -c 'job &'` does in a terminal).
    const leader = spawn('/bin/sh', ['-c', 'sleep 1000 & echo $!; read _'], { detached: true, stdio: ['pipe', 'pipe', 'ignore'] });
    const jobPid = await new Promise<number>((resolve) => leader.stdout!.once('data', (chunk: Buffer) => resolve(Number(chunk.toString().trim()))));
    const wrapper = { pid: leader.pid!, startTime: startTimeOf(leader.pid!)! };
    leader.stdin!.end();
    await new Promise((resolve) => leader.once('exit', resolve));
    try {
      expect(isRunning(jobPid)).toBe(true);
      writeOrphanRecord('job-left', { wrapper, pgid: leader.pid!, sid: leader.pid!, command: '/bin/sh', terminal: true });
      const sweeper = createSupervisor({ stateDir: stateDir(), sweepOnStart: false });
      const result = await sweeper.sweepOrphans();
      await sweeper.shutdown();
      expect(result.killed).toEqual([{ agent: 'job-left', pid: leader.pid, command: '/bin/sh', terminal: true }]);
      await eventually(() => !isRunning(jobPid), 'the job left in the group to be gone');
      expect(recordFiles()).toEqual([]);
    } finally {
      if (isRunning(jobPid)) process.kill(jobPid, 'SIGKILL');
    }
  });

  it('never kills a reused pid (a start time that differs from the record)', async () => {
    const sleeper = spawn('sleep', ['30'], { stdio: 'ignore' });
    try {
      const pid = sleeper.pid!;
      await eventually(() => startTimeOf(pid) !== null, 'sleep to run');
      const wrong = { pid, startTime: startTimeOf(pid)! - 1 };
      writeOrphanRecord('plain', { wrapper: wrong });
      writeOrphanRecord('namespaced', { wrapper: wrong, containment: 'pid-namespace', handle: { kind: 'pid-namespace', initPid: pid, initStartTime: wrong.startTime } });
      writeOrphanRecord('tracked', { wrapper: wrong, containment: 'proc-tracking', handle: { kind: 'proc-tracking', pids: [wrong] } });
      const supervisor = createSupervisor({ stateDir: stateDir(), sweepOnStart: false });
      const result = await supervisor.sweepOrphans();
      await supervisor.shutdown();
      expect(result.killed).toEqual([]);
      expect(result.skipped).toHaveLength(3);
      expect(result.skipped.find((entry) => entry.agent === 'plain')).toEqual({ agent: 'plain', pid, reason: 'pid reused' });
      expect(isRunning(pid)).toBe(true);
      expect(recordFiles()).toEqual([]);
    } finally {
      sleeper.kill('SIGKILL');
    }
  });

  it('records a process while it runs (no arguments, no env), and removes the record after stop() and shutdown()', async () => {
    // Uncontained, so that the spawned process is the agent (contained records: the crash tests above).
    env.supervisor = createSupervisor({ containment: 'none', stateDir: stateDir(), agents: { fixture: fixtureSpec(['--pid-file', env.files.path('pids.txt')], { env: { SECRET_TOKEN: 'hunter2' } }) } });
    const agent = await env.supervisor.ensureAgent('fixture');
    await eventually(() => readRecords()[0]?.agentProcess?.pid === agent.pid, 'the record to name the agent');
    expect(recordFiles()).toEqual([expect.stringMatching(new RegExp(`^${process.pid}-${startTimeOf(process.pid)}-fixture-${agent.pid}\\.json$`))]);
    const text = readFileSync(join(stateDir(), 'processes', recordFiles()[0]!), 'utf8');
    expect(text).not.toMatch(/hunter2|SECRET_TOKEN|--pid-file/);
    expect(readRecords()[0]).toMatchObject({ agent: 'fixture', command: process.execPath, owner: { pid: process.pid, startTime: startTimeOf(process.pid) }, wrapper: { pid: agent.pid }, pgid: agent.pid, containment: null });

    await env.supervisor.stop('fixture');
    expect(recordFiles()).toEqual([]);
    await env.supervisor.ensureAgent('fixture');
    expect(recordFiles()).toHaveLength(1);
    await env.supervisor.shutdown();
    expect(recordFiles()).toEqual([]);
  });

  it.each(hostKinds)("records a terminal's command while it runs, with no arguments, and removes the record once it is done (containment %s)", async (kind) => {
    env.supervisor = createSupervisor({ containment: kind, stateDir: stateDir(), agents: { fixture: fixtureSpec() } });
    const session = await env.supervisor.newSession('fixture', { cwd: env.files.dir });
    const terminalRecords = () => readRecords().filter((record) => record.terminal === true);
    const chunks: string[] = [];
    session.on('update', (update) => {
      if (update.sessionUpdate === 'agent_message_chunk' && update.content.type === 'text') chunks.push(update.content.text);
    });
    const turn = session.prompt(JSON.stringify({ op: 'terminal', command: '/bin/sh', args: ['-c', 'sleep 0.5; echo SECRET_ARGUMENT_DONE'] }));
    await eventually(() => terminalRecords().length === 1, "the terminal's record");
    expect(terminalRecords()[0]).toMatchObject({ agent: 'fixture', command: '/bin/sh', terminal: true, containment: kind === 'none' ? null : kind });
    expect(recordFiles().some((name) => name.includes('-fixture.terminal-'))).toBe(true);
    expect(JSON.stringify(readRecords())).not.toContain('SECRET_ARGUMENT');
    expect(await turn).toBe('end_turn');
    expect(chunks.join('')).toContain('SECRET_ARGUMENT_DONE');
    // The fixture released the terminal after its exit: only the agent's own record is left.
    await eventually(() => terminalRecords().length === 0, "the terminal's record to be removed");
    expect(readRecords()).toHaveLength(1);
  });

  it('runs by itself before the first spawn and emits orphans:swept; sweepOnStart: false and stateDir: false turn it off', async () => {
    const sleeper = spawn('sleep', ['30'], { stdio: 'ignore', detached: true });
    try {
      const pid = sleeper.pid!;
      await eventually(() => startTimeOf(pid) !== null, 'sleep to run');
      writeOrphanRecord('left-behind', { wrapper: { pid, startTime: startTimeOf(pid)! } });
      env.supervisor = createSupervisor({ stateDir: stateDir(), agents: { fixture: fixtureSpec() } });
      const order: string[] = [];
      let swept: OrphanSweepResult | undefined;
      env.supervisor.on('orphans:swept', (result) => ((swept = result), order.push('swept')));
      env.supervisor.on('agent:status', ({ status }) => order.push(status));
      await env.supervisor.ensureAgent('fixture');
      expect(order[0]).toBe('swept');
      expect(swept).toEqual({ killed: [{ agent: 'left-behind', pid, command: 'sleep' }], skipped: [] });
      await eventually(() => !isRunning(pid), 'the orphan to be killed');

      const quiet = createSupervisor({ stateDir: stateDir(), sweepOnStart: false });
      const noRecords = createSupervisor({ stateDir: false });
      let heard = 0;
      quiet.on('orphans:swept', () => heard++);
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(heard).toBe(0);
      expect(await noRecords.sweepOrphans()).toEqual({ killed: [], skipped: [] });
      await Promise.all([quiet.shutdown(), noRecords.shutdown()]);
      expect(() => createSupervisor({ stateDir: 42 as never })).toThrow(expect.objectContaining({ kind: 'invalid_options' }));
      expect(() => createSupervisor({ sweepOnStart: 'yes' as never })).toThrow(expect.objectContaining({ kind: 'invalid_options' }));
    } finally {
      sleeper.kill('SIGKILL');
    }
  });
});
