/**
 * Model-based test of the agent lifecycle: every path of tests/model/agent-lifecycle.model.ts
 * (shortest paths to every state; with MODEL_PATHS=simple, every simple path up to
 * MODEL_DEPTH events) is run on a real supervisor driving real fixture-agent processes,
 * each path with a fresh supervisor. The last test prints the coverage reached and fails
 * if a state or transition of the model was not covered by a passing path.
 */
import { describe } from 'vitest';
import { createTestModel } from 'xstate/graph';
import { LifecycleRun, showAttempt } from './agent-lifecycle.harness.js';
import { agentLifecycleModel } from './agent-lifecycle.model.js';
import { ModelCoverage, pathMode, pathName, selectPaths, modelOptions, type ModelSnapshot } from './model-paths.js';
import { itCoversTheModel, itWalksPath } from './model-run.js';
import type { EventObject } from 'xstate';
import type { TestModel } from 'xstate/graph';

const model = createTestModel(agentLifecycleModel, modelOptions(agentLifecycleModel)) as unknown as TestModel<ModelSnapshot, EventObject, unknown>;
const paths = selectPaths(model, agentLifecycleModel, 4);
const coverage = new ModelCoverage(agentLifecycleModel);
describe(`agent lifecycle model (${pathMode} paths)`, () => {
  for (const path of paths) itWalksPath(pathName(path, showAttempt), model, path, () => new LifecycleRun(path, coverage));
  itCoversTheModel('agent lifecycle model coverage', coverage, paths.length);
});
