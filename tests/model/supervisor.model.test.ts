/**
 * Model-based test of the supervisor: every path of tests/model/supervisor.model.ts runs on
 * a real supervisor (maxAgents 2, SimulatedClock) with three real fixture agents, each
 * path with a fresh supervisor. The last test prints the coverage reached and fails if a
 * state or transition of the model was not covered by a passing path.
 */
import { describe } from 'vitest';
import type { EventObject } from 'xstate';
import { createTestModel, type TestModel } from 'xstate/graph';
import { ModelCoverage, pathMode, pathName, selectPaths, modelOptions, type ModelSnapshot } from './model-paths.js';
import { showCounts, SupervisorRun } from './supervisor.harness.js';
import { supervisorModel } from './supervisor.model.js';
import { itCoversTheModel, itWalksPath } from './model-run.js';

const model = createTestModel(supervisorModel, modelOptions(supervisorModel)) as unknown as TestModel<ModelSnapshot, EventObject, unknown>;
const paths = selectPaths(model, supervisorModel, 4);
const coverage = new ModelCoverage(supervisorModel);
describe(`supervisor model (${pathMode} paths)`, () => {
  for (const path of paths) itWalksPath(pathName(path, showCounts), model, path, () => new SupervisorRun(path, coverage));
  itCoversTheModel('supervisor model coverage', coverage, paths.length);
});
