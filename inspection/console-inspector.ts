/**
 * `inspect: 'console'`: readable transition traces for people without a browser.
 * One line per state change of any agentvisor actor, e.g.
 * `[agentvisor] agent codex: starting → connected.settling  (process.initialized)`.
 */
import type { InspectionEvent } from 'xstate';

type Write = (line: string) => void;

/** Creates an inspection observer that writes one line per transition. */
export function createConsoleInspector(write: Write = (line) => process.stderr.write(`${line}\n`)) {
  const lastValue = new Map<string, string>();
  return (event: InspectionEvent): void => {
    if (event.type !== '@xstate.snapshot') return;
    const snapshot = event.snapshot as { value?: unknown; status?: string };
    if (snapshot.value === undefined) return; // callback and promise actors have no state value
    const actor = event.actorRef as unknown as { sessionId: string; id: string; logic?: { id?: string } };
    const value = formatStateValue(snapshot.value);
    const previous = lastValue.get(actor.sessionId);
    if (previous === value) return;
    lastValue.set(actor.sessionId, value);
    const machineId = actor.logic?.id ?? 'actor';
    const label = machineId === 'supervisor' ? 'supervisor' : `${machineId} ${actor.id}`;
    const cause = describeCause(event.event.type);
    write(`[agentvisor] ${label}: ${previous ?? '∅'} → ${value}${cause}`);
    if (snapshot.status === 'done' || snapshot.status === 'stopped') lastValue.delete(actor.sessionId);
  };
}

/** `{ connected: 'settling' }` → `connected.settling`. */
export function formatStateValue(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value && typeof value === 'object') {
    return Object.entries(value as Record<string, unknown>)
      .map(([key, child]) => {
        const inner = formatStateValue(child);
        return inner ? `${key}.${inner}` : key;
      })
      .join(',');
  }
  return '';
}

/** `(ensure)`, `(after backoff)`, `(promptTurn done)`; nothing for XState's own init. */
function describeCause(type: string): string {
  const after = /^xstate\.after\.([^.]+)/.exec(type);
  if (after) return `  (after ${after[1]})`;
  const done = /^xstate\.(done|error)\.actor\.(.+)$/.exec(type);
  if (done) return `  (${done[2]} ${done[1] === 'done' ? 'done' : 'failed'})`;
  return type.startsWith('xstate.') ? '' : `  (${type})`;
}
