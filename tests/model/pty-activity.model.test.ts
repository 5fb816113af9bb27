/**
 * Model-based test of a pty agent's activity: every path of tests/model/pty-activity.model.ts
 * (shortest paths to every state; with MODEL_PATHS=simple, every simple path up to
 * MODEL_DEPTH events) runs on a real supervisor with one `protocol: 'pty'` agent — the
 * interactive fixture CLI in a real pseudo-terminal, its activity machine on the
 * supervisor's SimulatedClock — each path with a fresh supervisor. The last test prints the
 * coverage reached and fails if a state or transition of the model was not covered by a
 * passing path.
 */
import { describe } from 'vitest';
import type { EventObject } from 'xstate';
import { createTestModel, type TestModel } from 'xstate/graph';
import { ModelCoverage, modelOptions, pathMode, pathName, selectPaths, type ModelSnapshot } from './model-paths.js';
import { itCoversTheModel, itWalksPath } from './model-run.js';
import { PtyActivityRun, showContext } from './pty-activity.harness.js';
import { ptyActivityModel } from './pty-activity.model.js';

/**
 * The shared options, plus whether the state a step left was gated: a restart after an exit
 * before any output and one after a CLI that printed are different vertices, so both are
 * walked (the second one shows old lines, the separator, then the new process's banner).
 */
const options = {
  ...(modelOptions(ptyActivityModel) as object),
  serializeTransition: (_state: ModelSnapshot, event: EventObject | undefined, previous?: ModelSnapshot) =>
    event ? ` via ${event.type} from ${JSON.stringify(previous?.value)}${(previous?.context as { gated?: boolean } | undefined)?.gated ? ' (gated)' : ''}` : '',
};
const model = createTestModel(ptyActivityModel, options as never) as unknown as TestModel<ModelSnapshot, EventObject, unknown>;
const paths = selectPaths(model, ptyActivityModel, 4);
const coverage = new ModelCoverage(ptyActivityModel);

describe(`pty activity model (${pathMode} paths)`, () => {
  for (const path of paths) itWalksPath(pathName(path, showContext), model, path, () => new PtyActivityRun(path, coverage));
  itCoversTheModel('pty activity model coverage', coverage, paths.length);
});
