import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it, expect } from 'vitest';
import { createMachine, fromPromise, type AnyStateMachine } from 'xstate';
import { exampleMachine } from '../../scripts/visualize/example.machine.js';
import { findAnonymousIds, toDot, toMermaid, toStatelyJson, toSvg } from '../../scripts/visualize/render.js';
import { toStandaloneSource } from '../../scripts/visualize/standalone-source.js';
import { DEFAULT_OUT_DIR, compareFiles, diffOutDir, generateFiles, machineSourceFile, staleFiles } from '../../scripts/viz.js';

describe('render: example machine', () => {
  const mermaid = toMermaid(exampleMachine);

  it('draws nested and parallel states in Mermaid with unique ids', () => {
    expect(mermaid.startsWith('---\ntitle: example\n---\nstateDiagram-v2\n')).toBe(true);
    expect(mermaid).toContain('  [*] --> idle\n');
    expect(mermaid).toContain('  state starting {\n    [*] --> starting_spawning\n');
    expect(mermaid).toContain('state "settling" as starting_settling');
    expect(mermaid).toContain('state connected {');
    expect(mermaid).toContain('state "settling" as connected_work_settling');
    expect(mermaid).toContain('state connected_work {');
    expect(mermaid).toMatch(/\n {4}--\n {4}state "health" as connected_health\n/);
    expect(mermaid).toContain('  failed --> [*]\n');
    expect(mermaid).toContain('  stopped --> [*]\n');
  });

  it('labels events, guards, delays and always transitions', () => {
    expect(mermaid).toContain('idle --> starting : start\n');
    expect(mermaid).toContain('backingOff --> starting : after backoff\n');
    expect(mermaid).toContain('starting_settling --> connected : after settleTime\n');
    expect(mermaid).toContain('connected --> backingOff : crash [canRetry]\n');
    expect(mermaid).toContain('starting_spawning --> backingOff : onError(spawner) [canRetry]\n');
    expect(mermaid).toContain('connected_work_settling --> connected_work_busy : prompt [not(isFatal)]\n');
    expect(mermaid).toContain(': always [and(hasPendingWork, not(isFatal))]\n');
    expect(mermaid).toContain('connected_health_degraded --> backingOff : after heartbeatTimeout [canRetry]\n');
    expect(mermaid).toContain('  note right of idle\n    Nothing running, waiting for a start request.\n  end note\n');
  });

  it('escapes characters Mermaid cannot parse and lists targetless transitions in notes', () => {
    const m = createMachine({
      id: 'esc',
      initial: 'a',
      states: { a: { description: 'x; y {z} "q" <b>', on: { ping: { actions: 'log' }, 'go;now': 'b' } }, b: {} },
    });
    const text = toMermaid(m);
    expect(text).toContain("    x, y (z) 'q' ‹b›\n    ping / log\n");
    expect(text).toContain('a --> b : go,now\n');
    expect(text).not.toContain('a --> a');
  });

  it('renders DOT with clusters and compound edges, and SVG', async () => {
    const dot = toDot(exampleMachine);
    expect(dot.startsWith('digraph "example" {')).toBe(true);
    expect(dot).toContain('compound=true');
    expect(dot).toContain('subgraph "cluster_connected_work"');
    expect(dot).toContain('lhead="cluster_starting"');
    expect(dot).toContain('label=" after backoff "');
    const svg = await toSvg(exampleMachine);
    expect(svg.startsWith('<svg') || svg.startsWith('<?xml')).toBe(true);
    expect(svg.trimEnd().endsWith('</svg>')).toBe(true);
    expect(svg).toContain('after backoff');
    expect(svg).toContain('prompt [not(isFatal)]');
  });

  it('produces a Stately JSON config that round-trips through createMachine', () => {
    const json = toStatelyJson(exampleMachine);
    expect(json.endsWith('}\n')).toBe(true);
    expect(json).toContain('\n  "states": {\n');
    const config = JSON.parse(json);
    expect(config.states.connected.type).toBe('parallel');
    expect(config.states.connected.states.work.states.idle.always.guard).toEqual({ type: 'and(hasPendingWork, not(isFatal))' });
    expect(config.states.backingOff.after.backoff.target).toBe('starting');
    // The JSON is a valid machine config: rebuilding it gives the same diagram.
    expect(toMermaid(createMachine(config))).toBe(mermaid);
  });

  it('is deterministic', async () => {
    expect(toMermaid(exampleMachine)).toBe(mermaid);
    expect(toDot(exampleMachine)).toBe(toDot(exampleMachine));
    expect(toStatelyJson(exampleMachine)).toBe(toStatelyJson(exampleMachine));
    expect(await toSvg(exampleMachine)).toBe(await toSvg(exampleMachine));
  });

  it('finds no anonymous ids in the example machine', () => {
    expect(findAnonymousIds(exampleMachine)).toEqual([]);
  });

  it('reports auto-generated invoke ids, numeric delays and inline guards/actions', () => {
    const anonymous = createMachine({
      id: 'anon',
      initial: 'a',
      states: {
        a: { invoke: { src: fromPromise(async () => 1), onDone: 'b' }, after: { 1000: 'b' } },
        b: { entry: () => undefined, on: { go: { guard: () => true, target: 'a' } } },
      },
    });
    const problems = findAnonymousIds(anonymous);
    expect(problems.join('\n')).toMatch(/#anon\.a: invoke #0 has no explicit id \(auto id "0\.anon\.a"\)/);
    expect(problems.join('\n')).toMatch(/inline actor logic \(auto src "xstate\.invoke\.0\.anon\.a"\)/);
    expect(problems.join('\n')).toMatch(/#anon\.a on after 1000ms: inline numeric delay/);
    expect(problems.join('\n')).toMatch(/#anon\.b entry: inline action/);
    expect(problems.join('\n')).toMatch(/#anon\.b on go: inline guard/);
    expect(problems).toHaveLength(5);
  });
});

describe('viz output files', () => {
  it('include a self-contained <name>.machine.ts per machine, linked from README.md', async () => {
    const source = 'scripts/visualize/example.machine.ts';
    const files = await generateFiles({ example: exampleMachine }, { sourceOf: () => source });
    expect([...files.keys()].sort()).toEqual(['README.md', 'example.machine.ts', 'example.mmd', 'example.stately.json', 'example.svg']);
    expect(files.get('example.machine.ts')).toBe(toStandaloneSource(exampleMachine, { name: 'example', source }));
    const readme = files.get('README.md')!;
    expect(readme).toContain(
      `Open in Stately: paste all of [example.machine.ts](example.machine.ts) (self-contained) or of \`${source}\` into\nthe Stately editor's *Import from code* (https://stately.ai/editor)`,
    );
    expect(readme).toContain('`statelyai.stately-vscode`');
    expect(readme).not.toContain('https://stately.ai/viz'); // the legacy visualizer (XState v4) is only named as what not to use
  });

  it('name each machine source file after its registry name in kebab case', async () => {
    expect(machineSourceFile('agent')).toBe('machines/agent.machine.ts');
    expect(machineSourceFile('ptyActivity')).toBe('machines/pty-activity.machine.ts');
    expect(machineSourceFile('myHTTPMachine_x')).toBe('machines/my-http-machine-x.machine.ts');
    const files = await generateFiles({ ptyActivity: exampleMachine });
    expect(files.get('README.md')).toContain('Source: `machines/pty-activity.machine.ts`');
    expect(files.get('ptyActivity.machine.ts')).toContain('from machines/pty-activity.machine.ts.');
  });

  it('report missing and stale <name>.machine.ts files, and leave other files alone', async () => {
    const files = await generateFiles({ example: exampleMachine });
    const dir = mkdtempSync(join(tmpdir(), 'viz-test-'));
    try {
      for (const [file, content] of files) if (file !== 'example.machine.ts') writeFileSync(join(dir, file), content);
      writeFileSync(join(dir, 'removed.machine.ts'), '');
      writeFileSync(join(dir, 'notes.ts'), '');
      expect(diffOutDir(dir, files)).toEqual([`missing: ${join(dir, 'example.machine.ts')}`, `stale: ${join(dir, 'removed.machine.ts')}`]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

// The real machines: machines/index.ts is written separately; until it exists these are skipped.
const machinesUrl = new URL('../../machines/index.ts', import.meta.url);
const hasMachines = existsSync(machinesUrl);
const registry: Record<string, AnyStateMachine> = hasMachines
  ? ((await import(/* @vite-ignore */ machinesUrl.href)) as { visualizedMachines: Record<string, AnyStateMachine> }).visualizedMachines
  : {};

// Generated together: a child machine's stub names the files of the child when it is in the registry.
let generated: Promise<Map<string, string>> | undefined;
const generatedFiles = (): Promise<Map<string, string>> => (generated ??= generateFiles(registry));

describe('checked-in visualizations', () => {
  it.skipIf(!hasMachines)('machines/index.ts exports at least one machine', () => {
    expect(Object.keys(registry).length).toBeGreaterThan(0);
  });

  for (const [name, machine] of Object.entries(registry)) {
    it(`visualizations/${name}.* are up to date`, async () => {
      const mine = new Map([...(await generatedFiles())].filter(([file]) => file.startsWith(`${name}.`)));
      const problems = compareFiles(DEFAULT_OUT_DIR, mine);
      expect(problems, `visualizations are out of date, run npm run viz:\n${problems.join('\n')}`).toEqual([]);
    });

    it(`${name} has no auto-generated ids`, () => {
      expect(findAnonymousIds(machine), `name these in ${machineSourceFile(name)}`).toEqual([]);
    });

    it(`${machineSourceFile(name)}, named as ${name}'s source, exists and exports it`, async () => {
      const url = new URL(`../../${machineSourceFile(name)}`, import.meta.url);
      expect(existsSync(url), `${machineSourceFile(name)} does not exist: name the visualizedMachines entry after its file`).toBe(true);
      const mod = (await import(/* @vite-ignore */ url.href)) as Record<string, unknown>;
      expect(Object.values(mod)).toContain(machine);
    });
  }

  it.skipIf(!hasMachines)('visualizations/README.md is up to date and no stale files remain', async () => {
    const files = await generatedFiles();
    const problems = [
      ...compareFiles(DEFAULT_OUT_DIR, new Map([['README.md', files.get('README.md')!]])),
      ...staleFiles(DEFAULT_OUT_DIR, files).map((f) => `stale: visualizations/${f}`),
    ];
    expect(problems, `visualizations are out of date, run npm run viz:\n${problems.join('\n')}`).toEqual([]);
  });
});
