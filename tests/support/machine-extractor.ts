/**
 * What Stately's tools see of a machine: `@xstate/machine-extractor` (the parser behind the
 * Stately editor's "import from code" and the VS Code extension) run on a machine's source,
 * and its result written as the same lines as the built machine's, so a test can compare
 * them one by one.
 *
 * The extractor is published for xstate 4 and `require`s two of its modules at load time
 * (`xstate/lib/actions`, `xstate/lib/types`, for action-type constants). This project runs
 * xstate 5, so the devDependency `xstate4` (an npm alias of xstate 4) answers those two
 * requests, for the extractor only; nothing else sees xstate 4.
 */
import { createRequire } from 'node:module';
import type { AnyStateMachine } from 'xstate';
import { actionLabel, allNodes, eventLabel, guardLabel, ownTransitions, rootOf, type StateNodeView } from '../../scripts/visualize/statechart.js';

const require = createRequire(import.meta.url);

interface ExtractedMachine {
  toConfig(options: { fileContent: string }): ExtractedState;
}
interface Extractor {
  extractMachinesFromFile(source: string): { machines: ExtractedMachine[] } | null;
}

let extractor: Extractor | undefined;

/** Loads the extractor with its two xstate-4 requests pointed at the `xstate4` alias. */
function loadExtractor(): Extractor {
  if (extractor) return extractor;
  const Module = require('node:module') as { _resolveFilename: (request: string, ...rest: unknown[]) => string };
  const resolve = Module._resolveFilename;
  Module._resolveFilename = function (request: string, ...rest: unknown[]) {
    return resolve.call(this, request.startsWith('xstate/lib/') ? `xstate4/lib/${request.slice('xstate/lib/'.length)}` : request, ...rest);
  };
  try {
    extractor = require('@xstate/machine-extractor') as Extractor;
  } finally {
    Module._resolveFilename = resolve;
  }
  return extractor;
}

/** Runs `read` with console.log and console.warn silenced. */
function quietly<T>(read: () => T): T {
  // The extractor logs each property value it does not evaluate (an action's `params` function,
  // say): the action is kept by its name, which is what the comparison reads.
  const { log, warn } = console;
  console.log = console.warn = () => {};
  try {
    return read();
  } finally {
    console.log = log;
    console.warn = warn;
  }
}

/** The machine config the extractor reads from a source file (the file's one machine). */
export function extractMachineConfig(source: string): ExtractedState {
  const { count, config } = quietly(() => {
    const machines = loadExtractor().extractMachinesFromFile(source)?.machines ?? [];
    return { count: machines.length, config: machines.length === 1 ? machines[0]!.toConfig({ fileContent: source }) : undefined };
  });
  if (!config) throw new Error(`expected one machine in the source, found ${count}`);
  return config;
}

/**
 * How many machines the extractor finds in a source file: what the Stately editor's import from
 * code and the VS Code extension would show (an actor stubbed as `createMachine(...)` is one more).
 */
export function countMachinesInSource(source: string): number {
  return quietly(() => loadExtractor().extractMachinesFromFile(source)?.machines.length ?? 0);
}

// ---------------------------------------------------------------------------------------------
// The extractor's config (xstate 4 shapes: `cond` for a guard, actions as { kind, action })

type Many<T> = T | T[] | undefined;
interface ExtractedAction {
  kind?: string;
  action?: { type?: string };
  type?: string;
}
interface ExtractedTransition {
  target?: string | string[];
  cond?: { type?: string } | string;
  guard?: { type?: string } | string;
  actions?: Many<ExtractedAction | string>;
  description?: string;
}
export interface ExtractedState {
  id?: string;
  initial?: string;
  type?: string;
  entry?: Many<ExtractedAction | string>;
  exit?: Many<ExtractedAction | string>;
  on?: Record<string, Many<ExtractedTransition | string>>;
  after?: Record<string, Many<ExtractedTransition | string>>;
  always?: Many<ExtractedTransition | string>;
  onDone?: Many<ExtractedTransition | string>;
  invoke?: Many<{ id?: string; src?: string; onDone?: Many<ExtractedTransition | string>; onError?: Many<ExtractedTransition | string> }>;
  states?: Record<string, ExtractedState>;
}

const many = <T>(value: Many<T>): T[] => (value === undefined ? [] : Array.isArray(value) ? value : [value]);

function extractedActionName(action: ExtractedAction | string): string {
  if (typeof action === 'string') return action;
  return action.action?.type ?? action.type ?? 'inline';
}

// ---------------------------------------------------------------------------------------------
// One line per fact, the same for both sides

/**
 * A machine as sorted lines: each state with its initial child, entry and exit actions and
 * invoked actors, and each transition as `source --event [guard]--> targets / actions`.
 */
export interface MachineLines {
  states: string[];
  transitions: string[];
}

const transitionLine = (source: string, label: string, guard: string | undefined, targets: string[], actions: string[]) =>
  `${source} --${guard === undefined ? label : `${label} [${guard}]`}--> ${targets.length ? targets.join(', ') : '(internal)'} / ${actions.join(', ')}`;

const stateLine = (name: string, initial: string | undefined, entry: string[], exit: string[], invokes: string[]) =>
  `${name} initial=${initial ?? '-'} entry=[${entry.join(', ')}] exit=[${exit.join(', ')}] invoke=[${invokes.join(', ')}]`;

/** The built machine's lines. */
export function builtMachineLines(machine: AnyStateMachine): MachineLines {
  const nameOf = (node: StateNodeView) => [rootOf(machine).id, ...node.path].join('.');
  const nodes = allNodes(rootOf(machine));
  const config = (node: StateNodeView) => node.config as { entry?: unknown; exit?: unknown };
  const states = nodes.map((node) =>
    stateLine(
      nameOf(node),
      node.initial?.target.length ? node.initial.target.map(nameOf).join(', ') : undefined,
      many(config(node).entry as Many<unknown>).map(actionLabel),
      many(config(node).exit as Many<unknown>).map(actionLabel),
      node.invoke.map((invoke) => `${invoke.id}:${typeof invoke.src === 'string' ? invoke.src : 'inline'}`),
    ),
  );
  const transitions = nodes.flatMap((node) =>
    ownTransitions(node).map((t) =>
      transitionLine(nameOf(node), eventLabel(t), t.guard === undefined ? undefined : guardLabel(t.guard), (t.target ?? []).map(nameOf), t.actions.map(actionLabel)),
    ),
  );
  return { states: states.sort(), transitions: transitions.sort() };
}

/** The extracted config's lines, targets resolved as xstate resolves them. */
export function extractedMachineLines(root: ExtractedState): MachineLines {
  const rootId = root.id ?? '(machine)';
  const states: string[] = [];
  const transitions: string[] = [];

  const resolve = (target: string, sourceName: string, parentName: string | undefined): string => {
    if (target.startsWith('#')) return target.slice(1);
    if (target.startsWith('.')) return `${sourceName}${target}`;
    return `${parentName ?? rootId}.${target}`;
  };

  const walk = (node: ExtractedState, name: string, parentName: string | undefined) => {
    const invokes = many(node.invoke);
    states.push(
      stateLine(
        name,
        node.initial === undefined ? undefined : `${name}.${node.initial}`,
        many(node.entry).map(extractedActionName),
        many(node.exit).map(extractedActionName),
        invokes.map((invoke) => `${invoke.id ?? '(no id)'}:${invoke.src ?? 'inline'}`),
      ),
    );
    const add = (label: string, value: Many<ExtractedTransition | string>) => {
      for (const raw of many(value)) {
        const t: ExtractedTransition = typeof raw === 'string' ? { target: raw } : raw;
        const guard = t.cond ?? t.guard;
        transitions.push(
          transitionLine(
            name,
            label,
            guard === undefined ? undefined : typeof guard === 'string' ? guard : (guard.type ?? 'inline'),
            many(t.target).map((target) => resolve(target, name, parentName)),
            many(t.actions).map(extractedActionName),
          ),
        );
      }
    };
    // `on: { 'xstate.done.actor.x': … }` is how a spawned child's outcome is handled: labelled as the built machine labels it.
    for (const [event, value] of Object.entries(node.on ?? {})) add(eventLabel({ eventType: event, actions: [] }), value);
    for (const invoke of invokes) {
      add(`onDone(${invoke.id})`, invoke.onDone);
      add(`onError(${invoke.id})`, invoke.onError);
    }
    add('onDone', node.onDone);
    for (const [delay, value] of Object.entries(node.after ?? {})) add(/^\d+$/.test(delay) ? `after ${delay}ms` : `after ${delay}`, value);
    add('always', node.always);
    for (const [key, child] of Object.entries(node.states ?? {})) walk(child, `${name}.${key}`, name);
  };
  walk(root, rootId, undefined);
  return { states: states.sort(), transitions: transitions.sort() };
}
