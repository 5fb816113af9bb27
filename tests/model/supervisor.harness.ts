/**
 * The adapter between the supervisor model and the real runtime: one `SupervisorRun` per
 * path owns a fresh supervisor (SimulatedClock, maxAgents 2) with three real fixture
 * agents. The model counts agents; the run picks the concrete one for each event (the
 * first idle, the first connected) and keeps the per-agent expectations that follow.
 */
import { expect } from 'vitest';
import { SimulatedClock, transition } from 'xstate';
import { createSupervisor, type AgentStatus, type Supervisor } from '../../index.js';
import { pendingTimers, scratch } from '../support/real-agents.js';
import { type ModelCoverage, type ModelPath, type ModelSnapshot, type ModelStep } from './model-paths.js';
import { ModelRun } from './model-run.js';
import { dispose, recordTrace, ScriptedAgent, settle, track, within, type Call } from './sut.js';
import { modelAgents, modelMaxAgents, supervisorModel, type EmitsParams, type SupervisorModelContext, type SupervisorModelEvent } from './supervisor.model.js';

type Role = 'idle' | 'connected' | 'starting' | 'reconnecting';

/** How paths show the model context: the non-zero agent counts. */
export const showCounts = (context: Record<string, unknown>) =>
  (['connected', 'starting', 'reconnecting'] as const)
    .filter((key) => (context[key] as number) > 0)
    .map((key) => `${key} ${context[key] as number}`)
    .join(', ');

/** What one model step says: the trace of the affected agent(s), and a refusal kind if refused. */
function modelEffects(previous: ModelSnapshot, event: SupervisorModelEvent): { emits: EmitsParams; refused: string | undefined } {
  const [, actions] = transition(supervisorModel, previous as never, event) as unknown as [unknown, Array<{ type: string; params?: unknown }>];
  const emits = actions.find((action) => action.type === 'emits')?.params as EmitsParams;
  const refused = (actions.find((action) => action.type === 'refuses')?.params as { kind: string } | undefined)?.kind;
  return { emits, refused };
}

export class SupervisorRun extends ModelRun {
  private readonly files = scratch();
  private readonly clock = new SimulatedClock();
  private readonly agents = modelAgents.map((name) => new ScriptedAgent(this.files, name));
  private readonly supervisor: Supervisor;
  private readonly trace;
  private readonly roles = new Map<string, Role>(modelAgents.map((name) => [name, 'idle']));
  private readonly expected = new Map<string, string[]>(modelAgents.map((name) => [name, []]));
  private readonly spawns = new Map<string, number>(modelAgents.map((name) => [name, 0]));
  private readonly calls: Call[] = [];

  constructor(
    path: ModelPath,
    private readonly coverage: ModelCoverage,
  ) {
    super(path, showCounts);
    this.supervisor = createSupervisor({
      clock: this.clock,
      maxAgents: modelMaxAgents,
      restart: { maxAttempts: 2, initialDelayMs: 1000, factor: 2, jitter: 0 },
      agents: Object.fromEntries(this.agents.map((agent) => [agent.name, agent.spec()])),
    });
    this.trace = recordTrace(this.supervisor);
  }

  params() {
    return this.testParams(['running.belowLimit', 'running.atLimit', 'stopped'], ['ENSURE', 'START_HANGS', 'ENSURE_CONNECTED', 'CRASH', 'STOP', 'SHUTDOWN']);
  }

  override async dispose(): Promise<number[]> {
    this.trace.off();
    const leaked = await dispose(this.supervisor, this.clock, this.agents);
    await Promise.all(this.calls.map((call) => call.done));
    this.files.cleanup();
    return leaked;
  }

  private first(role: Role): ScriptedAgent {
    const name = modelAgents.find((agent) => this.roles.get(agent) === role);
    if (!name) throw new Error(`the model asks for a ${role} agent, but none is ${role}`);
    return this.agents.find((agent) => agent.name === name)!;
  }

  private summary(name: string) {
    return this.supervisor.list().find((agent) => agent.name === name)!;
  }

  protected async execute(step: ModelStep): Promise<void> {
    const previous = this.path.steps[this.index - 1]!.state;
    const event = step.event as SupervisorModelEvent;
    const { emits, refused } = modelEffects(previous, event);
    const affected =
      emits.agents === 'every live'
        ? modelAgents.filter((name) => this.roles.get(name) !== 'idle')
        : [(event.type === 'ENSURE' || event.type === 'START_HANGS' ? this.first('idle') : this.first('connected')).name];
    for (const name of affected) this.expected.get(name)!.push(...emits.trace);
    const agent = this.agents.find((candidate) => candidate.name === affected[0]);

    if (refused) {
      const error = await within(this.supervisor.ensureAgent(agent!.name).catch((failure: unknown) => failure), `the refusal of ${agent!.name}`);
      expect(error, `ensureAgent('${agent!.name}') is refused`).toMatchObject({ kind: refused, agent: agent!.name });
      return;
    }
    switch (event.type) {
      case 'ENSURE': {
        agent!.plan('connect');
        this.spawns.set(agent!.name, this.spawns.get(agent!.name)! + 1);
        const handle = await within(this.supervisor.ensureAgent(agent!.name), `ensureAgent('${agent!.name}')`);
        expect(handle.pid).toBe(this.summary(agent!.name).pid);
        this.roles.set(agent!.name, 'connected');
        break;
      }
      case 'START_HANGS':
        agent!.plan('silent');
        this.spawns.set(agent!.name, this.spawns.get(agent!.name)! + 1);
        this.calls.push(track(`ensureAgent('${agent!.name}')`, this.supervisor.ensureAgent(agent!.name)));
        this.roles.set(agent!.name, 'starting');
        break;
      case 'ENSURE_CONNECTED': {
        const handle = await within(this.supervisor.ensureAgent(agent!.name), `ensureAgent('${agent!.name}') again`);
        expect(handle.pid, 'an agent already live is not refused: same connection').toBe(this.summary(agent!.name).pid);
        break;
      }
      case 'CRASH':
        process.kill(this.summary(agent!.name).pid!, 'SIGKILL');
        this.roles.set(agent!.name, 'reconnecting');
        break;
      case 'STOP':
        await within(this.supervisor.stop(agent!.name), `stop('${agent!.name}')`);
        this.roles.set(agent!.name, 'idle');
        break;
      case 'SHUTDOWN':
        await within(this.supervisor.shutdown(), 'shutdown()');
        for (const name of modelAgents) this.roles.set(name, 'idle');
        break;
    }
    await settle(() => this.mismatches().length === 0, () => this.mismatches().join('; '));
  }

  /** Per agent: the expected status, one live process for connected/starting agents and none otherwise. */
  private mismatches(): string[] {
    const problems: string[] = [];
    for (const agent of this.agents) {
      const role = this.roles.get(agent.name)!;
      const { status, pid } = this.summary(agent.name);
      const running = agent.running();
      if (status !== role) problems.push(`${agent.name} is ${status}, not ${role}`);
      const process = role === 'connected' || role === 'starting';
      if (process && (pid === null || running.length !== 1 || running[0] !== pid)) problems.push(`${agent.name}: pid ${pid}, running [${running}]`);
      if (!process && (pid !== null || running.length > 0)) problems.push(`${agent.name}: pid ${pid}, running [${running}]`);
      if (process && agent.pids().length !== this.spawns.get(agent.name)) problems.push(`${agent.name} has not started yet`);
    }
    return problems;
  }

  protected async check(state: ModelSnapshot): Promise<void> {
    const context = state.context as SupervisorModelContext;
    const statuses = this.supervisor.list().map((agent) => agent.status);
    const count = (status: AgentStatus) => statuses.filter((candidate) => candidate === status).length;
    expect(this.mismatches(), 'agents match the model').toEqual([]);
    if (state.matches('stopped')) {
      expect(this.supervisor.actor.getSnapshot().status, 'supervisor actor').toBe('done');
      expect(statuses, 'every agent is idle').toEqual(modelAgents.map(() => 'idle'));
      // Every delay runs on the SimulatedClock: with none pending, no cancelled backoff can spawn anything later.
      expect(pendingTimers(this.clock), 'timers left on the clock after shutdown').toBe(0);
      expect(this.agents.flatMap((agent) => agent.running()), 'no fixture process runs after shutdown').toEqual([]);
    } else {
      expect(this.supervisor.actor.getSnapshot().value, 'supervisor machine').toEqual({ running: 'normal' });
      expect({ connected: count('connected'), starting: count('starting'), reconnecting: count('reconnecting') }, 'agents by status').toEqual({
        connected: context.connected,
        starting: context.starting,
        reconnecting: context.reconnecting,
      });
      // The model's atLimit against the real supervisor: live agents by their real statuses.
      const live = statuses.filter((status) => status !== 'idle' && status !== 'disconnected').length;
      expect(state.matches({ running: 'atLimit' }), `at the limit (${live} live of maxAgents ${modelMaxAgents})`).toBe(live === modelMaxAgents);
    }
    for (const agent of this.agents) {
      expect(agent.pids().length, `${agent.name}: processes started (nothing for a refused start)`).toBe(this.spawns.get(agent.name));
      expect(this.trace.of(agent.name), `${agent.name}: agent:status / error trace`).toEqual(this.expected.get(agent.name));
    }
    expect(this.trace.chainErrors, '`previous` of each agent:status event').toEqual([]);
    for (const call of this.calls) {
      if (!state.matches('stopped')) {
        expect(call.outcome, `${call.what} still waits for the hanging handshake`).toEqual({ status: 'pending' });
        continue;
      }
      await within(call.done, `${call.what} to settle`);
      expect(call.outcome, `${call.what}, pending at shutdown`).toEqual({ status: 'rejected', kind: 'stopped' });
    }
    const previous = this.index > 0 ? this.path.steps[this.index - 1]!.state : undefined;
    this.coverage.recordStep(previous, this.path.steps[this.index]!);
  }
}
