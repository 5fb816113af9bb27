/**
 * Containment through the supervisor, for each mechanism this host offers (opt-in with the
 * `containment` option): the agent runs as before, `list()` says which mechanism holds it,
 * and an escapee — a grandchild in a session of its own, out of reach of any signal to the
 * agent's group — dies on stop, on a crash from outside, on a stall restart and on shutdown.
 */
import { describe, expect, it } from 'vitest';
import { SimulatedClock } from 'xstate';
import { createSupervisor, type ContainmentKind } from '../../index.js';
import { chooseContainment } from '../../services/containment/select.js';
import { procScanner } from '../../services/containment/proc-tracking.containment.js';
import { command, eventually, fixtureSpec, isRunning, waitForStatus, useRealAgentEnvironment } from '../support/real-agents.js';

const env = useRealAgentEnvironment();

const kinds: ContainmentKind[] = ['pid-namespace', 'cgroup', 'proc-tracking'];
const available = new Set(kinds.filter((kind) => chooseContainment(kind).mechanism?.kind === kind));
for (const kind of kinds) if (!available.has(kind)) console.warn(`containment tests for ${kind} skipped: ${chooseContainment(kind).refused[0]?.reason ?? 'not offered here'}`);

/** The escapee is known to the tracker only after a scan; the other mechanisms hold it at once. */
function seen(kind: ContainmentKind): void {
  if (kind === 'proc-tracking') procScanner.scanNow();
}

describe.each(kinds)('containment: %s', (kind) => {
  const escaping = () => fixtureSpec(['--spawn-grandchild', '--grandchild-escapes', '--pid-file', env.files.path('pids.txt')]);
  /** The agent's pid and its escaped grandchild's, on this host. */
  const pidsOfStart = (index: number) => env.files.pidLines()[index] as [number, number];

  it.skipIf(!available.has(kind))('runs the agent as before; list() and the supervisor say which mechanism holds it', async () => {
    env.supervisor = createSupervisor({ containment: kind, agents: { fixture: escaping() } });
    expect(env.supervisor.containment.kind).toBe(kind);
    const agent = await env.supervisor.ensureAgent('fixture');
    const [agentPid, escapee] = pidsOfStart(0);
    expect(agent.pid, 'the handle names the agent on this host').toBe(agentPid);
    await eventually(() => env.supervisor!.list()[0]!.containment === kind, 'list() to report the containment');
    expect(env.supervisor.list()[0]).toMatchObject({ pid: agentPid, containment: kind });
    expect(isRunning(escapee)).toBe(true);
    const session = await env.supervisor.newSession('fixture', { cwd: env.files.dir });
    expect(await session.prompt('hello there')).toBe('end_turn');
  });

  it.skipIf(!available.has(kind))('stop() takes the escapee with it', async () => {
    env.supervisor = createSupervisor({ containment: kind, agents: { fixture: escaping() } });
    await env.supervisor.ensureAgent('fixture');
    const [agentPid, escapee] = pidsOfStart(0);
    seen(kind);
    await env.supervisor.stop('fixture');
    await eventually(() => !isRunning(agentPid) && !isRunning(escapee), 'the agent and its escapee to be gone');
  });

  it.skipIf(!available.has(kind))('a crash from outside (SIGKILL the agent) takes the escapee with it', async () => {
    const clock = new SimulatedClock();
    env.supervisor = createSupervisor({ clock, containment: kind, agents: { fixture: escaping() } });
    const agent = await env.supervisor.ensureAgent('fixture');
    const [, escapee] = pidsOfStart(0);
    seen(kind);
    process.kill(agent.pid, 'SIGKILL');
    await waitForStatus(env.supervisor, 'fixture', 'reconnecting');
    await eventually(() => !isRunning(escapee), 'the escapee to die with its agent');
    expect(env.supervisor.list()[0]!.lastError).toMatchObject({ kind: 'agent_exited', signal: 'SIGKILL' });
  });

  it.skipIf(!available.has(kind))('a stall restart takes the escapee with it', async () => {
    const clock = new SimulatedClock();
    env.supervisor = createSupervisor({ clock, containment: kind, stallTimeoutMs: 1_000, onStall: 'restart', agents: { fixture: escaping() } });
    const session = await env.supervisor.newSession('fixture', { cwd: env.files.dir });
    const [, escapee] = pidsOfStart(0);
    seen(kind);
    const turn = session.prompt(command({ op: 'hang' })).catch((error: unknown) => error);
    clock.increment(1_000);
    expect(await turn).toMatchObject({ kind: 'agent_exited' });
    await eventually(() => !isRunning(escapee), 'the escapee to die with the restarted agent');
  });

  it.skipIf(!available.has(kind))('shutdown() leaves no process behind', async () => {
    env.supervisor = createSupervisor({ containment: kind, agents: { a: escaping(), b: escaping() } });
    await Promise.all([env.supervisor.ensureAgent('a'), env.supervisor.ensureAgent('b')]);
    const everything = env.files.pidLines().flat();
    expect(everything).toHaveLength(4);
    seen(kind);
    await env.supervisor.shutdown();
    await eventually(() => everything.every((pid) => !isRunning(pid)), 'every agent and escapee to be gone');
  });
});

describe('choosing a mechanism', () => {
  it("the default is 'auto': the strongest mechanism this host offers, in effect for every agent", async () => {
    const auto = createSupervisor({ containment: 'auto', agents: {} });
    const expected = auto.containment;
    await auto.shutdown();
    env.supervisor = createSupervisor({ agents: { fixture: fixtureSpec() } });
    expect(env.supervisor.containment).toEqual(expected);
    await env.supervisor.ensureAgent('fixture');
    expect(env.supervisor.list()[0]!.containment).toBe(expected.kind);
  });

  it("'none' keeps process groups only and reports nothing degraded; a bad value is invalid_options", async () => {
    env.supervisor = createSupervisor({ containment: 'none', agents: { fixture: fixtureSpec() } });
    expect(env.supervisor.containment).toEqual({ kind: null, refused: [] });
    await env.supervisor.ensureAgent('fixture');
    expect(env.supervisor.list()[0]!.containment).toBeNull();
    expect(() => createSupervisor({ containment: 'chroot' as never })).toThrow(expect.objectContaining({ kind: 'invalid_options' }));
  });
});
