/**
 * A `Session`: one ACP session of a supervised agent. Its lifecycle is the session machine
 * (a child actor of the agent's actor), which answers every prompt and resume; this class
 * sends those requests and awaits the answers, and delivers the session's events.
 */
import { resolve } from 'node:path';
import { AgentError, failures, invalidOptions, toError } from '../core/errors.js';
import { checkPrompt, contentBlockFromFile } from '../runtime/prompt-content.js';
import type { SessionControls } from '../runtime/session-controls.js';
import { request } from '../runtime/requests.js';
import type { ResumeFallback, SessionRecord, SessionRegistry } from '../runtime/session-registry.js';
import type {
  AvailableCommand,
  ContentBlock,
  ControlOptions,
  PlanEntry,
  PromptCapabilities,
  PromptOptions,
  SessionConfigOption,
  SessionEvents,
  SessionFailure,
  SessionModeState,
  SessionModelState,
  SessionStateFields,
  SessionStatus,
  SessionUpdate,
  SessionUsage,
  StopReason,
} from './public-types.js';

/** What a session needs from the supervisor that owns it. */
export interface SessionHost {
  sessions: SessionRegistry;
  controls: SessionControls;
  /** Makes sure the agent is connected; resolves with whether it can reopen sessions (session/load or session/resume). */
  canLoadSessions(agent: string, signal?: AbortSignal): Promise<boolean>;
  /** What the agent's current connection accepts in prompts; undefined while it has none. */
  promptCapabilities(agent: string): PromptCapabilities | undefined;
  displayName(agent: string): string;
}

/**
 * One ACP session. Created by `supervisor.newSession()` / `loadSession()`.
 *
 * @example
 * const session = await supervisor.newSession('codex', { cwd: '/work/repo' });
 * const off = session.on('update', (update) => { if (update.sessionUpdate === 'agent_message_chunk') print(update.content); });
 * const stopReason = await session.prompt('Fix the failing test');
 * await session.close();
 */
export class Session implements AsyncIterable<SessionUpdate> {
  constructor(
    private readonly record: SessionRecord,
    private readonly host: SessionHost,
  ) {}

  /** The agent's registered name. */
  get agent(): string {
    return this.record.agent;
  }

  /** The ACP session id. */
  get id(): string {
    return this.record.id;
  }

  /** The session's working directory (the root of its sandbox). */
  get cwd(): string {
    return this.record.resources.cwd;
  }

  /** The session's own workspace (`newSession(agent, { workspace })`): its path, which is also `cwd`; null without one. */
  get workspace(): string | null {
    return this.record.resources.workspace?.path ?? null;
  }

  /** The session's execution status. */
  get status(): SessionStatus {
    return this.record.status();
  }

  /** The session's modes (`{ currentModeId, availableModes }`), or null when the agent gave it none. Kept current. */
  get modes(): SessionModeState | null {
    return this.record.state.get('modes');
  }

  /** The session's ACP config options (the `model` and `mode` categories among them); empty when the agent has none. */
  get configOptions(): SessionConfigOption[] {
    return this.record.state.get('configOptions');
  }

  /** The slash commands the agent offers in this session now (`available_commands_update`). */
  get commands(): AvailableCommand[] {
    return this.record.state.get('commands');
  }

  /** The latest plan's entries, or null before the agent sent a plan. */
  get plan(): PlanEntry[] | null {
    return this.record.state.get('plan');
  }

  /** The latest context usage (`used`/`size` tokens, `cost`), or null before the agent reported any. */
  get usage(): SessionUsage | null {
    return this.record.state.get('usage');
  }

  /** The session's title (`session_info_update`), or null. */
  get title(): string | null {
    return this.record.state.get('title');
  }

  /** The unstable `models` field some agents use instead of a `model` config option (gemini-cli), or null. */
  get models(): SessionModelState | null {
    return this.record.state.get('models');
  }

  /** The `_meta` the agent's session/new answer carried (agents put their own details there), or null. */
  get meta(): Record<string, unknown> | null {
    return this.record.answerMeta;
  }

  /** Every state field at once, copied (for printing, storing or sending on). */
  get state(): SessionStateFields {
    return this.record.state.snapshot();
  }

  /**
   * Switches the session's mode (`session/set_mode`, or the `mode` config option where the
   * agent has no modes). Resolves once the agent answered and `modes` shows it. `unsupported`
   * when the agent gave the session no modes, `invalid_options` for a mode it does not offer
   * (nothing sent); the agent's refusal rejects `protocol_error` and changes nothing.
   *
   * @example
   * await session.setMode('plan');
   */
  setMode(modeId: string, options: ControlOptions = {}): Promise<void> {
    return this.host.controls.setMode(this.record, modeId, options ?? {});
  }

  /**
   * Sets a config option (`session/set_config_option`): a select option's value id, or a
   * boolean for a boolean option. Resolves once the agent answered with the options now in
   * force (`configOptions`). `unsupported` without config options; `invalid_options` for an
   * unknown id or a value of the wrong type or not offered (nothing sent).
   */
  setConfigOption(configId: string, value: string | boolean, options: ControlOptions = {}): Promise<void> {
    return this.host.controls.setConfigOption(this.record, configId, value, options ?? {});
  }

  /**
   * Chooses the session's model: the config option of category `model` where the agent has
   * one (claude-agent-acp, codex-acp), else the unstable `session/set_model` where it gave
   * the session `models` (gemini-cli). `unsupported` when it has neither.
   *
   * @example
   * const model = session.configOptions.find((option) => option.category === 'model');
   * await session.setModel('sonnet');
   */
  setModel(modelId: string, options: ControlOptions = {}): Promise<void> {
    return this.host.controls.setModel(this.record, modelId, options ?? {});
  }

  /**
   * A file (a relative path is the session's cwd's) as the prompt content block that suits this session's agent: an image or audio
   * block, a text file embedded as a `resource` (or a `resource_link` when the agent takes no
   * embedded context). Rejects `too_large` past `maxBytes` (default 10 MiB) and `unsupported`
   * for an image or audio file the agent does not take.
   *
   * @example
   * await session.prompt([{ type: 'text', text: 'What is wrong in this screenshot?' }, await session.fileBlock('shot.png')]);
   */
  fileBlock(path: string, options: { maxBytes?: number } = {}): Promise<ContentBlock> {
    const absolute = typeof path === 'string' && path !== '' ? resolve(this.cwd, path) : path;
    return contentBlockFromFile(this.agent, this.host.displayName(this.agent), absolute, this.host.promptCapabilities(this.agent), options?.maxBytes);
  }

  /**
   * What a client terminal of this session shows (a tool call's `{ type: 'terminal', terminalId }`
   * content): a live terminal's output now, or a released one's as it was when released (the
   * session keeps the last eight). `invalid_options` for a terminal this session never had.
   */
  terminalOutput(terminalId: string): { output: string; truncated: boolean; exitStatus: { exitCode: number | null; signal: string | null } | null } {
    try {
      return this.record.resources.terminals.lastOutput(terminalId);
    } catch {
      throw invalidOptions(`Session ${this.id} has no terminal ${JSON.stringify(terminalId)}`, this.agent);
    }
  }

  /**
   * Set when `newSession(agent, { resume: true })` found a stored session for this agent and
   * cwd but could not resume it (the agent cannot load sessions, does not know it, refused
   * the load): that session's id and why; this session is a new one. Null otherwise.
   */
  get resumeFallback(): ResumeFallback | null {
    return this.record.resumeFallback;
  }

  /** Why the session failed, when it did. */
  get lastError(): SessionFailure | null {
    return this.record.actor()?.getSnapshot().context.lastError ?? null;
  }

  /**
   * Sends a prompt turn and resolves with its stop reason. A string becomes one text block;
   * blocks are checked first against ACP's schema (`invalid_options`) and the agent's
   * `promptCapabilities` (`unsupported` for an image, audio or embedded resource it does not
   * take), and nothing is sent when one fails. Aborting `signal` cancels the turn
   * (`session/cancel`); it then resolves `cancelled`. Rejects with `session_busy` during
   * another turn, `session_closed` once closed or failed, `agent_exited` when the agent dies
   * mid-turn.
   */
  async prompt(content: string | ContentBlock | ContentBlock[], options: PromptOptions = {}): Promise<StopReason> {
    options ??= {};
    const prompt = typeof content === 'string' ? [{ type: 'text' as const, text: content }] : Array.isArray(content) ? content : [content];
    const actor = this.actor();
    checkPrompt(this.agent, this.host.displayName(this.agent), prompt, this.host.promptCapabilities(this.agent));
    if (options.meta !== undefined && (options.meta === null || typeof options.meta !== 'object' || Array.isArray(options.meta))) throw invalidOptions('Prompt option meta must be an object', this.agent);
    const event = { type: 'prompt' as const, prompt, ...(options.meta ? { meta: options.meta } : {}) };
    const requestId = this.record.nextRequestId();
    // The agent classifies a turn the agent refused (docs/failures.md): the error carries its class.
    const classification = this.record.classificationOf(requestId);
    try {
      const answer = await request<{ stopReason?: StopReason }>(actor, 'request.settled', event, this.agent, {
        signal: options.signal,
        onAbort: () => this.cancel(),
        waitAfterAbort: true,
        requestId,
        answers: this.record.answers,
      });
      return answer.stopReason ?? 'end_turn';
    } catch (error) {
      const classified = classification.failure();
      if (error instanceof AgentError && error.class === undefined && classified?.class !== undefined) {
        throw error.withClass({ class: classified.class, retryable: classified.retryable ?? false, retryAt: classified.retryAt ?? null });
      }
      throw error;
    } finally {
      classification.off();
    }
  }

  /** Cancels the running turn: `session/cancel`, pending permission requests answered `cancelled`. */
  cancel(): void {
    this.record.actor()?.send({ type: 'cancel' });
  }

  /**
   * Resumes a failed session on the (re)connected agent: `session/resume` where the agent
   * advertises it (nothing replayed: the store holds the transcript), else `session/load`.
   * The state comes again from the agent, and a mode, model or config value set with the
   * controls is set again where the agent reopened the session with another. Rejects with
   * `not_supported` when the agent can do neither — never a silent fresh session.
   */
  resume(options: { signal?: AbortSignal } = {}): Promise<void> {
    return this.reopenAs('resume', options.signal);
  }

  /**
   * Makes sure the session is open: a failed one is resumed as {@link resume} does; an open
   * one (or one resuming) is left as it is. The session machine decides.
   */
  ensureOpen(options: { signal?: AbortSignal } = {}): Promise<void> {
    return this.reopenAs('reopen', options.signal);
  }

  private async reopenAs(type: 'resume' | 'reopen', signal: AbortSignal | undefined): Promise<void> {
    this.actor(); // throws session_closed for a closed session, before any reconnect is tried
    const canLoad = await this.host.canLoadSessions(this.agent, signal);
    await request(this.actor(), 'request.settled', { type, canLoad }, this.agent, { signal });
  }

  /** Ends the session: cancels a running turn, kills its terminals, `session/close` when supported. */
  close(): Promise<void> {
    return this.host.sessions.close(this.record);
  }

  /**
   * Listens to `update` (every `session/update`), `status`, `stall`, each state field by its
   * name (`modes`, `configOptions`, `commands`, `plan`, `usage`, `title`, `models`: the new
   * value, on each change) and — for the `'ask'` policies — `permission:request` and
   * `elicitation:request`. Returns the function that unsubscribes.
   *
   * @example
   * session.on('modes', (modes) => console.log('mode now', modes?.currentModeId));
   */
  on<K extends keyof SessionEvents>(type: K, listener: (event: SessionEvents[K]) => void): () => void {
    return this.record.channel.on(type, listener);
  }

  /**
   * Iterates over updates from now on; ends when the session fails or stops. Break out of
   * the loop (or close the session) when the turn you wait for is done.
   */
  [Symbol.asyncIterator](): AsyncIterator<SessionUpdate> {
    const queue: Array<SessionUpdate | null> = [];
    let wake: (() => void) | undefined;
    const push = (item: SessionUpdate | null) => {
      queue.push(item);
      wake?.();
    };
    const offs: Array<() => void> = [];
    const stop = () => {
      for (const off of offs.splice(0)) off();
    };
    if (this.status === 'stopped' || this.status === 'failed') push(null);
    else {
      offs.push(
        this.on('update', push),
        this.on('status', ({ status }) => {
          if (status === 'failed' || status === 'stopped') push(null);
        }),
      );
    }
    return {
      next: async () => {
        while (queue.length === 0) await new Promise<void>((resolve) => (wake = resolve));
        const update = queue.shift()!;
        if (update === null) {
          queue.unshift(null);
          stop();
          return { done: true, value: undefined };
        }
        return { done: false, value: update };
      },
      return: async () => {
        stop();
        return { done: true, value: undefined };
      },
    };
  }

  /** The session actor; a stopped session's is gone, and every request is refused session_closed. */
  private actor() {
    const actor = this.record.actor();
    if (!actor || actor.getSnapshot().status !== 'active') throw toError(this.agent, failures.sessionClosed(this.id));
    return actor;
  }
}
