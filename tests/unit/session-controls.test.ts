/** SessionControls at its edge (a fake connection): a re-application after a reopen never overrides a choice the user makes meanwhile, and records no choice of its own. */
import { describe, expect, it } from 'vitest';
import { SimulatedClock } from 'xstate';
import type { ClientConnection } from '../../core/acp-types.js';
import { SessionControls } from '../../runtime/session-controls.js';
import type { SessionRecord } from '../../runtime/session-registry.js';
import { SessionState } from '../../runtime/session-state.js';

function harness() {
  const sent: Array<{ method: string; params: Record<string, unknown> }> = [];
  const pending: Array<() => void> = [];
  const connection = {
    signal: new AbortController().signal,
    agent: {
      request: (method: string, params: Record<string, unknown>) => {
        sent.push({ method, params });
        return new Promise<unknown>((resolve) => pending.push(() => resolve({})));
      },
    },
  } as unknown as ClientConnection;
  const state = new SessionState();
  state.fromAnswer({ modes: { currentModeId: 'default', availableModes: [{ id: 'default', name: 'D' }, { id: 'plan', name: 'P' }, { id: 'yolo', name: 'Y' }] } });
  const record = { agent: 'a', id: 's1', state, status: () => 'ready', released: new Promise<void>(() => {}) } as unknown as SessionRecord;
  const controls = new SessionControls({ connectionOf: () => connection, displayName: () => 'A', clock: new SimulatedClock(), timeoutMs: 1_000 });
  const answerNext = async () => {
    while (pending.length === 0) await new Promise((resolve) => setImmediate(resolve));
    pending.shift()!();
  };
  return { sent, state, record, controls, answerNext };
}

describe('SessionControls.reapply', () => {
  it('sets the chosen mode again without counting it as a new choice', async () => {
    const { sent, state, record, controls, answerNext } = harness();
    const choosing = controls.setMode(record, 'plan');
    await answerNext();
    await choosing;
    expect(state.choices).toMatchObject({ modeId: 'plan', made: 1 });
    state.setCurrentMode('default'); // the agent reopened the session in its default mode
    const reapplying = controls.reapply(record);
    await answerNext();
    expect(await reapplying).toEqual([]);
    expect(state.get('modes')?.currentModeId).toBe('plan');
    expect(state.choices.made).toBe(1);
    expect(sent.map((entry) => entry.params.modeId)).toEqual(['plan', 'plan']);
  });

  it("a choice the user makes during the re-application wins: what is left of it is not sent", async () => {
    const { sent, state, record, controls, answerNext } = harness();
    await Promise.all([controls.setMode(record, 'plan'), answerNext()]);
    await Promise.all([controls.setConfigOption(record, 'x', 'y').catch(() => undefined)]); // no options: refused, not a choice
    state.fromAnswer({ modes: { currentModeId: 'default', availableModes: state.get('modes')!.availableModes }, models: { currentModelId: 'm1', availableModels: [{ modelId: 'm1', name: '1' }, { modelId: 'm2', name: '2' }] } });
    await Promise.all([controls.setModel(record, 'm2'), answerNext()]);
    state.fromAnswer({ models: { currentModelId: 'm1', availableModels: [{ modelId: 'm1', name: '1' }, { modelId: 'm2', name: '2' }] } });
    const reapplying = controls.reapply(record); // mode plan first, then model m2
    const user = controls.setMode(record, 'yolo'); // meanwhile
    await answerNext(); // the re-applied mode
    await answerNext(); // the user's
    await user;
    expect(await reapplying).toEqual([]);
    expect(state.get('modes')?.currentModeId).toBe('yolo');
    expect(state.choices.modeId).toBe('yolo');
    // The re-application stopped: the model was not set again over the user's newer choice.
    expect(sent.filter((entry) => entry.method === 'session/set_model').map((entry) => entry.params.modelId)).toEqual(['m2']);
  });
});
