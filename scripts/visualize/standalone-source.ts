/**
 * Renders an XState v5 machine as ONE self-contained source file for the Stately editor's
 * "Import from code" (https://stately.ai/editor): `import { setup, ... } from 'xstate'`, then
 * `export const <name>Machine = setup({ actions, guards, actors, delays }).createMachine({ ... })`.
 *
 * Everything is derived from the machine object: the config is the machine's own `config`,
 * printed as a literal in its authored shape and key order, minus what only exists as code
 * (context factories, `input`/`output`/`params` functions). Implementations become stubs under
 * their real names: actions do nothing, guards pass, delays keep a numeric value or become
 * {@link STUB_DELAY_MS}, actors never finish. A child machine is stubbed as callback logic too, with a
 * comment naming its own file: an empty `createMachine(...)` would be a second machine to Stately's
 * parser (@xstate/machine-extractor), and the file has to hold exactly one.
 * Higher-order guards are rebuilt with `not`/`and`/`or`/`stateIn`. The result is plain
 * JavaScript (no type annotations), so it also reads as TypeScript. Pure and deterministic.
 */
import { fromPromise, type AnyStateMachine } from 'xstate';
import { asArray, isObj, rootOf, type StateNodeView as Node } from './statechart.js';

/** Stub value of a delay that the real machine computes from context. */
export const STUB_DELAY_MS = 1000;
const WIDTH = 100;

/** Options for {@link toStandaloneSource}. */
export interface StandaloneOptions {
  /** Registry name of the machine: the export is `<camelCase name>Machine`. */
  name: string;
  /** Repository-relative source file of the real machine, named in the header comment. */
  source: string;
  /**
   * The files of another machine, by its id: named in the comment on the stub of a child machine
   * (undefined: a machine that is not visualized, named by its id only).
   */
  machineFiles?: (id: string) => MachineFiles | undefined;
}

/** Where a visualized machine lives. */
export interface MachineFiles {
  /** Repository-relative source file of the real machine. */
  source: string;
  /** File name of its self-contained copy, in the same folder as this one. */
  standalone: string;
}

/** The exported constant of a generated file: `agent` → `agentMachine`, `my-agent` → `myAgentMachine`. */
export function standaloneExportName(name: string): string {
  const camel = name.replace(/[-_]+([A-Za-z0-9])/g, (_, c: string) => c.toUpperCase()).replace(/[-_]/g, '');
  return `${/^[0-9]/.test(camel) ? `m${camel}` : camel}Machine`;
}

// ---------------------------------------------------------------------------------------------
// A tiny code model: plain values print as literals, `Code` as-is (its comment lines, if any,
// on the lines above its entry).

class Code {
  constructor(
    readonly text: string,
    readonly comment: readonly string[] = [],
  ) {}
}
const code = (text: string, comment: readonly string[] = []): Code => new Code(text, comment);

const quote = (s: string): string =>
  // eslint-disable-next-line no-control-regex -- escaping control characters in a string literal is the point
  `'${s.replace(/[\\'\u2028\u2029\u0000-\u001f]/g, (c) => {
    const named: Record<string, string> = { '\\': '\\\\', "'": "\\'", '\n': '\\n', '\r': '\\r', '\t': '\\t' };
    return named[c] ?? `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;
  })}'`;
const keyText = (k: string): string => (/^[A-Za-z_$][\w$]*$/.test(k) || /^(0|[1-9][0-9]*)$/.test(k) ? k : quote(k));

/** A value as source: one line when it fits in {@link WIDTH} columns and has no comments, else one entry per line. */
function print(v: unknown, indent: string, column: number): string {
  if (v instanceof Code) return v.text;
  if (typeof v === 'string') return quote(v);
  if (typeof v === 'number' || typeof v === 'boolean' || v === null) return String(v);
  const entries: [key: string | null, value: unknown][] = Array.isArray(v)
    ? v.map((x) => [null, x])
    : Object.entries(v as Record<string, unknown>).map(([k, x]) => [keyText(k), x]);
  const [open, close] = Array.isArray(v) ? ['[', ']'] : ['{', '}'];
  if (entries.length === 0) return `${open}${close}`;
  const pad = Array.isArray(v) ? '' : ' ';
  const flat = `${open}${pad}${entries.map(([k, x]) => (k === null ? '' : `${k}: `) + print(x, '', 0)).join(', ')}${pad}${close}`;
  const commented = entries.some(([, x]) => x instanceof Code && x.comment.length > 0);
  if (!commented && !flat.includes('\n') && column + flat.length <= WIDTH) return flat;
  const inner = `${indent}  `;
  const lines = entries.map(([k, x]) => {
    const head = `${inner}${k === null ? '' : `${k}: `}`;
    const comment = x instanceof Code ? x.comment.map((line) => `${inner}// ${line}\n`).join('') : '';
    return `${comment}${head}${print(x, inner, head.length)},`;
  });
  return `${open}\n${lines.join('\n')}\n${indent}${close}`;
}

/** JSON-like data with functions (and undefined) removed: they are implementations, not structure. */
function data(v: unknown): unknown {
  if (v instanceof Code) return v;
  if (typeof v === 'function' || v === undefined || typeof v === 'symbol') return undefined;
  if (typeof v === 'bigint') return code(`${v}n`);
  if (Array.isArray(v)) return v.map(data).filter((x) => x !== undefined);
  if (!isObj(v)) return v;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) if (data(x) !== undefined) out[k] = data(x);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Config → code, collecting the names to stub in setup().

/** Names referenced by the config, in first-use order, and the xstate helpers it needs. */
interface Names {
  actions: Set<string>;
  guards: Set<string>;
  actors: Map<string, unknown>;
  delays: Set<string>;
  imports: Set<string>;
  /** Ids of the child machines stubbed as callback logic. */
  childMachines: Set<string>;
}

/** A reference by name (`'x'` or `{ type: 'x', params }`) as written; the name goes into `into`. */
function referenced(ref: unknown, into: Set<string>): unknown {
  const name = isObj(ref) ? ref.type : ref;
  if (typeof name === 'string') into.add(name);
  return data(ref);
}

/** An action as written (name, `{ type, params }`) or, for an inline function, `{ type: <its name> }`. */
function actionCode(a: unknown, names: Names): unknown {
  if (typeof a !== 'function') return referenced(a, names.actions);
  // Inline built-ins (`assign(...)`) serialize as their type, other functions as their name.
  const name = 'resolve' in a && 'type' in a && typeof a.type === 'string' ? a.type : a.name;
  if (!name) return code('() => {}');
  names.actions.add(name);
  return { type: name };
}

/** A guard as written; `not`/`and`/`or`/`stateIn` are rebuilt, other inline functions named. */
function guardCode(g: unknown, names: Names): unknown {
  if (typeof g !== 'function') return referenced(g, names.guards);
  const fn = g as { name: string; check?: unknown; guards?: unknown[]; stateValue?: unknown };
  if (fn.check && Array.isArray(fn.guards) && ['not', 'and', 'or'].includes(fn.name)) {
    names.imports.add(fn.name);
    const inner = fn.guards.map((x) => guardCode(x, names));
    return code(`${fn.name}(${print(fn.name === 'not' ? inner[0] : inner, '', 0)})`);
  }
  if (fn.check && 'stateValue' in fn) {
    names.imports.add('stateIn');
    return code(`stateIn(${print(data(fn.stateValue), '', 0)})`);
  }
  if (!fn.name) return code('() => true');
  names.guards.add(fn.name);
  return fn.name;
}

const mapEach = (v: unknown, f: (x: unknown) => unknown): unknown => (Array.isArray(v) ? v.map(f) : f(v));

/** A transition (target string, object or array of them), keys in authored order. */
function transitionCode(t: unknown, names: Names): unknown {
  return mapEach(t, (one) => {
    if (!isObj(one)) return data(one);
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(one)) {
      const value = k === 'guard' ? guardCode(v, names) : k === 'actions' ? mapEach(v, (a) => actionCode(a, names)) : data(v);
      if (value !== undefined) out[k] = value;
    }
    return out;
  });
}

const TRANSITION_MAPS = new Set(['on', 'after']);
const TRANSITIONS = new Set(['always', 'onDone', 'route', 'initial']);

/** One state node's config; child states and invokes are read through the node. */
function stateCode(node: Node, names: Names): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(node.config)) {
    let value: unknown;
    if (k === 'types') continue; // type-only (`{} as ...`)
    else if (k === 'states') value = Object.fromEntries(Object.keys(node.states).map((c) => [c, stateCode(node.states[c]!, names)]));
    else if (TRANSITION_MAPS.has(k) && isObj(v)) {
      value = Object.fromEntries(Object.entries(v).map(([event, t]) => [event, transitionCode(t, names)]));
      if (k === 'after') for (const delay of Object.keys(v)) if (Number.isNaN(Number(delay))) names.delays.add(delay);
    } else if (TRANSITIONS.has(k)) value = transitionCode(v, names);
    else if (k === 'entry' || k === 'exit') value = mapEach(v, (a) => actionCode(a, names));
    else if (k === 'invoke') {
      const invokes = asArray(v).map((inv, i) => invokeCode(inv, node.invoke[i]!.src, names));
      value = Array.isArray(v) ? invokes : invokes[0];
    } else value = data(v); // context factories and other functions drop out here
    if (value !== undefined) out[k] = value;
  }
  return out;
}

/** An invoke; inline logic is named by the `src` xstate resolved for it (`xstate.invoke.0.<id>`). */
function invokeCode(inv: unknown, src: string, names: Names): unknown {
  if (!isObj(inv)) return data(inv);
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(inv)) {
    const value = k === 'src' ? src : ['onDone', 'onError', 'onSnapshot'].includes(k) ? transitionCode(v, names) : data(v);
    if (value !== undefined) out[k] = value;
  }
  if (!names.actors.has(src)) names.actors.set(src, inv.src);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Stubs

// Every fromPromise() logic shares the same `transition` function source text.
const PROMISE_TRANSITION = String(fromPromise(async () => undefined).transition);

/**
 * A stub of the same kind as the real logic where that adds no machine: a promise, or else a
 * callback (also for observable/transition logic: the closest stub that never finishes). A child
 * machine is a callback too, never `createMachine(...)`: Stately's parser would show that as a
 * second, empty machine. A comment says where the real child machine is.
 */
function actorStub(logic: unknown, names: Names, machineFiles: StandaloneOptions['machineFiles']): Code {
  if (isObj(logic) && logic.__xstatenode === true) {
    const id = (logic as { id: string }).id;
    const files = machineFiles?.(id);
    names.childMachines.add(id);
    names.imports.add('fromCallback');
    const where = files
      ? [`Stub: the real \`${id}\` is another machine, ${files.source}`, `(self-contained copy: ${files.standalone}, beside this file).`]
      : [`Stub: the real \`${id}\` is another machine (not visualized).`];
    return code('fromCallback(() => {})', [
      ...where,
      "Callback logic, not createMachine(), so that this file holds one machine for Stately's parser.",
    ]);
  }
  if (isObj(logic) && String(logic.transition) === PROMISE_TRANSITION) {
    names.imports.add('fromPromise');
    return code('fromPromise(() => new Promise(() => {}))');
  }
  names.imports.add('fromCallback');
  return code('fromCallback(() => {})');
}

/** The `setup({ actions, guards, actors, delays })` argument: a stub per name. */
function setupCode(machine: AnyStateMachine, names: Names, machineFiles: StandaloneOptions['machineFiles']): Record<string, unknown> {
  const impl = machine.implementations as Record<'actions' | 'guards' | 'actors' | 'delays', Record<string, unknown>>;
  // Implementations first, in their own order (some are only used inside other actions, e.g. spawned
  // actors), then names the config references that have no implementation.
  const all = (own: Record<string, unknown>, used: Iterable<string>): string[] => [...new Set([...Object.keys(own), ...used])];
  const section = (keys: string[], stub: (k: string) => unknown) =>
    keys.length ? Object.fromEntries(keys.map((k) => [k, stub(k)])) : undefined;
  const actors = new Map<string, unknown>(Object.entries(impl.actors));
  for (const [src, logic] of names.actors) if (!actors.has(src)) actors.set(src, logic);
  const out: Record<string, unknown> = {
    actions: section(all(impl.actions, names.actions), () => code('() => {}')),
    guards: section(all(impl.guards, names.guards), () => code('() => true')),
    actors: section([...actors.keys()], (k) => actorStub(actors.get(k), names, machineFiles)),
    delays: section(all(impl.delays, names.delays), (k) => (typeof impl.delays[k] === 'number' ? impl.delays[k] : STUB_DELAY_MS)),
  };
  return data(out) as Record<string, unknown>;
}

/**
 * The self-contained source file (see the module comment). Its `toJSON()` definition equals the
 * real machine's apart from implementations (functions); `tests/unit/visualizer-sources.test.ts`
 * checks exactly that.
 */
export function toStandaloneSource(machine: AnyStateMachine, options: StandaloneOptions): string {
  const names: Names = { actions: new Set(), guards: new Set(), actors: new Map(), delays: new Set(), imports: new Set(['setup']), childMachines: new Set() };
  const root = rootOf(machine);
  const config = stateCode(root, names);
  const setup = setupCode(machine, names, options.machineFiles);
  const exportName = standaloneExportName(options.name);
  const head = `export const ${exportName} = setup(`;
  const childNote = names.childMachines.size
    ? [' * A child machine is callback logic too: the real child is another machine file (see its comment).']
    : [];
  const contextNote = typeof root.config.context === 'function'
    ? [' * The context is left out: the real machine computes it from its input.']
    : [];
  return [
    '/**',
    ` * Generated by \`npm run viz\` (scripts/viz.ts) from ${options.source}.`,
    ' * Do not edit by hand.',
    ' *',
    ` * The \`${options.name}\` statechart as one self-contained file holding exactly one machine: paste all`,
    ' * of it into the Stately editor\'s "Import from code" (https://stately.ai/editor). It imports only',
    ' * xstate. States, transitions, guards, actions, delays and actors keep their real names; their',
    ' * implementations are stubs: actions do nothing, guards pass, delays are fixed and actors never',
    ' * finish.',
    ...childNote,
    ...contextNote,
    ' */',
    `import { ${[...names.imports].sort().join(', ')} } from 'xstate';`,
    '',
    `${head}${print(setup, '', head.length)}).createMachine(${print(config, '', 0)});`,
    '',
  ].join('\n');
}
