/**
 * Read-only view of an XState v5 machine's state nodes shared by the renderers in `render.ts`:
 * traversal, transition "edges", readable labels and diagram-safe ids. Pure, no I/O.
 */
import type { AnyStateMachine } from 'xstate';

// The public StateNode typings hide some runtime fields (`transitions`, `always`, a delayed
// transition's `delay`); this structural view lists exactly what the renderers read.
export interface Transition {
  eventType: string;
  target?: readonly StateNodeView[];
  guard?: unknown;
  actions: readonly unknown[];
  reenter?: boolean;
  description?: string;
  delay?: string | number;
}
export interface StateNodeView {
  id: string;
  key: string;
  type: 'atomic' | 'compound' | 'parallel' | 'final' | 'history';
  path: string[];
  description?: string;
  history: false | 'shallow' | 'deep';
  states: Record<string, StateNodeView>;
  initial?: { target: readonly StateNodeView[] };
  transitions: Map<string, Transition[]>;
  always?: Transition[];
  invoke: readonly { id: string; src: string }[];
  config: Record<string, unknown>;
  parent?: StateNodeView;
}
/** One transition to one target. `internal` = targetless (actions only): listed, not drawn. */
export interface Edge {
  from: StateNodeView;
  to: StateNodeView;
  label: string;
  description?: string;
  internal: boolean;
  actions: string[];
}

export const rootOf = (machine: AnyStateMachine): StateNodeView => machine.root as unknown as StateNodeView;
export const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;
export const asArray = (v: unknown): unknown[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);
export const children = (n: StateNodeView): StateNodeView[] => Object.values(n.states);
export const hasChildren = (n: StateNodeView): boolean => children(n).length > 0;
/** The node and all its descendants, in document order. */
export const allNodes = (n: StateNodeView): StateNodeView[] => [n, ...children(n).flatMap(allNodes)];
/** `on`, `onDone`, invoke `onDone`/`onError`/`onSnapshot`, `after`, then `always` transitions. */
export const ownTransitions = (n: StateNodeView): Transition[] => [...[...n.transitions.values()].flat(), ...(n.always ?? [])];
export const displayName = (n: StateNodeView): string =>
  n.type === 'history' ? `${n.key} (H${n.history === 'deep' ? '*' : ''})` : n.key;

/** Readable guard text: `canRetry`, `not(isFatal)`, `and(a, not(b))`, `stateIn(#x)`, `inline`. */
export function guardLabel(guard: unknown): string {
  if (typeof guard === 'string') return guard;
  if (isObj(guard) && typeof guard.type === 'string') return guard.type;
  if (typeof guard !== 'function') return 'inline';
  const g = guard as { name: string; check?: unknown; guards?: unknown[]; stateValue?: unknown };
  if (g.check && Array.isArray(g.guards)) return `${g.name}(${g.guards.map(guardLabel).join(', ')})`;
  if (g.check && 'stateValue' in g) {
    return `stateIn(${typeof g.stateValue === 'string' ? g.stateValue : JSON.stringify(g.stateValue)})`;
  }
  return 'inline';
}

/** Readable action text: its name, a built-in's type (`xstate.assign`), or `inline`. */
export function actionLabel(a: unknown): string {
  if (typeof a === 'string') return a;
  if (isObj(a) && typeof a.type === 'string') return a.type;
  if (typeof a === 'function' && 'type' in a && typeof a.type === 'string') return a.type;
  return 'inline';
}

const ACTOR_EVENTS: Record<string, string> = { 'done.actor': 'onDone', 'error.actor': 'onError', snapshot: 'onSnapshot' };

/** Readable event text: `ensure`, `after backoff`, `after 1000ms`, `always`, `onDone(spawner)`. */
export function eventLabel(t: Transition): string {
  if (t.delay !== undefined) return `after ${typeof t.delay === 'number' ? `${t.delay}ms` : t.delay}`;
  if (t.eventType === '') return 'always';
  const actor = /^xstate\.(done\.actor|error\.actor|snapshot)\.(.+)$/.exec(t.eventType);
  if (actor) return `${ACTOR_EVENTS[actor[1]!]}(${actor[2]})`;
  if (t.eventType.startsWith('xstate.done.state.')) return 'onDone';
  return t.eventType;
}

const transitionLabel = (t: Transition): string =>
  t.guard === undefined ? eventLabel(t) : `${eventLabel(t)} [${guardLabel(t.guard)}]`;

/** Every transition of every state, in document order (one edge per target). */
export function collectEdges(root: StateNodeView): Edge[] {
  return allNodes(root).flatMap((from) =>
    ownTransitions(from).flatMap((t) => {
      const base = { from, label: transitionLabel(t), description: t.description, actions: t.actions.map(actionLabel) };
      if (t.target?.length) return t.target.map((to) => ({ ...base, to, internal: false }));
      return [{ ...base, to: from, internal: !t.reenter }];
    }),
  );
}

/** Text for a targetless transition: `event [guard] / action1, action2`. */
export const internalLine = (e: Edge): string => `${e.label} / ${e.actions.join(', ') || 'no actions'}`;

/** Whether any transition starts at (or targets) the root, so the root must be drawn as a state. */
export const rootHasEdges = (root: StateNodeView, edges: Edge[]): boolean =>
  edges.some((e) => e.from === root || e.to === root);

// Words that Mermaid or DOT would read as keywords if used as a bare id.
const RESERVED = new Set(
  'end state note direction class classdef style as default click left right of fork join choice graph node edge subgraph digraph strict'.split(' '),
);

/** Unique, syntax-safe ids (`connected_work_settling`) by path; the root gets one only if `withRoot`. */
export function assignIds(root: StateNodeView, withRoot: boolean): Map<StateNodeView, string> {
  const ids = new Map<StateNodeView, string>();
  const used = new Set<string>();
  for (const n of withRoot ? allNodes(root) : allNodes(root).slice(1)) {
    let base = (n === root ? [n.key] : n.path).join('_').replace(/[^A-Za-z0-9_]/g, '_');
    if (/^[0-9]/.test(base)) base = `s_${base}`;
    if (RESERVED.has(base.toLowerCase())) base = `${base}_`;
    let id = base;
    for (let i = 2; used.has(id); i++) id = `${base}_${i}`;
    used.add(id);
    ids.set(n, id);
  }
  return ids;
}

/** Entry/exit action names and invoked actors of a state, e.g. `entry / a, b`, `invoke id (src)`. */
export function stateDetails(n: StateNodeView): string[] {
  const names = (v: unknown) => asArray(v).map(actionLabel).join(', ');
  const lines: string[] = [];
  if (n.config.entry !== undefined) lines.push(`entry / ${names(n.config.entry)}`);
  if (n.config.exit !== undefined) lines.push(`exit / ${names(n.config.exit)}`);
  for (const inv of n.invoke) lines.push(`invoke ${inv.id} (${inv.src})`);
  return lines;
}

/** Splits text into lines of at most `width` characters (words are never broken). */
export function wrap(text: string, width: number): string[] {
  return text.split('\n').flatMap((para) => {
    const lines: string[] = [];
    let line = '';
    for (const word of para.split(/\s+/).filter(Boolean)) {
      if (line && line.length + word.length + 1 > width) {
        lines.push(line);
        line = word;
      } else line = line ? `${line} ${word}` : word;
    }
    return line ? [...lines, line] : lines;
  });
}
