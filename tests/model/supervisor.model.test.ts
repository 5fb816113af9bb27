/**
 * Model-based test of the supervisor: every path of tests/model/supervisor.model.ts runs on
 * a real supervisor (maxAgents 2, SimulatedClock) with three real fixture agents, each
 * path with a fresh supervisor. The last test prints the coverage reached and fails if a
 * state or transition of the model was not covered by a passing path.
 */
import { describe, expect, it } from 'vitest';
import type { EventObject } from 'xstate';
import { createTestModel, type TestModel } from 'xstate/graph';
import { ModelCoverage, pathMode, pathName, selectPaths, modelOptions, type ModelSnapshot } from './model-paths.js';
import { showCounts, SupervisorRun } from './supervisor.harness.js';
import { supervisorModel } from './supervisor.model.js';
import { gate } from './sut.js';

const model = createTestModel(supervisorModel, modelOptions(supervisorModel)) as unknown as TestModel<ModelSnapshot, EventObject, unknown>;
const paths = selectPaths(model, 4);
const coverage = new ModelCoverage(supervisorModel);
const concurrently = gate(Number(process.env.MODEL_CONCURRENCY ?? 4));

describe(`supervisor model (${pathMode} paths)`, () => {
  for (const path of paths) {
    it.concurrent(pathName(path, showCounts), { timeout: 120_000 }, () =>
      concurrently(async () => {
        const run = new SupervisorRun(path, coverage);
        let leaked: number[] = [];
        try {
          await model.testPath(path, run.params());
        } finally {
          leaked = await run.dispose();
        }
        expect(leaked, 'fixture processes left running after shutdown').toEqual([]);
      }),
    );
  }

  it('covers every state and every transition of the model', () => {
    console.log(coverage.summary('supervisor model coverage', paths.length));
    expect(coverage.missingStates).toEqual([]);
    expect(coverage.missingTransitions).toEqual([]);
  });
});
