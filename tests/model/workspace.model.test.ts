/**
 * Model-based test of a session's own workspace: every path of tests/model/workspace.model.ts
 * runs on a real supervisor with real fixture agents and a real git repository, each path with
 * a fresh supervisor and repository. The last test prints the coverage reached and fails if a
 * state or transition of the model was not covered by a passing path.
 */
import { describe } from 'vitest';
import type { EventObject } from 'xstate';
import { createTestModel, type TestModel } from 'xstate/graph';
import { ModelCoverage, modelOptions, pathMode, pathName, selectPaths, type ModelSnapshot } from './model-paths.js';
import { hasGit } from '../support/git-repo.js';
import { itCoversTheModel, itWalksPath } from './model-run.js';
import { showWorkspace, WorkspaceRun } from './workspace.harness.js';
import { workspaceModel } from './workspace.model.js';

const model = createTestModel(workspaceModel, modelOptions(workspaceModel)) as unknown as TestModel<ModelSnapshot, EventObject, unknown>;
const paths = selectPaths(model, workspaceModel, 4);
const coverage = new ModelCoverage(workspaceModel);

describe.skipIf(!hasGit)(`workspace model (${pathMode} paths)`, () => {
  for (const path of paths) itWalksPath(pathName(path, showWorkspace), model, path, () => new WorkspaceRun(path, coverage));
  itCoversTheModel('workspace model coverage', coverage, paths.length);
});
