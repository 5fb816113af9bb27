/**
 * What an agent says of one session besides its messages: its modes, config options (the
 * model among them), slash commands, plan, context usage and title — filled from the
 * session/new, load and resume answers and kept current from the state updates the agent
 * streams. Plain JSON, kept beside the session actor (docs/acp.md).
 */
import type {
  AvailableCommand,
  PlanEntry,
  SessionConfigOption,
  SessionModeState,
  SessionModelState,
  SessionUpdate,
  UnknownSessionUpdate,
  UsageUpdate,
} from '../core/acp-types.js';
import type { SessionStateAnswer } from '../services/acp-client.service.js';

/** The latest usage an agent reported (`usage_update` without its kind). */
export type SessionUsage = UsageUpdate;

/** A session's state as the agent last described it. */
export interface SessionStateFields {
  /** The session's modes (`{ currentModeId, availableModes }`), or null when the agent has none. */
  modes: SessionModeState | null;
  /** ACP config options, the `model` and `mode` categories included; empty when the agent has none. */
  configOptions: SessionConfigOption[];
  /** The slash commands the agent offers now. */
  commands: AvailableCommand[];
  /** The latest plan's entries, or null before the agent sent one. */
  plan: PlanEntry[] | null;
  /** The latest context usage (`used`, `size`, `cost`), or null before the agent sent one. */
  usage: SessionUsage | null;
  /** The session's title (`session_info_update`), or null. */
  title: string | null;
  /** The unstable `models` field (gemini-cli), or null when the agent does not use it. */
  models: SessionModelState | null;
}

/** What the user set with the controls: re-applied when the agent reopens the session with something else. */
export interface SessionChoices {
  modeId?: string;
  modelId?: string;
  config: Record<string, string | boolean>;
  /** Counts the choices made: a re-application stops when the user chose again meanwhile. */
  made: number;
}

type StateKind = 'current_mode_update' | 'config_option_update' | 'available_commands_update' | 'plan' | 'usage_update' | 'session_info_update';

/** The update kinds that change state; every other kind passes by at the cost of one lookup. */
export const stateUpdateKinds: ReadonlySet<string> = new Set<StateKind>([
  'current_mode_update',
  'config_option_update',
  'available_commands_update',
  'plan',
  'usage_update',
  'session_info_update',
]);

export class SessionState {
  private readonly fields: SessionStateFields = { modes: null, configOptions: [], commands: [], plan: null, usage: null, title: null, models: null };
  /** What the user chose, in the order it was set. */
  readonly choices: SessionChoices = { config: {}, made: 0 };

  constructor(private readonly changed: <K extends keyof SessionStateFields>(field: K, value: SessionStateFields[K]) => void = () => {}) {}

  get<K extends keyof SessionStateFields>(field: K): SessionStateFields[K] {
    return this.fields[field];
  }

  /** Every field, copied: safe to keep or print. */
  snapshot(): SessionStateFields {
    return structuredClone(this.fields);
  }

  /** From an answer of session/new, load or resume: each field it carries replaces the one known. */
  fromAnswer(answer: SessionStateAnswer): void {
    if (answer.modes !== undefined) this.set('modes', answer.modes ?? null);
    if (answer.configOptions !== undefined) this.setConfigOptions(answer.configOptions ?? []);
    if (answer.models !== undefined) this.set('models', modelState(answer.models));
  }

  /** Applies one state update (already checked against ACP's schema); false for any other kind. */
  apply(update: SessionUpdate | UnknownSessionUpdate): boolean {
    switch (update.sessionUpdate as StateKind) {
      case 'current_mode_update':
        this.setCurrentMode((update as { currentModeId: string }).currentModeId);
        return true;
      case 'config_option_update':
        this.setConfigOptions((update as { configOptions: SessionConfigOption[] }).configOptions);
        return true;
      case 'available_commands_update':
        this.set('commands', (update as { availableCommands: AvailableCommand[] }).availableCommands);
        return true;
      case 'plan':
        this.set('plan', (update as { entries: PlanEntry[] }).entries);
        return true;
      case 'usage_update': {
        const usage: Record<string, unknown> = { ...update };
        delete usage.sessionUpdate;
        this.set('usage', usage as unknown as UsageUpdate);
        return true;
      }
      case 'session_info_update': {
        const { title } = update as { title?: string | null };
        if (title !== undefined) this.set('title', title);
        return true;
      }
      default:
        return false;
    }
  }

  /** The mode now current: from `current_mode_update`, a mode option's value, or a successful set_mode. */
  setCurrentMode(modeId: string): void {
    const modes = this.fields.modes;
    if (modes?.currentModeId !== modeId) this.set('modes', modes ? { ...modes, currentModeId: modeId } : { currentModeId: modeId, availableModes: [] });
    // The mode option says the same at once: an agent may announce it only after its answer (codex-acp).
    const options = this.fields.configOptions;
    const index = options.findIndex((option) => option.category === 'mode' && option.type === 'select');
    const option = options[index];
    if (option && option.currentValue !== modeId && selectValues(option).includes(modeId)) {
      this.set('configOptions', options.map((candidate, at) => (at === index ? ({ ...candidate, currentValue: modeId } as SessionConfigOption) : candidate)));
    }
  }

  /** The config options now; an option of category `mode` also moves the current mode (claude-agent-acp announces a mode change only so). */
  setConfigOptions(options: SessionConfigOption[]): void {
    this.set('configOptions', options);
    const mode = options.find((option) => option.category === 'mode' && option.type === 'select');
    if (mode && this.fields.modes && typeof mode.currentValue === 'string') this.setCurrentMode(mode.currentValue);
  }

  /** The model now current of the unstable `models` field. */
  setCurrentModel(modelId: string): void {
    const models = this.fields.models;
    if (models && models.currentModelId !== modelId) this.set('models', { ...models, currentModelId: modelId });
  }

  private set<K extends keyof SessionStateFields>(field: K, value: SessionStateFields[K]): void {
    if (sameJson(this.fields[field], value)) return;
    this.fields[field] = value;
    this.changed(field, value);
  }
}

/** The unstable `models` field, when it has the shape gemini-cli gives it; null otherwise. */
function modelState(value: unknown): SessionModelState | null {
  const candidate = value as { currentModelId?: unknown; availableModels?: unknown } | null;
  if (!candidate || typeof candidate !== 'object' || typeof candidate.currentModelId !== 'string' || !Array.isArray(candidate.availableModels)) return null;
  const availableModels = candidate.availableModels.filter(
    (model): model is SessionModelState['availableModels'][number] =>
      model !== null && typeof model === 'object' && typeof (model as { modelId?: unknown }).modelId === 'string' && typeof (model as { name?: unknown }).name === 'string',
  );
  return { currentModelId: candidate.currentModelId, availableModels };
}

function sameJson(a: unknown, b: unknown): boolean {
  return a === b || JSON.stringify(a) === JSON.stringify(b);
}

/** Every value a select option offers, its groups flattened. */
export function selectValues(option: SessionConfigOption): string[] {
  if (option.type !== 'select') return [];
  const values: string[] = [];
  for (const entry of option.options as Array<{ value?: string; options?: Array<{ value: string }> }>) {
    if (typeof entry.value === 'string') values.push(entry.value);
    for (const grouped of entry.options ?? []) values.push(grouped.value);
  }
  return values;
}
