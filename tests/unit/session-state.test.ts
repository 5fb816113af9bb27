/** The session state a session keeps from the agent's answers and updates (runtime/session-state.ts), and elicitation answer checks (core/elicitation.ts). */
import { describe, expect, it } from 'vitest';
import { elicitationAnswerIssue, elicitationView, type ElicitationRequestView } from '../../core/elicitation.js';
import { SessionState, selectValues } from '../../runtime/session-state.js';
import type { SessionConfigOption } from '../../index.js';

const modeOption = (value: string): SessionConfigOption => ({
  id: 'mode',
  name: 'Mode',
  category: 'mode',
  type: 'select',
  currentValue: value,
  options: [
    { value: 'default', name: 'Default' },
    { value: 'plan', name: 'Plan' },
  ],
});

function recording() {
  const changes: Array<[string, unknown]> = [];
  return { state: new SessionState((field, value) => changes.push([field, value])), changes };
}

describe('SessionState', () => {
  it('takes the fields an answer carries, the unstable models only in its known shape', () => {
    const { state, changes } = recording();
    state.fromAnswer({ modes: { currentModeId: 'default', availableModes: [{ id: 'default', name: 'Default' }] }, configOptions: [modeOption('default')], models: { currentModelId: 'm1', availableModels: [{ modelId: 'm1', name: 'One' }, { nope: true }] } });
    expect(state.get('models')).toEqual({ currentModelId: 'm1', availableModels: [{ modelId: 'm1', name: 'One' }] });
    expect(changes.map(([field]) => field)).toEqual(['modes', 'configOptions', 'models']);
    state.fromAnswer({ models: 'garbage' });
    expect(state.get('models')).toBeNull();
    state.fromAnswer({});
    expect(state.get('modes')?.currentModeId).toBe('default');
  });

  it('applies each state update, emits only on a change, and a mode option moves the current mode', () => {
    const { state, changes } = recording();
    state.fromAnswer({ modes: { currentModeId: 'default', availableModes: [] } });
    changes.length = 0;
    expect(state.apply({ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'x' } })).toBe(false);
    state.apply({ sessionUpdate: 'config_option_update', configOptions: [modeOption('plan')] });
    expect(state.get('modes')?.currentModeId).toBe('plan');
    state.apply({ sessionUpdate: 'current_mode_update', currentModeId: 'plan' });
    state.apply({ sessionUpdate: 'usage_update', used: 5, size: 10 });
    state.apply({ sessionUpdate: 'usage_update', used: 5, size: 10 });
    state.apply({ sessionUpdate: 'session_info_update', updatedAt: '2026-11-27T00:00:00Z' });
    state.apply({ sessionUpdate: 'session_info_update', title: 'T' });
    state.apply({ sessionUpdate: 'session_info_update', title: null });
    expect(changes).toEqual([
      ['configOptions', [modeOption('plan')]],
      ['modes', { currentModeId: 'plan', availableModes: [] }],
      ['usage', { used: 5, size: 10 }],
      ['title', 'T'],
      ['title', null],
    ]);
  });

  it('a mode set moves the mode option too, at once', () => {
    const { state } = recording();
    state.fromAnswer({ modes: { currentModeId: 'default', availableModes: [] }, configOptions: [modeOption('default')] });
    state.setCurrentMode('plan');
    expect(state.get('configOptions')[0]?.currentValue).toBe('plan');
    state.setCurrentMode('not-an-option-value');
    expect(state.get('configOptions')[0]?.currentValue).toBe('plan');
    expect(state.get('modes')?.currentModeId).toBe('not-an-option-value');
  });

  it('a mode update with no modes known makes them; snapshots are copies', () => {
    const { state } = recording();
    state.setCurrentMode('ask');
    expect(state.get('modes')).toEqual({ currentModeId: 'ask', availableModes: [] });
    const snapshot = state.snapshot();
    snapshot.modes!.currentModeId = 'changed';
    expect(state.get('modes')?.currentModeId).toBe('ask');
  });

  it('selectValues flattens grouped options', () => {
    const grouped = { id: 'model', name: 'Model', type: 'select', currentValue: 'a', options: [{ group: 'g', name: 'G', options: [{ value: 'a', name: 'A' }, { value: 'b', name: 'B' }] }] } as SessionConfigOption;
    expect(selectValues(grouped)).toEqual(['a', 'b']);
    expect(selectValues({ id: 'fast', name: 'Fast', type: 'boolean', currentValue: false } as SessionConfigOption)).toEqual([]);
  });
});

describe('elicitation answers', () => {
  const form: ElicitationRequestView = elicitationView('a', {
    sessionId: 's',
    mode: 'form',
    message: 'm',
    requestedSchema: {
      type: 'object',
      properties: {
        name: { type: 'string', minLength: 2, maxLength: 4, pattern: '^[A-Z]' },
        mail: { type: 'string', format: 'email' },
        size: { type: 'string', oneOf: [{ const: 's', title: 'Small' }] },
        count: { type: 'integer', minimum: 1, maximum: 3 },
        ratio: { type: 'number', maximum: 1 },
        ok: { type: 'boolean' },
        tags: { type: 'array', items: { type: 'string', enum: ['x', 'y'] }, maxItems: 1 },
      },
      required: ['name'],
    },
  } as never);

  it.each([
    [{ action: 'decline' }, null],
    [{ action: 'accept', content: { name: 'Ada' } }, null],
    [{ action: 'accept', content: { name: 'Ada', mail: 'a@b.c', size: 's', count: 3, ratio: 0.5, ok: false, tags: ['y'] } }, null],
    [{ action: 'accept', content: {} }, 'the field "name" is required'],
    [{ action: 'accept', content: { name: 'A' } }, 'the field "name" must be at least 2 characters'],
    [{ action: 'accept', content: { name: 'Adaaa' } }, 'the field "name" must be at most 4 characters'],
    [{ action: 'accept', content: { name: 'ada' } }, 'the field "name" must match ^[A-Z]'],
    [{ action: 'accept', content: { name: 'Ada', mail: 'nope' } }, 'the field "mail" must be a valid email'],
    [{ action: 'accept', content: { name: 'Ada', size: 'l' } }, 'the field "size" must be one of s'],
    [{ action: 'accept', content: { name: 'Ada', count: 1.5 } }, 'the field "count" must be a whole number'],
    [{ action: 'accept', content: { name: 'Ada', ratio: 2 } }, 'the field "ratio" must be at most 1'],
    [{ action: 'accept', content: { name: 'Ada', ok: 'yes' } }, 'the field "ok" must be true or false'],
    [{ action: 'accept', content: { name: 'Ada', tags: ['x', 'y'] } }, 'the field "tags" must hold at most 1'],
    [{ action: 'accept', content: { name: 'Ada', tags: ['z'] } }, 'the field "tags" must hold only x, y'],
    [{ action: 'maybe' }, "the action must be 'accept', 'decline' or 'cancel'"],
  ])('%j → %s', (answer, issue) => {
    expect(elicitationAnswerIssue(form, answer as never)).toBe(issue);
  });

  it('a url elicitation is accepted without content', () => {
    const url = elicitationView('a', { requestId: 1, mode: 'url', message: 'm', url: 'https://x.invalid', elicitationId: 'e' } as never);
    expect(url).toMatchObject({ sessionId: null, mode: 'url', url: 'https://x.invalid', elicitationId: 'e', requestedSchema: null });
    expect(elicitationAnswerIssue(url, { action: 'accept' })).toBeNull();
    expect(elicitationAnswerIssue(url, { action: 'accept', content: { a: 'b' } })).toMatch(/without content/);
  });
});
