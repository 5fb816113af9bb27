/**
 * Transition coverage of the real machines: which states and transitions of the machines
 * in `visualizedMachines` (machines/index.ts) the model-based and integration tests make the
 * runtime actually take, observed through XState inspection.
 *
 * How it works (details in tests/coverage/README.md):
 * - Recording (`transition-recorder.setup.ts`, a vitest setup file): in a test file under
 *   tests/model/ or tests/integration/ only, `xstate`'s `createActor` is wrapped (vi.doMock,
 *   which also reaches the library's own modules) so that every root actor gets one more
 *   inspection observer, composed with any `inspect` the caller passed. Inspection is
 *   system-wide, so spawned and invoked children (agents, sessions) are seen too. Unit tests
 *   drive machines with fake actors and are not recorded.
 * - What counts: every TransitionDefinition in a `@xstate.microstep` event (event, eventless
 *   `always`, delayed `after`, invoke onDone/onError), every state node of a machine
 *   snapshot (microstep and `@xstate.snapshot` events), and the sources of those transitions
 *   with their ancestors (an initial `always` leaves its state before any snapshot). Which
 *   machine: the node's root id, so provided copies (`machine.provide(...)`) count for the
 *   machine they copy, and every actor of a machine (each agent, each session) adds to it.
 * - Keys are derived from the machine object alone, by the same code for the universe and
 *   for what ran, and read like the diagrams (scripts/visualize/statechart.ts labels):
 *   state `agent.reconnecting.waiting` (root id + path; the root itself is not a state), and
 *   transition `agent.reconnecting.waiting --after backoff--> agent.reconnecting.spawning`,
 *   `supervisor.running --agent.ensure [isUnknownAgent]--> (internal)`,
 *   `session.prompting --onDone(promptTurn)--> session.completed`. Delays show their name,
 *   never xstate's `xstate.after.<delay>.<stateId>` event. Transitions of one source whose
 *   keys would be equal get ` #1`, ` #2`… in document order.
 * - Persistence: each recorded test file writes its keys to `recordsDir` (in
 *   node_modules/.cache, so nothing to ignore in git) when it starts and again after its
 *   last hook; vitest runs files in separate workers. The main run's globalSetup clears it.
 * - The check (`transition-coverage.check.ts`, its own vitest config, run by `npm test`
 *   after the main run): every state and transition is taken or listed in exclusions.json
 *   with a reason; an exclusion that was taken or names nothing fails too.
 *
 * This module is imported by the setup file before the mock is registered, so it must not
 * load `xstate` at run time (type imports only).
 */
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AnyStateMachine, InspectionEvent } from 'xstate';
import { allNodes, eventLabel, guardLabel, ownTransitions, rootOf, type StateNodeView, type Transition } from '../../scripts/visualize/statechart.js';

/** A state node as the runtime has it: the view the renderers read, plus its machine. */
type StateNode = StateNodeView & { machine: { id: string }; parent?: StateNode };
/** A TransitionDefinition as the runtime has it: the renderers' view plus its source node. */
type TransitionDefinition = Transition & { source: StateNode };

export const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
/** Where the records of the last run live: one JSON file per recorded test file. */
export const recordsDir = join(repoRoot, 'node_modules', '.cache', 'agentvisor-transition-coverage');
/** Test files whose runs count: those that drive the real runtime. */
export const recordedTestDirs = ['tests/model', 'tests/integration'];
export const exclusionsFile = fileURLToPath(new URL('./exclusions.json', import.meta.url));

// ---------------------------------------------------------------------------------------------
// Keys

const stateNames = new WeakMap<object, string>();
const transitionKeys = new WeakMap<object, string>();

/** `agent.reconnecting.waiting`: the machine's root id and the node's path. */
export function stateName(node: StateNode): string {
  let name = stateNames.get(node);
  if (name === undefined) {
    name = [node.machine.id, ...node.path].join('.');
    stateNames.set(node, name);
  }
  return name;
}

/** Keys of every transition a node declares, in document order (cached per definition). */
function keysOfNode(node: StateNode): string[] {
  const transitions = ownTransitions(node) as TransitionDefinition[];
  const bases = transitions.map((t) => baseKey(node, t));
  return transitions.map((t, i) => {
    const base = bases[i]!;
    const twins = bases.filter((other) => other === base).length;
    const key = twins > 1 ? `${base} #${bases.slice(0, i + 1).filter((other) => other === base).length}` : base;
    transitionKeys.set(t, key);
    return key;
  });
}

function baseKey(source: StateNode, t: Transition): string {
  const label = t.guard === undefined ? eventLabel(t) : `${eventLabel(t)} [${guardLabel(t.guard)}]`;
  const targets = t.target?.length ? (t.target as StateNode[]).map(stateName).join(', ') : '(internal)';
  return `${stateName(source)} --${label}--> ${targets}`;
}

/** The key of a transition definition taken at run time (computed once per definition). */
export function transitionKey(t: TransitionDefinition): string {
  const cached = transitionKeys.get(t);
  if (cached !== undefined) return cached;
  keysOfNode(t.source);
  // A definition its source does not list cannot happen in xstate 5; the check reports it.
  return transitionKeys.get(t) ?? baseKey(t.source, t);
}

export interface MachineKeys {
  states: string[];
  transitions: string[];
}

/** Every state (the root excepted) and every transition of a machine. */
export function universeOf(machine: AnyStateMachine): MachineKeys {
  const nodes = allNodes(rootOf(machine)) as StateNode[];
  return { states: nodes.slice(1).map(stateName), transitions: nodes.flatMap(keysOfNode) };
}

// ---------------------------------------------------------------------------------------------
// Recording

/** Collects what the actors of one test file take, per machine id; O(1) per inspection event. */
export class TransitionRecorder {
  private readonly taken = new Map<string, { states: Set<string>; transitions: Set<string> }>();

  /** An inspection observer: pass it as (or along with) `createActor`'s `inspect`. */
  readonly observe = (event: InspectionEvent): void => {
    if (event.type === '@xstate.microstep') {
      for (const t of event._transitions as unknown as TransitionDefinition[]) {
        const keys = this.of(t.source);
        keys.transitions.add(transitionKey(t));
        // The source was active: this counts the states that an initial `always` leaves before any snapshot shows them.
        for (let node: StateNode | undefined = t.source; node?.parent; node = node.parent) keys.states.add(stateName(node));
      }
      this.recordStates(event.snapshot);
    } else if (event.type === '@xstate.snapshot') this.recordStates(event.snapshot);
  };

  private recordStates(snapshot: unknown): void {
    const nodes = (snapshot as { _nodes?: StateNode[] })._nodes; // only machine snapshots have them
    if (!nodes) return;
    for (const node of nodes) if (node.parent) this.of(node).states.add(stateName(node));
  }

  private of(node: StateNode) {
    let keys = this.taken.get(node.machine.id);
    if (!keys) this.taken.set(node.machine.id, (keys = { states: new Set(), transitions: new Set() }));
    return keys;
  }

  /** Writes (or rewrites) the record of `testFile`. */
  write(testFile: string): void {
    const machines = Object.fromEntries(
      [...this.taken].sort(([a], [b]) => a.localeCompare(b)).map(([id, keys]) => [id, { states: [...keys.states].sort(), transitions: [...keys.transitions].sort() }]),
    );
    const record: TestFileRecord = { testFile: repoPath(testFile), machines };
    mkdirSync(recordsDir, { recursive: true });
    writeFileSync(join(recordsDir, `${record.testFile.replaceAll('/', '__')}.json`), `${JSON.stringify(record, null, 1)}\n`);
  }
}

// ---------------------------------------------------------------------------------------------
// Records and test files

export interface TestFileRecord {
  /** Relative to the repository, with `/`. */
  testFile: string;
  machines: Record<string, MachineKeys>;
}

const repoPath = (file: string) => relative(repoRoot, file).split(sep).join('/');

/** Whether a test file drives the real runtime, so what its actors take counts. */
export function isRecordedTestFile(file: string): boolean {
  const path = repoPath(file);
  return recordedTestDirs.some((dir) => path.startsWith(`${dir}/`));
}

/** Every test file whose record the check needs, relative to the repository. */
export function recordedTestFiles(): string[] {
  return recordedTestDirs
    .flatMap((dir) => readdirSync(join(repoRoot, dir), { recursive: true, encoding: 'utf8' }).map((file) => `${dir}/${file.split(sep).join('/')}`))
    .filter((file) => file.endsWith('.test.ts'))
    .sort();
}

/** The records of the last run, by test file. */
export function readRecords(): Map<string, TestFileRecord> {
  let files: string[] = [];
  try {
    files = readdirSync(recordsDir).filter((file) => file.endsWith('.json'));
  } catch {
    // no run yet
  }
  const records = files.map((file) => JSON.parse(readFileSync(join(recordsDir, file), 'utf8')) as TestFileRecord);
  return new Map(records.map((record) => [record.testFile, record]));
}

export function clearRecords(): void {
  rmSync(recordsDir, { recursive: true, force: true });
}

export interface Exclusion {
  machine: string;
  key: string;
  reason: string;
}

/** exclusions.json: `{ "about": "...", "exclusions": [{ machine, key, reason }] }`. */
export function readExclusions(): Exclusion[] {
  return (JSON.parse(readFileSync(exclusionsFile, 'utf8')) as { exclusions: Exclusion[] }).exclusions;
}
