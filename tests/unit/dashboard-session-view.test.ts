/**
 * What the session bar shows, without a browser (dashboard/session-view.js): the mode and
 * model pickers and the other config options from a session's row (modes, the unstable
 * models, options by category, grouped values, toggles), the usage meter and its formatting,
 * the plan, the heading, and a client terminal's output.
 */
import { describe, expect, it } from 'vitest';
import type { SessionRow } from '../../daemon/api-types.js';
import { compactNumber, costText, planView, sessionControls, sessionHeading, stripEscapes, terminalView, usageView } from '../../dashboard/session-view.js';
import type { SessionConfigOption } from '../../index.js';

/** The fixture agent's options in its --acp-features mode. */
const fixtureOptions: SessionConfigOption[] = [
  {
    id: 'mode',
    name: 'Mode',
    category: 'mode',
    type: 'select',
    currentValue: 'default',
    options: [
      { value: 'default', name: 'Default' },
      { value: 'plan', name: 'Plan' },
    ],
  },
  {
    id: 'model',
    name: 'Model',
    category: 'model',
    type: 'select',
    currentValue: 'fixture-small',
    options: [
      { value: 'fixture-small', name: 'Small' },
      { value: 'fixture-large', name: 'Large', description: 'slower' },
    ],
  },
  { id: 'fast', name: 'Fast', type: 'boolean', currentValue: false, description: 'answer sooner' },
];
const modes = { currentModeId: 'default', availableModes: [{ id: 'default', name: 'Default' }, { id: 'plan', name: 'Plan', description: 'think first' }] };

describe('sessionControls', () => {
  it("the session's modes are the mode picker (the mode option beside them is not shown twice); the model option is the model picker; a boolean is a toggle", () => {
    const controls = sessionControls({ modes, models: null, configOptions: fixtureOptions });
    expect(controls.mode).toEqual({
      route: 'mode',
      configId: null,
      label: 'mode',
      description: null,
      current: 'default',
      choices: [
        { value: 'default', name: 'Default', description: null, group: null },
        { value: 'plan', name: 'Plan', description: 'think first', group: null },
      ],
    });
    expect(controls.model).toMatchObject({ route: 'config', configId: 'model', label: 'model', current: 'fixture-small' });
    expect(controls.model!.choices[1]).toEqual({ value: 'fixture-large', name: 'Large', description: 'slower', group: null });
    expect(controls.options).toEqual([{ type: 'boolean', toggle: { configId: 'fast', label: 'Fast', description: 'answer sooner', current: false } }]);
  });

  it('the unstable models field is the model picker (set with /model); then a model option is one option among the others', () => {
    const models = { currentModelId: 'a', availableModels: [{ modelId: 'a', name: 'A' }, { modelId: 'b', name: 'B', description: 'bigger' }] };
    const controls = sessionControls({ modes: null, models, configOptions: fixtureOptions });
    expect(controls.model).toMatchObject({ route: 'model', configId: null, current: 'a', choices: [{ value: 'a' }, { value: 'b', description: 'bigger' }] });
    // No modes: the mode option is the mode picker.
    expect(controls.mode).toMatchObject({ route: 'config', configId: 'mode', label: 'mode', current: 'default' });
    expect(controls.options.map((option) => (option.type === 'select' ? option.picker.configId : option.toggle.configId))).toEqual(['model', 'fast']);
  });

  it('grouped values keep their group; another select keeps its name as its label; no state, no control', () => {
    const grouped: SessionConfigOption = {
      id: 'effort',
      name: 'Reasoning effort',
      category: 'thought_level',
      type: 'select',
      currentValue: 'high',
      options: [
        { group: 'fast', name: 'Fast', options: [{ value: 'low', name: 'Low' }] },
        { group: 'deep', name: 'Deep', options: [{ value: 'high', name: 'High' }] },
      ],
    };
    const [option] = sessionControls({ modes: null, models: null, configOptions: [grouped] }).options;
    expect(option).toEqual({
      type: 'select',
      picker: {
        route: 'config',
        configId: 'effort',
        label: 'Reasoning effort',
        description: null,
        current: 'high',
        choices: [
          { value: 'low', name: 'Low', description: null, group: 'Fast' },
          { value: 'high', name: 'High', description: null, group: 'Deep' },
        ],
      },
    });
    expect(sessionControls({ modes: null, models: null, configOptions: [] })).toEqual({ mode: null, model: null, options: [] });
    expect(sessionControls({ modes: { currentModeId: 'x', availableModes: [] }, models: null, configOptions: [] }).mode).toBeNull();
  });
});

describe('the usage meter', () => {
  it('says used / size in short numbers, the share used, the cost, and a level', () => {
    expect(usageView({ used: 1200, size: 200_000, cost: { amount: 0.25, currency: 'USD' } })).toEqual({
      text: '1.2k / 200k tokens',
      title: '1200 of 200000 tokens of context used',
      fraction: 0.006,
      percent: '0.6%',
      cost: '$0.25',
      level: 'ok',
    });
    expect(usageView({ used: 170_000, size: 200_000 })).toMatchObject({ percent: '85%', cost: null, level: 'high' });
    expect(usageView({ used: 250_000, size: 200_000 })).toMatchObject({ fraction: 1, percent: '100%', level: 'full' });
    expect(usageView({ used: 0, size: 0 })).toMatchObject({ fraction: 0, percent: '0%' });
    expect(usageView(null)).toBeNull();
  });

  it('compact numbers and costs', () => {
    expect([0, 950, 1000, 1234, 12_345, 200_000, 1_500_000, 123_456_789, 2e9].map(compactNumber)).toEqual(['0', '950', '1k', '1.2k', '12.3k', '200k', '1.5M', '123M', '2G']);
    expect([costText({ amount: 1.5, currency: 'EUR' }), costText({ amount: 0.0123, currency: 'USD' }), costText({ amount: 3, currency: 'not a code' })]).toEqual(['€1.50', '$0.0123', '3 not a code']);
  });
});

describe('the plan, the heading, a terminal', () => {
  it('lists the plan with a mark per status and its priority, and how much is done', () => {
    expect(
      planView([
        { content: 'Outline', priority: 'high', status: 'completed' },
        { content: 'Apply', priority: 'medium', status: 'in_progress' },
        { content: 'Check', priority: 'low', status: 'pending' },
      ]),
    ).toEqual({
      done: '1 of 3 done',
      entries: [
        { content: 'Outline', status: 'completed', priority: 'high', mark: '●' },
        { content: 'Apply', status: 'in_progress', priority: 'medium', mark: '◐' },
        { content: 'Check', status: 'pending', priority: 'low', mark: '○' },
      ],
    });
    expect([planView(null), planView([])]).toEqual([null, null]);
  });

  it("heads the bar with the session's title, else its name, else its id", () => {
    const row = { sessionId: 's-1', name: 'work', title: null, cwd: '/w' } as SessionRow;
    expect(sessionHeading(row)).toEqual({ text: 'work', title: 'session work\ns-1\n/w' });
    expect(sessionHeading({ ...row, title: 'Fixing tests' }).text).toBe('Fixing tests');
    expect(sessionHeading({ ...row, name: null }).text).toBe('s-1');
  });

  it("shows a terminal's output without escape sequences, and whether it runs, how it ended, or why it cannot be read", () => {
    const body = { sessionId: 's', terminalId: 't', output: '\u001b[32mok\u001b[0m\r\nnext\n', truncated: false, exitStatus: null };
    expect(terminalView(body)).toEqual({ output: 'ok\nnext\n', status: 'running', running: true });
    expect(terminalView({ ...body, exitStatus: { exitCode: 2, signal: null } })).toMatchObject({ status: 'exit 2', running: false });
    expect(terminalView({ ...body, exitStatus: { exitCode: null, signal: 'SIGKILL' }, truncated: true })).toMatchObject({ status: 'ended: SIGKILL · the start was cut' });
    expect(terminalView({ ...body, error: 'no longer readable' })).toMatchObject({ status: 'no longer readable', running: false });
    expect(terminalView(undefined)).toEqual({ output: '', status: 'reading…', running: true });
    expect(stripEscapes('\u001b]0;title\u0007plain \u001b(Btext')).toBe('plain text');
  });
});
