/**
 * The docker runtime on a real container engine (tests/support/container-engine.ts: Podman's
 * Docker API started by the tests, or a Docker engine already running), with the real docker
 * client, through the supervisor and at the service edge: `docker run` and `docker exec`,
 * the stop ladder inside, containment inside the container, crashes of the agent and of the
 * local client, a host crash and the orphan sweep, shutdown, and the runtime's own failures.
 * Skipped with a warning naming what is missing where no engine can run.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SimulatedClock } from 'xstate';
import type { AgentSpec } from '../../core/agent-spec.js';
import { createSupervisor, type OrphanSweepResult } from '../../index.js';
import { openAcpConnection } from '../../services/acp-client.service.js';
import { spawnAgentProcess, type AgentProcess } from '../../services/agent-process.service.js';
import type { AgentRecord } from '../../services/agent-records.service.js';
import { containerLabels, dockerCommand, sweepContainer } from '../../services/runtimes/container.runtime.js';
import type { DockerLeftover } from '../../services/runtimes/runtime.js';
import { checkout, startContainerEngine, type ContainerEngine } from '../support/container-engine.js';
import {
  agentState,
  collectChunks,
  command,
  eventually,
  fixtureAgentScript,
  fixtureSpec,
  isRunning,
  useRealAgentEnvironment,
  waitForAgentState,
  waitForStatus,
} from '../support/real-agents.js';

const started = await startContainerEngine();
if (started.unavailable !== undefined) console.warn(`docker runtime tests on a real engine skipped: ${started.unavailable}`);
const engine = started.engine as ContainerEngine;

const env = useRealAgentEnvironment();
let savedDockerHost: string | undefined;
beforeAll(() => {
  if (!engine) return;
  // The docker client the runtime spawns (and the sweep's) reaches this engine.
  savedDockerHost = process.env.DOCKER_HOST;
  process.env.DOCKER_HOST = engine.dockerHost;
});
afterAll(() => {
  if (!engine) return;
  if (savedDockerHost === undefined) delete process.env.DOCKER_HOST;
  else process.env.DOCKER_HOST = savedDockerHost;
  // The crashed host's container, if its test failed before the sweep (another process's label).
  const orphaned = engine.containers('orphaned').map((container) => container.id);
  if (orphaned.length > 0) engine.docker(['rm', '--force', ...orphaned]);
  engine.stop();
});

/** A `docker run` runtime of the test image: no network, never a pull, the checkout read-only at its own path. */
function runRuntime(...runArgs: string[]) {
  return { kind: 'docker' as const, image: engine.image, runArgs: ['--network', 'none', '--pull', 'never', '-v', `${checkout}:${checkout}:ro`, ...runArgs] };
}

/**
 * Host pids of the live processes in a container (this host's /proc shows them: their cgroup
 * path names the container's full id); with `mark`, only those whose environment holds it.
 */
function processesIn(containerId: string, mark?: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (!readFileSync(`/proc/${entry}/cgroup`, 'utf8').includes(containerId)) continue;
      if (mark !== undefined && !readFileSync(`/proc/${entry}/environ`, 'latin1').includes(`AV_MARK=${mark}`)) continue;
      pids.push(Number(entry));
    } catch {
      // gone, or not ours to read
    }
  }
  return pids.filter(isRunning);
}

/** The fixture agents running in a container. */
function agentsIn(containerId: string): number[] {
  return processesIn(containerId).filter((pid) => {
    try {
      const [program, script] = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      return program === process.execPath && script === fixtureAgentScript;
    } catch {
      return false;
    }
  });
}

/** Host pids of live processes anywhere whose environment holds `mark` (the local docker client has it too: it passes it on by name). */
function pidsMarked(mark: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/environ`, 'latin1').includes(`AV_MARK=${mark}`)) pids.push(Number(entry));
    } catch {
      // gone, or not ours to read
    }
  }
  return pids.filter(isRunning);
}

const running = (agent: string) => engine.containers(agent).filter((container) => container.state === 'running');

// Real containers on a machine busy with the rest of the suite: more room than the default 20 s.
describe.skipIf(!engine)(`the docker runtime on a real engine${engine ? ` (${engine.engine})` : ''}`, { timeout: 60_000 }, () => {
  it('docker run: connect, a session and a prompt in a labelled container; stop leaves no container', async () => {
    env.supervisor = createSupervisor({ stateDir: false, agents: { boxed: fixtureSpec([], { runtime: runRuntime() }) } });
    await env.supervisor.ensureAgent('boxed');
    const [container, ...more] = engine.containers('boxed');
    expect(more).toEqual([]);
    expect(container?.state).toBe('running');
    expect(container?.labels[containerLabels.supervisor]).toMatch(new RegExp(`^${hostname()}/${process.pid}-\\d+$`));
    expect(container?.labels[containerLabels.container]).toMatch(/^agentvisor-[0-9a-f]{12}$/);
    expect(container?.name).toBe(container?.labels[containerLabels.container]);
    const session = await env.supervisor.newSession('boxed', { cwd: '/tmp' });
    const received = collectChunks(session);
    expect(await session.prompt(command({ op: 'stream', count: 2, text: 'in a box;' }))).toBe('end_turn');
    expect(received.text()).toBe('in a box;in a box;');
    await env.supervisor.stop('boxed');
    expect(engine.containers('boxed')).toEqual([]); // removed before the stop settled
  });

  it('docker exec: connect and prompt in a running container; a stop ends the agent\'s processes there and leaves the container running', async () => {
    const name = `avtest-exec-${randomBytes(4).toString('hex')}`;
    const made = engine.docker(['run', '-d', '--init', '--name', name, '--label', `${containerLabels.container}=${name}`, '--label', engine.ownLabel, ...runRuntime().runArgs, engine.image, 'sleep', '100000']);
    expect(made.status, made.stderr).toBe(0);
    const mark = `avexec${process.pid}${randomBytes(3).toString('hex')}`;
    env.supervisor = createSupervisor({
      stateDir: false,
      agents: { inside: fixtureSpec(['--spawn-grandchild'], { env: { AV_MARK: mark }, runtime: { kind: 'docker', container: name } }) },
    });
    const session = await env.supervisor.newSession('inside', { cwd: '/tmp' });
    expect(await session.prompt(command({ op: 'stream', count: 1, text: 'exec ok' }))).toBe('end_turn');
    const containerId = engine.containers().find((container) => container.name === name)!.id;
    expect(processesIn(containerId, mark).length).toBeGreaterThanOrEqual(2); // the agent and its child, in the container
    await env.supervisor.stop('inside');
    expect(processesIn(containerId, mark)).toEqual([]);
    expect(pidsMarked(mark)).toEqual([]); // the local client too
    expect(engine.containers().find((container) => container.name === name)?.state).toBe('running');
  });

  it('requests for this host\'s files and terminals are refused (not offered to a container agent); permissions go through the session\'s policy', async () => {
    env.supervisor = createSupervisor({ stateDir: false, agents: { boxed: fixtureSpec([], { runtime: runRuntime() }) } });
    const denying = await env.supervisor.newSession('boxed', { cwd: '/tmp', permissions: 'deny' });
    const said = collectChunks(denying);
    await denying.prompt(command({ op: 'read', path: join(checkout, 'package.json') }));
    await denying.prompt(command({ op: 'write', path: '/tmp/x', content: 'x' }));
    await denying.prompt(command({ op: 'terminal', command: 'true' }));
    await denying.prompt(command({ op: 'permission' }));
    const lines = said.chunks;
    expect(lines[0]).toMatch(/^error:/);
    expect(lines[1]).toMatch(/^error:/);
    expect(lines[2]).toMatch(/^error:/);
    expect(lines[3]).toBe('permission:reject');
    const allowing = await env.supervisor.newSession('boxed', { cwd: '/tmp', permissions: 'allow' });
    const allowed = collectChunks(allowing);
    await allowing.prompt(command({ op: 'permission' }));
    expect(allowed.text()).toBe('permission:allow');
  });

  it('the stop ladder reaches the agent inside: SIGTERM sent in ends it (exit 143), SIGKILL one that ignores SIGTERM (exit 137)', async () => {
    const spawned: AgentProcess[] = [];
    try {
      for (const [flags, signal, code] of [
        [['--linger'], 'SIGTERM', 143],
        [['--linger', '--ignore-sigterm'], 'SIGKILL', 137],
      ] as const) {
        const spec: AgentSpec = fixtureSpec([...flags]);
        const runtime = dockerCommand(spec, runRuntime(), { agent: 'ladder' });
        const proc = spawnAgentProcess(
          { command: runtime.command, args: runtime.args, env: runtime.env ?? {} },
          { onStderrLine: (line) => void runtime.onStderrLine(line), remote: runtime },
        );
        spawned.push(proc);
        const acp = openAcpConnection(proc.stdin, proc.stdout, {});
        await acp.initialize();
        expect(runtime.remotePid()).toBeGreaterThan(0);
        proc.closeInput(); // the first rung: the agent lingers
        await runtime.signalInside(signal);
        const exit = await proc.exited;
        expect(exit).toEqual({ exitCode: code, signal: null }); // the agent's status, through the wrapper and the client
        expect(engine.containers('ladder')).toEqual([]); // removed by the cleanup before `exited`
      }
    } finally {
      for (const proc of spawned) proc.signalGroup('SIGKILL');
    }
  });

  it('under the supervisor: an agent that ignores stdin EOF and SIGTERM is ended by the SIGKILL sent in, on the ladder\'s clock', async () => {
    const clock = new SimulatedClock();
    env.supervisor = createSupervisor({
      clock,
      stateDir: false,
      agents: { stubborn: { ...fixtureSpec(['--linger', '--ignore-sigterm']), shutdownTimeoutMs: 30_000, killTimeoutMs: 30_000, runtime: runRuntime() } },
    });
    await env.supervisor.ensureAgent('stubborn');
    const stopped = env.supervisor.stop('stubborn');
    await waitForAgentState(env.supervisor, 'stubborn', 'stopping.closing');
    clock.increment(30_000);
    expect(agentState(env.supervisor, 'stubborn')).toBe('stopping.terminating');
    clock.increment(30_000);
    // The wrapper's own escalation is 31 s + 31 s of real time away: only the ladder's SIGKILL ends it this soon.
    await stopped;
    expect(engine.containers('stubborn')).toEqual([]);
  });

  it('an escapee started inside the container (a session of its own) dies with the agent', async () => {
    const mark = `avescape${process.pid}${randomBytes(3).toString('hex')}`;
    env.supervisor = createSupervisor({
      stateDir: false,
      agents: { boxed: fixtureSpec(['--spawn-grandchild', '--grandchild-escapes'], { env: { AV_MARK: mark }, runtime: runRuntime() }) },
    });
    await env.supervisor.ensureAgent('boxed');
    const [container] = engine.containers('boxed');
    await eventually(() => processesIn(container!.id, mark).length >= 2, 'the agent and its escapee to run');
    await env.supervisor.stop('boxed');
    expect(processesIn(container!.id)).toEqual([]);
    expect(pidsMarked(mark)).toEqual([]);
  });

  it('the agent crashes: a restart runs in a new container, and the old one is gone', async () => {
    const clock = new SimulatedClock();
    env.supervisor = createSupervisor({ clock, stateDir: false, agents: { boxed: fixtureSpec([], { runtime: runRuntime() }) } });
    await env.supervisor.ensureAgent('boxed');
    const first = engine.containers('boxed').map((container) => container.name);
    const session = await env.supervisor.newSession('boxed', { cwd: '/tmp' });
    await session.prompt(command({ op: 'die', code: 3 })).catch(() => {});
    await eventually(() => env.supervisor!.getStatus('boxed') !== 'connected', 'the crash to be seen');
    await waitForAgentState(env.supervisor, 'boxed', 'reconnecting.waiting');
    expect(engine.containers('boxed')).toEqual([]); // the crashed container was removed before the backoff began
    clock.increment(60_000);
    await waitForStatus(env.supervisor, 'boxed', 'connected', 20_000);
    const now = engine.containers('boxed');
    expect(now).toHaveLength(1);
    expect(first).not.toContain(now[0]!.name);
  });

  it('the local docker client is killed: its container is removed before the restart creates the next one, within a second; one agent runs again', async () => {
    const mark = `avclient${process.pid}${randomBytes(3).toString('hex')}`;
    const since = Math.floor(Date.now() / 1000) - 1;
    env.supervisor = createSupervisor({
      stateDir: false,
      // An agent that outlives its stdin (as codex-acp does): without the removal, its old container would run on for the wrapper's grace.
      agents: { boxed: { ...fixtureSpec(['--linger'], { env: { AV_MARK: mark }, runtime: runRuntime() }), shutdownTimeoutMs: 300 } },
      restart: { initialDelayMs: 100, jitter: 0 },
    });
    await env.supervisor.ensureAgent('boxed');
    const [first] = engine.containers('boxed');
    const client = env.supervisor.describe('boxed').pid!;
    expect(readFileSync(`/proc/${client}/cmdline`, 'utf8').split('\0').slice(0, 2)).toEqual(['docker', 'run']);
    const killedAtNs = BigInt(Date.now()) * 1_000_000n;
    process.kill(client, 'SIGKILL');
    await eventually(() => env.supervisor!.getStatus('boxed') !== 'connected', 'the lost client to be seen');
    await waitForStatus(env.supervisor, 'boxed', 'connected', 30_000);
    const now = engine.containers('boxed');
    const history = () =>
      engine
        .docker(['events', '--since', String(since), '--until', String(Math.floor(Date.now() / 1000) + 1), '--filter', `label=${containerLabels.agent}=boxed`, '--format', '{{.Status}} {{.ID}}'])
        .stdout.trim();
    expect(now, `containers: ${JSON.stringify(now)}\nevents:\n${history()}`).toHaveLength(1);
    expect(now[0]!.id).not.toBe(first!.id);
    expect(agentsIn(now[0]!.id)).toHaveLength(1); // the new agent
    expect(processesIn(first!.id)).toEqual([]); // nothing of the old one
    // The engine's own record of it: the old container removed, then the new one created — never two at once.
    const until = String(Math.floor(Date.now() / 1000) + 1);
    const events = engine
      .docker(['events', '--since', String(since), '--until', until, '--filter', `label=${containerLabels.agent}=boxed`, '--format', '{{json .}}'])
      .stdout.split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { status: string; id: string; timeNano: number });
    const removed = events.findIndex((event) => event.status === 'remove' && event.id === first!.id);
    const created = events.findIndex((event) => event.status === 'create' && event.id === now[0]!.id);
    expect(removed).toBeGreaterThan(-1);
    expect(created).toBeGreaterThan(removed);
    // Promptly: the container has no --rm and nothing else removes it (without the cleanup there
    // is no 'remove' event at all, and the restart would wait for it). The engine's own removal
    // of a running container (stop, then remove) stayed under a second in every run but one, which
    // took 1.5 s under the suite's load on two cores: the bound says "at once", not how fast Podman is.
    expect(Number(BigInt(events[removed]!.timeNano) - killedAtNs) / 1e6).toBeLessThan(5_000);
  });

  it('a host crash: the next supervisor\'s sweep removes the container, though the recorded local pid is long gone', async () => {
    const stateDir = env.files.path('state');
    const host = spawn(process.execPath, ['--input-type=module', '-e', hostScript], {
      cwd: checkout,
      env: { ...process.env, HOST_SETTINGS: JSON.stringify({ stateDir, spec: fixtureSpec(['--linger'], { runtime: runRuntime() }) }) },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const ready = await new Promise<{ pid: number }>((resolve, reject) => {
      host.stdout.once('data', (chunk: Buffer) => resolve(JSON.parse(chunk.toString()) as { pid: number }));
      host.once('exit', (code) => reject(new Error(`the host exited (${code}) before it was ready`)));
    });
    const [left] = engine.containers('orphaned');
    expect(left?.state).toBe('running');
    const hostGone = new Promise((resolve) => host.once('exit', resolve));
    host.kill('SIGKILL');
    await hostGone;
    await eventually(() => !isRunning(ready.pid), 'the dead host\'s docker client to be gone');
    expect(engine.containers('orphaned').map((container) => container.name)).toEqual([left!.name]); // still there: nobody removed it
    // The record names the container by its token and the engine by address: no secret, nothing else.
    const [recordFile] = readdirSync(join(stateDir, 'processes')).filter((name) => name.endsWith('.json'));
    const record = JSON.parse(readFileSync(join(stateDir, 'processes', recordFile!), 'utf8')) as AgentRecord;
    expect(record.remote).toEqual({ kind: 'docker-container', client: 'docker', token: left!.labels[containerLabels.container], engine: expect.objectContaining({ DOCKER_HOST: engine.dockerHost }) });
    env.supervisor = createSupervisor({ stateDir, sweepOnStart: false, agents: {} });
    const swept: OrphanSweepResult = await env.supervisor.sweepOrphans();
    expect(swept.killed).toEqual([expect.objectContaining({ agent: 'orphaned', container: left!.labels[containerLabels.container] })]);
    expect(engine.containers('orphaned')).toEqual([]);
    expect(readdirSync(join(stateDir, 'processes')).filter((name) => name.endsWith('.json'))).toEqual([]);
    // A container that took the same name later, without the token's label, is not the record's: never removed.
    const sameName = engine.docker(['run', '-d', '--name', left!.name, '--label', engine.ownLabel, ...runRuntime().runArgs, engine.image, 'sleep', '100000']);
    expect(sameName.status, sameName.stderr).toBe(0);
    expect(await sweepContainer(record.remote as DockerLeftover)).toBe('absent');
    expect(engine.docker(['inspect', '--format', '{{.State.Running}}', left!.name]).stdout.trim()).toBe('true');
  });

  it('shutdown leaves no container', async () => {
    env.supervisor = createSupervisor({
      stateDir: false,
      agents: { one: fixtureSpec([], { runtime: runRuntime() }), two: { ...fixtureSpec(['--linger'], { runtime: runRuntime() }), shutdownTimeoutMs: 300 } },
    });
    await Promise.all([env.supervisor.ensureAgent('one'), env.supervisor.ensureAgent('two')]);
    expect(running('one').length + running('two').length).toBe(2);
    await env.supervisor.shutdown();
    expect([...engine.containers('one'), ...engine.containers('two')]).toEqual([]);
  });

  it('the runtime\'s own failures: a missing image is runtime_missing, no engine runtime_unreachable, a wrapper that cannot start says why', async () => {
    const readOnly = join(env.files.dir, 'read-only-tmp');
    mkdirSync(readOnly);
    env.supervisor = createSupervisor({
      stateDir: false,
      restart: { maxAttempts: 0 },
      agents: {
        noImage: fixtureSpec([], { runtime: { kind: 'docker', image: 'localhost/agentvisor-no-such-image:1', runArgs: ['--pull', 'never', '--network', 'none'] } }),
        noEngine: fixtureSpec([], { env: { DOCKER_HOST: `unix://${join(env.files.dir, 'no-engine.sock')}` }, runtime: runRuntime() }),
        // Nowhere for the wrapper's fifo: no TMPDIR, the image's /tmp writable by root only (the
        // agent runs as nobody here), a read-only mount over /dev/shm. (Not a mount over /tmp: a
        // checkout under /tmp, mounted at its own path, would have to be made inside it.)
        noFifo: fixtureSpec([], { runtime: runRuntime('--user', '65534:65534', '-v', `${readOnly}:/dev/shm:ro`) }),
      },
    });
    await expect(env.supervisor.ensureAgent('noImage')).rejects.toMatchObject({ kind: 'runtime_missing', message: expect.stringMatching(/no such image|image not known/i) });
    await expect(env.supervisor.ensureAgent('noEngine')).rejects.toMatchObject({ kind: 'runtime_unreachable' });
    const noFifo = await env.supervisor.ensureAgent('noFifo').then(
      () => null,
      (error: unknown) => error as { kind: string; message: string; stderr: string[] },
    );
    // On a mismatch, what the client printed says why.
    expect(noFifo, JSON.stringify(noFifo?.stderr)).toMatchObject({ kind: 'runtime_missing', message: expect.stringContaining('writable $TMPDIR, /tmp or /dev/shm') });
    expect(engine.containers('noFifo')).toEqual([]);
  });
});

/** A supervisor in a node process of its own (the built package, as a consumer imports it): its agent's client pid on stdout. */
const hostScript = `
  import { createSupervisor } from 'agentvisor';
  const { stateDir, spec } = JSON.parse(process.env.HOST_SETTINGS);
  const supervisor = createSupervisor({ stateDir, sweepOnStart: false, agents: { orphaned: spec } });
  const agent = await supervisor.ensureAgent('orphaned');
  console.log(JSON.stringify({ pid: agent.pid }));
  setInterval(() => {}, 1 << 30);
`;
