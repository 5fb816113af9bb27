/**
 * Failure classes on real processes (docs/failures.md): each class met by a real fixture
 * agent — exit 127, an auth failure, "429 … retry after 30s", a usage limit, a crash loop
 * past the restart intensity, a storm past the supervisor's — and the state, the events, and
 * no respawn where none should happen. Every delay runs on a SimulatedClock.
 */
import { rmSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { SimulatedClock } from 'xstate';
import { AgentError, createSupervisor, type AgentErrorEvent } from '../../index.js';
import { agentState, command, eventually, fixtureSpec, isRunning, useRealAgentEnvironment, waitForAgentState, waitForStatus } from '../support/real-agents.js';

const env = useRealAgentEnvironment();

/** A fixture agent whose every start reads the control file (rewrite it to change the next start). */
function scripted(options: Record<string, unknown> = {}, name = 'fixture') {
  const control = env.files.control({}, `${name}.json`);
  return {
    [name]: fixtureSpec(['--pid-file', env.files.path(`${name}.pids`)], { env: { FIXTURE_CONTROL_FILE: control }, ...options }),
  };
}

const starts = (name = 'fixture') => env.files.pidLines(`${name}.pids`).length;

/**
 * The connected fixture is killed; its restart (after the first backoff, 1 s on `clock`)
 * reads `control`: so the next process is the one that fails the way the test wants.
 */
async function restartInto(clock: SimulatedClock, control: Record<string, unknown>): Promise<void> {
  env.files.control(control, 'fixture.json');
  process.kill(env.supervisor!.list()[0]!.pid!, 'SIGKILL');
  await waitForStatus(env.supervisor!, 'fixture', 'reconnecting');
  clock.increment(1000);
}

function errorsOf() {
  const errors: AgentErrorEvent[] = [];
  const off = env.supervisor!.on('error', (event) => errors.push(event));
  return { errors, off };
}

describe('config: given up at once', () => {
  it('exit 127 before initialize: class config, not retryable, never respawned', async () => {
    const clock = new SimulatedClock();
    env.supervisor = createSupervisor({
      clock,
      agents: { broken: { command: '/bin/sh', args: ['-c', 'echo "sh: 1: exec: agent-x: not found" >&2; exit 127'] } },
    });
    const refused = (await env.supervisor.ensureAgent('broken').catch((error: unknown) => error)) as AgentError;
    expect(refused).toBeInstanceOf(AgentError);
    expect(refused).toMatchObject({ kind: 'handshake_failed', class: 'config', retryable: false, retryAt: null });
    expect(env.supervisor.list()[0]!.lastError).toMatchObject({ class: 'config', exitCode: 127 });
  });

  it('a connected agent that exits 127 is not restarted, however long one waits', async () => {
    const clock = new SimulatedClock();
    env.supervisor = createSupervisor({ clock, agents: scripted() });
    const { errors } = errorsOf();
    await env.supervisor.ensureAgent('fixture');
    env.files.control({ exitAfterMs: 50, exitCode: 127 }, 'fixture.json');
    process.kill(env.supervisor.list()[0]!.pid!, 'SIGKILL');
    await waitForStatus(env.supervisor, 'fixture', 'reconnecting');
    clock.increment(1000); // the restart reads exitAfterMs 50, exit code 127
    await eventually(() => errors.some((error) => error.class === 'config'), 'the exit 127 to be classified');
    expect(env.supervisor.getStatus('fixture')).toBe('disconnected');
    clock.increment(600_000);
    expect(env.supervisor.getStatus('fixture')).toBe('disconnected');
    expect(starts()).toBe(2);
    expect(errors.at(-1)).toMatchObject({ class: 'config', retryable: false });
  });
});

describe('auth: parked in needsAuth', () => {
  it('a process that dies saying 401 parks without a process; authenticate() starts it and logs in', async () => {
    const clock = new SimulatedClock();
    env.supervisor = createSupervisor({ clock, agents: scripted() });
    const parked: unknown[] = [];
    env.supervisor.on('agent:needs_auth', (event) => parked.push(event));
    env.files.control({ requireAuth: true }, 'fixture.json');
    await env.supervisor.ensureAgent('fixture');
    await restartInto(clock, { requireAuth: true, stderr: 'Error: 401 Unauthorized: invalid x-api-key', exitAfterMs: 100 });
    await waitForStatus(env.supervisor, 'fixture', 'needsAuth');
    expect(agentState(env.supervisor, 'fixture')).toBe('needsAuth.waiting');
    expect(env.supervisor.list()[0]).toMatchObject({ pid: null, lastError: { class: 'auth', retryable: false } });
    expect(parked).toEqual([expect.objectContaining({ agent: 'fixture', authMethods: [expect.objectContaining({ id: 'fixture-token' })] })]);
    // Parked: nothing respawns, and ensureAgent() is refused at once with the auth failure.
    clock.increment(600_000);
    expect(starts()).toBe(2);
    await expect(env.supervisor.ensureAgent('fixture')).rejects.toMatchObject({ class: 'auth' });
    env.files.control({ requireAuth: true }, 'fixture.json');
    const handle = await env.supervisor.authenticate('fixture', 'fixture-token');
    expect(starts()).toBe(3);
    expect(env.supervisor.getStatus('fixture')).toBe('connected');
    const session = await env.supervisor.newSession('fixture', { cwd: env.files.dir });
    expect(await session.prompt('hello')).toBe('end_turn');
    expect(handle.pid).toBe(env.supervisor.list()[0]!.pid);
  });

  it('reconnect() of a parked agent with a live process replaces the process; stop() leaves needsAuth for idle', async () => {
    env.supervisor = createSupervisor({ agents: { fixture: fixtureSpec(['--require-auth']) } });
    // The caller's error carries the class the agent's machine gave the refusal.
    await expect(env.supervisor.newSession('fixture', { cwd: env.files.dir })).rejects.toMatchObject({ kind: 'auth_required', class: 'auth', retryable: false });
    expect(env.supervisor.getStatus('fixture')).toBe('needsAuth');
    const old = env.supervisor.list()[0]!.pid!;
    const fresh = await env.supervisor.reconnect('fixture');
    expect(fresh.pid).not.toBe(old);
    expect(isRunning(old)).toBe(false);
    expect(env.supervisor.getStatus('fixture')).toBe('connected');
    await expect(env.supervisor.newSession('fixture', { cwd: env.files.dir })).rejects.toMatchObject({ kind: 'auth_required' });
    await env.supervisor.stop('fixture');
    expect(env.supervisor.list()[0]).toMatchObject({ status: 'idle', pid: null, lastError: null });
    expect(isRunning(fresh.pid)).toBe(false);
  });

  it('authenticate() during a stop runs after it: the agent starts again and logs in', async () => {
    env.supervisor = createSupervisor({ agents: { fixture: fixtureSpec(['--require-auth']) } });
    await env.supervisor.ensureAgent('fixture');
    const stopping = env.supervisor.stop('fixture');
    const authenticated = env.supervisor.authenticate('fixture', 'fixture-token');
    await stopping;
    await authenticated;
    expect(env.supervisor.getStatus('fixture')).toBe('connected');
    const session = await env.supervisor.newSession('fixture', { cwd: env.files.dir });
    expect(await session.prompt('hello')).toBe('end_turn');
  });
});

describe('rate_limited and usage_limit: parked in rateLimited', () => {
  it('"429 Too Many Requests … retry after 30s" then exit: waits exactly 30 s on the clock, then starts again', async () => {
    const clock = new SimulatedClock();
    env.supervisor = createSupervisor({ clock, agents: scripted() });
    const limited: Array<{ retryAt: number | null }> = [];
    env.supervisor.on('agent:rate_limited', (event) => limited.push(event));
    await env.supervisor.ensureAgent('fixture');
    await restartInto(clock, { stderr: 'API Error: 429 Too Many Requests: rate limit exceeded, retry after 30s', exitAfterMs: 100 });
    await waitForStatus(env.supervisor, 'fixture', 'rateLimited');
    expect(agentState(env.supervisor, 'fixture')).toBe('rateLimited.waiting');
    const { lastError } = env.supervisor.list()[0]!;
    expect(lastError).toMatchObject({ kind: 'agent_exited', class: 'rate_limited', retryable: true });
    expect(limited).toHaveLength(1);
    expect(limited[0]!.retryAt).toBe(lastError!.retryAt);
    env.files.control({}, 'fixture.json');
    clock.increment(29_999);
    expect(starts()).toBe(2);
    expect(env.supervisor.getStatus('fixture')).toBe('rateLimited');
    await expect(env.supervisor.ensureAgent('fixture')).rejects.toMatchObject({ class: 'rate_limited', retryAt: lastError!.retryAt });
    clock.increment(1);
    await waitForStatus(env.supervisor, 'fixture', 'connected');
    expect(starts()).toBe(3);
  });

  it("a custom agent's turn refused with \"429 Too Many Requests, retry after 30s\": the prompt's error is rate_limited with its reset time; a turn the classifier cannot place has class unknown", async () => {
    const clock = new SimulatedClock();
    env.supervisor = createSupervisor({ clock, agents: { custom: fixtureSpec() } });
    const session = await env.supervisor.newSession('custom', { cwd: env.files.dir });
    const limited = command({ op: 'fail', code: -32603, message: '429 Too Many Requests, retry after 30s' });
    await expect(session.prompt(limited)).rejects.toMatchObject({ kind: 'protocol_error', class: 'rate_limited', retryable: true, retryAt: clock.now() + 30_000 });
    await waitForStatus(env.supervisor, 'custom', 'rateLimited');
    clock.increment(30_000);
    await waitForStatus(env.supervisor, 'custom', 'connected');
    const other = await env.supervisor.newSession('custom', { cwd: env.files.dir });
    await expect(other.prompt(command({ op: 'fail', code: -32603, message: 'something odd' }))).rejects.toMatchObject({ kind: 'protocol_error', class: 'unknown' });
  });

  it('a turn refused with 429 parks the agent with its process; it is connected again when the limit resets', async () => {
    const clock = new SimulatedClock();
    env.supervisor = createSupervisor({ clock, agents: scripted() });
    const session = await env.supervisor.newSession('fixture', { cwd: env.files.dir });
    const pid = env.supervisor.list()[0]!.pid;
    const fail = command({ op: 'fail', code: -32603, message: 'Rate limit reached for requests. Please try again in 10s.', data: { status: 429 } });
    // The prompt's own error carries the class its agent gave the failure.
    await expect(session.prompt(fail)).rejects.toMatchObject({ kind: 'protocol_error', class: 'rate_limited', retryable: true, retryAt: clock.now() + 10_000 });
    await waitForStatus(env.supervisor, 'fixture', 'rateLimited');
    expect(env.supervisor.list()[0]).toMatchObject({ pid, lastError: { class: 'rate_limited', retryable: true } });
    clock.increment(9_999);
    expect(env.supervisor.getStatus('fixture')).toBe('rateLimited');
    clock.increment(1);
    await waitForStatus(env.supervisor, 'fixture', 'connected');
    expect(env.supervisor.list()[0]!.pid).toBe(pid);
    expect(starts()).toBe(1);
    const again = await env.supervisor.newSession('fixture', { cwd: env.files.dir });
    expect(await again.prompt('again')).toBe('end_turn');
  });

  it('a failure reported while the agent is parked is classified for its reporter and leaves the park as it was', async () => {
    const clock = new SimulatedClock();
    env.supervisor = createSupervisor({ clock, agents: scripted() });
    const limited = await env.supervisor.newSession('fixture', { cwd: env.files.dir });
    const other = await env.supervisor.newSession('fixture', { cwd: env.files.dir });
    await expect(limited.prompt(command({ op: 'fail', message: 'Rate limit reached for requests. Please try again in 10s.' }))).rejects.toMatchObject({ kind: 'protocol_error' });
    await waitForStatus(env.supervisor, 'fixture', 'rateLimited');
    const parkedWith = env.supervisor.list()[0]!.lastError;
    // The process is still there: another session's turn reaches it, and fails for a reason of its own.
    await expect(other.prompt(command({ op: 'fail', code: -32602, message: 'Invalid params' }))).rejects.toMatchObject({ kind: 'protocol_error' });
    expect(agentState(env.supervisor, 'fixture')).toBe('rateLimited.waiting');
    expect(env.supervisor.list()[0]!.lastError).toEqual(parkedWith);
  });

  it('a usage limit with no reset time waits for reconnect(), which takes the live process back', async () => {
    const clock = new SimulatedClock();
    env.supervisor = createSupervisor({ clock, agents: scripted() });
    const session = await env.supervisor.newSession('fixture', { cwd: env.files.dir });
    const pid = env.supervisor.list()[0]!.pid;
    await expect(session.prompt(command({ op: 'fail', message: "You've hit your usage limit. Upgrade to Pro to continue." }))).rejects.toMatchObject({ kind: 'protocol_error' });
    await waitForStatus(env.supervisor, 'fixture', 'rateLimited');
    expect(agentState(env.supervisor, 'fixture')).toBe('rateLimited.held');
    expect(env.supervisor.list()[0]!.lastError).toMatchObject({ class: 'usage_limit', retryable: false, retryAt: null });
    clock.increment(24 * 60 * 60_000);
    expect(env.supervisor.getStatus('fixture')).toBe('rateLimited');
    const handle = await env.supervisor.reconnect('fixture');
    expect(handle.pid).toBe(pid);
    expect(env.supervisor.getStatus('fixture')).toBe('connected');
  });

  it('restart.policies overrides a class: rate_limited given up at once', async () => {
    const clock = new SimulatedClock();
    env.supervisor = createSupervisor({ clock, restart: { policies: { rate_limited: { action: 'giveUp' } } }, agents: scripted() });
    await env.supervisor.ensureAgent('fixture');
    await restartInto(clock, { stderr: '429 Too Many Requests', exitAfterMs: 100 });
    await eventually(() => env.supervisor!.list()[0]!.lastError?.class === 'rate_limited', 'the limit to be classified');
    expect(env.supervisor.getStatus('fixture')).toBe('disconnected');
    clock.increment(600_000);
    expect(starts()).toBe(2);
  });

  it('a spec\'s own failure pattern decides before the built-in ones', async () => {
    const clock = new SimulatedClock();
    env.supervisor = createSupervisor({ clock, agents: scripted({ failurePatterns: [{ class: 'auth', pattern: 'badge expired' }] }) });
    await env.supervisor.ensureAgent('fixture');
    await restartInto(clock, { stderr: 'fatal: badge expired (HTTP 429)', exitAfterMs: 100 });
    await waitForStatus(env.supervisor, 'fixture', 'needsAuth');
  });
});

describe('authenticate() from every state', () => {
  const auth = () => scripted({ args: [...fixtureSpec().args!, '--require-auth', '--pid-file', env.files.path('fixture.pids'), '--auth-hold-file', env.files.path('auth.hold')] });
  /** While held, the fixture's `authenticate` waits; released, it answers. */
  const holdLogin = () => writeFileSync(env.files.path('auth.hold'), '');
  const releaseLogin = () => rmSync(env.files.path('auth.hold'), { force: true });
  const connectionOpen = () => (env.supervisor!.actor.getSnapshot().children['fixture']!.getSnapshot() as { context: { connectionOpen: boolean } }).context.connectionOpen;

  it('from idle, while starting, while connected, from disconnected: each ends connected and logged in', async () => {
    env.supervisor = createSupervisor({ agents: auth() });
    // idle: start, then authenticate.
    await env.supervisor.authenticate('fixture', 'fixture-token');
    expect(env.supervisor.getStatus('fixture')).toBe('connected');
    // connected: over the connection, on the same process.
    const { pid } = env.supervisor.list()[0]!;
    expect((await env.supervisor.authenticate('fixture', 'fixture-token')).pid).toBe(pid);
    await env.supervisor.stop('fixture');
    // starting: joins the start in flight, authenticates once initialize is answered.
    const started = env.supervisor.ensureAgent('fixture');
    expect(env.supervisor.getStatus('fixture')).toBe('starting');
    await env.supervisor.authenticate('fixture', 'fixture-token');
    await started;
    const session = await env.supervisor.newSession('fixture', { cwd: env.files.dir });
    expect(await session.prompt('hi')).toBe('end_turn');
    await env.supervisor.stop('fixture');
    // disconnected: a failed start, then authenticate starts afresh.
    env.files.control({ failInitialize: true }, 'fixture.json');
    await expect(env.supervisor.ensureAgent('fixture')).rejects.toMatchObject({ kind: 'handshake_failed' });
    env.files.control({}, 'fixture.json');
    await env.supervisor.authenticate('fixture', 'fixture-token');
    expect(env.supervisor.getStatus('fixture')).toBe('connected');
  });

  it('while connected: over its connection, beside it — no status change, its turns go on; callers join; a refused method leaves it connected; a loss fails the callers', async () => {
    const clock = new SimulatedClock();
    env.supervisor = createSupervisor({ clock, agents: auth() });
    await env.supervisor.authenticate('fixture', 'fixture-token');
    const session = await env.supervisor.newSession('fixture', { cwd: env.files.dir });
    const expired = await env.supervisor.newSession('fixture', { cwd: env.files.dir });
    const { pid } = env.supervisor.list()[0]!;
    const statuses: string[] = [];
    env.supervisor.on('agent:status', ({ status }) => statuses.push(status));
    const errors: string[] = [];
    env.supervisor.on('error', ({ kind }) => errors.push(kind));

    holdLogin();
    const first = env.supervisor.authenticate('fixture', 'fixture-token');
    expect(agentState(env.supervisor, 'fixture')).toMatch(/^connected\./);
    const joined = env.supervisor.authenticate('fixture', 'fixture-token');
    // While the login is held: a turn goes on, and one that fails for want of a login does not
    // park the agent — the login under way decides.
    await expect(expired.prompt(command({ op: 'fail', message: 'HTTP 401 Unauthorized: invalid api key' }))).rejects.toMatchObject({ kind: 'protocol_error' });
    expect(agentState(env.supervisor, 'fixture')).toMatch(/^connected\./);
    expect(await session.prompt('during the login')).toBe('end_turn');
    releaseLogin();
    expect([(await first).pid, (await joined).pid]).toEqual([pid, pid]);

    const refused = await env.supervisor.authenticate('fixture', 'no-such-method').catch((error: unknown) => error);
    expect(refused).toMatchObject({ kind: 'auth_required', class: 'auth' });
    expect(env.supervisor.getStatus('fixture')).toBe('connected');
    expect(env.supervisor.list()[0]!.lastError).toBeNull();
    expect(await session.prompt('still connected')).toBe('end_turn');
    expect(statuses).toEqual([]);
    expect(errors).toEqual([]);

    holdLogin();
    const lost = env.supervisor.authenticate('fixture', 'fixture-token').catch((error: unknown) => error);
    process.kill(pid!, 'SIGKILL');
    expect(await lost).toMatchObject({ kind: 'agent_exited' });
    expect(['disconnected', 'reconnecting']).toContain(env.supervisor.getStatus('fixture'));
  });

  it('while connected as its stream just closed (the process still there): it replaces the process, then logs in', async () => {
    const clock = new SimulatedClock();
    env.supervisor = createSupervisor({ clock, agents: auth() });
    await env.supervisor.authenticate('fixture', 'fixture-token');
    const closer = await env.supervisor.newSession('fixture', { cwd: env.files.dir });
    void closer.prompt(command({ op: 'close-stdout' })).catch(() => {});
    await eventually(() => !connectionOpen(), 'the stream to close');
    expect(agentState(env.supervisor, 'fixture')).toMatch(/^connected\./);
    const authenticated = env.supervisor.authenticate('fixture', 'fixture-token');
    expect(agentState(env.supervisor, 'fixture')).toBe('reconnecting.replacing');
    // The kill is slower than the clock: after killTimeoutMs the replacement spawns anyway.
    clock.increment(2_000);
    await authenticated;
    expect(env.supervisor.getStatus('fixture')).toBe('connected');
    // The process it had is gone for its sessions: failed (to be resumed), not ready on a process that never knew them.
    expect(closer.status).toBe('failed');
    const session = await env.supervisor.newSession('fixture', { cwd: env.files.dir });
    expect(await session.prompt('logged in again')).toBe('end_turn');
    expect(starts()).toBe(2);
  });

  it('while reconnecting: it joins the recovery and authenticates once the new process answers initialize', async () => {
    const clock = new SimulatedClock();
    env.supervisor = createSupervisor({ clock, agents: auth() });
    await env.supervisor.ensureAgent('fixture');
    process.kill(env.supervisor.list()[0]!.pid!, 'SIGKILL');
    await waitForStatus(env.supervisor, 'fixture', 'reconnecting');
    const authenticated = env.supervisor.authenticate('fixture', 'fixture-token');
    clock.increment(1000);
    await authenticated;
    expect(env.supervisor.getStatus('fixture')).toBe('connected');
    expect(starts()).toBe(2);
  });

  it('while authenticating: callers join; a process lost meanwhile is an agent_exited like any loss', async () => {
    const clock = new SimulatedClock();
    env.supervisor = createSupervisor({ clock, agents: auth() });
    await expect(env.supervisor.newSession('fixture', { cwd: env.files.dir })).rejects.toMatchObject({ kind: 'auth_required' });
    holdLogin();
    const authenticating = env.supervisor.authenticate('fixture', 'fixture-token');
    expect(agentState(env.supervisor, 'fixture')).toBe('needsAuth.authenticating');
    const joined = [env.supervisor.ensureAgent('fixture'), env.supervisor.reconnect('fixture'), env.supervisor.authenticate('fixture', 'fixture-token')];
    releaseLogin();
    await authenticating;
    await Promise.all(joined);
    expect(starts()).toBe(1);
    // Lost during authenticate: disconnected (agent_exited), then the restart policy.
    await expect(env.supervisor.newSession('fixture', { cwd: env.files.dir })).resolves.toBeDefined();
    await env.supervisor.stop('fixture');
    await expect(env.supervisor.newSession('fixture', { cwd: env.files.dir })).rejects.toMatchObject({ kind: 'auth_required' });
    holdLogin();
    const lost = env.supervisor.authenticate('fixture', 'fixture-token').catch((error: unknown) => error);
    expect(agentState(env.supervisor, 'fixture')).toBe('needsAuth.authenticating');
    process.kill(env.supervisor.list()[0]!.pid!, 'SIGKILL');
    expect(await lost).toMatchObject({ kind: 'agent_exited' });
    expect(['disconnected', 'reconnecting']).toContain(env.supervisor.getStatus('fixture'));
  });

  it('a parked agent whose process closed its stream but still runs is replaced by reconnect(), authenticate() and the limit\'s reset', async () => {
    const clock = new SimulatedClock();
    env.supervisor = createSupervisor({ clock, agents: scripted() });
    // Parked by a turn (the process stays), then the process closes its stream and keeps running.
    const park = async (message: string) => {
      const refused = await env.supervisor!.newSession('fixture', { cwd: env.files.dir });
      const closer = await env.supervisor!.newSession('fixture', { cwd: env.files.dir });
      await expect(refused.prompt(command({ op: 'fail', message }))).rejects.toMatchObject({ kind: 'protocol_error' });
      void closer.prompt(command({ op: 'close-stdout' })).catch(() => {});
      await eventually(() => !connectionOpen(), 'the stream to close');
    };
    await park('Rate limit reached. Please try again in 10s.');
    expect(agentState(env.supervisor, 'fixture')).toBe('rateLimited.waiting');
    const reconnected = env.supervisor.reconnect('fixture');
    expect(agentState(env.supervisor, 'fixture')).toBe('reconnecting.replacing');
    await reconnected;

    await park('Rate limit reached. Please try again in 10s.');
    clock.increment(10_000);
    expect(agentState(env.supervisor, 'fixture')).toBe('reconnecting.replacing');
    await waitForStatus(env.supervisor, 'fixture', 'connected');

    await park('Rate limit reached. Please try again in 10s.');
    const authenticated = env.supervisor.authenticate('fixture', 'fixture-token');
    expect(agentState(env.supervisor, 'fixture')).toBe('reconnecting.replacing');
    // The kill is slower than the clock: after killTimeoutMs the replacement spawns anyway.
    clock.increment(2_000);
    expect(agentState(env.supervisor, 'fixture')).toBe('reconnecting.spawning');
    await authenticated;
    expect(env.supervisor.getStatus('fixture')).toBe('connected');

    await park('HTTP 401 Unauthorized: invalid api key');
    expect(agentState(env.supervisor, 'fixture')).toBe('needsAuth.waiting');
    const again = env.supervisor.authenticate('fixture', 'fixture-token').catch((error: unknown) => error);
    expect(agentState(env.supervisor, 'fixture')).toBe('reconnecting.replacing');
    await again;
  });

  it('a parked agent whose process dies stays parked; authenticate refuses for an unknown agent and during shutdown', async () => {
    const clock = new SimulatedClock();
    env.supervisor = createSupervisor({ clock, agents: scripted() });
    const session = await env.supervisor.newSession('fixture', { cwd: env.files.dir });
    await expect(session.prompt(command({ op: 'fail', message: 'Rate limit reached. Please try again in 10s.' }))).rejects.toMatchObject({ kind: 'protocol_error' });
    process.kill(env.supervisor.list()[0]!.pid!, 'SIGKILL');
    await eventually(() => env.supervisor!.list()[0]!.pid === null, 'the process to be released');
    expect(env.supervisor.getStatus('fixture')).toBe('rateLimited');
    await expect(env.supervisor.authenticate('nobody', 'x')).rejects.toMatchObject({ kind: 'unknown_agent' });
    await env.supervisor.ensureAgent('fixture').catch(() => {});
    const shuttingDown = env.supervisor.shutdown();
    await expect(env.supervisor.authenticate('fixture', 'x')).rejects.toMatchObject({ kind: 'shutting_down' });
    await shuttingDown;
  });

  it('authenticate() of a rate-limited agent with its process goes over the connection; during shutdown it is refused', async () => {
    env.supervisor = createSupervisor({ agents: scripted() });
    const session = await env.supervisor.newSession('fixture', { cwd: env.files.dir });
    await expect(session.prompt(command({ op: 'fail', message: 'Rate limit reached. Please try again in 10s.' }))).rejects.toMatchObject({ kind: 'protocol_error' });
    expect(env.supervisor.getStatus('fixture')).toBe('rateLimited');
    const { pid } = env.supervisor.list()[0]!;
    const authenticating = env.supervisor.authenticate('fixture', 'fixture-token');
    expect(agentState(env.supervisor, 'fixture')).toBe('needsAuth.authenticating');
    expect((await authenticating).pid).toBe(pid);
    const shuttingDown = env.supervisor.shutdown();
    expect(env.supervisor.actor.getSnapshot().value).toBe('shuttingDown');
    await expect(env.supervisor.authenticate('fixture', 'fixture-token')).rejects.toMatchObject({ kind: 'shutting_down' });
    await shuttingDown;
  });

  it('a process killed while authenticate() waits, its stdout held open by an escapee: the callers get agent_exited', async () => {
    env.supervisor = createSupervisor({
      containment: 'none',
      agents: {
        fixture: fixtureSpec(['--require-auth', '--auth-hold-file', env.files.path('auth.hold'), '--spawn-grandchild', '--grandchild-holds-stdio', '--grandchild-escapes', '--pid-file', env.files.path('fixture.pids')]),
      },
    });
    try {
      await expect(env.supervisor.newSession('fixture', { cwd: env.files.dir })).rejects.toMatchObject({ kind: 'auth_required' });
      writeFileSync(env.files.path('auth.hold'), ''); // the login never answers: only the kill ends it
      const lost = env.supervisor.authenticate('fixture', 'fixture-token').catch((error: unknown) => error);
      expect(agentState(env.supervisor, 'fixture')).toBe('needsAuth.authenticating');
      process.kill(env.supervisor.list()[0]!.pid!, 'SIGKILL');
      expect(await lost).toMatchObject({ kind: 'agent_exited' });
    } finally {
      for (const [, grandchild] of env.files.pidLines('fixture.pids')) if (grandchild && isRunning(grandchild)) process.kill(grandchild, 'SIGKILL');
    }
  });

  it('a limit that resets while the supervisor holds restarts waits in reconnecting.held', async () => {
    const clock = new SimulatedClock();
    env.supervisor = createSupervisor({ clock, overload: { intensity: 0 }, agents: { ...scripted({}, 'a'), ...scripted({}, 'b') } });
    env.files.control({ stderr: '429 Too Many Requests: retry after 30s', exitOnInitialize: true }, 'a.json');
    await expect(env.supervisor.ensureAgent('a')).rejects.toMatchObject({ class: 'rate_limited' });
    expect(agentState(env.supervisor, 'a')).toBe('rateLimited.waiting');
    await env.supervisor.ensureAgent('b');
    process.kill(env.supervisor.list()[1]!.pid!, 'SIGKILL');
    await eventually(() => env.supervisor!.overloaded, 'the overload');
    env.files.control({}, 'a.json');
    clock.increment(30_000);
    expect(agentState(env.supervisor, 'a')).toBe('reconnecting.held');
    env.supervisor.resetOverload();
    await waitForStatus(env.supervisor, 'a', 'connected');
  });
});

describe('restart intensity', () => {
  it('a crash loop past restart.intensity gives up with restart_intensity, and nothing respawns', async () => {
    const clock = new SimulatedClock();
    env.supervisor = createSupervisor({ clock, restart: { maxAttempts: 10, intensity: 2, periodMs: 60_000 }, agents: scripted() });
    const { errors } = errorsOf();
    await env.supervisor.ensureAgent('fixture');
    env.files.control({ exitOnInitialize: true }, 'fixture.json');
    process.kill(env.supervisor.list()[0]!.pid!, 'SIGKILL');
    for (const [attempt, delay] of [[1, 1000], [2, 2000]] as const) {
      await eventually(() => env.supervisor!.getStatus('fixture') === 'reconnecting' && env.supervisor!.list()[0]!.attempt === attempt && env.supervisor!.list()[0]!.pid === null, `restart ${attempt} to wait`);
      clock.increment(delay);
      await eventually(() => starts() === attempt + 1, `restart ${attempt} to spawn`);
    }
    await eventually(() => errors.some((error) => error.kind === 'restart_intensity'), 'restart_intensity');
    expect(env.supervisor.list()[0]).toMatchObject({ status: 'disconnected', pid: null, lastError: { kind: 'restart_intensity', retryable: false } });
    clock.increment(600_000);
    expect(starts()).toBe(3);
    expect(env.supervisor.getStatus('fixture')).toBe('disconnected');
  });

  it('past the supervisor-wide intensity the supervisor is overloaded: restarts are held until resetOverload()', async () => {
    const clock = new SimulatedClock();
    env.supervisor = createSupervisor({ clock, overload: { intensity: 1, periodMs: 60_000 }, agents: { ...scripted({}, 'a'), ...scripted({}, 'b') } });
    const overloads: unknown[] = [];
    env.supervisor.on('supervisor:overloaded', (event) => overloads.push(event));
    await Promise.all([env.supervisor.ensureAgent('a'), env.supervisor.ensureAgent('b')]);
    process.kill(env.supervisor.list()[0]!.pid!, 'SIGKILL');
    await waitForStatus(env.supervisor, 'a', 'reconnecting');
    expect(env.supervisor.overloaded).toBe(false);
    process.kill(env.supervisor.list()[1]!.pid!, 'SIGKILL');
    await waitForStatus(env.supervisor, 'b', 'reconnecting');
    expect(env.supervisor.overloaded).toBe(true);
    expect(overloads).toEqual([{ restarts: 2, intensity: 1, periodMs: 60_000 }]);
    clock.increment(1000);
    await waitForAgentState(env.supervisor, 'a', 'reconnecting.held');
    await waitForAgentState(env.supervisor, 'b', 'reconnecting.held');
    expect(starts('a') + starts('b')).toBe(2);
    // A caller's start is not held.
    await env.supervisor.reconnect('a');
    expect(starts('a')).toBe(2);
    env.supervisor.resetOverload();
    expect(env.supervisor.overloaded).toBe(false);
    await waitForStatus(env.supervisor, 'b', 'connected');
    expect(starts('b')).toBe(2);
  });
});

describe('per-agent stop timings', () => {
  it('a spec\'s shutdownTimeoutMs replaces the supervisor\'s: an agent that ignores stdin EOF is sent SIGTERM after it', async () => {
    const clock = new SimulatedClock();
    env.supervisor = createSupervisor({ clock, shutdownTimeoutMs: 5_000, agents: { fixture: fixtureSpec(['--linger'], { shutdownTimeoutMs: 250 }) } });
    const { pid } = await env.supervisor.ensureAgent('fixture');
    const stopped = env.supervisor.stop('fixture');
    await waitForAgentState(env.supervisor, 'fixture', 'stopping.closing');
    clock.increment(249);
    expect(agentState(env.supervisor, 'fixture')).toBe('stopping.closing');
    clock.increment(1);
    expect(agentState(env.supervisor, 'fixture')).toBe('stopping.terminating');
    await stopped;
    expect(isRunning(pid)).toBe(false);
  });
});
