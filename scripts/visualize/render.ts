/**
 * Pure renderers for XState v5 machines: Stately JSON, Mermaid, Graphviz DOT/SVG, plus a lint
 * (`findAnonymousIds`) for auto-generated ids that make diagrams unreadable. No file I/O here:
 * `scripts/viz.ts` writes the files. Every output is deterministic (document order throughout).
 */
import { instance } from '@viz-js/viz';
import type { AnyStateMachine } from 'xstate';
import {
  actionLabel, allNodes, asArray, assignIds, children, collectEdges, displayName, eventLabel, guardLabel,
  hasChildren, internalLine, isObj, ownTransitions, rootHasEdges, rootOf, stateDetails, wrap,
  type Edge, type StateNodeView as Node,
} from './statechart.js';

// ---------------------------------------------------------------------------------------------
// Stately JSON

/** JSON-safe deep copy: functions and undefined dropped, object keys sorted. */
function plain(v: unknown): unknown {
  if (typeof v === 'function') return undefined;
  if (Array.isArray(v)) return v.filter((x) => typeof x !== 'function' && x !== undefined).map(plain);
  if (!isObj(v)) return typeof v === 'number' && !Number.isFinite(v) ? null : v;
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(v).sort()) if (plain(v[k]) !== undefined) out[k] = plain(v[k]);
  return out;
}

type KeyRule = [key: string, convert: (value: unknown, node: Node) => unknown];
const jsonGuard = (g: unknown): unknown => (typeof g === 'function' ? { type: guardLabel(g) } : plain(g));
const jsonActions = (a: unknown): unknown => {
  const out = asArray(a).map((x) => (typeof x === 'function' ? { type: actionLabel(x) } : plain(x)));
  return Array.isArray(a) ? out : out[0];
};
const jsonTransitions = (cfg: unknown): unknown => {
  const one = (t: unknown): unknown => (isObj(t) ? pick(t, TRANSITION_KEYS) : t);
  return Array.isArray(cfg) ? cfg.map(one) : one(cfg);
};
const jsonMap = (m: unknown): unknown =>
  isObj(m) ? Object.fromEntries(Object.entries(m).map(([k, v]) => [k, jsonTransitions(v)])) : undefined;
const jsonInvoke = (n: Node): unknown =>
  n.invoke.length === 0 ? undefined : n.invoke.map((inv, i) => {
    const cfg = asArray(n.config.invoke)[i];
    return { id: inv.id, src: inv.src, ...pick(isObj(cfg) ? cfg : {}, INVOKE_KEYS) };
  });
const jsonStates = (n: Node): unknown =>
  hasChildren(n) ? Object.fromEntries(children(n).map((c) => [c.key, pick(c.config, STATE_KEYS, c)])) : undefined;

const TRANSITION_KEYS: KeyRule[] = [
  ['target', plain], ['guard', jsonGuard], ['actions', jsonActions], ['reenter', plain], ['description', plain], ['meta', plain],
];
const INVOKE_KEYS: KeyRule[] = [['systemId', plain], ['onDone', jsonTransitions], ['onError', jsonTransitions], ['onSnapshot', jsonTransitions]];
const STATE_KEYS: KeyRule[] = [
  ['id', plain], ['version', plain], ['description', plain], ['type', plain], ['history', plain], ['target', plain],
  ['initial', plain], ['context', plain], ['tags', plain], ['meta', plain], ['entry', jsonActions], ['exit', jsonActions],
  ['invoke', (_, n) => jsonInvoke(n)], ['on', jsonMap], ['after', jsonMap], ['always', jsonTransitions],
  ['onDone', jsonTransitions], ['output', plain], ['states', (_, n) => jsonStates(n)],
];

/** Applies `rules` in order: the canonical key order of the output. */
function pick(src: Record<string, unknown>, rules: KeyRule[], node?: Node): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, convert] of rules) {
    const derived = key === 'invoke' || key === 'states'; // read from the state node, not the config
    if (src[key] === undefined && !derived) continue;
    const value = convert(src[key], node!);
    if (value !== undefined) out[key] = value;
  }
  return out;
}

/**
 * The machine config as JSON in the shape Stately's visualizer/Studio consume (the same
 * `actor.logic.config` that `@statelyai/inspect` sends): string targets, named guards, actions,
 * delays and actors, descriptions. Higher-order guards become `{ "type": "not(isFatal)" }`, inline
 * functions `{ "type": <name> }`, invokes get their resolved `id`/`src`. `machine.toJSON()` (=
 * `machine.definition`) is not used: in xstate 5.33 it drops `always` transitions and function
 * guards such as `not(...)`, and its entry actions change once `after` has been read.
 * Keys in a fixed order, 2-space indent, trailing newline.
 */
export function toStatelyJson(machine: AnyStateMachine): string {
  const root = rootOf(machine);
  return `${JSON.stringify({ id: machine.id, ...pick(root.config, STATE_KEYS, root) }, null, 2)}\n`;
}

// ---------------------------------------------------------------------------------------------
// Mermaid

/**
 * Makes text safe in Mermaid labels, display names and notes. Checked against Mermaid 11: `;`
 * ends a statement, `<...>` is swallowed as HTML, `"` ends a display name, and `#59;`-style
 * entity codes are NOT decoded in state diagrams, so look-alikes are substituted.
 */
function mmd(text: string): string {
  const map: Record<string, string> = { ';': ',', '{': '(', '}': ')', '<': '‹', '>': '›', '"': "'", '\n': ' ' };
  return text.replace(/[;{}<>"\n]/g, (c) => map[c]!);
}

/**
 * Mermaid `stateDiagram-v2` source: compound states as `state X { ... }`, parallel regions
 * separated by `--`, `[*]` initial and final arrows, transition labels `event [guard]`,
 * `after backoff`, `always [guard]`, `onDone(actorId)`; ids are paths (`connected_settling`) with
 * display names; each state's description and targetless (`event / actions`) transitions as a note.
 */
export function toMermaid(machine: AnyStateMachine): string {
  const root = rootOf(machine);
  const all = collectEdges(root);
  const edges = all.filter((e) => !e.internal);
  const ids = assignIds(root, rootHasEdges(root, all));
  const out = ['---', `title: ${mmd(machine.id)}`, '---', 'stateDiagram-v2'];
  const edgeLine = (pad: string, e: Edge) => `${pad}${ids.get(e.from)} --> ${ids.get(e.to)} : ${mmd(e.label)}`;
  const local = (e: Edge): boolean => e.from !== root && e.from.parent === e.to.parent;
  const note = (n: Node, pad: string): void => {
    const lines = [
      ...(n.description ?? '').split('\n').filter((l) => l.trim()), // one line per paragraph: Mermaid wraps
      ...all.filter((e) => e.from === n && e.internal).map((e) => internalLine(e) + (e.description ? `: ${e.description}` : '')),
    ];
    if (lines.length) out.push(`${pad}note right of ${ids.get(n)}`, ...lines.map((l) => `${pad}  ${mmd(l)}`), `${pad}end note`);
  };
  // Every state is declared inside its own block before any edge names it (Mermaid creates a
  // state in whichever block first mentions it). Edges between siblings stay in their block;
  // all others are emitted at the top level, after every block.
  const emit = (parent: Node, pad: string): void => {
    for (const t of parent.initial?.target ?? []) if (t.parent === parent) out.push(`${pad}[*] --> ${ids.get(t)}`);
    children(parent).forEach((c, i) => {
      const id = ids.get(c)!;
      if (parent.type === 'parallel' && i > 0) out.push(`${pad}--`);
      if (displayName(c) !== id) out.push(`${pad}state "${mmd(displayName(c))}" as ${id}`);
      else if (!hasChildren(c)) out.push(`${pad}${id}`);
      if (hasChildren(c)) {
        out.push(`${pad}state ${id} {`);
        emit(c, `${pad}  `);
        out.push(`${pad}}`);
      }
      if (c.type === 'final') out.push(`${pad}${id} --> [*]`);
      note(c, pad);
    });
    for (const e of edges) if (local(e) && e.from.parent === parent) out.push(edgeLine(pad, e));
  };
  const rid = ids.get(root);
  if (rid === undefined) emit(root, '  ');
  else {
    // Transitions on the root itself: draw the machine as one outer composite state.
    out.push(`  [*] --> ${rid}`, ...(root.key === rid ? [] : [`  state "${mmd(root.key)}" as ${rid}`]), `  state ${rid} {`);
    emit(root, '    ');
    out.push('  }');
    note(root, '  ');
  }
  for (const e of edges) if (!local(e)) out.push(edgeLine('  ', e));
  return `${out.join('\n')}\n`;
}

// ---------------------------------------------------------------------------------------------
// Graphviz

const q = (s: string): string => `"${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`;
const html = (s: string): string =>
  s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
const GRAPH_ATTRS = 'compound=true, rankdir=TB, fontname="Helvetica", fontsize=13, nodesep=0.35, ranksep=0.45, labelloc=t';
const NODE_ATTRS = 'shape=box, style="rounded,filled", fillcolor="#f8fafc", color="#334155", fontname="Helvetica", fontsize=11, margin="0.2,0.08"';
const EDGE_ATTRS = 'fontname="Helvetica", fontsize=9, color="#475569", fontcolor="#0f172a", arrowsize=0.7';

/**
 * HTML-like label: bold name, grey description, blue entry/exit/invoke, green targetless
 * transitions (and, for the root, its transitions as `event → target`, which cannot be drawn).
 */
function nodeLabel(name: string, n: Node, edges: Edge[]): string {
  const block = (lines: string[], color: string) =>
    lines.length ? [`<font point-size="9" color="${color}">${lines.map(html).join('<br/>')}</font>`] : [];
  const own = edges.filter((e) => e.from === n && (e.internal || !n.parent));
  return `<${[
    `<b>${html(name)}</b>`,
    ...block(wrap(n.description ?? '', 36), '#555555'),
    ...block(stateDetails(n), '#1d4ed8'),
    ...block(own.map((e) => (e.internal ? internalLine(e) : `${e.label} → ${e.to.path.join('.') || e.to.key}`)), '#047857'),
  ].join('<br/>')}>`;
}

/**
 * Graphviz DOT with the same labels as {@link toMermaid}. Compound states are clusters
 * (`compound=true`): edges to/from a compound state attach to its initial dot (an invisible anchor
 * for parallel states) and are clipped at the cluster border with `lhead`/`ltail`. Final states
 * have a double border, parallel regions a dashed one; edges between the same two states are
 * merged into one multi-line label; targetless transitions (and the root's own transitions) are
 * listed inside their state.
 */
export function toDot(machine: AnyStateMachine): string {
  const root = rootOf(machine);
  const ids = assignIds(root, false);
  const edges = collectEdges(root);
  const anchor = (n: Node): string => (n === root ? '__root' : `${ids.get(n)}__anchor`);
  const cluster = (n: Node): string => `cluster_${ids.get(n)}`;
  const end = (n: Node): string => q(hasChildren(n) ? anchor(n) : ids.get(n)!);
  const out = [
    `digraph ${q(machine.id)} {`,
    `  graph [${GRAPH_ATTRS}, label=${nodeLabel(machine.id, root, edges)}];`,
    `  node [${NODE_ATTRS}];`,
    `  edge [${EDGE_ATTRS}];`,
  ];
  const emit = (parent: Node, pad: string): void => {
    const init = parent.initial?.target.filter((t) => t.parent === parent) ?? [];
    const dot = init.length ? 'width=0.14, style=filled, fillcolor="#0f172a"' : 'width=0.01, style=invis';
    out.push(`${pad}${q(anchor(parent))} [shape=point, label="", ${dot}];`);
    for (const t of init) out.push(`${pad}${q(anchor(parent))} -> ${end(t)}${hasChildren(t) ? ` [lhead=${q(cluster(t))}]` : ''};`);
    for (const c of children(parent)) {
      if (hasChildren(c)) {
        const style = parent.type === 'parallel' ? 'rounded,dashed' : 'rounded';
        const name = c.type === 'parallel' ? `${c.key} (parallel)` : c.key;
        out.push(`${pad}subgraph ${q(cluster(c))} {`);
        out.push(`${pad}  graph [style=${q(style)}, color="#334155", labeljust=l, label=${nodeLabel(name, c, edges)}];`);
        emit(c, `${pad}  `);
        out.push(`${pad}}`);
      } else {
        out.push(`${pad}${q(ids.get(c)!)} [label=${nodeLabel(displayName(c), c, edges)}${c.type === 'final' ? ', peripheries=2' : ''}];`);
      }
    }
  };
  emit(root, '  ');
  const inside = (n: Node, ancestor: Node): boolean => n === ancestor || (!!n.parent && inside(n.parent, ancestor));
  const merged = new Map<string, { from: Node; to: Node; labels: string[]; tips: string[] }>();
  for (const e of edges.filter((x) => !x.internal && x.from !== root)) {
    const m = merged.get(`${e.from.id}\u0000${e.to.id}`) ?? { from: e.from, to: e.to, labels: [], tips: [] };
    m.labels.push(e.label);
    if (e.description) m.tips.push(`${e.label}: ${e.description}`);
    merged.set(`${e.from.id}\u0000${e.to.id}`, m);
  }
  for (const e of merged.values()) {
    const attrs = [`label=${q(e.labels.map((l) => ` ${l} `).join('\n'))}`];
    if (e.tips.length) attrs.push(`tooltip=${q(e.tips.join('\n'))}`);
    if (hasChildren(e.from) && !inside(e.to, e.from)) attrs.push(`ltail=${q(cluster(e.from))}`);
    if (hasChildren(e.to) && !inside(e.from, e.to)) attrs.push(`lhead=${q(cluster(e.to))}`);
    out.push(`  ${end(e.from)} -> ${end(e.to)} [${attrs.join(', ')}];`);
  }
  out.push('}');
  return `${out.join('\n')}\n`;
}

/** Renders {@link toDot} to SVG with Graphviz (WebAssembly, `@viz-js/viz`). Deterministic. */
export async function toSvg(machine: AnyStateMachine): Promise<string> {
  const viz = await instance();
  return viz.renderString(toDot(machine), { format: 'svg' });
}

// ---------------------------------------------------------------------------------------------
// Lint

/**
 * Lists every place where XState would make up an id or name, which shows in diagrams and
 * inspectors as e.g. `0.agent.starting`, `xstate.invoke.0.agent.starting` or
 * `xstate.after.1000.agent.x`: invokes without an explicit `id`, inline actor logic, numeric
 * (unnamed) delays, inline guard functions and inline actions (functions, or built-ins such as
 * `assign(...)` written inline instead of named in `setup`). Returns human-readable problems;
 * an empty array means clean.
 */
export function findAnonymousIds(machine: AnyStateMachine): string[] {
  const problems: string[] = [];
  const checkGuard = (where: string, g: unknown): void => {
    if (typeof g !== 'function') return;
    const fn = g as { check?: unknown; guards?: unknown[] };
    if (fn.check) fn.guards?.forEach((inner) => checkGuard(where, inner)); // not/and/or/stateIn
    else problems.push(`${where}: inline guard function; name it in setup({ guards })`);
  };
  const checkActions = (where: string, actions: unknown): void => {
    for (const a of asArray(actions)) {
      if (typeof a !== 'function') continue;
      const builtin = 'type' in a && typeof a.type === 'string' ? ` (${a.type})` : '';
      problems.push(`${where}: inline action${builtin}; name it in setup({ actions })`);
    }
  };
  for (const n of allNodes(rootOf(machine))) {
    const at = `#${n.id}`;
    asArray(n.config.invoke).forEach((cfg, i) => {
      const c = isObj(cfg) ? cfg : {};
      if (c.id === undefined) problems.push(`${at}: invoke #${i} has no explicit id (auto id "${i}.${n.id}")`);
      if (typeof c.src !== 'string') {
        problems.push(`${at}: invoke #${i} uses inline actor logic (auto src "xstate.invoke.${i}.${n.id}"); name it in setup({ actors })`);
      }
    });
    checkActions(`${at} entry`, n.config.entry);
    checkActions(`${at} exit`, n.config.exit);
    for (const t of ownTransitions(n)) {
      const where = `${at} on ${eventLabel(t)}`;
      if (typeof t.delay === 'number') {
        problems.push(`${where}: inline numeric delay (auto event "xstate.after.${t.delay}.${n.id}"); name it in setup({ delays })`);
      }
      checkGuard(where, t.guard);
      checkActions(where, t.actions);
    }
  }
  return problems;
}
