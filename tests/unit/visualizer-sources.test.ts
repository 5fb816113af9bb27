/**
 * The self-contained `visualizations/<name>.machine.ts` files (for the Stately editor's "Import
 * from code", https://stately.ai/editor) must define the same statechart as the real machines:
 * each is imported and its normalized `toJSON()` definition compared with the real machine's, and
 * Stately's parser (@xstate/machine-extractor) must find exactly that one machine in each. The
 * generator itself is checked on the example machine, on a machine using the less common
 * features, and against deliberate edits.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import * as xstate from 'xstate';
import { and, assign, createMachine, fromCallback, fromPromise, not, setup, stateIn, type AnyStateMachine } from 'xstate';
import { exampleMachine } from '../../scripts/visualize/example.machine.js';
import { toStatelyJson } from '../../scripts/visualize/render.js';
import { asArray, isObj } from '../../scripts/visualize/statechart.js';
import { standaloneExportName, toStandaloneSource } from '../../scripts/visualize/standalone-source.js';
import { countMachinesInSource, extractMachineConfig } from '../support/machine-extractor.js';

type Json = unknown;

/** A guard reference in one form: `{ type, params? }`; higher-order guards keep their inner guards. */
function canonicalGuard(g: unknown): Json {
  if (typeof g === 'string') return { type: g };
  if (typeof g !== 'function') return normalize(g);
  const fn = g as { name: string; check?: unknown; guards?: unknown[]; stateValue?: unknown };
  if (fn.check && Array.isArray(fn.guards)) return { type: fn.name, guards: fn.guards.map(canonicalGuard) };
  if (fn.check && 'stateValue' in fn) return { type: 'stateIn', stateValue: normalize(fn.stateValue) };
  return { type: fn.name };
}

/** An action reference in one form: `{ type, params? }`; an inline built-in by its type, a function by its name. */
function canonicalAction(a: unknown): Json {
  if (typeof a === 'string') return { type: a };
  if (typeof a !== 'function') return normalize(a);
  return { type: 'resolve' in a && 'type' in a && typeof a.type === 'string' ? a.type : a.name };
}

/**
 * Normalizes a `toJSON()` definition so that the generated copy and the real machine are equal
 * exactly when their statecharts are. What is changed, and why:
 * - `toJSON()` of nested values (transitions, invokes, initial transitions) is applied, as
 *   `JSON.stringify` would; object keys are sorted and `undefined` values dropped, as JSON would.
 * - Guards and actions are written in one form, `{ type, params? }`: `'x'` and `{ type: 'x' }` are
 *   the same reference, and a function (an inline implementation the copy cannot contain) is
 *   compared by its name, a built-in such as `assign(...)` by its type (`xstate.assign`), and
 *   `not`/`and`/`or`/`stateIn` by name plus inner guards or state value.
 * - Every other function is removed: context, `input`, `output` and `params` factories are
 *   implementation code that a self-contained copy cannot hold (`JSON.stringify` drops them too).
 * Nothing else is removed: ids, keys, state types, document order, initial states, event types
 * (which embed delay names and invoke ids), targets, `reenter`, guard and action names and static
 * params, delay names, invoke ids, srcs and systemIds, descriptions, tags, meta and history all
 * have to be equal.
 */
function normalize(v: unknown, key?: string): Json {
  if (isObj(v) && typeof v.toJSON === 'function') v = v.toJSON();
  if (key === 'guard') return v === undefined ? undefined : canonicalGuard(v);
  if (key === 'actions' || key === 'entry' || key === 'exit') return asArray(v).map(canonicalAction);
  if (typeof v === 'function' || v === undefined) return undefined;
  if (Array.isArray(v)) return v.map((x) => normalize(x)).filter((x) => x !== undefined);
  if (!isObj(v)) return v;
  const out: Record<string, Json> = {};
  for (const k of Object.keys(v).sort()) {
    const x = normalize(v[k], k);
    if (x !== undefined) out[k] = x;
  }
  return out;
}

interface NodeLike {
  always?: unknown[];
  states: Record<string, NodeLike>;
}

/**
 * `machine.toJSON()`, normalized, with each state's `always` transitions added: xstate 5.33's
 * definition lists only `on`/`after`/onDone/onError transitions, and eventless ones are structure too.
 */
function definitionOf(machine: AnyStateMachine): Json {
  const withAlways = (def: Record<string, unknown>, node: NodeLike): Record<string, unknown> => ({
    ...def,
    always: node.always,
    states: Object.fromEntries(
      Object.entries(def.states as Record<string, Record<string, unknown>>).map(([k, d]) => [k, withAlways(d, node.states[k]!)]),
    ),
  });
  return normalize(withAlways(machine.toJSON() as unknown as Record<string, unknown>, machine.root as unknown as NodeLike));
}

/** The module specifiers a generated source imports (static `import ... from`, `import()` and `require()`). */
function importsOf(source: string): string[] {
  return [...source.matchAll(/\bfrom\s+'([^']+)'|\bimport\s*\(\s*'([^']+)'|\brequire\s*\(\s*'([^']+)'/g)].map((m) => m[1] ?? m[2] ?? m[3]!);
}

/** Runs a generated source as plain JavaScript, with `xstate` as its only dependency. */
function evaluate(source: string): AnyStateMachine {
  const body = source
    .replace(/^import \{([^}]*)\} from 'xstate';$/m, 'const {$1} = xstate;')
    .replace(/^export const \w+ = /m, 'return ');
  return new Function('xstate', body)(xstate) as AnyStateMachine;
}

describe('standalone source: generator', () => {
  const source = toStandaloneSource(exampleMachine, { name: 'example', source: 'scripts/visualize/example.machine.ts' });

  it('imports nothing but xstate and exports <name>Machine', () => {
    expect(importsOf(source)).toEqual(['xstate']);
    expect(source).toMatch(/^export const exampleMachine = setup\(\{$/m);
    expect(standaloneExportName('agent')).toBe('agentMachine');
    expect(standaloneExportName('my-agent_x')).toBe('myAgentXMachine');
  });

  it('keeps named delays and stubs actions, guards, actors and delays by name', () => {
    for (const line of [
      "after: { backoff: { target: 'starting', description: 'Exponential backoff elapsed.' } }",
      'delays: { backoff: 1000, settleTime: 250, heartbeatTimeout: 30000 }',
      'incrementAttempts: () => {},',
      'canRetry: () => true',
      'spawnProcess: fromPromise(() => new Promise(() => {})),',
      'heartbeat: fromCallback(() => {}),',
      "guard: and(['hasPendingWork', not('isFatal')]),",
    ]) expect(source).toContain(line);
  });

  it('defines the same statechart as the example machine', () => {
    const copy = evaluate(source);
    expect(definitionOf(copy)).toEqual(definitionOf(exampleMachine));
    expect(toStatelyJson(copy)).toBe(toStatelyJson(exampleMachine));
  });

  it('is deterministic', () => {
    expect(toStandaloneSource(exampleMachine, { name: 'example', source: 'scripts/visualize/example.machine.ts' })).toBe(source);
  });

  // Each edit changes one thing the comparison must catch.
  const edits: [what: string, from: RegExp, to: string][] = [
    ['a target', /target: '#example\.failed'/, "target: '#example.stopped'"],
    ['an always target', /(always: \{\s*target: )'busy'/, "$1'settling'"],
    ['a guard name', /guard: 'canRetry'/, "guard: 'mayRetry'"],
    ['a guard inside not()', /not\('isFatal'\)/, "not('isBroken')"],
    ['a guard of an always transition', /'hasPendingWork'/, "'hasWork'"],
    ['an action name', /actions: 'takeWork'/, "actions: 'grabWork'"],
    ['an entry action', /entry: 'incrementAttempts'/, "entry: 'countAttempt'"],
    ['an exit action', /exit: 'releaseResources'/, "exit: 'cleanUp'"],
    ['a delay name', /after: \{ backoff:/, 'after: { pause:'],
    ['an invoke id', /id: 'spawner'/, "id: 'launcher'"],
    ['an invoke src', /src: 'heartbeat'/, "src: 'pulse'"],
    ['a state description', /'A heartbeat was missed\.'/, "'A heartbeat was lost.'"],
    ['a transition description', /'Unrecoverable crash\.'/, "'Fatal crash.'"],
    ['an event name', /'turn\.done'/, "'turn.end'"],
    ['a state type', /failed: \{ type: 'final', /, 'failed: { '],
    ['a state name', /\bstopped\b/g, 'halted'],
    ['reenter', /target: 'busy', guard: not/, 'target: \'busy\', reenter: true, guard: not'],
  ];
  for (const [what, from, to] of edits) {
    it(`notices a change of ${what}`, () => {
      const [setupPart, configPart] = source.split(').createMachine(');
      const edited = `${setupPart}).createMachine(${configPart!.replace(from, to)}`;
      expect(edited, `pattern ${from} not found`).not.toBe(source);
      expect(definitionOf(evaluate(edited))).not.toEqual(definitionOf(exampleMachine));
    });
  }

  it('copies less common features: inline logic, built-ins, numeric delays, stateIn, params, child machines', () => {
    const child = createMachine({ id: 'child', initial: 'a', states: { a: {} } });
    const machine = setup({
      actors: { child, load: fromPromise(async () => 1), listen: fromCallback(() => undefined) },
      actions: { say: (_, params: { text: string }) => void params, log: () => undefined },
      guards: { ok: () => true },
      delays: { slow: () => 5000 },
    }).createMachine({
      id: 'odd',
      initial: 'a',
      context: { n: 1 },
      on: { 'go.*': { target: '.b', reenter: true, actions: { type: 'say', params: { text: 'hi' } } } },
      states: {
        a: {
          tags: ['start'],
          meta: { note: 'x', fn: () => 1 },
          invoke: [
            { src: fromPromise(async () => 2), onDone: 'b' },
            { id: 'kid', src: 'child', input: () => ({}), onSnapshot: { actions: 'log' } },
          ],
          after: { 1000: 'b', slow: { target: 'b', guard: stateIn('#odd.b') } },
          entry: [assign({ n: 2 }), { type: 'say', params: () => ({ text: 'dynamic' }) }],
          on: { x: { guard: and(['ok', { type: 'ok', params: { level: 1 } }]), actions: ['log', assign({ n: 3 })] } },
        },
        b: {
          initial: 'c',
          onDone: 'd',
          states: { c: { always: { guard: not('ok'), target: 'h' } }, h: { type: 'history', history: 'deep' }, f: { type: 'final' } },
        },
        d: { invoke: { id: 'l', src: 'listen' }, type: 'final', output: { done: true } },
      },
    });
    const text = toStandaloneSource(machine, { name: 'odd', source: 'odd.ts' });
    expect(importsOf(text)).toEqual(['xstate']);
    for (const line of [
      "'xstate.invoke.0.odd.a': fromPromise(() => new Promise(() => {})),", // inline logic, named as xstate names it
      "    // Stub: the real `child` is another machine (not visualized).\n    // Callback logic, not createMachine(), so that this file holds one machine for Stately's parser.\n    child: fromCallback(() => {}),",
      "actions: { say: () => {}, log: () => {}, 'xstate.assign': () => {} },",
      "entry: [{ type: 'xstate.assign' }, { type: 'say' }],", // dynamic params dropped
      "guard: stateIn('#odd.b')",
      'delays: { slow: 1000 }',
      "meta: { note: 'x' },", // the function in meta dropped
    ]) expect(text).toContain(line);
    expect(text).toContain(' * A child machine is callback logic too: the real child is another machine file (see its comment).');
    const copy = evaluate(text);
    expect(definitionOf(copy)).toEqual(definitionOf(machine));
    expect(countMachinesInSource(text)).toBe(1);
  });

  it("names a child machine's files when given them", () => {
    const child = createMachine({ id: 'child' });
    const machine = setup({ actors: { kid: child } }).createMachine({ id: 'parent', invoke: { id: 'kid', src: 'kid' } });
    const text = toStandaloneSource(machine, {
      name: 'parent',
      source: 'parent.ts',
      machineFiles: (id) => (id === 'child' ? { source: 'machines/child.machine.ts', standalone: 'child.machine.ts' } : undefined),
    });
    expect(text).toContain(
      '    // Stub: the real `child` is another machine, machines/child.machine.ts\n    // (self-contained copy: child.machine.ts, beside this file).\n',
    );
    expect(text).not.toContain("createMachine({ id: 'child' })");
    expect(countMachinesInSource(text)).toBe(1);
  });

  it("Stately's parser finds one machine in the example's copy, and would count an actor stubbed as a machine", () => {
    expect(countMachinesInSource(source)).toBe(1);
    expect(extractMachineConfig(source).id).toBe(exampleMachine.id);
    const withMachineStub = source.replace("import { ", "import { createMachine, ").replace(/^ {2}actors: \{$/m, "  actors: {\n    child: createMachine({ id: 'child' }),");
    expect(withMachineStub).not.toBe(source);
    expect(countMachinesInSource(withMachineStub)).toBe(2);
  });
});

// The real machines and their checked-in copies in visualizations/.
const machinesUrl = new URL('../../machines/index.ts', import.meta.url);
const hasMachines = existsSync(machinesUrl);
let registry: Record<string, AnyStateMachine> = {};
let loadError: unknown;
try {
  if (hasMachines) registry = ((await import(/* @vite-ignore */ machinesUrl.href)) as { visualizedMachines: Record<string, AnyStateMachine> }).visualizedMachines;
} catch (err) {
  loadError = err; // reported by a test below, so the generator tests above still run
}

describe('standalone source: checked-in visualizations/<name>.machine.ts', () => {
  it.runIf(loadError !== undefined)('machines/index.ts loads', () => {
    throw loadError;
  });

  for (const [name, machine] of Object.entries(registry)) {
    const url = new URL(`../../visualizations/${name}.machine.ts`, import.meta.url);

    it(`visualizations/${name}.machine.ts imports only xstate and defines the same statechart as ${name}`, async () => {
      expect(existsSync(url), `visualizations/${name}.machine.ts is missing: run npm run viz`).toBe(true);
      expect(importsOf(readFileSync(url, 'utf8'))).toEqual(['xstate']);
      const mod = (await import(/* @vite-ignore */ url.href)) as Record<string, AnyStateMachine>;
      const copy = mod[standaloneExportName(name)];
      expect(copy, `visualizations/${name}.machine.ts exports no ${standaloneExportName(name)}`).toBeDefined();
      expect(definitionOf(copy!), `visualizations/${name}.machine.ts is out of date: run npm run viz`).toEqual(definitionOf(machine));
    });
  }
});

// What the Stately editor's "Import from code" and the VS Code extension see: every checked-in
// copy is one machine, with the real machine's id (a child machine stubbed as `createMachine(...)`
// would be a second, empty one).
const visualizationsDir = new URL('../../visualizations/', import.meta.url);
const standaloneFiles = existsSync(visualizationsDir) ? readdirSync(visualizationsDir).filter((f) => f.endsWith('.machine.ts')).sort() : [];

describe("standalone source: checked-in visualizations/*.machine.ts as Stately's parser sees them", () => {
  it.each(standaloneFiles)('visualizations/%s holds exactly one machine, with the real machine\'s id', (file) => {
    const machine = registry[file.slice(0, -'.machine.ts'.length)];
    expect(machine, `visualizations/${file} belongs to no machine in visualizedMachines: run npm run viz`).toBeDefined();
    const source = readFileSync(new URL(file, visualizationsDir), 'utf8');
    expect(countMachinesInSource(source), `machines Stately's parser finds in visualizations/${file}`).toBe(1);
    expect(extractMachineConfig(source).id).toBe(machine!.id);
  });
});
