/**
 * Turning a command to the supervisor actor into a promise: wait for its
 * `command.accepted` / `command.refused`, then for the agent's snapshot to settle.
 * Every subscription and listener made here is removed when the promise settles.
 */
import { randomUUID } from 'node:crypto';
import type { Actor, ActorRefFrom } from 'xstate';
import type { AgentStatus } from '../machines/agent-events.js';
import type { agentMachine } from '../machines/agent.machine.js';
import type { SupervisorEmitted, supervisorMachine } from '../machines/supervisor.machine.js';
import { AgentError } from '../services/errors.js';
import type { AgentHandle } from './supervisor-types.js';
import { abortError } from './waiting.js';

export type AgentActorRef = ActorRefFrom<typeof agentMachine>;
export type AgentSnapshot = ReturnType<AgentActorRef['getSnapshot']>;

export interface WaitContext {
  actor: Actor<typeof supervisorMachine>;
  agentActor(agent: string): AgentActorRef | undefined;
  handle(agent: string): AgentHandle;
  /** The agent has a live connection whose stream is open. */
  isUsable(agent: string): boolean;
}

/**
 * Sends `agent.ensure` / `agent.reconnect` and settles with the outcome: the handle once
 * connected; the agent's `lastError` once disconnected (snapshots are published after
 * `always` transitions, so a disconnected agent seen here will not retry by itself);
 * `stopped` if it went idle; the refusal's kind if the supervisor refused.
 */
export function sendStartCommand(context: WaitContext, name: string, type: 'agent.ensure' | 'agent.reconnect', signal: AbortSignal | undefined): Promise<AgentHandle> {
  const requestId = randomUUID();
  return new Promise<AgentHandle>((resolve, reject) => {
    const cleanups: Array<() => void> = [];
    const settle = (outcome: () => void) => {
      for (const cleanup of cleanups.splice(0)) cleanup();
      outcome();
    };
    const refused = context.actor.on('command.refused', (event: Extract<SupervisorEmitted, { type: 'command.refused' }>) => {
      if (event.requestId === requestId) settle(() => reject(new AgentError(event.kind, event.message, { agent: name })));
    });
    cleanups.push(() => refused.unsubscribe());
    const accepted = context.actor.on('command.accepted', (event: Extract<SupervisorEmitted, { type: 'command.accepted' }>) => {
      if (event.requestId !== requestId) return;
      accepted.unsubscribe();
      const child = context.agentActor(name);
      if (!child) return settle(() => reject(new AgentError('stopped', `Agent "${name}" is gone`, { agent: name })));
      const check = (snapshot: AgentSnapshot) => {
        if (snapshot.matches('connected')) {
          // Connected, but its stream already closed: the loss is on its way; wait for it.
          if (context.isUsable(name)) settle(() => resolve(context.handle(name)));
        }
        else if (snapshot.matches('disconnected')) settle(() => reject(failureOf(name, snapshot)));
        else if (snapshot.matches('idle') || snapshot.status !== 'active') {
          settle(() => reject(new AgentError('stopped', `Agent "${name}" was stopped before it connected`, { agent: name })));
        }
      };
      // Idle or disconnected now means the command has not reached the agent yet: it is
      // queued behind the step the agent is in (e.g. sent from a status listener), and that
      // step's snapshot may still be announced to subscribers. Processing the command leaves
      // those states, so only a later snapshot tells the outcome.
      const now = child.getSnapshot();
      const subscription = child.subscribe((snapshot) => {
        if (snapshot !== now) check(snapshot);
      });
      cleanups.push(() => subscription.unsubscribe());
      if (!now.matches('idle') && !now.matches('disconnected')) check(now);
    });
    cleanups.push(() => accepted.unsubscribe());
    if (signal) {
      if (signal.aborted) return settle(() => reject(abortError(name, signal)));
      const onAbort = () => settle(() => reject(abortError(name, signal)));
      signal.addEventListener('abort', onAbort, { once: true });
      cleanups.push(() => signal.removeEventListener('abort', onAbort));
    }
    context.actor.send({ type, agent: name, requestId });
  });
}

/** Resolves when the agent's snapshot satisfies `done`, or its actor is gone; rejects `aborted`. */
export function waitForAgentState(child: AgentActorRef | undefined, name: string, done: (snapshot: AgentSnapshot) => boolean, signal: AbortSignal | undefined): Promise<void> {
  if (!child || done(child.getSnapshot())) return Promise.resolve();
  return new Promise<void>((resolve, reject) => {
    const finish = (outcome: () => void) => {
      subscription.unsubscribe();
      signal?.removeEventListener('abort', onAbort);
      outcome();
    };
    const onAbort = () => finish(() => reject(abortError(name, signal!)));
    const subscription = child.subscribe({
      next: (snapshot) => {
        if (done(snapshot)) finish(resolve);
      },
      complete: () => finish(resolve),
      error: () => finish(resolve),
    });
    if (signal?.aborted) return onAbort();
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** The agent's recorded failure as an AgentError. */
export function failureOf(name: string, snapshot: AgentSnapshot): AgentError {
  const failure = snapshot.context.lastError;
  return failure ? AgentError.fromFailure(name, failure) : new AgentError('agent_exited', `Agent "${name}" disconnected`, { agent: name });
}

/** `{ connected: 'settling' }` → `'connected'`. */
export function topLevelState(snapshot: AgentSnapshot): AgentStatus {
  const value = snapshot.value;
  return (typeof value === 'string' ? value : Object.keys(value)[0]) as AgentStatus;
}
