/**
 * Stately's tools see each machine whole: `@xstate/machine-extractor` (the parser of the
 * Stately editor's import from code and of the VS Code extension), run on each
 * `machines/*.machine.ts`, finds every state (initial child, entry and exit actions, invoked
 * actors) and every transition (event or delay, guard, targets, actions) of the built machine
 * — no transition made by a helper function or spread into the config, where the parser
 * cannot see it. Only `reenter` is not compared: the extractor drops it.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { visualizedMachines } from '../../machines/index.js';
import { builtMachineLines, extractedMachineLines, extractMachineConfig } from '../support/machine-extractor.js';

const machinesDir = new URL('../../machines/', import.meta.url);
const machineFiles = readdirSync(machinesDir).filter((file) => file.endsWith('.machine.ts'));

/** The visualized machine a file builds, by the root id its source declares. */
const machineOfFile = (file: string) => {
  const config = extractMachineConfig(readFileSync(new URL(file, machinesDir), 'utf8'));
  const machine = Object.values(visualizedMachines).find((candidate) => candidate.id === config.id);
  return { config, machine };
};

describe('machines as Stately parses them', () => {
  it('every machine file is visualized, and every visualized machine has its file', () => {
    const ids = machineFiles.map((file) => machineOfFile(file).machine?.id);
    expect(ids).not.toContain(undefined);
    expect(ids.sort()).toEqual(Object.values(visualizedMachines).map((machine) => machine.id).sort());
  });

  it.each(machineFiles)('%s: the extractor sees every state and transition of the built machine', (file) => {
    const { config, machine } = machineOfFile(file);
    const built = builtMachineLines(machine!);
    const extracted = extractedMachineLines(config);
    expect(extracted.states).toEqual(built.states);
    expect(extracted.transitions).toEqual(built.transitions);
  });
});

describe('the comparison itself', () => {
  const source = `
    import { setup } from 'xstate';
    const common = { stop: { target: '#m.done', actions: 'cleanUp' } } as const;
    export const m = setup({}).createMachine({
      id: 'm',
      initial: 'a',
      states: {
        a: { on: { go: { target: 'b', guard: 'ready', actions: ['one', { type: 'two', params: () => ({}) }] }, ...common } },
        b: { after: { wait: 'a' }, on: common },
        done: {},
      },
    });`;

  it('a transition spread into a state, or a helper-built `on`, is invisible to the extractor', () => {
    const lines = extractedMachineLines(extractMachineConfig(source)).transitions;
    expect(lines).toContain('m.a --go [ready]--> m.b / one, two');
    expect(lines).toContain('m.b --after wait--> m.a / ');
    expect(lines.some((line) => line.includes('--stop-->'))).toBe(false);
  });
});
