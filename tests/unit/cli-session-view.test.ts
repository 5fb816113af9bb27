/**
 * What the CLI shows of a session's state (cli/session-view.ts) and checks before a control is
 * sent (cli/commands/controls.ts): the mode and model from modes, config options or the unstable
 * models; usage in a few characters; the session `ls` shows per agent; refusals naming what the
 * session offers.
 */
import { describe, expect, it } from 'vitest';
import type { SessionRow } from '../../daemon/api-types.js';
import { CliError } from '../../cli/cli-error.js';
import { checkMode, checkModel, configValue } from '../../cli/commands/controls.js';
import { currentMode, currentModel, focusSession, formatTokens, offeredModels, offeredModes, optionValues, planLines, usageText } from '../../cli/session-view.js';
import { sessionText } from '../../cli/commands/sessions.js';
import { styleOf } from '../../cli/output.js';

const modeOption = {
  id: 'mode',
  name: 'Mode',
  category: 'mode',
  type: 'select' as const,
  currentValue: 'default',
  options: [
    { value: 'default', name: 'Default' },
    { value: 'plan', name: 'Plan' },
  ],
};
const modelOption = {
  id: 'model',
  name: 'Model',
  category: 'model',
  type: 'select' as const,
  currentValue: 'small',
  // Grouped values: flattened.
  options: [
    { group: 'fast', name: 'Fast', options: [{ value: 'small', name: 'Small' }] },
    { group: 'smart', name: 'Smart', options: [{ value: 'large', name: 'Large' }] },
  ],
};
const fastOption = { id: 'fast', name: 'Fast', type: 'boolean' as const, currentValue: false };

function row(extra: Partial<SessionRow> = {}): SessionRow {
  return {
    agent: 'fx',
    sessionId: 's1',
    cwd: '/work',
    title: null,
    state: 'ready',
    stopReason: null,
    createdAt: 0,
    updatedAt: 0,
    name: 'default',
    live: true,
    busy: false,
    queued: 0,
    modes: null,
    configOptions: [],
    commands: [],
    plan: null,
    usage: null,
    models: null,
    ...extra,
  };
}

describe('session state as the CLI shows it', () => {
  it('takes the mode from modes, else from the mode option; the model from the model option, else from the unstable models', () => {
    const withModes = row({ modes: { currentModeId: 'plan', availableModes: [{ id: 'default', name: 'Default' }, { id: 'plan', name: 'Plan' }] }, configOptions: [modeOption, modelOption] });
    expect(currentMode(withModes)).toBe('plan');
    expect(currentModel(withModes)).toBe('small');
    expect(offeredModels(withModes).map((each) => each.value)).toEqual(['small', 'large']);
    const optionsOnly = row({ configOptions: [modeOption] });
    expect(currentMode(optionsOnly)).toBe('default');
    expect(offeredModes(optionsOnly).map((each) => each.value)).toEqual(['default', 'plan']);
    const models = row({ models: { currentModelId: 'm2', availableModels: [{ modelId: 'm1', name: 'One' }, { modelId: 'm2', name: 'Two' }] } });
    expect(currentModel(models)).toBe('m2');
    expect(offeredModels(models)).toEqual([{ value: 'm1', name: 'One' }, { value: 'm2', name: 'Two' }]);
    expect(currentMode(row())).toBeNull();
    expect(currentModel(row())).toBeNull();
    expect(optionValues(fastOption)).toEqual([]);
  });

  it('writes usage in a few characters, with the share of the context and the cost', () => {
    expect(formatTokens(950)).toBe('950');
    expect(formatTokens(1200)).toBe('1.2k');
    expect(formatTokens(200_000)).toBe('200k');
    expect(formatTokens(1_500_000)).toBe('1.5M');
    expect(usageText({ used: 1200, size: 200_000, cost: { amount: 0.25, currency: 'USD' } })).toBe('1.2k/200k (1%), 0.25 USD');
    expect(usageText({ used: 50_000, size: 100_000 })).toBe('50k/100k (50%)');
    expect(usageText(null)).toBe('-');
    expect(usageText(undefined)).toBe('-');
  });

  it('shows, per agent, its open default session, else its open session updated last; never a closed one', () => {
    const sessions = [
      row({ sessionId: 'old', name: 'a', updatedAt: 1 }),
      row({ sessionId: 'new', name: 'b', updatedAt: 5 }),
      row({ sessionId: 'gone', name: 'c', updatedAt: 9, live: false }),
      row({ sessionId: 'other', agent: 'codex', name: 'default', updatedAt: 1 }),
    ];
    expect(focusSession(sessions, 'fx')?.sessionId).toBe('new');
    expect(focusSession([...sessions, row({ sessionId: 'dflt', name: 'default', updatedAt: 0 })], 'fx')?.sessionId).toBe('dflt');
    expect(focusSession(sessions, 'codex')?.sessionId).toBe('other');
    expect(focusSession(sessions, 'gemini')).toBeUndefined();
  });

  it('marks each plan entry by its status', () => {
    expect(
      planLines([
        { content: 'Outline', priority: 'high', status: 'completed' },
        { content: 'Apply', priority: 'medium', status: 'in_progress' },
        { content: 'Test', priority: 'low', status: 'pending' },
      ]),
    ).toEqual(['✓ Outline (high)', '▸ Apply (medium)', '· Test (low)']);
  });

  it('sessions show lists the config options with what each takes, the commands and the plan', () => {
    const text = sessionText(
      row({
        title: 'Fixing tests',
        modes: { currentModeId: 'plan', availableModes: [{ id: 'default', name: 'Default' }, { id: 'plan', name: 'Plan' }] },
        configOptions: [modeOption, modelOption, fastOption],
        commands: [{ name: 'review', description: 'Review the change' }],
        plan: [{ content: 'Outline', priority: 'high', status: 'completed' }],
        usage: { used: 1200, size: 200_000 },
      }),
      styleOf(false),
    );
    expect(text).toMatch(/^title: +Fixing tests$/m);
    expect(text).toMatch(/^mode: +plan {2}\(of default \(Default\), plan \(Plan\)\)$/m);
    expect(text).toMatch(/^model: +small {2}\(of small \(Small\), large \(Large\)\)$/m);
    expect(text).toMatch(/^usage: +1\.2k\/200k \(1%\)$/m);
    expect(text).toMatch(/^ {2}fast +false +Fast: true or false$/m);
    expect(text).toMatch(/^ {2}model +small +Model \[model\]: one of small \(Small\), large \(Large\)$/m);
    expect(text).toMatch(/^ {2}\/review +Review the change$/m);
    expect(text).toMatch(/^plan:\n {2}✓ Outline \(high\)$/m);
  });
});

describe('the controls refuse what the session does not offer, naming what it does', () => {
  const offering = row({ modes: { currentModeId: 'default', availableModes: [{ id: 'default', name: 'Default' }, { id: 'plan', name: 'Plan' }] }, configOptions: [modeOption, modelOption, fastOption] });
  const refusal = (act: () => unknown) => {
    try {
      act();
    } catch (error) {
      expect(error).toBeInstanceOf(CliError);
      const { message, hint, kind, exitCode } = error as CliError;
      return { message, hint, kind, exitCode };
    }
    throw new Error('not refused');
  };

  it('a mode or a model', () => {
    expect(() => checkMode(offering, 'plan')).not.toThrow();
    expect(refusal(() => checkMode(offering, 'yolo'))).toEqual({ message: 'Session "default" of fx offers no mode "yolo"', hint: 'its modes: default (Default), plan (Plan)', kind: 'invalid_options', exitCode: 2 });
    expect(() => checkModel(offering, 'large')).not.toThrow();
    expect(refusal(() => checkModel(offering, 'huge'))).toMatchObject({ message: 'Session "default" of fx offers no model "huge"', hint: 'its models: small (Small), large (Large)', exitCode: 2 });
    expect(refusal(() => checkMode(row(), 'plan'))).toMatchObject({ kind: 'unsupported', exitCode: 2 });
    expect(refusal(() => checkModel(row(), 'large'))).toMatchObject({ kind: 'unsupported', exitCode: 2 });
  });

  it('a config option and its value: true/false for a boolean option, one of its values for a select', () => {
    expect(configValue(offering, 'fast', 'true')).toBe(true);
    expect(configValue(offering, 'fast', 'false')).toBe(false);
    expect(configValue(offering, 'model', 'large')).toBe('large');
    expect(refusal(() => configValue(offering, 'fast', 'yes'))).toMatchObject({ message: 'Session "default" of fx takes true or false for "fast", not "yes"', exitCode: 2 });
    expect(refusal(() => configValue(offering, 'model', 'huge'))).toMatchObject({ hint: 'its values: small (Small), large (Large)' });
    expect(refusal(() => configValue(offering, 'speed', 'x'))).toMatchObject({ message: 'Session "default" of fx has no config option "speed"', hint: 'its options: mode, model, fast' });
    expect(refusal(() => configValue(row(), 'fast', 'true'))).toMatchObject({ kind: 'unsupported' });
  });

  it('a session not open in the daemon is not checked: the daemon reopens it and the agent says what it offers', () => {
    const closed = row({ live: false });
    expect(() => checkMode(closed, 'anything')).not.toThrow();
    expect(() => checkModel(closed, 'anything')).not.toThrow();
    expect(configValue(closed, 'fast', 'true')).toBe(true);
    expect(configValue(closed, 'model', 'large')).toBe('large');
  });
});
