/**
 * What every model-based test shares: a run of one model path on a fresh system under test
 * (`ModelRun`, subclassed by each harness), registering a path as a test with the leak
 * check, and the coverage test.
 */
import { expect, it } from 'vitest';
import type { EventObject } from 'xstate';
import type { TestModel } from 'xstate/graph';
import { atStep, formatState, type ModelCoverage, type ModelPath, type ModelSnapshot, type ModelStep } from './model-paths.js';
import { gate } from './sut.js';

/** One path of a model, run against the real system; subclasses say how to check and act. */
export abstract class ModelRun {
  protected index = 0;

  constructor(
    protected readonly path: ModelPath,
    private readonly show: (context: Record<string, unknown>) => string,
  ) {}

  /** Asserts the real system is in the model state. */
  protected abstract check(state: ModelSnapshot): Promise<void>;
  /** Causes the model event for real and waits until the system has settled. */
  protected abstract execute(step: ModelStep): Promise<void>;
  /** Shuts down, cleans up, and returns the pids of fixture processes still running. */
  abstract dispose(): Promise<number[]>;
  /** Work before the first step (opening a session, say). */
  async start(): Promise<void> {}

  /** `testPath`'s `{ states, events }`: one assertion for every state, one executor for every event. */
  protected testParams(stateKeys: readonly string[], eventTypes: readonly string[]) {
    const check = atStep(() => `state check at ${this.where()}`, (state: ModelSnapshot) => this.check(state));
    const execute = atStep(
      () => `event ${this.where()}`,
      async (step: ModelStep) => {
        this.index = this.path.steps.indexOf(step);
        await this.execute(step);
      },
    );
    return {
      states: Object.fromEntries(stateKeys.map((key) => [key, check])),
      events: Object.fromEntries(eventTypes.map((type) => [type, execute])),
    };
  }

  /** `step 3 →CRASH→ reconnecting(attempt 1)`: where a failure happened, for its message. */
  protected where(): string {
    const step = this.path.steps[this.index]!;
    return `step ${this.index} ${this.index > 0 ? `→${step.event.type}→ ` : ''}${formatState(step.state, this.show)}`;
  }
}

type AnyTestModel = TestModel<ModelSnapshot, EventObject, unknown>;

const concurrently = gate(Number(process.env.MODEL_CONCURRENCY ?? 4));

/** Registers one path as a test: a fresh run, every step checked, no process left behind. */
export function itWalksPath(name: string, model: AnyTestModel, path: ModelPath, newRun: () => ModelRun & { params(): object }): void {
  it.concurrent(name, { timeout: 120_000 }, () =>
    concurrently(async () => {
      const run = newRun();
      let leaked: number[];
      try {
        await run.start();
        await model.testPath(path, run.params() as Parameters<AnyTestModel['testPath']>[1]);
      } finally {
        leaked = await run.dispose();
      }
      expect(leaked, 'fixture processes left running after shutdown').toEqual([]);
    }),
  );
}

/** The coverage test: prints what the paths reached; fails on anything missing but `knownGaps`. */
export function itCoversTheModel(title: string, coverage: ModelCoverage, pathCount: number, knownGaps: readonly string[] = []): void {
  it('covers every state and every transition of the model', () => {
    console.log(coverage.summary(title, pathCount));
    expect(coverage.missingStates).toEqual([]);
    expect(coverage.missingTransitions).toEqual([...knownGaps]);
  });
}
