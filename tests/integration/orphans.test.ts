/**
 * Crash-safe records and the orphan sweep (docs/containment.md), on real processes: a host
 * supervisor killed with SIGKILL leaves its agents behind, and a new supervisor on the same
 * state directory kills them from the records; a live host's agents and reused pids are
 * never touched; records come and go with the processes; the automatic sweep runs before the
 * first spawn.
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { AgentError, createSupervisor, type ContainmentKind, type OrphanSweepResult } from '../../index.js';
import type { AgentRecord } from '../../services/agent-records.service.js';
import { startTimeOf } from '../../services/containment/proc-table.js';
import { chooseContainment } from '../../services/containment/select.js';
import { writeDeadOwnerRecord } from '../support/orphan-records.js';
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
const writeOrphanRecord = (name: string, record: Partial<AgentRecord> & Pick<AgentRecord, 'wrapper'>) => writeDeadOwnerRecord(stateDir(), name, record);

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
    expect(result).toEqual({ dryRun: false, orphans: [], killed: [], skipped: [{ agent: 'fixture', pid: agent.pid, reason: 'owner alive' }] });
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
      expect(swept).toEqual({ dryRun: false, orphans: [expect.objectContaining({ agent: 'left-behind', pid, command: 'sleep', running: true })], killed: [{ agent: 'left-behind', pid, command: 'sleep' }], skipped: [] });
      await eventually(() => !isRunning(pid), 'the orphan to be killed');

      const quiet = createSupervisor({ stateDir: stateDir(), sweepOnStart: false });
      const noRecords = createSupervisor({ stateDir: false });
      let heard = 0;
      quiet.on('orphans:swept', () => heard++);
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(heard).toBe(0);
      expect(await noRecords.sweepOrphans()).toEqual({ dryRun: false, orphans: [], killed: [], skipped: [] });
      await Promise.all([quiet.shutdown(), noRecords.shutdown()]);
      expect(() => createSupervisor({ stateDir: 42 as never })).toThrow(expect.objectContaining({ kind: 'invalid_options' }));
      expect(() => createSupervisor({ sweepOnStart: 'yes' as never })).toThrow(expect.objectContaining({ kind: 'invalid_options' }));
    } finally {
      sleeper.kill('SIGKILL');
    }
  });
});

/** A host with two agents, `alpha` and `beta`, that prints their pids and then waits to be killed. */
const twoAgentHostScript = `
  import { createSupervisor } from 'agentvisor';
  const { stateDir, containment, command, args } = JSON.parse(process.env.HOST_SETTINGS);
  const supervisor = createSupervisor({ stateDir, containment, sweepOnStart: false, agents: { alpha: { command, args }, beta: { command, args } } });
  const [alpha, beta] = await Promise.all([supervisor.ensureAgent('alpha'), supervisor.ensureAgent('beta')]);
  console.log(JSON.stringify({ alpha: alpha.pid, beta: beta.pid }));
  setInterval(() => {}, 1 << 30);
`;

// Under a PID namespace a crashed host's agents die with it (the lifeline): nothing is left to list or choose from.
const leftoverKinds = hostKinds.filter((kind) => kind !== 'pid-namespace');

describe.each(leftoverKinds)("a crashed host's leftovers listed, then killed one by one, containment %s", (kind) => {
  it('a dry run lists each (pid, agent, start time, command) and touches nothing; only kills just the pid given', async () => {
    const settings = { stateDir: stateDir(), containment: kind, command: process.execPath, args: [fixtureAgentScript, '--linger'] };
    const launchedAt = Date.now();
    const host = execa(process.execPath, ['--input-type=module', '-e', twoAgentHostScript], { cwd: root, env: { HOST_SETTINGS: JSON.stringify(settings) }, reject: false, buffer: false });
    const pids: number[] = [];
    try {
      const { alpha, beta } = await new Promise<{ alpha: number; beta: number }>((resolve, reject) => {
        host.stdout!.once('data', (chunk: Buffer) => resolve(JSON.parse(chunk.toString()) as { alpha: number; beta: number }));
        void host.then((result) => reject(new Error(`the host exited: ${String(result.exitCode)}`)));
      });
      pids.push(alpha, beta);
      await eventually(() => [alpha, beta].every((pid) => readRecords().some((record) => record.agentProcess?.pid === pid)), 'the records to name both agents');
      host.kill('SIGKILL');
      await host;
      expect([isRunning(alpha), isRunning(beta)]).toEqual([true, true]);

      env.supervisor = createSupervisor({ stateDir: stateDir(), sweepOnStart: false });
      const swept: OrphanSweepResult[] = [];
      env.supervisor.on('orphans:swept', (result) => swept.push(result));

      const listed = await env.supervisor.sweepOrphans({ dryRun: true });
      const listedAt = Date.now();
      expect(listed).toMatchObject({ dryRun: true, killed: [], skipped: [] });
      const containment = kind === 'none' ? null : kind;
      const entry = (agent: string, pid: number) => ({ agent, pid, command: process.execPath, startedAt: expect.any(Number), running: true, containment, owner: host.pid, recordedAt: expect.any(Number) });
      expect([...listed.orphans].sort((a, b) => a.agent.localeCompare(b.agent))).toEqual([entry('alpha', alpha), entry('beta', beta)]);
      for (const orphan of listed.orphans) {
        // The start time read from /proc: after the host was launched (a tick and the uptime's rounding aside), before the listing.
        expect(orphan.startedAt!).toBeGreaterThanOrEqual(launchedAt - 1_000);
        expect(orphan.startedAt!).toBeLessThanOrEqual(listedAt);
        expect(orphan.recordedAt).toBeGreaterThanOrEqual(orphan.startedAt! - 1_000);
      }
      // Nothing touched: both run, both records are there, no sweep was announced.
      expect([isRunning(alpha), isRunning(beta)]).toEqual([true, true]);
      expect(recordFiles()).toHaveLength(2);
      expect(swept).toEqual([]);

      const one = await env.supervisor.sweepOrphans({ only: [alpha] });
      expect(one).toEqual({ dryRun: false, orphans: [entry('alpha', alpha)], killed: [{ agent: 'alpha', pid: alpha, command: process.execPath }], skipped: [] });
      await eventually(() => !isRunning(alpha), 'alpha to be gone');
      expect(isRunning(beta)).toBe(true);
      expect(readRecords().map((record) => record.agent)).toEqual(['beta']);
      expect(swept).toEqual([one]);

      const rest = await env.supervisor.sweepOrphans();
      expect(rest.killed).toEqual([{ agent: 'beta', pid: beta, command: process.execPath }]);
      await eventually(() => !isRunning(beta), 'beta to be gone');
      expect(recordFiles()).toEqual([]);
    } finally {
      host.kill('SIGKILL');
      await host;
      for (const pid of pids) if (isRunning(pid)) process.kill(pid, 'SIGKILL');
    }
  });
});

describe("the sweep's options", () => {
  /** A real process left by a "dead" owner (a record whose owner's start time is not this process's). */
  async function leftover(name: string) {
    const sleeper = spawn('sleep', ['300'], { stdio: 'ignore', detached: true });
    const pid = sleeper.pid!;
    await eventually(() => startTimeOf(pid) !== null, 'sleep to run');
    writeOrphanRecord(name, { wrapper: { pid, startTime: startTimeOf(pid)! } });
    return sleeper;
  }

  it('only: a pid in no record, or of a live supervisor, is orphan_not_found and nothing is killed; with dryRun it lists just those', async () => {
    const sleeper = await leftover('left-again');
    try {
      const again = sleeper.pid!;
      env.supervisor = createSupervisor({ stateDir: stateDir(), sweepOnStart: false, agents: { fixture: fixtureSpec() } });
      const agent = await env.supervisor.ensureAgent('fixture');
      await eventually(() => readRecords().some((record) => record.agentProcess?.pid === agent.pid), "the live agent's record");

      const notRecorded = await env.supervisor.sweepOrphans({ only: [again, process.pid] }).catch((error: unknown) => error);
      expect(notRecorded).toBeInstanceOf(AgentError);
      expect(notRecorded).toMatchObject({ kind: 'orphan_not_found', message: expect.stringContaining(`pid ${process.pid} is in no process record`) });
      const alive = await env.supervisor.sweepOrphans({ only: [agent.pid!] }).catch((error: unknown) => error);
      expect(alive).toMatchObject({ kind: 'orphan_not_found', message: expect.stringContaining(`pid ${agent.pid} belongs to a supervisor that is alive (pid ${process.pid})`) });
      // Refused as a whole: the pid that was a leftover is not killed either, its record kept.
      expect(isRunning(again)).toBe(true);
      expect(isRunning(agent.pid!)).toBe(true);
      expect(readRecords().map((record) => record.agent).sort()).toEqual(['fixture', 'left-again']);

      const justOne = await env.supervisor.sweepOrphans({ dryRun: true, only: [again] });
      expect(justOne).toEqual({ dryRun: true, orphans: [expect.objectContaining({ agent: 'left-again', pid: again, command: 'sleep', running: true })], killed: [], skipped: [] });
      expect(isRunning(again)).toBe(true);

      const noRecords = createSupervisor({ stateDir: false });
      await expect(noRecords.sweepOrphans({ only: [again] })).rejects.toMatchObject({ kind: 'orphan_not_found', message: expect.stringContaining('stateDir: false') });
      await noRecords.shutdown();
      expect(isRunning(again)).toBe(true);
    } finally {
      sleeper.kill('SIGKILL');
    }
  });

  it('refuses bad options with invalid_options naming the field, before anything is read or killed', async () => {
    const sleeper = await leftover('left');
    try {
      env.supervisor = createSupervisor({ stateDir: stateDir(), sweepOnStart: false });
      const cases: Array<[unknown, string]> = [
        [{ dryrun: true }, 'dryrun'],
        [{ dryRun: 'yes' }, 'sweep options.dryRun'],
        [{ only: sleeper.pid }, 'sweep options.only'],
        [{ only: [] }, 'sweep options.only: must name at least one pid'],
        [{ only: [0] }, 'sweep options.only.0'],
        [{ only: [-1] }, 'sweep options.only.0'],
        [{ only: [sleeper.pid, 1.5] }, 'sweep options.only.1: must be a whole number'],
        [{ only: [String(sleeper.pid)] }, 'sweep options.only.0'],
        [42, 'sweep options'],
      ];
      for (const [options, field] of cases) {
        const error = await env.supervisor.sweepOrphans(options as never).catch((caught: unknown) => caught);
        expect({ options, error }).toEqual({ options, error: expect.objectContaining({ kind: 'invalid_options', message: expect.stringContaining(field) }) });
      }
      expect(isRunning(sleeper.pid!)).toBe(true);
      expect(recordFiles()).toHaveLength(1);
    } finally {
      sleeper.kill('SIGKILL');
    }
  });

  it("a dry run lists a recorded container though its client is long gone, without asking the engine; records with nothing left are said, and kept", async () => {
    // Processes that ran and are gone: their pids and start times, as their records would hold them.
    const gone = async () => {
      const child = spawn('sleep', ['300'], { stdio: 'ignore' });
      await eventually(() => startTimeOf(child.pid!) !== null, 'sleep to run');
      const identity = { pid: child.pid!, startTime: startTimeOf(child.pid!)! };
      child.kill('SIGKILL');
      await new Promise((resolve) => child.once('exit', resolve));
      return identity;
    };
    const client = await gone();
    const stale = await gone();
    // The engine's address leads nowhere: a dry run that asked it would fail or hang, a listing does neither.
    const remote = { kind: 'docker-container' as const, client: 'docker', token: 'agentvisor-test-token', engine: { DOCKER_HOST: `unix://${env.files.path('no-engine.sock')}` } };
    writeOrphanRecord('boxed', { wrapper: client, command: 'docker', remote });
    writeOrphanRecord('stale', { wrapper: stale });
    env.supervisor = createSupervisor({ stateDir: stateDir(), sweepOnStart: false });
    const listed = await env.supervisor.sweepOrphans({ dryRun: true });
    expect(listed).toEqual({
      dryRun: true,
      orphans: [expect.objectContaining({ agent: 'boxed', pid: client.pid, command: 'docker', container: 'agentvisor-test-token', running: false })],
      killed: [],
      skipped: [{ agent: 'stale', pid: stale.pid, reason: 'not running' }],
    });
    expect(recordFiles()).toHaveLength(2);
  });
});
