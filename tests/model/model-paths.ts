/**
 * Shared machinery of the model-based tests: which paths to run (a transition cover by
 * default, every shortest path with MODEL_PATHS=shortest, bounded simple paths with
 * MODEL_PATHS=simple), how a path is named, the trace a step must produce (read from the
 * model's `emits` actions), and the coverage of the model's states and transitions reached
 * by the steps that actually passed.
 */
import { transition, type AnyMachineSnapshot, type AnyStateMachine, type AnyStateNode, type AnyTransitionDefinition, type EventObject } from 'xstate';
import { getStateNodes, type TestModel } from 'xstate/graph';

export type ModelSnapshot = AnyMachineSnapshot;
export interface ModelStep {
  state: ModelSnapshot;
  event: EventObject;
}
export interface ModelPath {
  state: ModelSnapshot;
  steps: ModelStep[];
  weight: number;
}

/**
 * Options for `createTestModel(machine, modelOptions(machine))`.
 *
 * - `serializeTransition`: a vertex is the state plus the event and state it was entered
 *   from. xstate's default drops the "via" part for self-loops, so two self-loops on one
 *   state (ENSURE and MANUAL_RECONNECT on a connected agent) would share a vertex and one
 *   of them would never be walked.
 * - `filterEvents`: only events with an enabled transition are walked. The traversal
 *   otherwise offers every event the state node names, and one whose guards all fail
 *   would become a "step" that the model does not take.
 */
export function modelOptions(machine: AnyStateMachine) {
  return {
    serializeTransition: (_state: ModelSnapshot, event: EventObject | undefined, previous?: ModelSnapshot) =>
      event ? ` via ${event.type} from ${JSON.stringify(previous?.value)}` : '',
    filterEvents: (snapshot: ModelSnapshot, event: EventObject) => machine.getTransitionData(snapshot, event).length > 0,
  } as never;
}

/**
 * Which paths a model test runs (`MODEL_PATHS`):
 *
 * - `transitions` (the default, `npm test`): a few shortest paths that together take every
 *   transition and reach every state of the model (`coveringPaths`);
 * - `shortest` (`npm run test:full`): the shortest path to every vertex (a state with its
 *   context, entered by a given event from a given state);
 * - `simple` (`npm run test:model:deep`): every simple path up to `MODEL_DEPTH` events, plus
 *   the shortest paths to whatever those do not reach.
 */
export type PathMode = 'transitions' | 'shortest' | 'simple';
const pathModes: readonly PathMode[] = ['transitions', 'shortest', 'simple'];
export const pathMode: PathMode = (() => {
  const mode = process.env.MODEL_PATHS || 'transitions';
  if (!pathModes.includes(mode as PathMode)) throw new Error(`MODEL_PATHS must be one of ${pathModes.join(', ')}, got ${mode}`);
  return mode as PathMode;
})();

/**
 * The paths to run (see `PathMode`). `keep` narrows the candidates first (a model variant
 * that runs only some paths); the transition cover is then drawn from those.
 */
export function selectPaths(
  model: TestModel<ModelSnapshot, EventObject, unknown>,
  machine: AnyStateMachine,
  defaultDepth: number,
  keep: (path: ModelPath) => boolean = () => true,
): ModelPath[] {
  const shortest = (model.getShortestPaths() as ModelPath[]).filter(keep);
  if (pathMode === 'shortest') return shortest;
  if (pathMode === 'transitions') return coveringPaths(machine, shortest);
  const depth = Number(process.env.MODEL_DEPTH ?? defaultDepth);
  if (!Number.isInteger(depth) || depth < 1) throw new Error(`MODEL_DEPTH must be a positive integer, got ${process.env.MODEL_DEPTH}`);
  // Simple paths from the initial state stay shallow: the shortest paths to the states
  // they miss are added, so the deep walk covers at least what the default run covers.
  return withoutPrefixes([...boundedSimplePaths(model, depth).filter(keep), ...shortest]);
}

/**
 * A subset of `paths` that takes every transition definition (each guarded alternative)
 * and reaches every state node that `paths` take and reach, chosen greedily: the path
 * with the most not-yet-covered transitions and states first, the fewer steps on a tie,
 * then the earlier path. Deterministic; returned in the order of `paths`.
 */
export function coveringPaths(machine: AnyStateMachine, paths: ModelPath[]): ModelPath[] {
  const nodes = getStateNodes(machine.root);
  const covers = paths.map((path) => {
    const keys = new Set<unknown>();
    path.steps.forEach((step, index) => {
      for (const node of nodes) if (step.state.matches(node.path.join('.'))) keys.add(node);
      if (index > 0) for (const definition of machine.getTransitionData(path.steps[index - 1]!.state, step.event)) keys.add(definition);
    });
    return keys;
  });
  const covered = new Set<unknown>();
  const chosen = new Set<number>();
  for (;;) {
    let best = -1;
    let bestGain = 0;
    covers.forEach((keys, i) => {
      if (chosen.has(i)) return;
      let gain = 0;
      for (const key of keys) if (!covered.has(key)) gain++;
      if (gain > bestGain || (gain === bestGain && gain > 0 && paths[i]!.steps.length < paths[best]!.steps.length)) {
        best = i;
        bestGain = gain;
      }
    });
    if (best < 0) break;
    chosen.add(best);
    for (const key of covers[best]!) covered.add(key);
  }
  return paths.filter((_, i) => chosen.has(i));
}

/** Drops every path whose event sequence is a prefix of another path's (it is walked there). */
export function withoutPrefixes(paths: ModelPath[]): ModelPath[] {
  const keys = paths.map((path) => path.steps.slice(1).map((step) => step.event.type));
  const kept: ModelPath[] = [];
  const seen = new Set<string>();
  paths.forEach((path, i) => {
    const key = keys[i]!.join(' ');
    const prefixOfAnother = keys.some((other, j) => j !== i && other.length > keys[i]!.length && other.slice(0, keys[i]!.length).join(' ') === key);
    if (prefixOfAnother || seen.has(key)) return;
    seen.add(key);
    kept.push(path);
  });
  return kept;
}

/**
 * Every maximal simple path from the initial state with at most `depth` events: no
 * vertex twice, where a vertex is the model's own serialization (state value, context,
 * and the event and state it was entered from, so self-loops count as moves).
 */
export function boundedSimplePaths(model: TestModel<ModelSnapshot, EventObject, unknown>, depth: number): ModelPath[] {
  const adjacency = model.getAdjacencyMap();
  const serialize = model.options.serializeState!;
  const [initialKey] = Object.keys(adjacency);
  const initial = adjacency[initialKey as keyof typeof adjacency]!.state;
  const paths: ModelPath[] = [];
  const visited = new Set<string>([initialKey!]);
  const steps: ModelStep[] = [{ state: initial, event: { type: 'xstate.init' } }];
  const walk = (key: string, state: ModelSnapshot) => {
    let extended = false;
    if (steps.length - 1 < depth) {
      for (const { event, state: next } of Object.values(adjacency[key as keyof typeof adjacency]!.transitions)) {
        const nextKey = serialize(next, event, state);
        if (visited.has(nextKey) || !(nextKey in adjacency)) continue;
        extended = true;
        visited.add(nextKey);
        steps.push({ state: next, event });
        walk(nextKey, next);
        steps.pop();
        visited.delete(nextKey);
      }
    }
    if (!extended && steps.length > 1) paths.push({ state, steps: [...steps], weight: steps.length - 1 });
  };
  walk(initialKey!, initial);
  return paths;
}

/** `idle` or `reconnecting.waiting`, plus the context keys in `show` that differ from 0/false. */
export function formatState(snapshot: ModelSnapshot, show: (context: Record<string, unknown>) => string = () => ''): string {
  const value = flattenValue(snapshot.value);
  const extra = show(snapshot.context as Record<string, unknown>);
  return extra ? `${value}(${extra})` : value;
}

/**
 * Wraps a state assertion or event executor so a failure names the step it happened at:
 * `step 3 →PROCESS_CRASHES→ reconnecting.waiting(attempt 1): <assertion message>`.
 */
export function atStep<T extends unknown[]>(where: () => string, fn: (...args: T) => Promise<void>) {
  return async (...args: T) => {
    try {
      await fn(...args);
    } catch (error) {
      if (error instanceof Error) error.message = `${where()}: ${error.message}`;
      throw error;
    }
  };
}

/** `idle →ENSURE→ starting →HANDSHAKE_SUCCEEDS→ connected.settling` */
export function pathName(path: ModelPath, show?: (context: Record<string, unknown>) => string): string {
  return path.steps
    .map((step, index) => (index === 0 ? formatState(step.state, show) : `→${step.event.type}→ ${formatState(step.state, show)}`))
    .join(' ');
}

function flattenValue(value: unknown): string {
  if (typeof value === 'string') return value;
  return Object.entries(value as Record<string, unknown>)
    .map(([key, child]) => `${key}.${flattenValue(child)}`)
    .join(',');
}

/** The trace entries (`emits` action params) of the model's transition from `previous` on `event`. */
export function expectedEmissions(machine: AnyStateMachine, previous: ModelSnapshot, event: EventObject): string[] {
  const [, actions] = transition(machine, previous, event) as unknown as [unknown, Array<{ type: string; params?: unknown }>];
  return actions.flatMap((action) => (action.type === 'emits' ? ((action.params as { trace: string[] }).trace ?? []) : []));
}

/** Counts which state nodes and transition definitions of `machine` the passing steps reached. */
export class ModelCoverage {
  private readonly states: AnyStateNode[];
  private readonly transitions = new Map<AnyTransitionDefinition, string>();
  private readonly coveredStates = new Set<AnyStateNode>();
  private readonly coveredTransitions = new Set<AnyTransitionDefinition>();

  constructor(private readonly machine: AnyStateMachine) {
    this.states = getStateNodes(machine.root);
    for (const node of [machine.root, ...this.states]) {
      for (const definitions of node.transitions.values()) {
        for (const definition of definitions) this.transitions.set(definition, describeTransition(definition));
      }
    }
  }

  /** Records a step that passed: its transition (from `previous`) and the state it reached. */
  recordStep(previous: ModelSnapshot | undefined, step: ModelStep): void {
    for (const node of this.states) if (step.state.matches(node.path.join('.'))) this.coveredStates.add(node);
    if (!previous) return;
    for (const definition of this.machine.getTransitionData(previous, step.event)) this.coveredTransitions.add(definition);
  }

  get missingStates(): string[] {
    return this.states.filter((node) => !this.coveredStates.has(node)).map((node) => node.path.join('.'));
  }

  get missingTransitions(): string[] {
    return [...this.transitions].filter(([definition]) => !this.coveredTransitions.has(definition)).map(([, label]) => label);
  }

  summary(title: string, pathCount: number): string {
    const states = `${this.coveredStates.size}/${this.states.length}`;
    const transitions = `${this.coveredTransitions.size}/${this.transitions.size}`;
    const lines = [`${title} (${pathMode} paths: ${pathCount}): states ${states}, transitions ${transitions}`];
    for (const state of this.missingStates) lines.push(`  state not covered: ${state}`);
    for (const label of this.missingTransitions) lines.push(`  transition not covered: ${label}`);
    return lines.join('\n');
  }
}

function describeTransition(definition: AnyTransitionDefinition): string {
  const source = definition.source.path.join('.') || '(root)';
  const guard = definition.guard ? ` [${typeof definition.guard === 'string' ? definition.guard : ((definition.guard as { type?: string }).type ?? 'guard')}]` : '';
  const targets = definition.target?.map((node: AnyStateNode) => node.path.join('.')).join(',') ?? '(self)';
  return `${source} →${definition.eventType}${guard}→ ${targets}`;
}
