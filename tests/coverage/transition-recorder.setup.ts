/**
 * Vitest setup file: records the transitions the real machines take in this test file, if it
 * is a model or integration test (see transition-coverage.ts). `xstate` is mocked with a copy
 * whose `createActor` adds the recorder to every root actor's inspection, next to the
 * caller's own `inspect`; vi.doMock (not hoisted, so it can depend on the file) applies to
 * every module the test file imports afterwards, the library's included.
 */
import { afterAll, expect, vi } from 'vitest';
import type { ActorOptions, AnyActorLogic, InspectionEvent, Observer } from 'xstate';
import { isRecordedTestFile, TransitionRecorder } from './transition-coverage.js';

const testFile = expect.getState().testPath;

if (testFile && isRecordedTestFile(testFile)) {
  const recorder = new TransitionRecorder();
  // Written now as well, so a file whose tests are all skipped still shows it ran.
  recorder.write(testFile);
  vi.doMock('xstate', async (importOriginal) => {
    const xstate = await importOriginal<typeof import('xstate')>();
    const createActor = ((logic: AnyActorLogic, options?: ActorOptions<AnyActorLogic>) =>
      xstate.createActor(logic, withInspector(options, recorder.observe))) as typeof xstate.createActor;
    return { ...xstate, createActor, interpret: createActor };
  });
  // Setup-file hooks run first and their afterAll last: teardown transitions are in.
  afterAll(() => recorder.write(testFile));
}

/** `options` with `record` added to its inspection; a child (with `parent`) is inspected by its system. */
function withInspector(options: ActorOptions<AnyActorLogic> | undefined, record: (event: InspectionEvent) => void) {
  if (options?.parent) return options;
  const own = options?.inspect as Observer<InspectionEvent> | ((event: InspectionEvent) => void) | undefined;
  if (!own) return { ...options, inspect: record };
  const inspect = (event: InspectionEvent) => {
    record(event);
    if (typeof own === 'function') own(event);
    else own.next?.(event);
  };
  return { ...options, inspect };
}
