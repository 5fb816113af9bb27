/**
 * A `Session`: one ACP session of a supervised agent. Its lifecycle is the session machine
 * (a child actor of the agent's actor); this class is the promise-and-listener face of it,
 * plus what must stay out of machine context: the file-system sandbox, the terminals and
 * the update subscribers.
 */
import type { ActorRefFrom } from 'xstate';
import type { SessionStatus, StallPolicy } from '../machines/session-events.js';
import type { sessionMachine } from '../machines/session.machine.js';
import type { ContentBlock, McpServer, SessionNotification, SessionUpdate, StopReason } from '../services/acp-client.service.js';
import { AgentError } from '../services/errors.js';
import type { FsSandbox } from '../services/fs-sandbox.service.js';
import type { TerminalSet } from '../services/terminal.service.js';
import { EventHub } from './event-hub.js';
import type { PermissionPolicy, PermissionRequest } from './permissions.js';

export type SessionActorRef = ActorRefFrom<typeof sessionMachine>;
type SessionSnapshot = ReturnType<SessionActorRef['getSnapshot']>;

export interface SessionEvents {
  [key: string]: unknown;
  update: SessionUpdate;
  status: { status: SessionStatus };
  stall: { policy: StallPolicy; stallTimeoutMs: number };
  'permission:request': PermissionRequest;
}

/** What a session needs from the supervisor that owns it. */
export interface SessionHost {
  sessionActor(agent: string, sessionId: string): SessionActorRef | undefined;
  /** Sends session/cancel and answers the turn's pending permission requests `cancelled`. */
  cancelTurn(agent: string, sessionId: string): void;
  /** Kills the agent's process so the restart policy brings it back (stall policy `restart`). */
  restartAgent(agent: string): void;
  /** Makes sure the agent is connected; resolves with whether it supports session/load. */
  reconnectForResume(agent: string, signal?: AbortSignal): Promise<boolean>;
  closeOnAgent(agent: string, sessionId: string): Promise<void>;
  forget(session: Session): void;
}

export interface SessionResources {
  cwd: string;
  roots: string[];
  mcpServers: McpServer[];
  sandbox: FsSandbox;
  terminals: TerminalSet;
  permissions: PermissionPolicy;
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
  private readonly events = new EventHub<SessionEvents>();
  private readonly iterators = new Set<{ push(update: SessionUpdate | null): void }>();
  private activityScheduled: NodeJS.Immediate | undefined;
  private unsubscribeActor: Array<() => void> = [];
  private closing: Promise<void> | undefined;
  /** Mirrors the machine's `prompting.stalled`, so delivering an update reads no snapshot. */
  private stalled = false;

  constructor(
    readonly agent: string,
    readonly id: string,
    readonly resources: SessionResources,
    private readonly host: SessionHost,
  ) {
    this.attach();
  }

  /** The session's execution status. */
  get status(): SessionStatus {
    return statusOf(this.actor()?.getSnapshot());
  }

  /** Why the session failed, when it did. */
  get lastError(): { kind: string; message: string } | null {
    return this.actor()?.getSnapshot().context.lastError ?? null;
  }

  /**
   * Sends a prompt turn and resolves with its stop reason. A string becomes one text block.
   * Aborting `signal` cancels the turn (`session/cancel`); it then resolves `cancelled`.
   * Rejects with `session_busy` during another turn, `session_closed` once closed or failed,
   * `agent_exited` when the agent dies mid-turn.
   */
  prompt(content: string | ContentBlock | ContentBlock[], options: { signal?: AbortSignal } = {}): Promise<StopReason> {
    const actor = this.actor();
    const status = this.status;
    if (!actor || status === 'stopped') return Promise.reject(this.error('session_closed', `Session ${this.id} is closed`));
    if (status === 'failed') return Promise.reject(this.error('session_closed', `Session ${this.id} failed; resume() it first`));
    if (!['ready', 'completed'].includes(status)) return Promise.reject(this.error('session_busy', `Session ${this.id} is already running a turn`));
    const blocks = typeof content === 'string' ? [{ type: 'text' as const, text: content }] : Array.isArray(content) ? content : [content];
    const turn = actor.getSnapshot().context.turns + 1;
    return new Promise<StopReason>((resolve, reject) => {
      const onAbort = () => this.cancel();
      const check = (snapshot: SessionSnapshot) => {
        if (snapshot.context.turns < turn || snapshot.matches('prompting')) return;
        subscription.unsubscribe();
        options.signal?.removeEventListener('abort', onAbort);
        if (snapshot.matches('completed')) resolve(snapshot.context.lastStopReason ?? 'end_turn');
        else if (snapshot.matches('stopped') && !snapshot.context.lastError) reject(this.error('session_closed', `Session ${this.id} was closed during the turn`));
        else {
          const failure = snapshot.context.lastError ?? { kind: 'agent_exited' as const, message: 'the turn failed' };
          reject(this.error(failure.kind, failure.message));
        }
      };
      const subscription = actor.subscribe(check);
      actor.send({ type: 'prompt', prompt: blocks });
      if (options.signal?.aborted) this.cancel();
      else options.signal?.addEventListener('abort', onAbort, { once: true });
      check(actor.getSnapshot());
    });
  }

  /** Cancels the running turn: `session/cancel`, pending permission requests answered `cancelled`. */
  cancel(): void {
    if (this.actor()?.getSnapshot().matches('prompting')) this.host.cancelTurn(this.agent, this.id);
  }

  /**
   * Resumes a failed session on the (re)connected agent with `session/load`. Rejects with
   * `not_supported` when the agent cannot load sessions — never a silent fresh session.
   */
  async resume(options: { signal?: AbortSignal } = {}): Promise<void> {
    const status = this.status;
    if (status === 'ready' || status === 'completed') return;
    if (status !== 'failed') throw this.error(status === 'stopped' ? 'session_closed' : 'session_busy', `Session ${this.id} is ${status}`);
    const canLoad = await this.host.reconnectForResume(this.agent, options.signal);
    if (options.signal?.aborted) throw this.error('aborted', `Resuming session ${this.id} was aborted`);
    const actor = this.actor();
    if (!canLoad || !actor) throw this.error('not_supported', `${this.agent} cannot load sessions (no loadSession capability): start a new session`);
    this.attach();
    await new Promise<void>((resolve, reject) => {
      const subscription = actor.subscribe((snapshot) => {
        if (snapshot.matches('resuming')) return;
        subscription.unsubscribe();
        if (snapshot.matches('ready')) resolve();
        else reject(this.error(snapshot.context.lastError?.kind ?? 'protocol_error', snapshot.context.lastError?.message ?? 'session/load failed'));
      });
      actor.send({ type: 'resume', canLoad });
    });
  }

  /** Ends the session: cancels a running turn, kills its terminals, `session/close` when supported. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      // Stopping the machine first ends a running turn deterministically (its prompt
      // rejects with session_closed); the turn actor's abort sends session/cancel.
      const wasPrompting = this.actor()?.getSnapshot().matches('prompting') ?? false;
      this.actor()?.send({ type: 'close' });
      if (wasPrompting) this.host.cancelTurn(this.agent, this.id);
      await this.resources.terminals.releaseAll();
      await this.host.closeOnAgent(this.agent, this.id).catch(() => {});
      this.finish();
    })();
    return this.closing;
  }

  /**
   * Listens to `update` (every `session/update`), `status`, `stall` and — for the `'ask'`
   * policy — `permission:request`. Returns the function that unsubscribes.
   */
  on<K extends keyof SessionEvents & string>(type: K, listener: (event: SessionEvents[K]) => void): () => void {
    return this.events.on(type, listener);
  }

  /** Iterates over updates from now on; ends when the session fails or stops. */
  [Symbol.asyncIterator](): AsyncIterator<SessionUpdate> {
    const queue: Array<SessionUpdate | null> = [];
    let wake: (() => void) | undefined;
    const sink = { push: (update: SessionUpdate | null) => (queue.push(update), wake?.()) };
    if (this.status === 'stopped' || this.status === 'failed') queue.push(null);
    else this.iterators.add(sink);
    return {
      next: async () => {
        while (queue.length === 0) await new Promise<void>((resolve) => (wake = resolve));
        const update = queue.shift()!;
        if (update === null) {
          queue.unshift(null);
          return { done: true, value: undefined };
        }
        return { done: false, value: update };
      },
      return: async () => {
        this.iterators.delete(sink);
        return { done: true, value: undefined };
      },
    };
  }

  /** @internal Called by the hub for every `session/update` of this session. */
  deliver(notification: SessionNotification): void {
    const update = notification.update;
    this.events.emit('update', update);
    for (const iterator of this.iterators) iterator.push(update);
    // One `activity` event per batch of updates keeps the stall timer honest without
    // paying a state-machine step per chunk. A stalled session hears at once, so the
    // recovery is seen before anything that follows the update.
    if (this.stalled) {
      this.actor()?.send({ type: 'activity' });
      return;
    }
    this.activityScheduled ??= setImmediate(() => {
      this.activityScheduled = undefined;
      this.actor()?.send({ type: 'activity' });
    });
  }

  /** @internal The 'ask' policy's delivery; false when nobody listens on this session. */
  ask(request: PermissionRequest): boolean {
    if (this.events.listenerCount('permission:request') === 0) return false;
    this.events.emit('permission:request', request);
    return true;
  }

  private actor(): SessionActorRef | undefined {
    return this.host.sessionActor(this.agent, this.id);
  }

  /** Follows the session actor's status and stall reports (again after a resume). */
  private attach(): void {
    for (const off of this.unsubscribeActor.splice(0)) off();
    const actor = this.actor();
    if (!actor) return;
    const status = actor.on('status', ({ status: next }) => {
      this.stalled = next === 'stalled';
      this.events.emit('status', { status: next });
      if (next === 'failed' || next === 'stopped') this.endIterators();
      if (next === 'stopped') this.finish();
    });
    const stall = actor.on('stall', ({ policy, stallTimeoutMs }) => {
      this.events.emit('stall', { policy, stallTimeoutMs });
      if (policy === 'cancel') this.cancel();
      else if (policy === 'restart') this.host.restartAgent(this.agent);
    });
    this.unsubscribeActor.push(() => status.unsubscribe(), () => stall.unsubscribe());
  }

  private endIterators(): void {
    for (const iterator of this.iterators) iterator.push(null);
    this.iterators.clear();
  }

  private finish(): void {
    if (this.activityScheduled) clearImmediate(this.activityScheduled);
    this.activityScheduled = undefined;
    this.endIterators();
    void this.resources.terminals.releaseAll();
    this.host.forget(this);
  }

  private error(kind: AgentError['kind'], message: string): AgentError {
    return new AgentError(kind, message, { agent: this.agent });
  }
}

/** The execution status of a session actor snapshot. */
export function statusOf(snapshot: SessionSnapshot | undefined): SessionStatus {
  if (!snapshot || snapshot.status !== 'active') return 'stopped';
  if (snapshot.matches({ prompting: 'awaitingPermission' })) return 'awaiting_permission';
  if (snapshot.matches({ prompting: 'stalled' })) return 'stalled';
  if (snapshot.matches('prompting') || snapshot.matches('resuming')) return 'running';
  for (const status of ['ready', 'completed', 'failed'] as const) if (snapshot.matches(status)) return status;
  return 'stopped';
}
