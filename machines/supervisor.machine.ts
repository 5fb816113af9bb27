/**
 * The supervisor: owns one agent actor per registered agent, forwards commands to it,
 * enforces `maxAgents`, and shuts everything down. `running` → `shuttingDown` → `stopped`
 * (final), reached only once every agent is idle, i.e. every process has exited.
 *
 * Every command carries a `requestId` and is answered exactly once with `command.settled`:
 * by this machine when it refuses (unknown agent, agent limit, shutting down), otherwise by
 * the agent (relayed from its `agent.settled` report).
 */
import { emit, enqueueActions, setup } from 'xstate';
import { failures, type AgentFailure } from '../core/errors.js';
import { agentMachine } from './agent.machine.js';
import { liveStatuses, type AgentReport, type AgentStatus, type AgentTimings, type CommandSettled } from './agent-events.js';

export interface SupervisedAgent {
  displayName: string;
  status: AgentStatus;
  /** Disconnected, but about to reconnect by itself: counts as live for maxAgents. */
  retrying: boolean;
}

export interface SupervisorContext {
  maxAgents: number;
  timings: AgentTimings;
  agents: Record<string, SupervisedAgent>;
}

export interface SupervisorInput {
  maxAgents: number;
  timings: AgentTimings;
}

/** A command for one agent, answered with `command.settled` carrying its `requestId`. */
export type AgentCommandEvent =
  | { type: 'agent.ensure'; agent: string; requestId: string }
  | { type: 'agent.reconnect'; agent: string; requestId: string }
  | { type: 'agent.stop'; agent: string; requestId: string };

export type SupervisorEvent =
  | { type: 'agent.register'; agent: string; displayName: string; jitterSeed: number }
  | AgentCommandEvent
  | { type: 'shutdown' }
  /** During shutdown: every agent skips to SIGKILL now. */
  | { type: 'shutdown.force' }
  | AgentReport;

export type SupervisorEmitted =
  | { type: 'agent:status'; agent: string; status: AgentStatus; previous: AgentStatus }
  | { type: 'error'; agent: string; failure: AgentFailure }
  | CommandSettled;

/** The answer refusing one command with `failure`. */
function refusal(params: { agent: string; requestId: string }, failure: AgentFailure): CommandSettled {
  return { type: 'command.settled', agent: params.agent, requestId: params.requestId, result: { ok: false, failure } };
}

const isLive = (agent: SupervisedAgent) => liveStatuses.has(agent.status) || agent.retrying;
const liveAgentCount = (agents: Record<string, SupervisedAgent>) => Object.values(agents).filter(isLive).length;
const isRegistered = (agents: Record<string, SupervisedAgent>, name: string) => Object.prototype.hasOwnProperty.call(agents, name);

export const supervisorMachine = setup({
  types: {
    context: {} as SupervisorContext,
    events: {} as SupervisorEvent,
    input: {} as SupervisorInput,
    emitted: {} as SupervisorEmitted,
  },
  actors: { agent: agentMachine },
  guards: {
    isNewAgent: ({ context }, params: { agent: string }) => !isRegistered(context.agents, params.agent),
    isUnknownAgent: ({ context }, params: { agent: string }) => !isRegistered(context.agents, params.agent),
    /** One more live process would exceed maxAgents (an agent already live does not count twice). */
    wouldExceedAgentLimit: ({ context }, params: { agent: string }) => {
      const target = context.agents[params.agent];
      if (target && isLive(target)) return false;
      return liveAgentCount(context.agents) >= context.maxAgents;
    },
    allAgentsIdle: ({ context }) => Object.values(context.agents).every((agent) => agent.status === 'idle'),
  },
  actions: {
    spawnAgent: enqueueActions(({ enqueue, context }, params: { agent: string; displayName: string; jitterSeed: number }) => {
      enqueue.spawnChild('agent', {
        id: params.agent,
        input: { ...context.timings, name: params.agent, displayName: params.displayName, jitterSeed: params.jitterSeed },
      });
      enqueue.assign({ agents: { ...context.agents, [params.agent]: { displayName: params.displayName, status: 'idle', retrying: false } } });
    }),
    forwardToAgent: enqueueActions(({ enqueue }, params: { agent: string; command: 'ensure' | 'reconnect' | 'stop'; requestId: string }) => {
      enqueue.sendTo(params.agent, { type: params.command, requestId: params.requestId });
    }),
    // One action per reason, so the diagrams say why a command is refused.
    refuseUnknownAgent: emit((_, params: { agent: string; requestId: string }) => refusal(params, failures.unknownAgent(params.agent))),
    refuseAtAgentLimit: emit(({ context }, params: { agent: string; requestId: string }) => refusal(params, failures.limitReached(params.agent, context.maxAgents))),
    refuseShuttingDown: emit((_, params: { agent: string; requestId: string }) => refusal(params, failures.shuttingDown(params.agent))),
    stopAllAgents: enqueueActions(({ enqueue, context }) => {
      for (const agent of Object.keys(context.agents)) enqueue.sendTo(agent, { type: 'stop' });
    }),
    forceStopAllAgents: enqueueActions(({ enqueue, context }) => {
      for (const agent of Object.keys(context.agents)) enqueue.sendTo(agent, { type: 'forceStop' });
    }),
    recordAgentStatus: enqueueActions(({ enqueue, context }, params: { agent: string; status: AgentStatus; retrying: boolean }) => {
      const known = context.agents[params.agent];
      if (!known || (known.status === params.status && known.retrying === params.retrying)) return; // e.g. the initial idle of a new agent
      if (known.status !== params.status) enqueue.emit({ type: 'agent:status', agent: params.agent, status: params.status, previous: known.status });
      enqueue.assign({ agents: { ...context.agents, [params.agent]: { ...known, status: params.status, retrying: params.retrying } } });
    }),
    relayAgentError: emit((_, params: { agent: string; failure: AgentFailure }) => ({ type: 'error' as const, agent: params.agent, failure: params.failure })),
    relaySettled: emit((_, params: { settled: CommandSettled }) => params.settled),
  },
}).createMachine({
  id: 'supervisor',
  description: 'Owns the agents: one child actor each, the maxAgents limit, shutdown.',
  context: ({ input }) => ({ maxAgents: input.maxAgents, timings: input.timings, agents: {} }),
  initial: 'running',
  on: {
    'agent.status': {
      actions: { type: 'recordAgentStatus', params: ({ event }) => ({ agent: event.agent, status: event.status, retrying: event.retrying ?? false }) },
      description: 'An agent entered a new state.',
    },
    'agent.error': {
      actions: { type: 'relayAgentError', params: ({ event }) => ({ agent: event.agent, failure: event.failure }) },
      description: 'An agent failed; re-emitted as error.',
    },
    'agent.settled': {
      actions: { type: 'relaySettled', params: ({ event }) => ({ settled: event.settled }) },
      description: 'An agent answered a command; re-emitted as command.settled.',
    },
  },
  states: {
    running: {
      description: 'Accepting commands.',
      on: {
        'agent.register': {
          guard: { type: 'isNewAgent', params: ({ event }) => ({ agent: event.agent }) },
          actions: { type: 'spawnAgent', params: ({ event }) => ({ agent: event.agent, displayName: event.displayName, jitterSeed: event.jitterSeed }) },
          description: 'Spawn the agent actor (idle).',
        },
        'agent.ensure': startCommand('ensure', 'ensureAgent(): forward to the agent.'),
        'agent.reconnect': startCommand('reconnect', 'reconnect(): forward to the agent.'),
        'agent.stop': stopCommand('stop(): forward to the agent; answered once it is idle.'),
        shutdown: { target: 'shuttingDown', description: 'shutdown(): stop every agent.' },
      },
    },
    shuttingDown: {
      description: 'Every agent runs its stop ladder in parallel; new starts are refused.',
      entry: 'stopAllAgents',
      always: { guard: 'allAgentsIdle', target: 'stopped', description: 'Every process has exited.' },
      on: {
        'agent.ensure': { actions: refuse('refuseShuttingDown'), description: 'Refused during shutdown.' },
        'agent.reconnect': { actions: refuse('refuseShuttingDown'), description: 'Refused during shutdown.' },
        'agent.stop': stopCommand('stop() during shutdown: answered once the agent is idle.'),
        'shutdown.force': { actions: 'forceStopAllAgents', description: 'shutdown({ force: true }) or a second signal: every agent to SIGKILL now.' },
      },
    },
    stopped: {
      type: 'final',
      description: 'Every agent is idle and every process gone.',
    },
  },
});

function agentOf({ event }: { event: AgentCommandEvent }) {
  return { agent: event.agent };
}

function refuse(action: 'refuseUnknownAgent' | 'refuseAtAgentLimit' | 'refuseShuttingDown') {
  return { type: action, params: ({ event }: { event: AgentCommandEvent }) => ({ agent: event.agent, requestId: event.requestId }) } as const;
}

function forward(command: 'ensure' | 'reconnect' | 'stop') {
  return { type: 'forwardToAgent', params: ({ event }: { event: AgentCommandEvent }) => ({ agent: event.agent, requestId: event.requestId, command }) } as const;
}

/** A start: refused for an unknown agent or at the agent limit, else forwarded. */
function startCommand(command: 'ensure' | 'reconnect', description: string) {
  return [
    { guard: { type: 'isUnknownAgent', params: agentOf }, actions: refuse('refuseUnknownAgent'), description: 'No such agent.' },
    { guard: { type: 'wouldExceedAgentLimit', params: agentOf }, actions: refuse('refuseAtAgentLimit'), description: 'maxAgents live processes already.' },
    { actions: forward(command), description },
  ] as const;
}

function stopCommand(description: string) {
  return [
    { guard: { type: 'isUnknownAgent', params: agentOf }, actions: refuse('refuseUnknownAgent'), description: 'No such agent.' },
    { actions: forward('stop'), description },
  ] as const;
}
