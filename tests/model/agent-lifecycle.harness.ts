/**
 * The adapter between the lifecycle model and the real runtime: one `LifecycleRun` per
 * path owns a fresh supervisor (SimulatedClock, maxAttempts 2) with one real fixture
 * agent, causes each model event for real (executors), and checks each model state on
 * the real supervisor (assertions). See docs/testing.md.
 *
 * The fixture runs with `requireAuth` (it offers the `fixture-token` login method, and
 * refuses any other), so authenticate() is the real thing; no session is opened, so it
 * changes nothing else. A process that is to die into a parked state is scripted, when it
 * is spawned, to print the failure on stderr at start: the classifier reads the stderr of
 * an exit, and the executor then kills it.
 */
import { expect } from 'vitest';
import { SimulatedClock, type StateValue } from 'xstate';
import { createSupervisor, type AgentStatus, type Supervisor } from '../../index.js';
import { scratch, isRunning } from '../support/real-agents.js';
import { agentLifecycleModel, modelLimitWaitMs, modelMaxAttempts, type LifecycleModelContext, type LifecycleModelEvent } from './agent-lifecycle.model.js';
import { expectedEmissions, type ModelCoverage, type ModelPath, type ModelSnapshot, type ModelStep } from './model-paths.js';
import { ModelRun } from './model-run.js';
import { dispose, recordTrace, ScriptedAgent, settle, track, within, type Call, type SpawnPlan } from './sut.js';

/** The options of the system under test; the model assumes exactly these numbers. */
export const sutOptions = {
  restart: { maxAttempts: modelMaxAttempts, initialDelayMs: 1000, factor: 2, maxDelayMs: 30_000, jitter: 0, stableAfterMs: 30_000 },
  handshakeTimeoutMs: 30_000,
  shutdownTimeoutMs: 5_000,
  killTimeoutMs: 2_000,
  // A handshake state is checked at once, before any I/O, and the model says a process runs
  // there: only an uncontained spawn has its pid by then (a contained agent's own pid is found
  // after I/O). Containment's lifecycle is tested in tests/integration/containment.test.ts.
  containment: 'none' as const,
};

/** Backoff delay before automatic attempt n, from the contract's formula. */
const backoffDelay = (attempt: number) =>
  Math.min(sutOptions.restart.initialDelayMs * sutOptions.restart.factor ** (attempt - 1), sutOptions.restart.maxDelayMs);

/**
 * What each model state looks like on the real supervisor: the public status, the real
 * agent machine's state value, and whether a process runs.
 */
export const stateMapping: Record<string, { status: AgentStatus; machine: StateValue; process: boolean }> = {
  idle: { status: 'idle', machine: 'idle', process: false },
  starting: { status: 'starting', machine: 'starting', process: true },
  'connected.settling': { status: 'connected', machine: { connected: 'settling' }, process: true },
  'connected.stable': { status: 'connected', machine: { connected: 'stable' }, process: true },
  'disconnected.startFailed': { status: 'disconnected', machine: 'disconnected', process: false },
  'disconnected.gaveUp': { status: 'disconnected', machine: 'disconnected', process: false },
  'reconnecting.waiting': { status: 'reconnecting', machine: { reconnecting: 'waiting' }, process: false },
  'reconnecting.spawning': { status: 'reconnecting', machine: { reconnecting: 'spawning' }, process: true },
  'needsAuth.waiting': { status: 'needsAuth', machine: { needsAuth: 'waiting' }, process: false },
  'needsAuth.refused': { status: 'needsAuth', machine: { needsAuth: 'waiting' }, process: true },
  authStarting: { status: 'starting', machine: 'starting', process: true },
  rateLimited: { status: 'rateLimited', machine: { rateLimited: 'waiting' }, process: false },
  shutDown: { status: 'idle', machine: 'idle', process: false },
};

/** The login method the fixture offers with `requireAuth`, and one it does not. */
const authMethod = 'fixture-token';
const wrongAuthMethod = 'no-such-method';

/** What a process that dies into a parked state prints at start (the failure classes' own examples). */
const parkingStderr: Partial<Record<LifecycleModelEvent['type'], string>> = {
  CRASHES_NEEDING_AUTH: 'Error: 401 Unauthorized — invalid API key',
  CRASHES_RATE_LIMITED: `429 Too Many Requests: rate limit exceeded, retry after ${modelLimitWaitMs / 1000}s`,
};

const agentName = 'fixture';

/** The events by which an attempt fails. */
const failureEvents: ReadonlySet<string> = new Set(['HANDSHAKE_FAILS', 'HANDSHAKE_TIMES_OUT', 'PROCESS_CRASHES', 'SPAWN_FAILS_ENOENT']);
/** How paths show the model context: the attempt counter when it is not 0. */
export const showAttempt = (context: Record<string, unknown>) => (context.attempt ? `attempt ${context.attempt}` : '');
const isHandshake = (state: ModelSnapshot) => state.matches('starting') || state.matches('authStarting') || state.matches({ reconnecting: 'spawning' });
const isParked = (state: ModelSnapshot) => state.matches('needsAuth') || state.matches('rateLimited');
/** The error a promise rejected with (null if it resolved). */
const rejection = (promise: Promise<unknown>) =>
  promise.then(
    () => null,
    (error: unknown) => error as { kind?: string; class?: string; retryAt?: number | null },
  );
const leafOf = (state: ModelSnapshot) => Object.keys(stateMapping).find((key) => state.matches(key))!;

export class LifecycleRun extends ModelRun {
  private readonly files = scratch();
  private readonly clock = new SimulatedClock();
  private readonly agent = new ScriptedAgent(this.files, agentName, { requireAuth: true });
  private readonly supervisor: Supervisor;
  private readonly trace;
  private readonly expected: string[] = [];
  private readonly calls: Call[] = [];
  /** Calls whose outcome a state check has already verified. */
  private readonly answered = new Set<Call>();
  private plan: SpawnPlan = 'connect';
  private spawns = 0;
  /** The SimulatedClock's time when the process died rate-limited: its retryAt is 30 s later. */
  private crashedAt = 0;
  /**
   * The real agent machine's state values, in order (a subscription): a reconnect() that
   * replaces a parked agent's process enters its handshake on the old process's exit, an
   * I/O callback, so a handshake that is about to end by itself is seen here, not live.
   */
  private readonly history: string[] = [];
  /** The pid a reconnect() of a parked agent is replacing (its handshake is checked from `history`). */
  private replacing: { pid: number; from: number } | null = null;

  constructor(
    path: ModelPath,
    private readonly coverage: ModelCoverage,
  ) {
    super(path, showAttempt);
    this.supervisor = createSupervisor({ clock: this.clock, ...sutOptions, agents: { [agentName]: this.agent.spec() } });
    this.trace = recordTrace(this.supervisor, { parked: true });
    this.supervisor.actor.getSnapshot().children[agentName]!.subscribe((snapshot: { value: StateValue }) => this.history.push(JSON.stringify(snapshot.value)));
  }

  /** The `{ states, events }` parameter of `testPath`: an assertion per state, an executor per event. */
  params() {
    const types: Array<LifecycleModelEvent['type']> = [
      'ENSURE', 'MANUAL_RECONNECT', 'HANDSHAKE_SUCCEEDS', 'HANDSHAKE_FAILS', 'HANDSHAKE_TIMES_OUT',
      'SPAWN_FAILS_ENOENT', 'PROCESS_CRASHES', 'BACKOFF_ELAPSES', 'STAYS_UP', 'STOP', 'SHUTDOWN',
      'CRASHES_NEEDING_AUTH', 'CRASHES_RATE_LIMITED', 'LIMIT_RESETS', 'AUTHENTICATE', 'AUTHENTICATE_WRONG_METHOD',
    ];
    return this.testParams(Object.keys(stateMapping), types);
  }

  /** Shuts down, cleans up, and returns the pids of fixture processes that were still running. */
  override async dispose(): Promise<number[]> {
    this.trace.off();
    const leaked = await dispose(this.supervisor, this.clock, [this.agent]);
    await Promise.all(this.calls.map((call) => call.done));
    this.files.cleanup();
    return leaked;
  }

  private get summary() {
    return this.supervisor.list()[0]!;
  }

  private machineState(): { matches(value: StateValue): boolean; value: StateValue } {
    return this.supervisor.actor.getSnapshot().children[agentName]!.getSnapshot() as never;
  }

  protected async execute(step: ModelStep): Promise<void> {
    const previous = this.path.steps[this.index - 1]!.state;
    const event = step.event as LifecycleModelEvent;
    this.expected.push(...expectedEmissions(agentLifecycleModel, previous, event));
    const spawns = isHandshake(step.state) && !isHandshake(previous);
    if (spawns && event.type !== 'BACKOFF_ELAPSES' && event.type !== 'LIMIT_RESETS') this.prepareSpawn();
    const context = previous.context as LifecycleModelContext;

    switch (event.type) {
      case 'ENSURE':
      case 'MANUAL_RECONNECT': {
        const start = () => (event.type === 'ENSURE' ? this.supervisor.ensureAgent(agentName) : this.supervisor.reconnect(agentName));
        if (step.state.matches('connected')) {
          const handle = await within(start(), `${event.type} on a connected agent`);
          expect(handle.pid, 'a connected agent answers with its current connection').toBe(this.summary.pid);
        } else if (event.type === 'ENSURE' && isParked(previous)) {
          await this.expectRefusedAtOnce(step.state);
        } else {
          const pid = this.summary.pid;
          this.calls.push(track(event.type, start()));
          if (!spawns) expect(this.summary.pid, 'an in-flight start is shared: no second process').toBe(pid);
          if (previous.matches({ needsAuth: 'refused' })) {
            expect(this.machineState().value, 'reconnect() of a parked agent with a process: it is killed first').toEqual({ reconnecting: 'replacing' });
            this.replacing = { pid: pid!, from: this.history.length };
          }
        }
        break;
      }
      case 'AUTHENTICATE':
      case 'AUTHENTICATE_WRONG_METHOD': {
        const method = event.type === 'AUTHENTICATE' ? authMethod : wrongAuthMethod;
        if (spawns) {
          this.calls.push(track(`authenticate(${method})`, this.supervisor.authenticate(agentName, method)));
          break;
        }
        // Over the open connection of the process a refused authenticate() left running.
        const pid = this.summary.pid;
        if (event.type === 'AUTHENTICATE') {
          const handle = await within(this.supervisor.authenticate(agentName, method), 'authenticate() over the open connection');
          expect(handle.pid, 'authenticated over the same process').toBe(pid);
        } else {
          const error = await within(rejection(this.supervisor.authenticate(agentName, method)), 'authenticate() to be refused');
          expect({ kind: error?.kind, class: error?.class }, 'what a refused authenticate() rejects with').toEqual({ kind: 'auth_required', class: 'auth' });
        }
        break;
      }
      case 'PROCESS_CRASHES':
        process.kill(this.summary.pid!, 'SIGKILL');
        break;
      case 'CRASHES_NEEDING_AUTH':
      case 'CRASHES_RATE_LIMITED':
        // It printed the failure at start (see prepareSpawn); now it dies.
        this.crashedAt = this.clock.now();
        process.kill(this.summary.pid!, 'SIGKILL');
        break;
      case 'LIMIT_RESETS': {
        const wait = this.crashedAt + modelLimitWaitMs - this.clock.now();
        const started = this.agent.pids().length;
        this.clock.increment(wait - 1);
        expect(this.machineState().matches({ rateLimited: 'waiting' }), `still waiting 1 ms before the ${wait} ms limit`).toBe(true);
        expect(this.agent.pids().length, 'nothing spawned before the limit resets').toBe(started);
        this.prepareSpawn();
        this.clock.increment(1);
        break;
      }
      case 'BACKOFF_ELAPSES': {
        const delay = backoffDelay(context.attempt);
        this.clock.increment(delay - 1);
        expect(this.machineState().matches({ reconnecting: 'waiting' }), `still waiting 1 ms before the ${delay} ms backoff`).toBe(true);
        this.prepareSpawn();
        this.clock.increment(1);
        break;
      }
      case 'HANDSHAKE_TIMES_OUT':
        this.clock.increment(sutOptions.handshakeTimeoutMs - 1);
        expect(this.summary.status, 'still in the handshake 1 ms before the timeout').toBe(stateMapping[leafOf(previous)]!.status);
        this.clock.increment(1);
        break;
      case 'STAYS_UP':
        this.clock.increment(sutOptions.restart.stableAfterMs - 1);
        expect(this.summary.attempt, 'the counter holds until stableAfterMs').toBe(context.attempt);
        this.clock.increment(1);
        break;
      case 'STOP':
        await within(this.supervisor.stop(agentName), 'stop()');
        break;
      case 'SHUTDOWN':
        await within(this.supervisor.shutdown(), 'shutdown()');
        break;
      case 'HANDSHAKE_SUCCEEDS':
      case 'HANDSHAKE_FAILS':
      case 'SPAWN_FAILS_ENOENT':
        break; // scripted when the process was spawned: only wait for it
    }
    await this.settle(step.state);
  }

  /**
   * The fixture reads its control file once, at start: so the spawn is scripted from the
   * path ahead — the first event that leaves the handshake decides how it must behave, and
   * the event that ends the process, if it dies into a parked state, what it prints at start.
   */
  private prepareSpawn(): void {
    const ahead = this.path.steps.slice(this.index + 1);
    const exit = ahead.find((step) => !isHandshake(step.state));
    const plans: Partial<Record<string, SpawnPlan>> = { HANDSHAKE_SUCCEEDS: 'connect', HANDSHAKE_FAILS: 'refuse', SPAWN_FAILS_ENOENT: 'missing' };
    this.plan = plans[exit?.event.type ?? ''] ?? 'silent';
    const end = this.plan === 'connect' ? this.endOfProcess(this.index) : undefined;
    const stderr = end && parkingStderr[end];
    this.agent.plan(this.plan, stderr ? { stderr } : {});
    if (this.plan !== 'missing') this.spawns++;
  }

  /** The event that ends the process spawned at step `spawn` (undefined: the path ends first). */
  private endOfProcess(spawn: number): LifecycleModelEvent['type'] | undefined {
    for (let index = spawn + 1; index < this.path.steps.length; index++) {
      const { state, event } = this.path.steps[index]!;
      const newProcess = isHandshake(state) && !isHandshake(this.path.steps[index - 1]!.state);
      if (!stateMapping[leafOf(state)]!.process || newProcess) return event.type as LifecycleModelEvent['type'];
    }
    return undefined;
  }

  /** ensureAgent() of a parked agent: rejected at once with the parked failure, nothing spawned. */
  private async expectRefusedAtOnce(state: ModelSnapshot): Promise<void> {
    const { pid, lastError } = this.summary;
    const started = this.agent.pids().length;
    const error = await within(rejection(this.supervisor.ensureAgent(agentName)), 'ensureAgent() of a parked agent to be refused');
    expect(error, 'ensureAgent() of a parked agent rejects').not.toBeNull();
    expect({ kind: error!.kind, class: error!.class, retryAt: error!.retryAt }, 'the parked failure').toEqual({
      kind: lastError!.kind,
      class: state.matches('needsAuth') ? 'auth' : 'rate_limited',
      retryAt: state.matches('needsAuth') ? null : this.crashedAt + modelLimitWaitMs,
    });
    expect(this.summary.pid, 'the same process (or none)').toBe(pid);
    expect(this.agent.pids().length, 'nothing spawned').toBe(started);
  }

  /**
   * Waits until the real supervisor shows the model state. A handshake about to succeed or
   * fail on its own is transient: it is checked at once, before any I/O can move it on.
   */
  private async settle(state: ModelSnapshot): Promise<void> {
    if (this.replacing && this.plan !== 'silent') {
      await settle(() => this.replaced(), () => `the replacement of pid ${this.replacing!.pid}: machine went ${this.history.slice(this.replacing!.from).join(' → ')}`);
      return;
    }
    if (isHandshake(state) && this.plan !== 'silent') return;
    await settle(() => this.mismatches(state).length === 0, () => `${leafOf(state)}: ${this.mismatches(state).join('; ')}`);
  }

  /** What differs between the real supervisor and the model state (empty once settled). */
  private mismatches(state: ModelSnapshot): string[] {
    const expected = stateMapping[leafOf(state)]!;
    const { status, pid } = this.summary;
    const problems: string[] = [];
    if (status !== expected.status) problems.push(`status is ${status}`);
    if (!this.machineState().matches(expected.machine)) problems.push(`machine is ${JSON.stringify(this.machineState().value)}`);
    const process = expected.process && !(isHandshake(state) && this.plan === 'missing');
    if (process && (pid === null || !isRunning(pid))) problems.push(`no live process (pid ${pid})`);
    if (!process && pid !== null) problems.push(`pid is ${pid}`);
    const stale = this.agent.running().filter((running) => running !== pid);
    if (stale.length > 0) problems.push(`old processes still run: ${stale.join(', ')}`);
    if (process && this.agent.pids().length < this.spawns) problems.push('the process has not started yet');
    if (state.matches('shutDown') && this.supervisor.actor.getSnapshot().status !== 'done') problems.push('the supervisor is not stopped');
    return problems;
  }

  /** The old process of a replacement is gone and the machine went replacing → spawning. */
  private replaced(): boolean {
    const { pid, from } = this.replacing!;
    const since = this.history.slice(from);
    const replacingAt = since.indexOf(JSON.stringify({ reconnecting: 'replacing' }));
    return !isRunning(pid) && replacingAt >= 0 && since.indexOf(JSON.stringify({ reconnecting: 'spawning' }), replacingAt) > replacingAt;
  }

  /** The assertion of every model state on the real supervisor. */
  protected async check(state: ModelSnapshot): Promise<void> {
    if (this.replacing) {
      const seenLive = this.plan === 'silent';
      this.replacing = null;
      // A handshake entered on an I/O callback and about to end by itself: it was seen in
      // the machine's history (settle); the next state is checked in full.
      if (!seenLive) {
        expect(this.trace.of(agentName).slice(0, this.expected.length), 'agent:status / error trace so far').toEqual(this.expected);
        this.coverage.recordStep(this.path.steps[this.index - 1]!.state, this.path.steps[this.index]!);
        return;
      }
    }
    const leaf = leafOf(state);
    const expected = stateMapping[leaf]!;
    const context = state.context as LifecycleModelContext;
    const summary = this.summary;
    const transient = isHandshake(state) && this.plan !== 'silent';
    expect(summary.status, 'status').toBe(expected.status);
    expect(this.machineState().matches(expected.machine), `machine state ${JSON.stringify(this.machineState().value)} for ${leaf}`).toBe(true);
    expect(summary.attempt, 'attempt').toBe(context.attempt);
    expect(this.trace.of(agentName), 'agent:status / error trace').toEqual(this.expected);
    expect(this.trace.chainErrors, '`previous` of each agent:status event').toEqual([]);
    if (expected.process && this.plan !== 'missing') expect(summary.pid !== null && isRunning(summary.pid), 'a live process').toBe(true);
    else expect(summary.pid, 'no process').toBeNull();
    expect(this.agent.running().filter((pid) => pid !== summary.pid), 'no other process runs').toEqual([]);
    if (transient) expect(this.agent.pids().length, 'processes started').toBeLessThanOrEqual(this.spawns);
    else expect(this.agent.pids().length, 'processes started (never a second one)').toBe(this.spawns);
    if (state.matches('disconnected')) expect(summary.lastError?.kind, 'lastError').toBe(this.expected.at(-1)!.replace('error:', ''));
    if (isParked(state)) this.checkParked(state);
    await this.checkCallers(state);
    if (state.matches('shutDown')) expect(this.supervisor.actor.getSnapshot().status, 'supervisor').toBe('done');
    const previous = this.index > 0 ? this.path.steps[this.index - 1]!.state : undefined;
    this.coverage.recordStep(previous, this.path.steps[this.index]!);
  }

  /** A parked agent: the failure it waits on, with its class, and when a limit resets. */
  private checkParked(state: ModelSnapshot): void {
    const lastError = this.summary.lastError;
    const kind = this.expected.findLast((entry) => entry.startsWith('error:'))!.replace('error:', '');
    if (state.matches('needsAuth')) {
      expect({ kind: lastError?.kind, class: lastError?.class, retryable: lastError?.retryable, retryAt: lastError?.retryAt }, 'lastError of needsAuth').toEqual({
        kind,
        class: 'auth',
        retryable: false,
        retryAt: null,
      });
      expect(lastError?.authMethods?.map((method) => method.id), 'the login methods the agent offers').toEqual([authMethod]);
    } else {
      expect({ kind: lastError?.kind, class: lastError?.class, retryable: lastError?.retryable, retryAt: lastError?.retryAt }, 'lastError of rateLimited').toEqual({
        kind,
        class: 'rate_limited',
        retryable: true,
        retryAt: this.crashedAt + modelLimitWaitMs,
      });
    }
  }

  /**
   * Callers that did not wait (ensureAgent / reconnect / authenticate while starting or
   * reconnecting) learn the outcome with the state: the connection once connected,
   * lastError once disconnected or parked (a refused authenticate(): auth_required),
   * `stopped` once idle, and the attempt's failure when the attempt they joined failed and the
   * policy waits a backoff before the next (a caller never waits out a backoff). In every
   * other state they must still be waiting.
   */
  private async checkCallers(state: ModelSnapshot): Promise<void> {
    const summary = this.summary;
    // A failed attempt that the policy retries after a backoff answers the callers that joined it.
    const failedIntoBackoff = state.matches({ reconnecting: 'waiting' }) && failureEvents.has(this.path.steps[this.index]!.event.type);
    const outcome: Call['outcome'] = state.matches('connected')
      ? { status: 'resolved', pid: summary.pid! }
      : state.matches('disconnected') || isParked(state) || failedIntoBackoff
        ? { status: 'rejected', kind: summary.lastError!.kind }
        : state.matches('idle') || state.matches('shutDown')
          ? { status: 'rejected', kind: 'stopped' }
          : { status: 'pending' };
    for (const call of this.calls.filter((candidate) => !this.answered.has(candidate))) {
      if (outcome.status === 'pending') {
        expect(call.outcome, `${call.what} is still waiting`).toEqual(outcome);
        continue;
      }
      await within(call.done, `the ${call.what} caller to settle`);
      expect(call.outcome, `what the ${call.what} caller got`).toEqual(outcome);
      this.answered.add(call);
    }
  }
}
