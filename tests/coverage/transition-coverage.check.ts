/**
 * The transition-coverage check (run by tests/coverage/vitest.config.ts after the main run):
 * every state and transition of every machine in `visualizedMachines` was taken by a model
 * or integration test, or is listed in exclusions.json with a reason. Exclusions stay honest:
 * one that was taken, or that names no state or transition, fails as well.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { visualizedMachines } from '../../machines/index.js';
import { readExclusions, readRecords, recordedTestFiles, universeOf, type MachineKeys } from './transition-coverage.js';

const records = readRecords();
const missingRecords = recordedTestFiles().filter((file) => !records.has(file));
const exclusions = readExclusions();
const universes = Object.entries(visualizedMachines).map(([name, machine]) => ({ name, id: machine.id, ...universeOf(machine) }));
const summary: string[] = [];

/** What the recorded test files took of machine `id`, merged. */
function takenOf(id: string): MachineKeys {
  const states = new Set<string>();
  const transitions = new Set<string>();
  for (const record of records.values()) {
    for (const key of record.machines[id]?.states ?? []) states.add(key);
    for (const key of record.machines[id]?.transitions ?? []) transitions.add(key);
  }
  return { states: [...states], transitions: [...transitions] };
}

const section = (title: string, keys: string[]) => (keys.length ? [`${title}:`, ...keys.map((key) => `  ${key}`)] : []);

describe('transition coverage of the real machines', () => {
  afterAll(() => {
    if (summary.length) console.log(`transition coverage (model + integration tests):\n${summary.join('\n')}`);
  });

  it('has a record of every model and integration test file', () => {
    const hint = 'no transition records from the last run for these test files; run the whole suite first (`npx vitest run`), then this check';
    expect(missingRecords, hint).toEqual([]);
  });

  for (const { name, id, states, transitions } of universes) {
    it.skipIf(missingRecords.length > 0)(`${name}: every state and transition is taken or excluded`, () => {
      const taken = takenOf(id);
      const excluded = new Set(exclusions.filter((entry) => entry.machine === name).map((entry) => entry.key));
      const takenKeys = new Set([...taken.states, ...taken.transitions]);
      const universe = [...states, ...transitions];
      const notTaken = universe.filter((key) => !takenKeys.has(key) && !excluded.has(key));
      const takenButExcluded = [...excluded].filter((key) => takenKeys.has(key));
      const unknown = [...takenKeys].filter((key) => !universe.includes(key));
      const count = (all: string[], mine: string[]) => `${mine.filter((key) => all.includes(key)).length}/${all.length}`;
      const exclusionCount = excluded.size ? `, ${excluded.size} excluded` : '';
      summary.push(`  ${name} ${count(transitions, taken.transitions)} transitions, ${count(states, taken.states)} states${exclusionCount}`);
      const report = [
        ...section(`never taken and not in tests/coverage/exclusions.json (cover it, or exclude it with a reason)`, notTaken),
        ...section(`taken now, so drop it from tests/coverage/exclusions.json`, takenButExcluded),
        ...section(`taken but not in the machine (the key scheme and the runtime disagree, or a test machine reuses the id "${id}")`, unknown),
      ];
      if (report.length) expect.fail(`${name} machine:\n${report.join('\n')}`);
    });
  }

  it('exclusions.json names states and transitions of real machines, each once, with a reason', () => {
    const seen = new Set<string>();
    const problems = exclusions.flatMap(({ machine, key, reason }) => {
      const universe = universes.find((entry) => entry.name === machine);
      const where = `${machine}: ${key}`;
      const found: string[] = [];
      if (!universe) found.push(`${where}: no machine "${machine}" in visualizedMachines`);
      else if (!universe.states.includes(key) && !universe.transitions.includes(key)) found.push(`${where}: no such state or transition (renamed or removed?)`);
      if (seen.has(where)) found.push(`${where}: listed twice`);
      if (!reason?.trim()) found.push(`${where}: no reason`);
      seen.add(where);
      return found;
    });
    if (problems.length) expect.fail(`tests/coverage/exclusions.json:\n${problems.map((problem) => `  ${problem}`).join('\n')}`);
  });
});
