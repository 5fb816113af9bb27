/**
 * What the CLI shows of a session's state (docs/acp.md, "Session state"): its mode, model,
 * context usage, config options, commands and plan, read from the daemon's `SessionRow`
 * (docs/http-api.md). A session the daemon does not hold open has them null or empty (an older
 * daemon leaves them out): every reader here takes that as "not known" (`-`).
 */
import type { SessionRow } from '../daemon/api-types.js';
import type { PlanEntry, SessionConfigOption, SessionUsage } from '../index.js';
import { oneLine } from './output.js';

/**
 * A session row with the state the daemon reports (the live session's; `null`/`[]` for one it
 * does not hold open). Readers take an absent field as unknown too: a daemon of an older
 * version may still run when the CLI is upgraded.
 */
export type SessionDetail = SessionRow;

/** One value a select option offers, its groups flattened. */
export interface OptionValue {
  value: string;
  name: string;
}

/** The values a select config option offers (its groups flattened); [] for a boolean one. */
export function optionValues(option: SessionConfigOption): OptionValue[] {
  if (option.type !== 'select') return [];
  const values: OptionValue[] = [];
  for (const entry of option.options as Array<OptionValue | { group: string; options: OptionValue[] }>) {
    if ('options' in entry) values.push(...entry.options);
    else values.push(entry);
  }
  return values;
}

/** The config option of a category (`mode`, `model`), if the session has one. */
export function optionOfCategory(row: Pick<SessionDetail, 'configOptions'>, category: string): SessionConfigOption | undefined {
  return row.configOptions?.find((option) => option.category === category);
}

/** A config option's current value as text. */
export function currentValue(option: SessionConfigOption): string {
  return String(option.currentValue);
}

/** The session's current mode: its modes' current one, else its `mode` option's value; null when it has neither. */
export function currentMode(row: SessionDetail): string | null {
  if (row.modes) return row.modes.currentModeId;
  const option = optionOfCategory(row, 'mode');
  return option ? currentValue(option) : null;
}

/** The modes a session offers (id and name): its modes, else its `mode` option's values. */
export function offeredModes(row: SessionDetail): OptionValue[] {
  if (row.modes) return row.modes.availableModes.map((mode) => ({ value: mode.id, name: mode.name }));
  const option = optionOfCategory(row, 'mode');
  return option ? optionValues(option) : [];
}

/** The session's current model: its `model` option's value, else the unstable `models`' current one; null when it has neither. */
export function currentModel(row: SessionDetail): string | null {
  const option = optionOfCategory(row, 'model');
  if (option) return currentValue(option);
  return row.models?.currentModelId ?? null;
}

/** The models a session offers: its `model` option's values, else the unstable `models`. */
export function offeredModels(row: SessionDetail): OptionValue[] {
  const option = optionOfCategory(row, 'model');
  if (option) return optionValues(option);
  return (row.models?.availableModels ?? []).map((model) => ({ value: model.modelId, name: model.name }));
}

/** A token count, short: `950`, `1.2k`, `200k`, `1.5M`. */
export function formatTokens(count: number): string {
  if (count < 1000) return String(count);
  if (count < 1_000_000) return `${trim(count / 1000)}k`;
  return `${trim(count / 1_000_000)}M`;
}

const trim = (value: number) => (value >= 100 ? String(Math.round(value)) : value.toFixed(1).replace(/\.0$/, ''));

/** The context usage in a few characters: `1.2k/200k (1%)`, with the cost when the agent reports one (`, 0.25 USD`); `-` when unknown. */
export function usageText(usage: SessionUsage | null | undefined): string {
  if (!usage) return '-';
  const percent = usage.size > 0 ? ` (${Math.round((usage.used / usage.size) * 100)}%)` : '';
  const cost = usage.cost ? `, ${usage.cost.amount.toFixed(2)} ${usage.cost.currency}` : '';
  return `${formatTokens(usage.used)}/${formatTokens(usage.size)}${percent}${cost}`;
}

/** The choices as a list for a message: `default, plan, yolo` (the names too when they differ). */
export function valueList(values: readonly OptionValue[]): string {
  return values.map((value) => (value.name && value.name !== value.value ? `${value.value} (${value.name})` : value.value)).join(', ');
}

/** A plan entry's status as one mark. */
const planMarks: Record<string, string> = { completed: '✓', in_progress: '▸', pending: '·' };

/** The plan, a line per entry: `✓ Outline the change (high)`. */
export function planLines(plan: readonly PlanEntry[]): string[] {
  return plan.map((entry) => `${planMarks[entry.status] ?? '·'} ${oneLine(entry.content)}${entry.priority ? ` (${entry.priority})` : ''}`);
}

/**
 * Of an agent's sessions, the one `ls` and `status` show the mode, model and usage of: its open
 * session named `default` (where `prompt` goes without `-s`), else its open session updated
 * last; none when it has no open session.
 */
export function focusSession<T extends SessionRow>(sessions: readonly T[], agent: string): T | undefined {
  const open = sessions.filter((row) => row.agent === agent && row.live);
  return open.find((row) => row.name === 'default') ?? [...open].sort((a, b) => b.updatedAt - a.updatedAt)[0];
}
