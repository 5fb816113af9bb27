/**
 * A `Session`: one ACP session of a supervised agent. Its lifecycle is the session machine
 * (a child actor of the agent's actor), which answers every prompt and resume; this class
 * sends those requests and awaits the answers, and delivers the session's events.
 */
import type { ContentBlock, SessionUpdate, StopReason } from '../core/acp-types.js';
import { failures, toError } from '../core/errors.js';
import type { SessionFailure, SessionStatus } from '../machines/session-events.js';
import { request } from '../runtime/requests.js';
import type { SessionChannelEvents, SessionRecord, SessionRegistry } from '../runtime/session-registry.js';

/** Events of one session, as `session.on(type, listener)` delivers them. */
export type SessionEvents = SessionChannelEvents;

/** What a session needs from the supervisor that owns it. */
export interface SessionHost {
  sessions: SessionRegistry;
  /** Makes sure the agent is connected; resolves with whether it supports session/load. */
  canLoadSessions(agent: string, signal?: AbortSignal): Promise<boolean>;
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

  /** Why the session failed, when it did. */
  get lastError(): SessionFailure | null {
    return this.record.actor()?.getSnapshot().context.lastError ?? null;
  }

  /**
   * Sends a prompt turn and resolves with its stop reason. A string becomes one text block.
   * Aborting `signal` cancels the turn (`session/cancel`); it then resolves `cancelled`.
   * Rejects with `session_busy` during another turn, `session_closed` once closed or failed,
   * `agent_exited` when the agent dies mid-turn.
   */
  async prompt(content: string | ContentBlock | ContentBlock[], options: { signal?: AbortSignal } = {}): Promise<StopReason> {
    const prompt = typeof content === 'string' ? [{ type: 'text' as const, text: content }] : Array.isArray(content) ? content : [content];
    const answer = await request<{ stopReason?: StopReason }>(this.actor(), 'request.settled', { type: 'prompt', prompt }, this.agent, {
      signal: options.signal,
      onAbort: () => this.cancel(),
      waitAfterAbort: true,
    });
    return answer.stopReason ?? 'end_turn';
  }

  /** Cancels the running turn: `session/cancel`, pending permission requests answered `cancelled`. */
  cancel(): void {
    this.record.actor()?.send({ type: 'cancel' });
  }

  /**
   * Resumes a failed session on the (re)connected agent with `session/load`. Rejects with
   * `not_supported` when the agent cannot load sessions — never a silent fresh session.
   */
  async resume(options: { signal?: AbortSignal } = {}): Promise<void> {
    this.actor(); // throws session_closed for a closed session, before any reconnect is tried
    const canLoad = await this.host.canLoadSessions(this.agent, options.signal);
    await request(this.actor(), 'request.settled', { type: 'resume', canLoad }, this.agent, { signal: options.signal });
  }

  /** Ends the session: cancels a running turn, kills its terminals, `session/close` when supported. */
  close(): Promise<void> {
    return this.host.sessions.close(this.record);
  }

  /**
   * Listens to `update` (every `session/update`), `status`, `stall` and — for the `'ask'`
   * policy — `permission:request`. Returns the function that unsubscribes.
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
