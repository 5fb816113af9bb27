/**
 * A session's controls: `session/set_mode`, `session/set_config_option` and the unstable
 * `session/set_model`. Each is checked against what the agent advertised for the session
 * before anything is sent (`unsupported`, `invalid_options`), resolves once the agent has
 * answered and the state shows it, and leaves the state as it was when the agent refuses.
 * The choices are kept and re-applied when the agent reopens the session with others.
 */
import type { ClientConnection, SessionConfigOption } from '../core/acp-types.js';
import type { Clock } from '../core/clock.js';
import { agentFailure, failures, invalidOptions, toError, type AgentError } from '../core/errors.js';
import { acpMethods, toRequestError, validateSetConfigOptionResponse } from '../services/acp-client.service.js';
import type { SessionRecord } from './session-registry.js';
import { deadline } from '../util/deadline.js';
import { selectValues } from './session-state.js';

/** The unstable request gemini-cli answers (the stable schema has the `model` config option instead). */
export const setModelMethod = 'session/set_model';

export interface SessionControlDependencies {
  /** The agent's usable connection, if it has one. */
  connectionOf(agent: string): ClientConnection | undefined;
  displayName(agent: string): string;
  /** The supervisor's clock: a control the agent does not answer within `timeoutMs` is cancelled. */
  clock: Clock;
  timeoutMs: number;
}

/** What a control request carries besides its own fields. */
export interface ControlOptions {
  /** Attached to the request as `_meta`. */
  meta?: Record<string, unknown>;
}

export class SessionControls {
  constructor(private readonly deps: SessionControlDependencies) {}

  /**
   * `session/set_mode` when the agent gave the session modes, else `session/set_config_option`
   * on its option of category `mode`; `unsupported` when it has neither.
   */
  async setMode(record: SessionRecord, modeId: string, options: ControlOptions = {}): Promise<void> {
    if (typeof modeId !== 'string' || modeId === '') throw invalidOptions('A mode id must be a non-empty string', record.agent);
    checkMeta(record.agent, options);
    const modes = record.state.get('modes');
    // Modes the agent never offered (only announced a current one) are no modes to set.
    if (!modes || modes.availableModes.length === 0) {
      const option = this.optionOfCategory(record, 'mode');
      if (!option) throw this.unsupported(record, 'modes for this session');
      return this.setConfigOption(record, option.id, modeId, options);
    }
    if (!modes.availableModes.some((mode) => mode.id === modeId)) {
      throw invalidOptions(`Unknown mode "${modeId}": ${this.deps.displayName(record.agent)} offers ${modes.availableModes.map((mode) => mode.id).join(', ')}`, record.agent);
    }
    const connection = this.usableConnection(record);
    await this.send(record, connection, acpMethods.agent.session.setMode, { sessionId: record.id, modeId, ...meta(options) });
    // Some agents announce the change only in text (gemini-cli): the answer itself says it took.
    record.state.setCurrentMode(modeId);
    chosen(record, options, (choices) => (choices.modeId = modeId));
  }

  /** `session/set_config_option`: the value must be one of a select option's values, or a boolean for a boolean option. */
  async setConfigOption(record: SessionRecord, configId: string, value: string | boolean, options: ControlOptions = {}): Promise<void> {
    if (typeof configId !== 'string' || configId === '') throw invalidOptions('A config option id must be a non-empty string', record.agent);
    checkMeta(record.agent, options);
    const configOptions = record.state.get('configOptions');
    if (configOptions.length === 0) throw this.unsupported(record, 'config options for this session');
    const option = configOptions.find((candidate) => candidate.id === configId);
    if (!option) throw invalidOptions(`Unknown config option "${configId}": ${this.deps.displayName(record.agent)} offers ${configOptions.map((candidate) => candidate.id).join(', ')}`, record.agent);
    checkValue(record.agent, option, value);
    const connection = this.usableConnection(record);
    const params = option.type === 'boolean' ? { sessionId: record.id, configId, type: 'boolean' as const, value: value as boolean } : { sessionId: record.id, configId, value: value as string };
    const answer = validateSetConfigOptionResponse(await this.send(record, connection, acpMethods.agent.session.setConfigOption, { ...params, ...meta(options) }), record.agent);
    record.state.setConfigOptions(answer.configOptions);
    chosen(record, options, (choices) => {
      if (option.category === 'mode') choices.modeId = value as string;
      else choices.config[configId] = value;
    });
  }

  /**
   * The session's model: the config option of category `model` where the agent offers one,
   * else the unstable `session/set_model` where it answered with `models`; `unsupported` otherwise.
   */
  async setModel(record: SessionRecord, modelId: string, options: ControlOptions = {}): Promise<void> {
    if (typeof modelId !== 'string' || modelId === '') throw invalidOptions('A model id must be a non-empty string', record.agent);
    checkMeta(record.agent, options);
    const option = this.optionOfCategory(record, 'model');
    if (option) return this.setConfigOption(record, option.id, modelId, options);
    const models = record.state.get('models');
    if (!models) throw this.unsupported(record, 'choosing a model for this session');
    if (!models.availableModels.some((model) => model.modelId === modelId)) {
      throw invalidOptions(`Unknown model "${modelId}": ${this.deps.displayName(record.agent)} offers ${models.availableModels.map((model) => model.modelId).join(', ')}`, record.agent);
    }
    const connection = this.usableConnection(record);
    await this.send(record, connection, setModelMethod, { sessionId: record.id, modelId, ...meta(options) });
    record.state.setCurrentModel(modelId);
    chosen(record, options, (choices) => (choices.modelId = modelId));
  }

  /**
   * After the agent reopened the session (a restart, resume): sets again what the user chose
   * and the agent now reports otherwise. A choice the agent no longer offers or refuses is
   * dropped, and said in the result; the session stays usable.
   */
  async reapply(record: SessionRecord): Promise<Array<{ what: string; error: AgentError }>> {
    const { modeId, modelId, config } = record.state.choices;
    const choicesAtStart = record.state.choices.made;
    const again = { [reapplying]: true } as ControlOptions;
    const dropped: Array<{ what: string; error: AgentError }> = [];
    const attempt = async (what: string, differs: boolean, set: () => Promise<void>) => {
      // A choice the user made meanwhile (a control during the resume) is newer: it wins.
      if (!differs || record.state.choices.made !== choicesAtStart) return;
      try {
        await set();
      } catch (error) {
        dropped.push({ what, error: error as AgentError });
      }
    };
    if (modeId !== undefined) await attempt(`mode ${modeId}`, this.currentMode(record) !== modeId, () => this.setMode(record, modeId, again));
    for (const [configId, value] of Object.entries(config)) {
      const current = record.state.get('configOptions').find((option) => option.id === configId)?.currentValue;
      await attempt(`config option ${configId}`, current !== value, () => this.setConfigOption(record, configId, value, again));
    }
    if (modelId !== undefined) await attempt(`model ${modelId}`, record.state.get('models')?.currentModelId !== modelId, () => this.setModel(record, modelId, again));
    return dropped;
  }

  private currentMode(record: SessionRecord): string | undefined {
    const modes = record.state.get('modes');
    if (modes) return modes.currentModeId;
    const value = this.optionOfCategory(record, 'mode')?.currentValue;
    return typeof value === 'string' ? value : undefined;
  }

  private optionOfCategory(record: SessionRecord, category: 'mode' | 'model'): SessionConfigOption | undefined {
    return record.state.get('configOptions').find((option) => option.category === category && option.type === 'select');
  }

  /** The agent's connection, for a session that can take a request now; else why not. */
  private usableConnection(record: SessionRecord): ClientConnection {
    const status = record.status();
    if (status === 'stopped') throw toError(record.agent, failures.sessionClosed(record.id));
    if (status === 'failed') throw toError(record.agent, failures.sessionFailed(record.id));
    const connection = this.deps.connectionOf(record.agent);
    if (!connection) throw toError(record.agent, failures.notConnected(record.agent));
    return connection;
  }

  /**
   * One control request, bounded: an agent that does not answer within `timeoutMs` (the
   * supervisor's clock) is sent `$/cancel_request` and the control rejects `protocol_error`;
   * so does one whose session is released meanwhile. A resume re-applying choices never wedges.
   */
  private async send(record: SessionRecord, connection: ClientConnection, method: string, params: Record<string, unknown>): Promise<unknown> {
    const closed = new AbortController();
    void record.released.then(() => closed.abort());
    const cancel = deadline(this.deps.clock, this.deps.timeoutMs, () => new Error(`no answer within ${this.deps.timeoutMs} ms`), [
      { signal: closed.signal, reason: () => new Error('the session was closed') },
    ]);
    try {
      return await connection.agent.request(method, params, { cancellationSignal: cancel.signal, stopWaitingOnCancel: true });
    } catch (error) {
      if (cancel.signal.aborted) throw agentFailure('protocol_error', record.agent, `${method} failed: ${(cancel.signal.reason as Error).message}`, error);
      throw toRequestError(record.agent, connection, error, method);
    } finally {
      cancel.clear();
    }
  }

  private unsupported(record: SessionRecord, what: string): AgentError {
    return toError(record.agent, failures.unsupported(this.deps.displayName(record.agent), what));
  }
}

/** Marks the controls a re-application sends: they set what was chosen, they are no new choice. */
const reapplying = Symbol('reapplying');

/** Records the user's choice (never a re-application's), and counts it. */
function chosen(record: SessionRecord, options: ControlOptions, choose: (choices: SessionRecord['state']['choices']) => void): void {
  if ((options as { [reapplying]?: boolean })[reapplying]) return;
  choose(record.state.choices);
  record.state.choices.made++;
}

/** `_meta` for a request, when given. */
export function meta(options: { meta?: Record<string, unknown> | undefined }): { _meta?: Record<string, unknown> } {
  return options.meta === undefined ? {} : { _meta: options.meta };
}

function checkMeta(agent: string, options: ControlOptions): void {
  const given = options.meta as unknown;
  if (given !== undefined && (given === null || typeof given !== 'object' || Array.isArray(given))) throw invalidOptions('Option meta must be an object', agent);
}

function checkValue(agent: string, option: SessionConfigOption, value: unknown): void {
  if (option.type === 'boolean') {
    if (typeof value !== 'boolean') throw invalidOptions(`Config option "${option.id}" takes true or false, not ${JSON.stringify(value)}`, agent);
    return;
  }
  const values = selectValues(option);
  if (typeof value !== 'string' || !values.includes(value)) {
    throw invalidOptions(`Config option "${option.id}" takes one of ${values.join(', ')}, not ${JSON.stringify(value)}`, agent);
  }
}
