/**
 * The supervisor: owns one agent actor per registered agent, forwards commands to it,
 * enforces `maxAgents`, and shuts everything down. `running` → `shuttingDown` → `stopped`
 * (final), reached only once every agent is idle, i.e. every process has exited.
 *
 * Callers learn the fate of a command through emitted events carrying their `requestId`:
 * `command.accepted` once it reached the agent, or `command.refused` with an error kind.
 */
import { emit, enqueueActions, setup } from 'xstate';
import type { AgentErrorKind, AgentFailure } from '../services/errors.js';
import { agentMachine } from './agent.machine.js';
import { liveStatuses, type AgentReport, type AgentStatus, type AgentTimings } from './agent-events.js';

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

/** Commands that start a process, and so are subject to the agent limit. */
export type StartCommand = { type: 'agent.ensure'; agent: string; requestId: string } | { type: 'agent.reconnect'; agent: string; requestId: string };

export type SupervisorEvent =
  | { type: 'agent.register'; agent: string; displayName: string; jitterSeed: number }
  | StartCommand
  | { type: 'agent.stop'; agent: string }
  | { type: 'shutdown' }
  | AgentReport;

export type SupervisorEmitted =
  | { type: 'agent:status'; agent: string; status: AgentStatus; previous: AgentStatus }
  | { type: 'error'; agent: string; failure: AgentFailure }
  | { type: 'command.accepted'; requestId: string; agent: string }
  | { type: 'command.refused'; requestId: string; agent: string; kind: AgentErrorKind; message: string };

const isLive = (agent: SupervisedAgent) => liveStatuses.has(agent.status) || agent.retrying;
const liveAgentCount = (agents: Record<string, SupervisedAgent>) => Object.values(agents).filter(isLive).length;

export const supervisorMachine = setup({
  types: {
    context: {} as SupervisorContext,
    events: {} as SupervisorEvent,
    input: {} as SupervisorInput,
    emitted: {} as SupervisorEmitted,
  },
  actors: { agent: agentMachine },
  guards: {
    isNewAgent: ({ context, event }) => event.type === 'agent.register' && !(event.agent in context.agents),
    isUnknownAgent: ({ context, event }) => 'agent' in event && !(event.agent in context.agents),
    isKnownAgent: ({ context, event }) => 'agent' in event && event.agent in context.agents,
    /** One more live process would exceed maxAgents (an agent already live does not count twice). */
    wouldExceedAgentLimit: ({ context, event }) => {
      if (!('agent' in event)) return false;
      const target = context.agents[event.agent];
      if (target && isLive(target)) return false;
      return liveAgentCount(context.agents) >= context.maxAgents;
    },
    allAgentsIdle: ({ context }) => Object.values(context.agents).every((agent) => agent.status === 'idle'),
  },
  actions: {
    spawnAgent: enqueueActions(({ enqueue, context, event }) => {
      if (event.type !== 'agent.register') return;
      enqueue.spawnChild('agent', {
        id: event.agent,
        input: { ...context.timings, name: event.agent, displayName: event.displayName, jitterSeed: event.jitterSeed },
      });
      enqueue.assign({ agents: { ...context.agents, [event.agent]: { displayName: event.displayName, status: 'idle', retrying: false } } });
    }),
    forwardToAgent: enqueueActions(({ enqueue, event }) => {
      if (event.type === 'agent.ensure') enqueue.sendTo(event.agent, { type: 'ensure' });
      else if (event.type === 'agent.reconnect') enqueue.sendTo(event.agent, { type: 'reconnect' });
      else if (event.type === 'agent.stop') enqueue.sendTo(event.agent, { type: 'stop' });
      if (event.type === 'agent.ensure' || event.type === 'agent.reconnect') {
        enqueue.emit({ type: 'command.accepted', requestId: event.requestId, agent: event.agent });
      }
    }),
    refuse: emit(({ context, event }, params: { kind: AgentErrorKind }) => {
      const request = event as StartCommand;
      return {
        type: 'command.refused' as const,
        requestId: request.requestId,
        agent: request.agent,
        kind: params.kind,
        message: refusalMessage(params.kind, request.agent, context.maxAgents),
      };
    }),
    stopAllAgents: enqueueActions(({ enqueue, context }) => {
      for (const agent of Object.keys(context.agents)) enqueue.sendTo(agent, { type: 'stop' });
    }),
    recordAgentStatus: enqueueActions(({ enqueue, context, event }) => {
      if (event.type !== 'agent.status') return;
      const known = context.agents[event.agent];
      if (!known || known.status === event.status) return; // e.g. the initial idle of a new agent
      enqueue.emit({ type: 'agent:status', agent: event.agent, status: event.status, previous: known.status });
      enqueue.assign({ agents: { ...context.agents, [event.agent]: { ...known, status: event.status, retrying: event.retrying ?? false } } });
    }),
    relayAgentError: emit(({ event }) => {
      const report = event as Extract<AgentReport, { type: 'agent.error' }>;
      return { type: 'error' as const, agent: report.agent, failure: report.failure };
    }),
  },
}).createMachine({
  id: 'supervisor',
  description: 'Owns the agents: one child actor each, the maxAgents limit, shutdown.',
  context: ({ input }) => ({ maxAgents: input.maxAgents, timings: input.timings, agents: {} }),
  initial: 'running',
  on: {
    'agent.status': { actions: 'recordAgentStatus', description: 'An agent entered a new state.' },
    'agent.error': { actions: 'relayAgentError', description: 'An agent failed; re-emitted as error.' },
  },
  states: {
    running: {
      description: 'Accepting commands.',
      on: {
        'agent.register': { guard: 'isNewAgent', actions: 'spawnAgent', description: 'Spawn the agent actor (idle).' },
        'agent.ensure': [
          { guard: 'isUnknownAgent', actions: { type: 'refuse', params: { kind: 'unknown_agent' } }, description: 'No such agent.' },
          { guard: 'wouldExceedAgentLimit', actions: { type: 'refuse', params: { kind: 'limit_reached' } }, description: 'maxAgents live processes already.' },
          { actions: 'forwardToAgent', description: 'ensureAgent(): forward to the agent.' },
        ],
        'agent.reconnect': [
          { guard: 'isUnknownAgent', actions: { type: 'refuse', params: { kind: 'unknown_agent' } }, description: 'No such agent.' },
          { guard: 'wouldExceedAgentLimit', actions: { type: 'refuse', params: { kind: 'limit_reached' } }, description: 'maxAgents live processes already.' },
          { actions: 'forwardToAgent', description: 'reconnect(): forward to the agent.' },
        ],
        'agent.stop': { guard: 'isKnownAgent', actions: 'forwardToAgent', description: 'stop(): forward to the agent.' },
        shutdown: { target: 'shuttingDown', description: 'shutdown(): stop every agent.' },
      },
    },
    shuttingDown: {
      description: 'Every agent runs its stop ladder in parallel; new starts are refused.',
      entry: 'stopAllAgents',
      always: { guard: 'allAgentsIdle', target: 'stopped', description: 'Every process has exited.' },
      on: {
        'agent.ensure': { actions: { type: 'refuse', params: { kind: 'shutting_down' } }, description: 'Refused during shutdown.' },
        'agent.reconnect': { actions: { type: 'refuse', params: { kind: 'shutting_down' } }, description: 'Refused during shutdown.' },
      },
    },
    stopped: {
      type: 'final',
      description: 'Every agent is idle and every process gone.',
    },
  },
});

function refusalMessage(kind: AgentErrorKind, agent: string, maxAgents: number): string {
  switch (kind) {
    case 'unknown_agent':
      return `No agent named "${agent}" is registered`;
    case 'limit_reached':
      return `Cannot start "${agent}": ${maxAgents} agents are already running (maxAgents)`;
    case 'shutting_down':
      return `Cannot start "${agent}": the supervisor is shutting down`;
    default:
      return `Cannot start "${agent}"`;
  }
}
