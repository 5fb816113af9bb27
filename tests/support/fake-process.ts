/**
 * The unit tests' edge: an agent machine provided with a process actor that spawns
 * nothing. Tests play the process's part by sending `process.*` events to the agent.
 */
import { createActor, fromCallback, SimulatedClock } from 'xstate';
import type { AgentMachineInput, AgentProcessInput, ProcessCommand, ProcessEvent } from '../../machines/agent-events.js';
import { agentMachine } from '../../machines/agent.machine.js';
import { defaultRestartPolicy, type RestartPolicy } from '../../machines/policies/backoff.policy.js';

/** An agent machine run on its own has no supervisor to report to: its `notifyParent` does nothing. */
export const withoutParent = { notifyParent: () => {} };

export interface FakeProcessLog {
  /** How many process actors were started (= spawns). */
  spawns: number;
  /** How many are currently alive (not stopped). */
  alive: number;
  /** Every ladder command received, in order (a kill with a reason as `kill:<reason>`). */
  commands: string[];
}

export function fakeProcessActor(log: FakeProcessLog) {
  return fromCallback<ProcessCommand, AgentProcessInput, ProcessEvent>(({ receive }) => {
    log.spawns += 1;
    log.alive += 1;
    receive((command) => log.commands.push(command.type === 'kill' && command.reason ? `kill:${command.reason}` : command.type));
    return () => {
      log.alive -= 1;
    };
  });
}

export type AgentInputOverrides = Partial<Omit<AgentMachineInput, 'restart'>> & { restart?: Partial<RestartPolicy> };

export function agentInput(overrides: AgentInputOverrides = {}): AgentMachineInput {
  return {
    name: 'codex',
    displayName: 'Codex',
    handshakeTimeoutMs: 30_000,
    shutdownTimeoutMs: 5_000,
    killTimeoutMs: 2_000,
    jitterSeed: 42,
    failurePatterns: [],
    restartsHeld: false,
    credentials: [],
    ...overrides,
    restart: { ...defaultRestartPolicy, ...overrides.restart },
  };
}

/** A running agent actor on a SimulatedClock with a fake process. */
export function startFakeAgent(overrides: AgentInputOverrides = {}) {
  const clock = new SimulatedClock();
  const log: FakeProcessLog = { spawns: 0, alive: 0, commands: [] };
  const actor = createActor(agentMachine.provide({ actions: withoutParent, actors: { agentProcess: fakeProcessActor(log) } }), {
    input: agentInput(overrides),
    clock,
  });
  const statuses: string[] = [];
  const errors: string[] = [];
  actor.on('status', (event) => statuses.push(event.status));
  actor.on('error', (event) => errors.push(event.failure.kind));
  actor.start();
  const initialize = { protocolVersion: 1, agentCapabilities: {}, authMethods: [] };
  return {
    actor,
    clock,
    log,
    statuses,
    errors,
    /** The process spawns and answers initialize. */
    connect(pid = 1000 + log.spawns) {
      actor.send({ type: 'process.spawned', pid, containment: null });
      actor.send({ type: 'process.initialized', initialize });
    },
    /** The process dies. */
    crash(exitCode = 1) {
      actor.send({ type: 'process.exited', exitCode, signal: null, stderr: ['boom'], reason: 'exit' });
    },
    value: () => actor.getSnapshot().value,
    context: () => actor.getSnapshot().context,
  };
}
