/**
 * The adapter between the lifecycle model and the real runtime: one `LifecycleRun` per
 * path owns a fresh supervisor (SimulatedClock, maxAttempts 2) with one real fixture
 * agent, causes each model event for real (executors), and checks each model state on
 * the real supervisor (assertions). See docs/testing.md.
 */
import { expect } from 'vitest';
import { SimulatedClock, type StateValue } from 'xstate';
import { createSupervisor, type AgentStatus, type Supervisor } from '../../index.js';
import { scratch, isRunning } from '../support/real-agents.js';
import { agentLifecycleModel, modelMaxAttempts, type LifecycleModelContext, type LifecycleModelEvent } from './agent-lifecycle.model.js';
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
  shutDown: { status: 'idle', machine: 'idle', process: false },
};

const agentName = 'fixture';
/** How paths show the model context: the attempt counter when it is not 0. */
export const showAttempt = (context: Record<string, unknown>) => (context.attempt ? `attempt ${context.attempt}` : '');
const isHandshake = (state: ModelSnapshot) => state.matches('starting') || state.matches({ reconnecting: 'spawning' });
const leafOf = (state: ModelSnapshot) => Object.keys(stateMapping).find((key) => state.matches(key))!;

export class LifecycleRun extends ModelRun {
  private readonly files = scratch();
  private readonly clock = new SimulatedClock();
  private readonly agent = new ScriptedAgent(this.files, agentName);
  private readonly supervisor: Supervisor;
  private readonly trace;
  private readonly expected: string[] = [];
  private readonly calls: Call[] = [];
  /** Calls whose outcome a state check has already verified. */
  private readonly answered = new Set<Call>();
  private plan: SpawnPlan = 'connect';
  private spawns = 0;

  constructor(
    path: ModelPath,
    private readonly coverage: ModelCoverage,
  ) {
    super(path, showAttempt);
    this.supervisor = createSupervisor({ clock: this.clock, ...sutOptions, agents: { [agentName]: this.agent.spec() } });
    this.trace = recordTrace(this.supervisor);
  }

  /** The `{ states, events }` parameter of `testPath`: an assertion per state, an executor per event. */
  params() {
    const types: Array<LifecycleModelEvent['type']> = [
      'ENSURE', 'MANUAL_RECONNECT', 'HANDSHAKE_SUCCEEDS', 'HANDSHAKE_FAILS', 'HANDSHAKE_TIMES_OUT',
      'SPAWN_FAILS_ENOENT', 'PROCESS_CRASHES', 'BACKOFF_ELAPSES', 'STAYS_UP', 'STOP', 'SHUTDOWN',
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
    if (spawns && event.type !== 'BACKOFF_ELAPSES') this.prepareSpawn();
    const context = previous.context as LifecycleModelContext;

    switch (event.type) {
      case 'ENSURE':
      case 'MANUAL_RECONNECT': {
        const start = () => (event.type === 'ENSURE' ? this.supervisor.ensureAgent(agentName) : this.supervisor.reconnect(agentName));
        if (step.state.matches('connected')) {
          const handle = await within(start(), `${event.type} on a connected agent`);
          expect(handle.pid, 'a connected agent answers with its current connection').toBe(this.summary.pid);
        } else {
          const pid = this.summary.pid;
          this.calls.push(track(event.type, start()));
          if (!spawns) expect(this.summary.pid, 'an in-flight start is shared: no second process').toBe(pid);
        }
        break;
      }
      case 'PROCESS_CRASHES':
        process.kill(this.summary.pid!, 'SIGKILL');
        break;
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
   * path ahead — the first event that leaves the handshake decides how it must behave.
   */
  private prepareSpawn(): void {
    const exit = this.path.steps.slice(this.index + 1).find((step) => !isHandshake(step.state));
    const plans: Partial<Record<string, SpawnPlan>> = { HANDSHAKE_SUCCEEDS: 'connect', HANDSHAKE_FAILS: 'refuse', SPAWN_FAILS_ENOENT: 'missing' };
    this.plan = plans[exit?.event.type ?? ''] ?? 'silent';
    this.agent.plan(this.plan);
    if (this.plan !== 'missing') this.spawns++;
  }

  /**
   * Waits until the real supervisor shows the model state. A handshake about to succeed or
   * fail on its own is transient: it is checked at once, before any I/O can move it on.
   */
  private async settle(state: ModelSnapshot): Promise<void> {
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

  /** The assertion of every model state on the real supervisor. */
  protected async check(state: ModelSnapshot): Promise<void> {
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
    await this.checkCallers(state);
    if (state.matches('shutDown')) expect(this.supervisor.actor.getSnapshot().status, 'supervisor').toBe('done');
    const previous = this.index > 0 ? this.path.steps[this.index - 1]!.state : undefined;
    this.coverage.recordStep(previous, this.path.steps[this.index]!);
  }

  /**
   * Callers that did not wait (ensureAgent / reconnect while starting or reconnecting)
   * learn the outcome with the state: the connection once connected, lastError once
   * disconnected, `stopped` once idle. In every other state they must still be waiting —
   * an automatic attempt that fails and retries is not their failure.
   */
  private async checkCallers(state: ModelSnapshot): Promise<void> {
    const summary = this.summary;
    const outcome: Call['outcome'] = state.matches('connected')
      ? { status: 'resolved', pid: summary.pid! }
      : state.matches('disconnected')
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
