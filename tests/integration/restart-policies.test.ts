/**
 * Outcomes and restart policies on real processes (docs/failures.md, "Restart policies"):
 * `restart.when` (an exit as an outcome, status `exited`), `restart()`, `stop({ force })`,
 * a caller's start never held by an overload, `retryFirstStart`, credentials with failover,
 * and `describe(name).since`. Every delay runs on a SimulatedClock unless the test measures
 * real time (a forced stop).
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { SimulatedClock } from 'xstate';
import { AgentError, createSupervisor } from '../../index.js';
import { command, eventually, fixtureSpec, isRunning, pendingDelays, useRealAgentEnvironment, waitForStatus } from '../support/real-agents.js';

const env = useRealAgentEnvironment();

/** A fixture agent whose every start reads the control file (rewrite it to change the next start). */
function scripted(extra: Record<string, unknown> = {}, flags: string[] = []) {
  const control = env.files.control({}, 'fixture.json');
  return fixtureSpec(['--pid-file', env.files.path('fixture.pids'), ...flags], { env: { FIXTURE_CONTROL_FILE: control }, ...extra });
}
const starts = () => env.files.pidLines('fixture.pids').length;

/** A supervisor whose fixture agent has these credential sets: each a name and the control file its process reads. */
function withCredentials(clock: SimulatedClock, sets: Array<[name: string, control: string]>) {
  const credentials = sets.map(([name, control]) => ({ name, env: { FIXTURE_CONTROL_FILE: control } }));
  return createSupervisor({ clock, stateDir: false, agents: { fixture: fixtureSpec([], { credentials }) } });
}

async function rejection(promise: Promise<unknown>): Promise<AgentError> {
  const error = await promise.then(
    () => null,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(AgentError);
  return error as AgentError;
}

describe("restart.when: an exit is an outcome under 'on-failure' (code 0) and 'never' (any)", () => {
  it("'on-failure': a clean exit is status exited with lastExit, an event, sessions failed agent_ended, and no restart", async () => {
    const clock = new SimulatedClock();
    env.supervisor = createSupervisor({ clock, stateDir: false, restart: { when: 'on-failure' }, agents: { fixture: scripted() } });
    const exits: unknown[] = [];
    env.supervisor.on('agent:exited', (event) => exits.push(event));
    await env.supervisor.ensureAgent('fixture');
    const session = await env.supervisor.newSession('fixture');
    // The turn in flight fails as the connection closes under it; the session then records the outcome.
    const turn = session.prompt(command({ op: 'die', code: 0 }));
    expect((await rejection(turn)).kind).toMatch(/^agent_(exited|ended)$/);
    await waitForStatus(env.supervisor, 'fixture', 'exited');
    await eventually(() => session.lastError?.kind === 'agent_ended', 'the session to record agent_ended');
    expect(session.status).toBe('failed');
    expect(session.lastError!.message).toMatch(/Fixture ended \(exit code 0\); its restart policy \('on-failure'\) does not start it again/);
    const described = env.supervisor.describe('fixture');
    expect(described.lastExit).toMatchObject({ code: 0, signal: null });
    expect(typeof described.lastExit!.at).toBe('number');
    expect(described.lastError).toBeNull();
    expect(described.restart).toBe('on-failure');
    expect(exits).toEqual([{ agent: 'fixture', exit: described.lastExit, when: 'on-failure' }]);
    // Nothing can start it by itself: no backoff, nor any other timer, waits on the clock.
    expect(pendingDelays(clock)).toEqual([]);
    clock.increment(600_000);
    expect(starts()).toBe(1);
    expect(env.supervisor.getStatus('fixture')).toBe('exited');
    // A caller's start runs it again.
    await env.supervisor.ensureAgent('fixture');
    expect(starts()).toBe(2);
  });

  it("'on-failure': a failing exit (code 3) is still a loss, restarted under the backoff", async () => {
    const clock = new SimulatedClock();
    env.supervisor = createSupervisor({ clock, stateDir: false, restart: { when: 'on-failure' }, agents: { fixture: scripted() } });
    await env.supervisor.ensureAgent('fixture');
    const session = await env.supervisor.newSession('fixture');
    expect(await rejection(session.prompt(command({ op: 'die', code: 3 })))).toMatchObject({ kind: 'agent_exited' });
    await waitForStatus(env.supervisor, 'fixture', 'reconnecting');
    expect(env.supervisor.describe('fixture').lastExit).toMatchObject({ code: 3 });
    clock.increment(1000);
    await waitForStatus(env.supervisor, 'fixture', 'connected');
    expect(starts()).toBe(2);
  });

  it("'never' given per agent over the supervisor's 'always': even a crash (SIGKILL) is an outcome", async () => {
    const clock = new SimulatedClock();
    env.supervisor = createSupervisor({ clock, stateDir: false, agents: { fixture: scripted({ restart: { when: 'never' } }), other: fixtureSpec() } });
    expect(env.supervisor.describe('other').restart).toBe('always');
    await env.supervisor.ensureAgent('fixture');
    process.kill(env.supervisor.describe('fixture').pid!, 'SIGKILL');
    await waitForStatus(env.supervisor, 'fixture', 'exited');
    expect(env.supervisor.describe('fixture').lastExit).toMatchObject({ code: null, signal: 'SIGKILL' });
    expect(pendingDelays(clock)).toEqual([]);
    clock.increment(600_000);
    expect(starts()).toBe(1);
    // stop() from exited: idle.
    await env.supervisor.stop('fixture');
    expect(env.supervisor.getStatus('fixture')).toBe('idle');
  });

  it("'always' (the ACP default): a clean exit is a loss, restarted", async () => {
    const clock = new SimulatedClock();
    env.supervisor = createSupervisor({ clock, stateDir: false, agents: { fixture: scripted() } });
    expect(env.supervisor.describe('fixture').restart).toBe('always');
    await env.supervisor.ensureAgent('fixture');
    const session = await env.supervisor.newSession('fixture');
    await rejection(session.prompt(command({ op: 'die', code: 0 })));
    await waitForStatus(env.supervisor, 'fixture', 'reconnecting');
    clock.increment(1000);
    await waitForStatus(env.supervisor, 'fixture', 'connected');
  });

  it("pty and stream-json agents default to 'on-failure'; a spec's own when wins; bad values are invalid_options", async () => {
    env.supervisor = createSupervisor({
      stateDir: false,
      agents: {
        pty: { command: '/bin/sh', protocol: 'pty' },
        json: { command: '/bin/sh', protocol: 'stream-json' },
        ptyAlways: { command: '/bin/sh', protocol: 'pty', restart: { when: 'always' } },
      },
    });
    expect(env.supervisor.describe('pty').restart).toBe('on-failure');
    expect(env.supervisor.describe('json').restart).toBe('on-failure');
    expect(env.supervisor.describe('ptyAlways').restart).toBe('always');
    expect(() => createSupervisor({ stateDir: false, restart: { when: 'sometimes' as never } })).toThrow(/restart\.when/);
    expect(() => env.supervisor!.register('bad', { command: 'x', restart: { when: 'daily' as never } })).toThrow(/spec\.restart\.when/);
    expect(() => env.supervisor!.register('bad', { command: 'x', restart: { maxAttempts: -1 } })).toThrow(AgentError);
  });
});

describe('restart(name) and stop(name, { force })', () => {
  it('restart(): the stop ladder, a new process, its session resumed as after a crash; the reason is an event', async () => {
    const clock = new SimulatedClock();
    const state = env.files.path('state.json');
    env.supervisor = createSupervisor({ clock, stateDir: false, agents: { fixture: scripted({}, ['--load-session', '--state-file', state]) } });
    const statuses: string[] = [];
    env.supervisor.on('agent:status', ({ status }) => statuses.push(status));
    const reasons: unknown[] = [];
    env.supervisor.on('agent:restart', (event) => reasons.push(event));
    const first = await env.supervisor.ensureAgent('fixture');
    const session = await env.supervisor.newSession('fixture');
    await session.prompt('before');
    const handle = await env.supervisor.restart('fixture', { reason: 'new config' });
    expect(handle.pid).not.toBe(first.pid);
    expect(isRunning(first.pid!)).toBe(false);
    expect(statuses).toEqual(expect.arrayContaining(['restarting', 'reconnecting', 'connected']));
    expect(statuses.indexOf('restarting')).toBeLessThan(statuses.lastIndexOf('connected'));
    expect(reasons).toEqual([{ agent: 'fixture', reason: 'new config' }]);
    expect(starts()).toBe(2);
    // The session goes on in the new process (resumed as after a crash).
    await session.resume();
    expect(await session.prompt('after')).toBe('end_turn');
    // A stopped agent is just started; an unknown one is refused.
    await env.supervisor.stop('fixture');
    await env.supervisor.restart('fixture');
    expect(env.supervisor.getStatus('fixture')).toBe('connected');
    expect((await rejection(env.supervisor.restart('nobody'))).kind).toBe('unknown_agent');
    expect((await rejection(env.supervisor.restart('fixture', { reason: 7 as never }))).kind).toBe('invalid_options');
  });

  it('restart() of an agent that ignores SIGTERM goes down the whole ladder on the clock, then starts', async () => {
    const clock = new SimulatedClock();
    env.supervisor = createSupervisor({ clock, stateDir: false, agents: { fixture: scripted({}, ['--ignore-sigterm']) } });
    const { pid } = await env.supervisor.ensureAgent('fixture');
    const restarted = env.supervisor.restart('fixture');
    await waitForStatus(env.supervisor, 'fixture', 'restarting');
    clock.increment(5_000); // shutdownTimeoutMs: SIGTERM (ignored)
    clock.increment(2_000); // killTimeoutMs: SIGKILL
    const handle = await restarted;
    expect(isRunning(pid!)).toBe(false);
    expect(handle.pid).not.toBe(pid);
    // The new process ignores SIGTERM too, and no clock advances the ladder now: a forced stop.
    await env.supervisor.stop('fixture', { force: true });
  });

  it('stop({ force: true }): SIGKILL to the whole containment at once, well under a second, for an agent that ignores SIGTERM', async () => {
    env.supervisor = createSupervisor({ stateDir: false, agents: { fixture: scripted({}, ['--ignore-sigterm', '--spawn-grandchild']) } });
    await env.supervisor.ensureAgent('fixture');
    await eventually(() => env.files.pidLines('fixture.pids')[0]?.length === 2, 'the grandchild pid');
    const [agentPid, grandchildPid] = env.files.pidLines('fixture.pids')[0]!;
    const started = Date.now();
    await env.supervisor.stop('fixture', { force: true });
    const took = Date.now() - started;
    expect(took).toBeLessThan(1_000);
    expect(isRunning(agentPid!)).toBe(false);
    expect(isRunning(grandchildPid!)).toBe(false);
    expect(env.supervisor.getStatus('fixture')).toBe('idle');
    expect(env.supervisor.describe('fixture').lastExit).toMatchObject({ signal: 'SIGKILL' });
    expect((await rejection(env.supervisor.stop('fixture', { force: 'yes' as never }))).kind).toBe('invalid_options');
  });
});

describe('no call waits on a held restart', () => {
  it('ensureAgent() on an agent whose automatic restart is held by an overload starts it as a caller\'s start', async () => {
    const clock = new SimulatedClock();
    env.supervisor = createSupervisor({ clock, stateDir: false, overload: { intensity: 0 }, agents: { fixture: scripted() } });
    const { pid } = await env.supervisor.ensureAgent('fixture');
    process.kill(pid!, 'SIGKILL');
    await waitForStatus(env.supervisor, 'fixture', 'reconnecting');
    expect(env.supervisor.overloaded).toBe(true);
    clock.increment(1000); // the backoff elapses: held
    await eventually(() => env.supervisor!.describe('fixture').state === 'reconnecting.held', 'the restart to be held');
    const handle = await env.supervisor.ensureAgent('fixture');
    expect(handle.pid).not.toBe(pid);
    expect(env.supervisor.overloaded).toBe(true);
  });

  it('a caller waiting through the backoff is answered when the restart would be held, not left pending', async () => {
    const clock = new SimulatedClock();
    env.supervisor = createSupervisor({ clock, stateDir: false, overload: { intensity: 0 }, agents: { fixture: scripted() } });
    const { pid } = await env.supervisor.ensureAgent('fixture');
    process.kill(pid!, 'SIGKILL');
    await waitForStatus(env.supervisor, 'fixture', 'reconnecting');
    const waiting = env.supervisor.ensureAgent('fixture');
    clock.increment(1000);
    const handle = await waiting;
    expect(handle.pid).not.toBe(pid);
  });
});

describe('restart.retryFirstStart', () => {
  it('off (the default): the first start that dies in the handshake fails its caller at once', async () => {
    const clock = new SimulatedClock();
    const spec = scripted();
    env.files.control({ exitOnInitialize: true }, 'fixture.json');
    env.supervisor = createSupervisor({ clock, stateDir: false, agents: { fixture: spec } });
    expect((await rejection(env.supervisor.ensureAgent('fixture'))).kind).toBe('handshake_failed');
    expect(starts()).toBe(1);
  });

  it('on: retried under the backoff, and the caller\'s promise settles once, with the final result', async () => {
    const clock = new SimulatedClock();
    const spec = scripted({ restart: { retryFirstStart: true } });
    env.files.control({ exitOnInitialize: true }, 'fixture.json');
    env.supervisor = createSupervisor({ clock, stateDir: false, agents: { fixture: spec } });
    let settled = 0;
    const start = env.supervisor.ensureAgent('fixture').finally(() => (settled += 1));
    const backoffAfter = (attempt: number) =>
      eventually(() => env.supervisor!.describe('fixture').state === 'reconnecting.waiting' && env.supervisor!.describe('fixture').attempt === attempt, `backoff ${attempt}`);
    await backoffAfter(1);
    clock.increment(1000); // attempt 2 fails the same way
    await backoffAfter(2);
    expect(settled).toBe(0);
    env.files.control({}, 'fixture.json');
    clock.increment(2000); // attempt 3 connects
    await start;
    expect(settled).toBe(1);
    expect(starts()).toBe(3);
    // Out of attempts (maxAttempts 5): the caller gets the last failure, once.
    await env.supervisor.stop('fixture');
    env.files.control({ exitOnInitialize: true }, 'fixture.json');
    const failing = env.supervisor.ensureAgent('fixture');
    for (let attempt = 1; attempt <= 5; attempt += 1) {
      await backoffAfter(attempt);
      clock.increment(1000 * 2 ** (attempt - 1));
    }
    expect((await rejection(failing)).kind).toBe('handshake_failed');
  });
});

describe('credentials with failover', () => {
  it('an auth failure moves to the next set and restarts with it; describe names the set; no secret reaches an event or the store', async () => {
    const clock = new SimulatedClock();
    const refusing = env.files.control({ requireAuth: true }, 'refusing.json');
    const accepting = env.files.control({}, 'accepting.json');
    const stateDir = env.files.path('state');
    const secret = 'sk-secret-value-4f2a9c';
    env.supervisor = createSupervisor({
      clock,
      stateDir,
      agents: {
        fixture: fixtureSpec(['--pid-file', env.files.path('fixture.pids')], {
          credentials: [
            { name: 'work', env: { FIXTURE_CONTROL_FILE: refusing, API_KEY: secret } },
            { name: 'personal', env: { FIXTURE_CONTROL_FILE: accepting, API_KEY: `${secret}-2` } },
          ],
        }),
      },
    });
    const changes: unknown[] = [];
    env.supervisor.on('agent:credential', (event) => changes.push(event));
    const events: string[] = [];
    env.supervisor.on('error', (event) => events.push(JSON.stringify(event)));
    await env.supervisor.ensureAgent('fixture');
    expect(env.supervisor.describe('fixture').credential).toBe('work');
    const refused = await rejection(env.supervisor.newSession('fixture'));
    expect(refused.kind).toBe('auth_required');
    await eventually(() => env.supervisor!.describe('fixture').credential === 'personal' && env.supervisor!.getStatus('fixture') === 'connected', 'the failover to connect');
    expect(changes).toEqual([{ agent: 'fixture', credential: 'personal', previous: 'work', failure: expect.objectContaining({ class: 'auth' }) }]);
    expect(starts()).toBe(2);
    const session = await env.supervisor.newSession('fixture');
    expect(await session.prompt('hello')).toBe('end_turn');
    await env.supervisor.shutdown();
    const everything = [JSON.stringify(changes), ...events, JSON.stringify(env.supervisor.list()), readFileSync(`${stateDir}/agentvisor.db`).toString('latin1')].join('\n');
    expect(everything).not.toContain(secret);
  });

  it('when every set has failed, the agent parks as it would with one; a stop goes back to the first set', async () => {
    const clock = new SimulatedClock();
    const refusing = env.files.control({ requireAuth: true }, 'refusing.json');
    env.supervisor = withCredentials(clock, [
      ['a', refusing],
      ['b', refusing],
    ]);
    await env.supervisor.ensureAgent('fixture');
    await rejection(env.supervisor.newSession('fixture'));
    await eventually(() => env.supervisor!.describe('fixture').credential === 'b' && env.supervisor!.getStatus('fixture') === 'connected', 'the failover');
    await rejection(env.supervisor.newSession('fixture'));
    await waitForStatus(env.supervisor, 'fixture', 'needsAuth');
    expect(env.supervisor.describe('fixture').credential).toBe('b');
    await env.supervisor.stop('fixture');
    expect(env.supervisor.describe('fixture').credential).toBe('a');
  });

  it('bad credentials are invalid_options: an empty list, a repeated name, an empty name', () => {
    const supervisor = createSupervisor({ stateDir: false });
    expect(() => supervisor.register('x', { command: 'x', credentials: [] })).toThrow(/spec\.credentials: must list at least one set/);
    expect(() => supervisor.register('x', { command: 'x', credentials: [{ name: 'a', env: {} }, { name: 'a', env: {} }] })).toThrow(/names "a" twice/);
    expect(() => supervisor.register('x', { command: 'x', credentials: [{ name: ' ', env: {} }] })).toThrow(AgentError);
    return supervisor.shutdown();
  });
});

describe('describe(name).since', () => {
  it('is when the agent entered its status, on the supervisor\'s clock', async () => {
    const clock = new SimulatedClock();
    clock.set(1_000_000);
    env.supervisor = createSupervisor({ clock, stateDir: false, agents: { fixture: fixtureSpec() } });
    expect(env.supervisor.describe('fixture').since).toBe(1_000_000);
    clock.set(1_005_000);
    await env.supervisor.ensureAgent('fixture');
    expect(env.supervisor.describe('fixture').since).toBe(1_005_000);
  });
});

describe('restart() and the outcome from every state that takes them', () => {
  it('during a handshake, during a stop, and with no process after a failed start; refused for an unknown agent, at the agent limit and during shutdown', async () => {
    const clock = new SimulatedClock();
    env.supervisor = createSupervisor({ clock, stateDir: false, maxAgents: 1, agents: { fixture: scripted({}, ['--ignore-sigterm']), missing: { command: 'agentvisor-no-such-command-x' }, other: fixtureSpec() } });
    // During the handshake: that process goes down the ladder (it ignores SIGTERM: all the way), a new one starts.
    const starting = env.supervisor.ensureAgent('fixture');
    const restarted = env.supervisor.restart('fixture');
    expect(env.supervisor.describe('fixture').state).toBe('restarting.closing');
    // Every start asked for meanwhile waits for the restart's outcome.
    const waiting = [env.supervisor.ensureAgent('fixture'), env.supervisor.reconnect('fixture'), env.supervisor.restart('fixture')];
    clock.increment(5_000);
    clock.increment(2_000);
    clock.increment(2_000); // the SIGKILL's exit not seen yet: killTimeout releases it and starts anyway
    const handle = await restarted;
    await Promise.all([starting.catch(() => undefined), ...waiting]);
    expect(env.supervisor.getStatus('fixture')).toBe('connected');
    // During a stop: the stop finishes, then the start.
    const stopping = env.supervisor.stop('fixture');
    const afterStop = env.supervisor.restart('fixture');
    clock.increment(5_000);
    clock.increment(2_000);
    await stopping;
    const again = await afterStop;
    expect(again.pid).not.toBe(handle.pid);
    // A stop during a restart wins: the restart's caller is told stopped.
    const interrupted = env.supervisor.restart('fixture');
    expect(env.supervisor.describe('fixture').state).toBe('restarting.closing');
    const stopped = env.supervisor.stop('fixture', { force: true });
    expect((await rejection(interrupted)).kind).toBe('stopped');
    await stopped;
    // A failed start leaves no process: restart() starts it as reconnect() does.
    expect((await rejection(env.supervisor.ensureAgent('missing'))).kind).toBe('not_installed');
    expect((await rejection(env.supervisor.restart('missing'))).kind).toBe('not_installed');
    expect((await rejection(env.supervisor.restart('nobody'))).kind).toBe('unknown_agent');
    await env.supervisor.ensureAgent('other');
    expect((await rejection(env.supervisor.restart('fixture'))).kind).toBe('limit_reached');
    const shutdown = env.supervisor.shutdown();
    expect((await rejection(env.supervisor.restart('other'))).kind).toBe('shutting_down');
    await shutdown;
  });

  it('while reconnecting: waiting out a backoff (spawn now) and while spawning (the ladder, then a start)', async () => {
    const clock = new SimulatedClock();
    env.supervisor = createSupervisor({ clock, stateDir: false, agents: { fixture: scripted() } });
    const first = await env.supervisor.ensureAgent('fixture');
    process.kill(first.pid!, 'SIGKILL');
    await eventually(() => env.supervisor!.describe('fixture').state === 'reconnecting.waiting', 'the backoff');
    await env.supervisor.restart('fixture');
    // The next spawn never answers initialize: restart() while it is spawning.
    env.files.control({ neverInitialize: true }, 'fixture.json');
    process.kill(env.supervisor.describe('fixture').pid!, 'SIGKILL');
    await eventually(() => env.supervisor!.describe('fixture').state === 'reconnecting.waiting', 'the second backoff');
    clock.increment(1000);
    await eventually(() => starts() === 3, 'the spawn that never answers');
    expect(env.supervisor.describe('fixture').state).toBe('reconnecting.spawning');
    env.files.control({}, 'fixture.json');
    const handle = await env.supervisor.restart('fixture');
    expect(starts()).toBe(4);
    expect(handle.pid).toBe(env.supervisor.describe('fixture').pid);
  });

  it('parked in needsAuth or rateLimited, with its process (the ladder) and without (spawn now)', async () => {
    const clock = new SimulatedClock();
    env.supervisor = createSupervisor({ clock, stateDir: false, agents: { fixture: scripted({}, ['--require-auth']), limited: fixtureSpec() } });
    await env.supervisor.ensureAgent('fixture');
    await rejection(env.supervisor.newSession('fixture'));
    await waitForStatus(env.supervisor, 'fixture', 'needsAuth');
    const restarting = env.supervisor.restart('fixture'); // its process goes down the ladder
    expect(env.supervisor.describe('fixture').state).toBe('restarting.closing');
    // A login asked for meanwhile runs once the new process has answered initialize.
    await env.supervisor.authenticate('fixture', 'fixture-token');
    await restarting;
    expect(env.supervisor.getStatus('fixture')).toBe('connected');
    expect(await (await env.supervisor.newSession('fixture')).prompt('logged in')).toBe('end_turn');
    process.kill(env.supervisor.describe('fixture').pid!, 'SIGKILL'); // a new process: not logged in
    await eventually(() => env.supervisor!.getStatus('fixture') === 'reconnecting', 'the loss');
    clock.increment(1000);
    await waitForStatus(env.supervisor, 'fixture', 'connected');
    await rejection(env.supervisor.newSession('fixture'));
    await waitForStatus(env.supervisor, 'fixture', 'needsAuth');
    process.kill(env.supervisor.describe('fixture').pid!, 'SIGKILL');
    await eventually(() => env.supervisor!.describe('fixture').pid === null, 'the parked process to be gone');
    await env.supervisor.restart('fixture'); // no process: spawn now
    expect(env.supervisor.getStatus('fixture')).toBe('connected');

    await env.supervisor.ensureAgent('limited');
    const session = await env.supervisor.newSession('limited');
    const limit = command({ op: 'fail', code: -32603, message: '429 Too Many Requests, retry after 30s' });
    await rejection(session.prompt(limit));
    await waitForStatus(env.supervisor, 'limited', 'rateLimited');
    await env.supervisor.restart('limited');
    const next = await env.supervisor.newSession('limited');
    await rejection(next.prompt(limit));
    await waitForStatus(env.supervisor, 'limited', 'rateLimited');
    process.kill(env.supervisor.describe('limited').pid!, 'SIGKILL');
    await eventually(() => env.supervisor!.describe('limited').pid === null, 'the parked process to be gone');
    await env.supervisor.restart('limited');
    expect(env.supervisor.getStatus('limited')).toBe('connected');
  });

  it("an exited agent is started again by ensure, reconnect, restart and authenticate, and stopped by stop; a session already failed records the outcome", async () => {
    const clock = new SimulatedClock();
    env.supervisor = createSupervisor({ clock, stateDir: false, restart: { when: 'never' }, agents: { fixture: scripted({}, ['--require-auth']) } });
    const exitNow = async () => {
      process.kill(env.supervisor!.describe('fixture').pid!, 'SIGKILL');
      await waitForStatus(env.supervisor!, 'fixture', 'exited');
    };
    await env.supervisor.ensureAgent('fixture');
    await exitNow();
    await env.supervisor.reconnect('fixture');
    await exitNow();
    await env.supervisor.restart('fixture');
    await exitNow();
    await env.supervisor.authenticate('fixture', 'fixture-token');
    expect(env.supervisor.getStatus('fixture')).toBe('connected');
    // A session whose turn already failed hears the outcome after its own failure.
    const session = await env.supervisor.newSession('fixture');
    await rejection(session.prompt(command({ op: 'fail', message: 'fixture: failed on purpose' })));
    expect(session.status).toBe('failed');
    await exitNow();
    await eventually(() => session.lastError?.kind === 'agent_ended', 'the failed session to record the outcome');
    await env.supervisor.ensureAgent('fixture');
    await exitNow();
    await env.supervisor.stop('fixture');
    expect(env.supervisor.getStatus('fixture')).toBe('idle');
  });
});

describe('credentials: a start that fails its login fails over before its caller is answered', () => {
  it('the first set dies printing 401 during the handshake: the next set starts, and ensureAgent() resolves with it', async () => {
    const clock = new SimulatedClock();
    const refusing = env.files.control({ stderr: 'Error: 401 Unauthorized: invalid x-api-key', exitOnInitialize: true }, 'refusing.json');
    const accepting = env.files.control({}, 'accepting.json');
    env.supervisor = withCredentials(clock, [
      ['expired', refusing],
      ['fresh', accepting],
    ]);
    await env.supervisor.ensureAgent('fixture');
    expect(env.supervisor.describe('fixture').credential).toBe('fresh');
  });
});

describe('no call waits on a hold, with retryFirstStart', () => {
  it('a first start retried into an overload: the waiting caller\'s start runs and its failure answers it', async () => {
    const clock = new SimulatedClock();
    env.supervisor = createSupervisor({ clock, stateDir: false, overload: { intensity: 0 }, agents: { fixture: scripted({ restart: { retryFirstStart: true } }) } });
    env.files.control({ exitOnInitialize: true }, 'fixture.json');
    const start = env.supervisor.ensureAgent('fixture');
    await eventually(() => env.supervisor!.describe('fixture').state === 'reconnecting.waiting', 'the retry');
    expect(env.supervisor.overloaded).toBe(true);
    clock.increment(1000);
    expect((await rejection(start)).kind).toBe('handshake_failed');
    expect(starts()).toBe(3);
  });
});

describe('a caller never waits out a backoff', () => {
  it('a caller that joined an automatic attempt is answered by its failure at once; the policy goes on without it', async () => {
    const clock = new SimulatedClock();
    env.supervisor = createSupervisor({ clock, stateDir: false, agents: { fixture: scripted() } });
    const { pid } = await env.supervisor.ensureAgent('fixture');
    env.files.control({ neverInitialize: true }, 'fixture.json');
    process.kill(pid!, 'SIGKILL');
    await eventually(() => env.supervisor!.describe('fixture').state === 'reconnecting.waiting', 'the backoff');
    clock.increment(1000);
    await eventually(() => starts() === 2, 'the automatic spawn');
    const joined = env.supervisor.ensureAgent('fixture');
    process.kill(env.supervisor.describe('fixture').pid!, 'SIGKILL'); // the attempt it joined fails
    expect((await rejection(joined)).kind).toBe('handshake_failed');
    await eventually(() => env.supervisor!.describe('fixture').state === 'reconnecting.waiting', 'the next backoff');
    expect(env.supervisor.describe('fixture').attempt).toBe(2);
    // Its next call during the backoff starts the agent at once.
    env.files.control({}, 'fixture.json');
    const handle = await env.supervisor.ensureAgent('fixture');
    expect(handle.pid).toBe(env.supervisor.describe('fixture').pid);
  });
});
