// @ts-check
/**
 * What the session bar shows of the selected session, decided from its row (`SessionRow`: the
 * library's session state, kept live by `session:state`): its title, the mode and model
 * pickers and the other config options, the plan, the context usage meter, and a client
 * terminal's output. Pure, no DOM (tests/unit/dashboard-session-view.test.ts).
 */

/** @import { SessionRow, TerminalOutputBody } from '../daemon/api-types.js' */
/** @import { PlanEntry, SessionConfigOption } from '../index.js' */

/**
 * One choice of a picker; `group` names the option group it is listed under (a config
 * option's grouped values).
 * @typedef {{ value: string, name: string, description: string | null, group: string | null }} Choice
 */

/**
 * A picker (a select) and where a choice goes: `POST /v1/sessions/:id/mode` (`modeId`),
 * `.../model` (`modelId`) or `.../config` (`configId`, `value`).
 * @typedef {object} Picker
 * @property {'mode' | 'model' | 'config'} route
 * @property {string | null} configId With `config`: the option's id.
 * @property {string} label
 * @property {string | null} description
 * @property {string} current
 * @property {Choice[]} choices
 */

/**
 * A boolean config option: a toggle (`POST /v1/sessions/:id/config` with a boolean `value`).
 * @typedef {{ configId: string, label: string, description: string | null, current: boolean }} Toggle
 */

/**
 * The session's controls: its mode and model pickers (null when it has none), and its other
 * config options.
 * @typedef {{ mode: Picker | null, model: Picker | null, options: Array<{ type: 'select', picker: Picker } | { type: 'boolean', toggle: Toggle }> }} SessionControls
 */

/**
 * The session's controls, from its row. The mode picker is the session's `modes` (set with
 * `/mode`), or — an agent with config options only — its option of category `mode`; the model
 * picker is the unstable `models` (`/model`), or the option of category `model`. A mode
 * option beside `modes` is the same choice (the library keeps the two in step): it is not
 * shown twice; a model option beside `models` is not tied to them, and is listed as an option.
 * Every other option is a select or a toggle.
 * @param {Pick<SessionRow, 'modes' | 'models' | 'configOptions'>} row
 * @returns {SessionControls}
 */
export function sessionControls(row) {
  const options = row.configOptions ?? [];
  const modeOption = options.find((option) => option.category === 'mode' && option.type === 'select');
  const modelOption = options.find((option) => option.category === 'model' && option.type === 'select');
  /** @type {Picker | null} */
  let mode = null;
  if (row.modes && row.modes.availableModes.length > 0) {
    mode = {
      route: 'mode',
      configId: null,
      label: 'mode',
      description: null,
      current: row.modes.currentModeId,
      choices: row.modes.availableModes.map((available) => ({ value: available.id, name: available.name, description: available.description ?? null, group: null })),
    };
  } else if (modeOption) {
    mode = optionPicker(modeOption, 'mode');
  }
  /** @type {Picker | null} */
  let model = null;
  if (row.models && row.models.availableModels.length > 0) {
    model = {
      route: 'model',
      configId: null,
      label: 'model',
      description: null,
      current: row.models.currentModelId,
      choices: row.models.availableModels.map((available) => ({ value: available.modelId, name: available.name, description: available.description ?? null, group: null })),
    };
  } else if (modelOption) {
    model = optionPicker(modelOption, 'model');
  }
  // Not listed again: the option a picker is, and the mode option (the same choice as `modes`).
  const shown = new Set([modeOption?.id, model?.configId].filter(Boolean));
  return {
    mode,
    model,
    options: options
      .filter((option) => !shown.has(option.id))
      .map((option) =>
        option.type === 'boolean'
          ? { type: /** @type {const} */ ('boolean'), toggle: { configId: option.id, label: option.name, description: option.description ?? null, current: option.currentValue === true } }
          : { type: /** @type {const} */ ('select'), picker: optionPicker(option, option.name) },
      ),
  };
}

/**
 * A select config option as a picker (its values flat, or under their groups).
 * @param {SessionConfigOption} option
 * @param {string} label
 * @returns {Picker}
 */
function optionPicker(option, label) {
  const select = /** @type {{ currentValue?: unknown, options?: unknown }} */ (option);
  /** @type {Choice[]} */
  const choices = [];
  for (const entry of Array.isArray(select.options) ? select.options : []) {
    const grouped = /** @type {{ name?: string, options?: Array<{ value: string, name: string, description?: string | null }> }} */ (entry);
    if (Array.isArray(grouped.options)) {
      for (const value of grouped.options) choices.push({ value: value.value, name: value.name, description: value.description ?? null, group: grouped.name ?? null });
    } else {
      const value = /** @type {{ value: string, name: string, description?: string | null }} */ (entry);
      choices.push({ value: value.value, name: value.name, description: value.description ?? null, group: null });
    }
  }
  return { route: 'config', configId: option.id, label, description: option.description ?? null, current: String(select.currentValue ?? ''), choices };
}

/**
 * A count the short way: `950`, `1.2k`, `200k`, `1.5M`.
 * @param {number} count
 */
export function compactNumber(count) {
  const units = /** @type {const} */ ([
    [1e9, 'G'],
    [1e6, 'M'],
    [1e3, 'k'],
  ]);
  for (const [size, unit] of units) {
    if (Math.abs(count) >= size) {
      const scaled = count / size;
      return `${scaled >= 100 ? Math.round(scaled) : Number(scaled.toFixed(1))}${unit}`;
    }
  }
  return String(Math.round(count));
}

/**
 * An amount of money in its currency (`$0.25`, `€1.50`); a currency code the browser does not
 * know is written after the number.
 * @param {{ amount: number, currency: string }} cost
 */
export function costText(cost) {
  try {
    return new Intl.NumberFormat('en', { style: 'currency', currency: cost.currency, maximumFractionDigits: 4, minimumFractionDigits: 2 }).format(cost.amount);
  } catch {
    return `${cost.amount} ${cost.currency}`;
  }
}

/**
 * The context usage meter: how much of the context window is used (`1.2k / 200k tokens`,
 * the fraction for the bar, its percentage), the cost when the agent gives one, and a level
 * (`high` from 80 %, `full` from 95 %). Null before the agent reported any.
 * @param {SessionRow['usage']} usage
 */
export function usageView(usage) {
  if (!usage) return null;
  const fraction = usage.size > 0 ? Math.min(1, Math.max(0, usage.used / usage.size)) : 0;
  const percent = fraction * 100;
  return {
    text: `${compactNumber(usage.used)} / ${compactNumber(usage.size)} tokens`,
    title: `${usage.used} of ${usage.size} tokens of context used`,
    fraction,
    percent: `${percent < 10 && percent > 0 ? percent.toFixed(1) : Math.round(percent)}%`,
    cost: usage.cost ? costText(usage.cost) : null,
    level: fraction >= 0.95 ? 'full' : fraction >= 0.8 ? 'high' : 'ok',
  };
}

/** How each plan status is marked in the list. */
const STATUS_MARKS = { pending: '○', in_progress: '◐', completed: '●' };

/**
 * The plan's entries as listed: each with its status (and a mark for it) and priority, and how
 * many are done.
 * @param {PlanEntry[] | null} plan
 */
export function planView(plan) {
  if (!plan || plan.length === 0) return null;
  return {
    done: `${plan.filter((entry) => entry.status === 'completed').length} of ${plan.length} done`,
    entries: plan.map((entry) => ({
      content: entry.content,
      status: entry.status,
      priority: entry.priority,
      mark: STATUS_MARKS[/** @type {keyof typeof STATUS_MARKS} */ (entry.status)] ?? '·',
    })),
  };
}

/**
 * What the session bar's heading says: its title (the agent's), else its name, else its id;
 * and the rest on hover.
 * @param {SessionRow} row
 */
export function sessionHeading(row) {
  return { text: row.title || row.name || row.sessionId, title: [row.name && `session ${row.name}`, row.sessionId, row.cwd].filter(Boolean).join('\n') };
}

/**
 * A client terminal as the transcript shows it: its output so far (escape sequences taken
 * out), and a line that says whether it runs, how it ended, or why it cannot be read.
 * @param {(TerminalOutputBody & { error?: string | null }) | undefined} terminal
 */
export function terminalView(terminal) {
  if (!terminal) return { output: '', status: 'reading…', running: true };
  if (terminal.error) return { output: terminal.output ?? '', status: terminal.error, running: false };
  const exit = terminal.exitStatus;
  const status = exit === null ? 'running' : exit.signal ? `ended: ${exit.signal}` : `exit ${exit.exitCode ?? '?'}`;
  return { output: stripEscapes(terminal.output), status: terminal.truncated ? `${status} · the start was cut` : status, running: exit === null };
}

/**
 * A terminal's text without its escape sequences (colours, cursor moves: the page is no
 * terminal) and carriage returns that only redraw a line.
 * @param {string} text
 */
export function stripEscapes(text) {
  // eslint-disable-next-line no-control-regex
  return text.replace(/\u001b\[[0-?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)|\u001b[()*+][0-9A-Za-z]|\u001b[@-Z\\-_]/g, '').replace(/\r+\n/g, '\n');
}
