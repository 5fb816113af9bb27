/**
 * Model-based test of the agent lifecycle: every path of tests/model/agent-lifecycle.model.ts
 * (shortest paths to every state; with MODEL_PATHS=simple, every simple path up to
 * MODEL_DEPTH events) is run on a real supervisor driving real fixture-agent processes,
 * each path with a fresh supervisor. The last test prints the coverage reached and fails
 * if a state or transition of the model was not covered by a passing path.
 */
import { describe, expect, it } from 'vitest';
import { createTestModel } from 'xstate/graph';
import { LifecycleRun, showAttempt } from './agent-lifecycle.harness.js';
import { agentLifecycleModel } from './agent-lifecycle.model.js';
import { ModelCoverage, pathMode, pathName, selectPaths, modelOptions, type ModelSnapshot } from './model-paths.js';
import { gate } from './sut.js';
import type { EventObject } from 'xstate';
import type { TestModel } from 'xstate/graph';

const model = createTestModel(agentLifecycleModel, modelOptions(agentLifecycleModel)) as unknown as TestModel<ModelSnapshot, EventObject, unknown>;
const paths = selectPaths(model, 4);
const coverage = new ModelCoverage(agentLifecycleModel);
const concurrently = gate(Number(process.env.MODEL_CONCURRENCY ?? 4));

describe(`agent lifecycle model (${pathMode} paths)`, () => {
  for (const path of paths) {
    it.concurrent(pathName(path, showAttempt), { timeout: 120_000 }, () =>
      concurrently(async () => {
        const run = new LifecycleRun(path, coverage);
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
    console.log(coverage.summary('agent lifecycle model coverage', paths.length));
    expect(coverage.missingStates).toEqual([]);
    expect(coverage.missingTransitions).toEqual([]);
  });
});
