/**
 * The supervisor: owns one agent actor per registered agent, forwards commands to it,
 * enforces `maxAgents`, and shuts everything down. `running` → `shuttingDown` → `stopped`
 * (final), reached only once every agent is idle, i.e. every process has exited. While
 * running it counts its agents' automatic restarts: more than `overload.intensity` within
 * `overload.periodMs` and it escalates (OTP's restart intensity, supervisor-wide) — it is
 * `overloaded` and holds every automatic restart until `resetOverload()`.
 *
 * Every command carries a `requestId` and is answered exactly once with `command.settled`:
 * by this machine when it refuses (unknown agent, agent limit, shutting down), otherwise by
 * the agent (relayed from its `agent.settled` report).
 */
import { assertEvent, assign, emit, enqueueActions, setup } from 'xstate';
import { failures, type AgentFailure, type AuthMethodSummary } from '../core/errors.js';
import type { FailurePattern } from '../core/failure-class.js';
import type { WorkspaceSpec } from '../core/workspace-spec.js';
import { agentMachine } from './agent.machine.js';
import { liveStatuses, type AgentReport, type AgentStatus, type AgentTimings, type CommandSettled, type ProcessExit } from './agent-events.js';
import type { RestartWhen } from '../core/restart-spec.js';
import { restartsWithin } from './policies/class-policy.js';

/** The supervisor-wide restart intensity: more than `intensity` automatic restarts of all agents within `periodMs`. */
export interface OverloadPolicy {
  intensity: number;
  periodMs: number;
}

export interface SupervisedAgent {
  displayName: string;
  status: AgentStatus;
  /** Disconnected, but about to reconnect by itself: counts as live for maxAgents. */
  retrying: boolean;
}

export interface SupervisorContext {
  maxAgents: number;
  timings: AgentTimings;
  overload: OverloadPolicy;
  agents: Record<string, SupervisedAgent>;
  /** When the automatic restarts of the current window began, all agents together. */
  restartTimes: number[];
  /** Overloaded: every agent holds its automatic restarts (a new agent starts holding them). */
  restartsHeld: boolean;
}

export interface SupervisorInput {
  maxAgents: number;
  timings: AgentTimings;
  overload: OverloadPolicy;
}

/** What one agent is registered with: its own stop timings (a spec's), its failure patterns. */
export interface AgentRegistration {
  type: 'agent.register';
  agent: string;
  displayName: string;
  jitterSeed: number;
  timings?: Partial<Pick<AgentTimings, 'restart' | 'handshakeTimeoutMs' | 'shutdownTimeoutMs' | 'killTimeoutMs'>>;
  failurePatterns?: FailurePattern[];
  /** The names of its credential sets, in failover order (never their values). */
  credentials?: string[];
}

/** A command for one agent, answered with `command.settled` carrying its `requestId`. */
export type AgentCommandEvent =
  | { type: 'agent.ensure'; agent: string; requestId: string }
  | { type: 'agent.reconnect'; agent: string; requestId: string }
  /** `force`: SIGKILL to the agent's whole containment now, without the ladder's earlier rungs. */
  | { type: 'agent.stop'; agent: string; requestId: string; force?: boolean }
  /** restart(): the stop ladder, then a start; answered once the agent is connected again. */
  | { type: 'agent.restart'; agent: string; requestId: string }
  | { type: 'agent.authenticate'; agent: string; methodId: string; requestId: string }
  /**
   * A session with its own workspace (docs/workspaces.md) asks to open: refused during
   * shutdown; else its agent spawns the workspace's hold (actor id `workspace:<hold>`).
   */
  | { type: 'session.admit'; agent: string; hold: string; workspace: WorkspaceSpec; requestId: string };

export type SupervisorEvent =
  | AgentRegistration
  | AgentCommandEvent
  /** resetOverload(): automatic restarts resume. */
  | { type: 'overload.reset' }
  | { type: 'shutdown' }
  /** During shutdown: every agent skips to SIGKILL now. */
  | { type: 'shutdown.force' }
  | AgentReport;

export type SupervisorEmitted =
  | { type: 'agent:status'; agent: string; status: AgentStatus; previous: AgentStatus }
  | { type: 'error'; agent: string; failure: AgentFailure }
  | { type: 'agent:needs_auth'; agent: string; failure: AgentFailure; authMethods: AuthMethodSummary[] }
  | { type: 'agent:rate_limited'; agent: string; failure: AgentFailure; retryAt: number | null }
  | { type: 'supervisor:overloaded'; restarts: number; intensity: number; periodMs: number }
  | { type: 'supervisor:overload_reset' }
  | { type: 'agent:exited'; agent: string; exit: ProcessExit; when: RestartWhen }
  | { type: 'agent:credential'; agent: string; credential: string; previous: string; failure: AgentFailure }
  | CommandSettled;

/** The answer refusing one command with `failure`. */
function refusal(params: { agent: string; requestId: string }, failure: AgentFailure): CommandSettled {
  return { type: 'command.settled', agent: params.agent, requestId: params.requestId, result: { ok: false, failure } };
}

const isLive = (agent: SupervisedAgent) => liveStatuses.has(agent.status) || agent.retrying;
const liveAgentCount = (agents: Record<string, SupervisedAgent>) => Object.values(agents).filter(isLive).length;
const isRegistered = (agents: Record<string, SupervisedAgent>, name: string) => Object.prototype.hasOwnProperty.call(agents, name);

// Params read from the event, named so that every transition below stays a literal Stately's parser reads.
function agentOf({ event }: { event: AgentCommandEvent | AgentRegistration }) {
  return { agent: event.agent };
}
function commandOf({ event }: { event: AgentCommandEvent }) {
  return { agent: event.agent, requestId: event.requestId, type: event.type };
}

/** Why a command is refused during shutdown (also once the machine has stopped: the runtime answers then). */
export function shutdownRefusal(command: { agent: string; type: AgentCommandEvent['type'] }): AgentFailure {
  return failures.shuttingDown(command.agent, command.type === 'session.admit' ? 'open a session on' : undefined);
}
function agentStatusOf({ event }: { event: SupervisorEvent }) {
  assertEvent(event, 'agent.status');
  return { agent: event.agent, status: event.status, retrying: event.retrying ?? false };
}

export const supervisorMachine = setup({
  types: {
    context: {} as SupervisorContext,
    events: {} as SupervisorEvent,
    input: {} as SupervisorInput,
    emitted: {} as SupervisorEmitted,
  },
  actors: { agent: agentMachine },
  guards: {
    isUnknownAgent: ({ context }, params: { agent: string }) => !isRegistered(context.agents, params.agent),
    /** One more live process would exceed maxAgents (an agent already live does not count twice). */
    wouldExceedAgentLimit: ({ context }, params: { agent: string }) => {
      const target = context.agents[params.agent];
      if (target && isLive(target)) return false;
      return liveAgentCount(context.agents) >= context.maxAgents;
    },
    /** An agent's report changes what the supervisor knows of it (its status, or whether it is about to retry). */
    reportChangesAgent: ({ context }, params: { agent: string; status: AgentStatus; retrying: boolean }) => {
      const known = context.agents[params.agent];
      return known !== undefined && (known.status !== params.status || known.retrying !== params.retrying);
    },
    allAgentsIdle: ({ context }) => Object.values(context.agents).every((agent) => agent.status === 'idle'),
    /** This automatic restart is one more than the supervisor-wide intensity allows. */
    exceedsOverload: ({ context }, params: { at: number }) =>
      restartsWithin(context.restartTimes, context.overload.periodMs, params.at).length >= context.overload.intensity,
  },
  actions: {
    spawnAgent: enqueueActions(({ enqueue, context }, params: AgentRegistration) => {
      enqueue.spawnChild('agent', {
        id: params.agent,
        input: {
          ...context.timings,
          ...params.timings,
          name: params.agent,
          displayName: params.displayName,
          jitterSeed: params.jitterSeed,
          failurePatterns: params.failurePatterns ?? [],
          restartsHeld: context.restartsHeld,
          credentials: params.credentials ?? [],
        },
      });
      enqueue.assign({ agents: { ...context.agents, [params.agent]: { displayName: params.displayName, status: 'idle', retrying: false } } });
    }),
    /** The command, as the agent machine names it, to the agent's actor. */
    forwardToAgent: enqueueActions(({ enqueue, event }) => {
      assertEvent(event, ['agent.ensure', 'agent.reconnect', 'agent.stop', 'agent.authenticate', 'session.admit', 'agent.restart']);
      if (event.type === 'agent.restart') return enqueue.sendTo(event.agent, { type: 'restart.request', requestId: event.requestId });
      enqueue.sendTo(
        event.agent,
        event.type === 'agent.authenticate'
          ? { type: 'authenticate', methodId: event.methodId, requestId: event.requestId }
          : event.type === 'session.admit'
            ? { type: 'session.admit', hold: event.hold, workspace: event.workspace, requestId: event.requestId }
            : { type: event.type === 'agent.ensure' ? 'ensure' : event.type === 'agent.reconnect' ? 'reconnect' : 'stop', requestId: event.requestId },
      );
      // stop({ force }): the stop, then at once its last rung — SIGKILL to the whole containment.
      if (event.type === 'agent.stop' && event.force) enqueue.sendTo(event.agent, { type: 'forceStop' });
    }),
    recordRestart: assign({
      restartTimes: ({ context }, params: { at: number }) => [...restartsWithin(context.restartTimes, context.overload.periodMs, params.at), params.at],
    }),
    /** Overloaded: every agent holds its automatic restarts; listeners hear why. */
    holdAllRestarts: enqueueActions(({ enqueue, context }) => {
      enqueue.assign({ restartsHeld: true });
      for (const agent of Object.keys(context.agents)) enqueue.sendTo(agent, { type: 'restarts.hold' });
      enqueue.emit({ type: 'supervisor:overloaded', restarts: context.restartTimes.length, intensity: context.overload.intensity, periodMs: context.overload.periodMs });
    }),
    releaseAllRestarts: enqueueActions(({ enqueue, context }) => {
      enqueue.assign({ restartTimes: [], restartsHeld: false });
      for (const agent of Object.keys(context.agents)) enqueue.sendTo(agent, { type: 'restarts.release' });
      enqueue.emit({ type: 'supervisor:overload_reset' });
    }),
    relayOutcome: emit((_, params: { report: Extract<AgentReport, { type: 'agent.exited' | 'agent.credential' }> }) => {
      const { type, ...rest } = params.report;
      return type === 'agent.exited'
        ? { type: 'agent:exited' as const, ...(rest as Omit<Extract<AgentReport, { type: 'agent.exited' }>, 'type'>) }
        : { type: 'agent:credential' as const, ...(rest as Omit<Extract<AgentReport, { type: 'agent.credential' }>, 'type'>) };
    }),
    relayParked: emit((_, params: { report: Extract<AgentReport, { type: 'agent.needsAuth' | 'agent.rateLimited' }> }) =>
      params.report.type === 'agent.needsAuth'
        ? { type: 'agent:needs_auth' as const, agent: params.report.agent, failure: params.report.failure, authMethods: params.report.authMethods }
        : { type: 'agent:rate_limited' as const, agent: params.report.agent, failure: params.report.failure, retryAt: params.report.retryAt },
    ),
    // One action per reason, so the diagrams say why a command is refused.
    refuseUnknownAgent: emit((_, params: { agent: string; requestId: string }) => refusal(params, failures.unknownAgent(params.agent))),
    refuseAtAgentLimit: emit(({ context }, params: { agent: string; requestId: string }) => refusal(params, failures.limitReached(params.agent, context.maxAgents))),
    refuseShuttingDown: emit((_, params: { agent: string; requestId: string; type: AgentCommandEvent['type'] }) => refusal(params, shutdownRefusal(params))),
    stopAllAgents: enqueueActions(({ enqueue, context }) => {
      for (const agent of Object.keys(context.agents)) enqueue.sendTo(agent, { type: 'stop' });
    }),
    forceStopAllAgents: enqueueActions(({ enqueue, context }) => {
      for (const agent of Object.keys(context.agents)) enqueue.sendTo(agent, { type: 'forceStop' });
    }),
    /** Records an agent's report; a new status goes out as `agent:status` (a change of `retrying` alone does not). */
    recordAgentStatus: enqueueActions(({ enqueue, context }, params: { agent: string; status: AgentStatus; retrying: boolean }) => {
      const known = context.agents[params.agent]!; // the guard reportChangesAgent checked it
      if (known.status !== params.status) enqueue.emit({ type: 'agent:status', agent: params.agent, status: params.status, previous: known.status });
      enqueue.assign({ agents: { ...context.agents, [params.agent]: { ...known, status: params.status, retrying: params.retrying } } });
    }),
    relayAgentError: emit((_, params: { agent: string; failure: AgentFailure }) => ({ type: 'error' as const, agent: params.agent, failure: params.failure })),
    relaySettled: emit((_, params: { settled: CommandSettled }) => params.settled),
  },
}).createMachine({
  id: 'supervisor',
  description: 'Owns the agents: one child actor each, the maxAgents limit, shutdown.',
  context: ({ input }) => ({ maxAgents: input.maxAgents, timings: input.timings, overload: input.overload, agents: {}, restartTimes: [], restartsHeld: false }),
  initial: 'running',
  on: {
    'agent.status': [
      {
        guard: { type: 'reportChangesAgent', params: agentStatusOf },
        actions: { type: 'recordAgentStatus', params: agentStatusOf },
        description: 'An agent entered a new state (or will, or will no longer, restart by itself).',
      },
      { description: 'Nothing new (the first idle of a new agent, say).' },
    ],
    'agent.error': {
      actions: { type: 'relayAgentError', params: ({ event }) => ({ agent: event.agent, failure: event.failure }) },
      description: 'An agent failed; re-emitted as error.',
    },
    'agent.settled': {
      actions: { type: 'relaySettled', params: ({ event }) => ({ settled: event.settled }) },
      description: 'An agent answered a command; re-emitted as command.settled.',
    },
    'agent.needsAuth': { actions: { type: 'relayParked', params: ({ event }) => ({ report: event }) }, description: 'An agent waits for a login: agent:needs_auth.' },
    'agent.rateLimited': { actions: { type: 'relayParked', params: ({ event }) => ({ report: event }) }, description: 'An agent waits for a limit to reset: agent:rate_limited.' },
    'agent.exited': { actions: { type: 'relayOutcome', params: ({ event }) => ({ report: event }) }, description: 'An agent\'s process ended as an outcome (its restart policy does not start it again): agent:exited.' },
    'agent.credential': { actions: { type: 'relayOutcome', params: ({ event }) => ({ report: event }) }, description: 'An agent failed over to its next credential set: agent:credential.' },
  },
  states: {
    running: {
      description: 'Accepting commands.',
      initial: 'normal',
      states: {
        normal: {
          description: 'Automatic restarts are counted: more than overload.intensity within overload.periodMs escalates.',
          on: {
            'agent.restarting': [
              {
                guard: { type: 'exceedsOverload', params: ({ event }) => ({ at: event.at }) },
                target: 'overloaded',
                actions: { type: 'recordRestart', params: ({ event }) => ({ at: event.at }) },
                description: 'One restart too many across the agents: escalate.',
              },
              { actions: { type: 'recordRestart', params: ({ event }) => ({ at: event.at }) }, description: 'An automatic restart, counted.' },
            ],
          },
        },
        overloaded: {
          description: 'Escalated: every automatic restart is held (supervisor:overloaded) until resetOverload(). Callers\' starts still run.',
          entry: 'holdAllRestarts',
          on: {
            'overload.reset': { target: 'normal', actions: 'releaseAllRestarts', description: 'resetOverload(): automatic restarts resume.' },
          },
        },
      },
      on: {
        'agent.register': {
          guard: { type: 'isUnknownAgent', params: agentOf },
          actions: { type: 'spawnAgent', params: ({ event }) => event },
          description: 'Spawn the agent actor (idle; its automatic restarts held if the supervisor is overloaded).',
        },
        'agent.ensure': [
          { guard: { type: 'isUnknownAgent', params: agentOf }, actions: { type: 'refuseUnknownAgent', params: commandOf }, description: 'No such agent.' },
          { guard: { type: 'wouldExceedAgentLimit', params: agentOf }, actions: { type: 'refuseAtAgentLimit', params: commandOf }, description: 'maxAgents live processes already.' },
          { actions: 'forwardToAgent', description: 'ensureAgent(): forward to the agent.' },
        ],
        'agent.reconnect': [
          { guard: { type: 'isUnknownAgent', params: agentOf }, actions: { type: 'refuseUnknownAgent', params: commandOf }, description: 'No such agent.' },
          { guard: { type: 'wouldExceedAgentLimit', params: agentOf }, actions: { type: 'refuseAtAgentLimit', params: commandOf }, description: 'maxAgents live processes already.' },
          { actions: 'forwardToAgent', description: 'reconnect(): forward to the agent.' },
        ],
        'agent.authenticate': [
          { guard: { type: 'isUnknownAgent', params: agentOf }, actions: { type: 'refuseUnknownAgent', params: commandOf }, description: 'No such agent.' },
          { actions: 'forwardToAgent', description: 'authenticate(): forward to the agent; answered once it is connected.' },
        ],
        'agent.stop': [
          { guard: { type: 'isUnknownAgent', params: agentOf }, actions: { type: 'refuseUnknownAgent', params: commandOf }, description: 'No such agent.' },
          { actions: 'forwardToAgent', description: 'stop(): forward to the agent (with force, SIGKILL at once); answered once it is idle.' },
        ],
        'agent.restart': [
          { guard: { type: 'isUnknownAgent', params: agentOf }, actions: { type: 'refuseUnknownAgent', params: commandOf }, description: 'No such agent.' },
          { guard: { type: 'wouldExceedAgentLimit', params: agentOf }, actions: { type: 'refuseAtAgentLimit', params: commandOf }, description: 'A stopped agent, and maxAgents live processes already.' },
          { actions: 'forwardToAgent', description: 'restart(): the stop ladder, then a start; answered once connected again.' },
        ],
        'session.admit': [
          { guard: { type: 'isUnknownAgent', params: agentOf }, actions: { type: 'refuseUnknownAgent', params: commandOf }, description: 'No such agent.' },
          { actions: 'forwardToAgent', description: 'A session may be opened: its agent makes its own workspace first.' },
        ],
        shutdown: { target: 'shuttingDown', description: 'shutdown(): stop every agent.' },
      },
    },
    shuttingDown: {
      description: 'Every agent runs its stop ladder in parallel; new starts are refused.',
      entry: 'stopAllAgents',
      always: { guard: 'allAgentsIdle', target: 'stopped', description: 'Every process has exited.' },
      on: {
        'agent.ensure': { actions: { type: 'refuseShuttingDown', params: commandOf }, description: 'Refused during shutdown.' },
        'agent.reconnect': { actions: { type: 'refuseShuttingDown', params: commandOf }, description: 'Refused during shutdown.' },
        'agent.authenticate': { actions: { type: 'refuseShuttingDown', params: commandOf }, description: 'Refused during shutdown.' },
        'agent.restart': { actions: { type: 'refuseShuttingDown', params: commandOf }, description: 'Refused during shutdown.' },
        'session.admit': {
          actions: { type: 'refuseShuttingDown', params: commandOf },
          description: 'No session is opened during shutdown (no workspace is made for one).',
        },
        'agent.stop': [
          { guard: { type: 'isUnknownAgent', params: agentOf }, actions: { type: 'refuseUnknownAgent', params: commandOf }, description: 'No such agent.' },
          { actions: 'forwardToAgent', description: 'stop() during shutdown: answered once the agent is idle.' },
        ],
        'shutdown.force': { actions: 'forceStopAllAgents', description: 'shutdown({ force: true }) or a second signal: every agent to SIGKILL now.' },
      },
    },
    stopped: {
      type: 'final',
      description: 'Every agent is idle and every process gone.',
    },
  },
});
