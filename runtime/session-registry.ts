/**
 * The open sessions of one supervisor, and what lives beside each session actor but must
 * stay out of machine context: its sandbox, its terminals, the listeners of its updates.
 * Routes each `session/update` to its session (buffering the few that arrive before
 * `session/new` has answered), turns batches of updates into the machine's `activity`
 * events, and releases a session's resources once its machine reports `stopped`.
 */
import type { RestartWhen } from '../core/restart-spec.js';
import type { ActorRefFrom } from 'xstate';
import type { ContentBlock, McpServer, SessionNotification, SessionUpdate } from '../core/acp-types.js';
import type { ContainmentKind } from '../core/containment-kind.js';
import type { AgentErrorKind, AgentFailure, AuthMethodSummary } from '../core/errors.js';
import type { ElicitationPolicy, ElicitationRequest } from '../core/elicitation.js';
import type { PermissionPolicy, PermissionRequest } from '../core/permission-policy.js';
import { sessionActorId, type agentMachine } from '../machines/agent.machine.js';
import type { PtyActivityState } from '../machines/pty-activity.machine.js';
import type { SessionMachineInput, SessionStatus, StallPolicy } from '../machines/session-events.js';
import { sessionStatusOf, type sessionMachine } from '../machines/session.machine.js';
import type { SweepResult } from '../services/agent-records.service.js';
import type { FsSandbox } from '../services/fs-sandbox.service.js';
import type { TerminalSet } from '../services/terminals/terminal-set.js';
import { EventHub } from '../util/event-hub.js';
import { AnswerRouter } from './requests.js';
import { SessionState, stateUpdateKinds, type SessionStateFields } from './session-state.js';
import type { SessionWorkspace } from './workspace-holds.js';
import type { WorkspaceEvents } from './workspace-registry.js';

export type SessionActorRef = ActorRefFrom<typeof sessionMachine>;
type AgentActorRef = ActorRefFrom<typeof agentMachine>;

/** Supervisor-level events of the runtime: sessions, containment, workspaces. */
export interface RuntimeEvents extends WorkspaceEvents {
  /** Agents run under a weaker containment than asked for (or none): why each stronger one was refused. */
  'containment:degraded': { kind: ContainmentKind | null; refused: Array<{ kind: ContainmentKind; reason: string }> };
  /** The orphan sweep's outcome: what crashed supervisors left behind and was killed, or left alone. */
  'orphans:swept': SweepResult;
  'permission:request': PermissionRequest;
  /** With the `'ask'` elicitation policy: answer with `respond(action, content?)`. */
  'elicitation:request': ElicitationRequest;
  /** A URL elicitation the agent saw completed (`elicitation/complete`). */
  'elicitation:complete': { agent: string; elicitationId: string };
  'sandbox:violation': { agent: string; sessionId: string; operation: 'read' | 'write' | 'terminal'; path: string; message: string };
  'session:status': { agent: string; sessionId: string; status: SessionStatus };
  /** A mode, model or config value the user set could not be set again after the agent reopened the session (docs/acp.md). */
  'session:choice_dropped': { agent: string; sessionId: string; choice: string; kind: string; message: string };
  /** A session's state changed (docs/acp.md): its modes, config options, commands, plan, usage, title or models. */
  'session:state': { agent: string; sessionId: string } & SessionStateChange;
  'session:stall': { agent: string; sessionId: string; policy: StallPolicy; stallTimeoutMs: number };
  /**
   * A turn of a session: its prompt as it is sent (`prompt`), then how it ended (`stopReason`,
   * or `error`) — the same shapes as the transcript's `prompt` and `prompt_result` entries.
   */
  'session:turn': { agent: string; sessionId: string } & ({ prompt: ContentBlock[] } | { stopReason: string } | { error: { kind: string; message: string } });
  /** One line an agent wrote to stderr, as it comes (at most 1000 characters). */
  'agent:stderr': { agent: string; line: string };
  /**
   * An agent sent something that breaks ACP (a malformed update, a response to no request):
   * it was dropped, never delivered. At most one a second per connection; `suppressed`
   * counts the ones dropped since the last event.
   */
  'protocol:warning': { agent: string; message: string; suppressed: number };
  /** A write to the store failed (a full disk, say); the agents keep running. */
  'store:error': { kind: 'store_failed'; message: string; droppedWrites: number };
  /**
   * While authenticate() runs, the agent wrote a URL to stderr: most likely a browser login
   * waiting for a person — show it (the `auth_timeout` of a login nobody finishes names it too).
   */
  'agent:auth_prompt': { agent: string; methodId: string; urls: string[]; line: string };
  /** An agent parked in `needsAuth`: it waits for `authenticate(agent, methodId)` or `reconnect()`. */
  'agent:needs_auth': { agent: string; failure: AgentFailure; authMethods: AuthMethodSummary[] };
  /** An agent parked in `rateLimited`: it tries again at `retryAt` (when known), or on `reconnect()`. */
  'agent:rate_limited': { agent: string; failure: AgentFailure; retryAt: number | null };
  /**
   * An agent's process ended as an outcome: its restart policy (`restart.when`) does not
   * start it again — a clean exit under 'on-failure', any exit under 'never'. Status `exited`.
   */
  'agent:exited': { agent: string; exit: { code: number | null; signal: string | null; at: number }; when: RestartWhen };
  /** An auth failure or a usage limit moved the agent to its next credential set (names only, never values); it restarts with it. */
  'agent:credential': { agent: string; credential: string; previous: string; failure: { kind: string; class: string | null; message: string } };
  /** `restart(name, { reason })` was called: the stop ladder, then a start. */
  'agent:restart': { agent: string; reason: string | null };
  /** More automatic restarts than `overload.intensity` within `overload.periodMs`: every automatic restart is held until `resetOverload()`. */
  'supervisor:overloaded': { restarts: number; intensity: number; periodMs: number };
  /** `resetOverload()`: automatic restarts resume. */
  'supervisor:overload_reset': Record<string, never>;
  /** A pty agent's CLI changed what it is doing: starting, running, needsInput, stale, exited (docs/pty.md). */
  'pty:activity': { agent: string; state: PtyActivityState; exitCode?: number | null; signal?: string | null };
}

/** One field of a session's state and its new value. */
export type SessionStateChange = { [K in keyof SessionStateFields]: { field: K; value: SessionStateFields[K] } }[keyof SessionStateFields];

/** Events of one session, as `session.on(...)` delivers them: each state field is an event of its own name. */
export interface SessionChannelEvents extends SessionStateFields {
  /**
   * Every `session/update`. An update of a kind the installed ACP schema does not know (an
   * unstable one such as `plan_removed`) comes too, as the agent sent it
   * (an `UnknownSessionUpdate`): give a switch over `sessionUpdate` a default case.
   */
  update: SessionUpdate;
  status: { status: SessionStatus };
  stall: { policy: StallPolicy; stallTimeoutMs: number };
  'permission:request': PermissionRequest;
  'elicitation:request': ElicitationRequest;
}

export interface SessionResources {
  cwd: string;
  roots: string[];
  mcpServers: McpServer[];
  sandbox: FsSandbox;
  terminals: TerminalSet;
  permissions: PermissionPolicy;
  /** The `_meta` the session was opened with: sent again when a crash reopens it. */
  meta?: Record<string, unknown>;
  /** How this session's elicitations are answered (the supervisor's policy unless the session set its own). */
  elicitation: ElicitationPolicy;
  /** The session's own workspace (`newSession(agent, { workspace })`), cleaned up when it is released. */
  workspace: SessionWorkspace | null;
}

export interface SessionRegistryDependencies {
  events: EventHub<RuntimeEvents>;
  agentActor(agent: string): AgentActorRef | undefined;
  /** Sends session/close when the agent supports it (not awaited by anyone). */
  closeOnAgent(agent: string, sessionId: string): void;
  /** Hears every session opened, before any of its updates is delivered (the store's journal). */
  opened?(record: SessionRecord): void;
  /** Hears `close()` before the session is told: its workspace notes whether it was busy. */
  closing?(record: SessionRecord): void;
  /** A session machine's question timed out: its broker answers it `cancelled`. */
  askExpired(requestId: string): void;
  /** After a session stopped and its terminals are gone, before `released` resolves: its workspace's cleanup. */
  ended?(record: SessionRecord): Promise<void> | void;
}

/** Real time between two `activity` events of a session in a burst of updates. */
const activityWindowMs = 50;

/** One open session: its actor's address, resources and listeners. */
export class SessionRecord {
  readonly channel = new EventHub<SessionChannelEvents>();
  /** What the agent says of the session: modes, config options, commands, plan, usage, title. */
  readonly state: SessionState;
  /** Resolves once the session stopped and its terminals are gone. */
  readonly released: Promise<void>;
  private markReleased!: () => void;
  /** The session actor's id among its agent actor's children. */
  private readonly actorId: string;
  /** The failures the agent classified for this session's requests (`failure.classified`), while a request waits for one. */
  private readonly classified = new Map<string, AgentFailure | undefined>();
  private requests = 0;
  /** When the last `activity` event was sent (real time, ms). */
  private activitySentAt = Number.NEGATIVE_INFINITY;
  /** The trailing `activity` of a burst, due at the end of its window. */
  private trailingActivity: NodeJS.Timeout | undefined;
  /** Mirrors the machine's `prompting.stalled`, so delivering an update reads no snapshot. */
  private stalled = false;
  private detach: () => void = () => {};
  /** True while `session/load` replays the session's history. */
  replaying = false;
  /** True when the store already holds this session's transcript (a replay is not kept twice). */
  stored = false;
  /** The `_meta` of the agent's latest session/new, load or resume answer, if it carried one. */
  answerMeta: Record<string, unknown> | null = null;
  /** `newSession({ resume: true })` could not resume this stored session, and opened this one instead. */
  resumeFallback: ResumeFallback | null = null;

  constructor(
    readonly agent: string,
    readonly id: string,
    /** This opening's key: a restarted agent may reuse `id`, never a key. */
    readonly key: string,
    readonly resources: SessionResources,
    private readonly agentActor: () => AgentActorRef | undefined,
    stateChanged: (change: SessionStateChange) => void = () => {},
  ) {
    this.actorId = sessionActorId(key);
    this.released = new Promise((resolve) => (this.markReleased = resolve));
    this.state = new SessionState((field, value) => {
      (this.channel.emit as (type: string, event: unknown) => void)(field, value);
      stateChanged({ field, value } as SessionStateChange);
    });
  }

  /** The session actor while it runs (a child of the agent's actor). */
  actor(): SessionActorRef | undefined {
    const children = this.agentActor()?.getSnapshot().children;
    return children && Object.hasOwn(children, this.actorId) ? (children[this.actorId] as SessionActorRef) : undefined;
  }

  /**
   * The answers to this session's requests (`request.settled`), heard by one listener of the
   * session actor and routed by request id: a turn does not subscribe to the actor and
   * unsubscribe again (runtime/requests.ts).
   */
  readonly answers = new AnswerRouter();

  /** A fresh id for a request to this session: unique among every session's (the key is), no random bytes a turn. */
  nextRequestId(): string {
    return `${this.key}:${++this.requests}`;
  }

  /** The machine's status, or `stopped` once its actor is gone. */
  status(): SessionStatus {
    const snapshot = this.actor()?.getSnapshot();
    return snapshot ? sessionStatusOf(snapshot) : 'stopped';
  }

  /**
   * Hands one `session/update` to listeners and tells the machine about the activity: at
   * once for the first update of a burst (and always for a stalled session, so its recovery
   * is seen before anything that follows the update), then at most one more `activity` per
   * {@link activityWindowMs} while the burst lasts. A machine step per chunk cost more than
   * the rest of the delivery; the trailing event keeps the stall timer from firing early
   * (it may fire up to one window late).
   */
  deliver(notification: SessionNotification): void {
    const update = notification.update;
    if (stateUpdateKinds.has(update.sessionUpdate)) this.state.apply(update);
    this.channel.emit('update', update);
    if (this.stalled) return this.sendActivity(performance.now());
    if (this.trailingActivity) return; // the window's trailing event is already due
    const now = performance.now();
    const sinceLast = now - this.activitySentAt;
    if (sinceLast >= activityWindowMs) return this.sendActivity(now);
    this.trailingActivity = setTimeout(() => {
      this.trailingActivity = undefined;
      this.sendActivity(performance.now());
    }, activityWindowMs - sinceLast);
  }

  private sendActivity(now: number): void {
    this.activitySentAt = now;
    this.actor()?.send({ type: 'activity' });
  }

  /** The 'ask' policies' delivery; false when nobody listens on this session. */
  ask(type: 'permission:request', request: PermissionRequest): boolean;
  ask(type: 'elicitation:request', request: ElicitationRequest): boolean;
  ask(type: 'permission:request' | 'elicitation:request', request: PermissionRequest | ElicitationRequest): boolean {
    if (this.channel.listenerCount(type) === 0) return false;
    (this.channel.emit as (type: string, event: unknown) => void)(type, request);
    return true;
  }

  /**
   * Follows the actor's status, stall and expired-question reports; `onStopped` releases the
   * session, `onAskExpired` has the question's broker answer it `cancelled`.
   */
  attach(events: EventHub<RuntimeEvents>, onStopped: () => void, onAskExpired: (requestId: string) => void): void {
    const actor = this.actor();
    if (!actor) return onStopped();
    const status = actor.on('status', ({ status: next }) => {
      this.stalled = next === 'stalled';
      this.channel.emit('status', { status: next });
      events.emit('session:status', { agent: this.agent, sessionId: this.id, status: next });
      if (next === 'stopped') onStopped();
    });
    const stall = actor.on('stall', ({ policy, stallTimeoutMs }) => {
      this.channel.emit('stall', { policy, stallTimeoutMs });
      events.emit('session:stall', { agent: this.agent, sessionId: this.id, policy, stallTimeoutMs });
    });
    const expired = actor.on('ask.expired', ({ requestId }) => onAskExpired(requestId));
    // Kept for the actor's life, not detached with the rest: the step that reports `stopped`
    // (which releases the record) answers the request in progress right after.
    actor.on('request.settled', (answer) => this.answers.deliver(answer));
    const classifications = this.agentActor()?.on('failure.classified', ({ requestId, failure }) => {
      if (requestId !== null && this.classified.has(requestId)) this.classified.set(requestId, failure);
    });
    this.detach = () => (status.unsubscribe(), stall.unsubscribe(), expired.unsubscribe(), classifications?.unsubscribe());
  }

  /**
   * Follows the agent's classification of a failure this session reports with `requestId` (a
   * prompt's: the session machine sends it with the turn's failure, the agent machine answers
   * `failure.classified`). `failure()` is it once it came; `off()` stops following.
   */
  classificationOf(requestId: string): { failure(): AgentFailure | undefined; off(): void } {
    this.classified.set(requestId, undefined);
    return { failure: () => this.classified.get(requestId), off: () => this.classified.delete(requestId) };
  }

  /** Stops listening, kills the terminals, then runs `ended` (the workspace's cleanup); `released` resolves after. */
  async release(ended?: () => Promise<void> | void): Promise<void> {
    this.detach();
    clearTimeout(this.trailingActivity);
    this.trailingActivity = undefined;
    await this.resources.terminals.releaseAll();
    try {
      await ended?.();
    } finally {
      this.markReleased();
    }
  }
}

/** Why `newSession({ resume: true })` opened a new session: the stored one it tried, and the refusal. */
export interface ResumeFallback {
  sessionId: string;
  kind: AgentErrorKind;
  message: string;
}

/** Updates for a session not registered yet (sent right after session/new) wait here. */
const earlyUpdateLimit = 256;

export class SessionRegistry {
  /**
   * agent → session id → the latest record opened under that id: two lookups, no key string
   * built per routed update. An earlier record of the same id (a restarted agent reused it)
   * stays in `live` until it is released, on its own.
   */
  private readonly records = new Map<string, Map<string, SessionRecord>>();
  /** Every record not yet released. */
  private readonly live = new Set<SessionRecord>();
  private readonly early = new Map<string, SessionNotification[]>();
  private openings = 0;

  constructor(private readonly deps: SessionRegistryDependencies) {}

  /**
   * Opens a session on a connected agent: the agent machine spawns its session child,
   * and the record follows it until it stops.
   */
  open(
    input: Omit<SessionMachineInput, 'key'>,
    resources: SessionResources,
    onUpdate?: (update: SessionUpdate) => void,
    replaying = false,
    /** Runs before the updates that came early are delivered: the session/new answer's state, older than they are. */
    prepare?: (record: SessionRecord) => void,
  ): SessionRecord {
    const { agent, sessionId } = input;
    const key = `${sessionId}#${++this.openings}`;
    const workspaceHold = resources.workspace?.actorId;
    this.deps.agentActor(agent)?.send({ type: 'session.open', session: { ...input, key }, ...(workspaceHold !== undefined ? { workspaceHold } : {}) });
    const record = new SessionRecord(agent, sessionId, key, resources, () => this.deps.agentActor(agent), (change) =>
      this.deps.events.emit('session:state', { agent, sessionId, ...change }),
    );
    this.live.add(record);
    record.replaying = replaying; // session/load: set before the early updates are delivered
    if (onUpdate) record.channel.on('update', onUpdate); // before the early updates are flushed
    this.deps.opened?.(record);
    let ofAgent = this.records.get(agent);
    if (!ofAgent) this.records.set(agent, (ofAgent = new Map()));
    ofAgent.set(sessionId, record);
    record.attach(
      this.deps.events,
      () => void this.release(record),
      (requestId) => this.deps.askExpired(requestId),
    );
    prepare?.(record);
    const waiting = this.early.get(agent);
    if (waiting) {
      this.early.set(agent, waiting.filter((notification) => notification.sessionId !== sessionId));
      for (const notification of waiting) if (notification.sessionId === sessionId) record.deliver(notification);
    }
    return record;
  }

  get(agent: string, sessionId: string): SessionRecord | undefined {
    return this.records.get(agent)?.get(sessionId);
  }

  all(): SessionRecord[] {
    return [...this.live];
  }

  /**
   * Routes one `session/update` of `agent`: true when one of these sessions took it; an
   * unknown session's update waits a little (it may be one whose `session/new` answer is on
   * its way), and false is returned.
   */
  route(agent: string, notification: SessionNotification): boolean {
    const record = this.get(agent, notification.sessionId);
    if (record) {
      record.deliver(notification);
      return true;
    }
    const waiting = this.early.get(agent) ?? [];
    waiting.push(notification);
    if (waiting.length > earlyUpdateLimit) waiting.shift();
    this.early.set(agent, waiting);
    return false;
  }

  /** Closes a session (its machine stops the turn) and resolves once it is released. */
  close(record: SessionRecord): Promise<void> {
    this.deps.closing?.(record);
    const actor = record.actor();
    if (actor) actor.send({ type: 'close' });
    else void this.release(record);
    return record.released;
  }

  /** Kills every session's terminals (shutdown: they are in no agent's process group). */
  async releaseAll(): Promise<void> {
    await Promise.all(this.all().map((record) => record.resources.terminals.releaseAll()));
  }

  private async release(record: SessionRecord): Promise<void> {
    if (!this.live.delete(record)) return record.released;
    // Only the latest record of an id is the agent's session now: closing an earlier one
    // (its process was restarted and reused the id) must not close the new one on the agent.
    if (this.get(record.agent, record.id) === record) {
      this.records.get(record.agent)?.delete(record.id);
      this.deps.closeOnAgent(record.agent, record.id);
    }
    this.deps.agentActor(record.agent)?.send({ type: 'session.forget', key: record.key });
    await record.release(this.deps.ended && (() => this.deps.ended!(record)));
  }
}
