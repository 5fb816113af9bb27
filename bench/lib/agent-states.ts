/**
 * Watching agentvisor's agent actors from outside: the benchmarks time phases (a ladder
 * rung, a restart's spawn) by the moment an agent actor enters a state, which no public
 * event reports. The actors are the supervisor actor's children, one per agent name.
 */
import type { Supervisor } from './agentvisor.js';

type AgentRef = { subscribe(listener: (snapshot: { value: unknown }) => void): { unsubscribe(): void } };

/**
 * Calls `listener` with every snapshot of the named agents' actors, its state value as a
 * dotted path (`'idle'`, `'stopping.terminating'`, `'reconnecting.spawning'`; the agent
 * machine has no parallel states). Returns the function that stops watching.
 */
export function watchAgentStates(supervisor: Supervisor, names: readonly string[], listener: (index: number, state: string) => void): () => void {
  const children = supervisor.actor.getSnapshot().children as Record<string, unknown>;
  const subscriptions = names.map((name, index) => (children[name] as AgentRef).subscribe((snapshot) => listener(index, statePath(snapshot.value))));
  return () => {
    for (const subscription of subscriptions) subscription.unsubscribe();
  };
}

/** An XState state value (a name, or `{ parent: child value }`) as a dotted path. */
function statePath(value: unknown): string {
  if (typeof value === 'string') return value;
  const [parent, child] = Object.entries(value as Record<string, unknown>)[0]!;
  return `${parent}.${statePath(child)}`;
}
