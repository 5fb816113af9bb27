/**
 * The wiring of one supervisor: the machines provided with their real actors (process,
 * prompt turn, session/load), the registries those actors share (live connections,
 * sessions, agent specs), the permission broker and the ACP handlers, and the one way to
 * ask the supervisor machine something and await its answer. No lifecycle decision is made
 * here: every outcome comes from a machine.
 */
import { randomUUID } from 'node:crypto';
import { createActor, type Actor, type ActorRefFrom, type InspectionEvent, type Observer } from 'xstate';
import { createAgentProcessActor, ProcessExits } from '../actors/agent-process.actor.js';
import { createAuthenticateActor } from '../actors/authenticate.actor.js';
import { createLoadSessionActor } from '../actors/load-session.actor.js';
import { createPromptTurnActor } from '../actors/prompt-turn.actor.js';
import { createWorkspaceActors } from '../actors/workspace.actors.js';
import { toFailurePatterns, type AgentSpec } from '../core/agent-spec.js';
import { clockNow, type Clock } from '../core/clock.js';
import { describeError, failures, orphanNotFound, toError, workspaceFailed, type AgentError, type AgentFailure } from '../core/errors.js';
import { rpcErrorDetails } from '../core/rpc-error.js';
import type { WorkspaceSpec } from '../core/workspace-spec.js';
import type { ElicitationPolicy } from '../core/elicitation.js';
import type { PermissionPolicy } from '../core/permission-policy.js';
import { busyReason, sessionWorkspaceId } from '../machines/agent-context.js';
import type { AgentTimings } from '../machines/agent-events.js';
import { agentMachine } from '../machines/agent.machine.js';
import type { StallPolicy } from '../machines/session-events.js';
import { sessionMachine } from '../machines/session.machine.js';
import { workspaceMachine } from '../machines/workspace.machine.js';
import { shutdownRefusal, supervisorMachine, type AgentCommandEvent, type OverloadPolicy } from '../machines/supervisor.machine.js';
import { acpMethods, sessionRequestExtras } from '../services/acp-client.service.js';
import { AgentRecords, recordSpawned, supervisorInstance, type SweepOptions, type SweepResult } from '../services/agent-records.service.js';
import { hostLabel, KubernetesPods } from '../services/runtimes/kubernetes-pod.runtime.js';
import { servedCapabilities } from '../services/runtimes/runtimes.js';
import type { Retention } from '../core/store.js';
import { EventHub } from '../util/event-hub.js';
import { clientCapabilities, createClientHandlers, type ExtensionHandlers } from './acp-client-handlers.js';
import { AgentRequests } from './agent-requests.js';
import { AuthAttempts } from './auth-attempts.js';
import { ElicitationBroker } from './elicitation-broker.js';
import type { TerminalLogin } from './terminal-login.js';
import { chooseContainment, type ContainmentChoice, type ContainmentPreference } from './containment-choice.js';
import { LiveConnections } from './live-connections.js';
import { PermissionBroker } from './permission-broker.js';
import { PtyTerminals } from './pty-terminals.js';
import { request, type RequestOptions } from './requests.js';
import { SessionControls } from './session-controls.js';
import { SessionOpener } from './session-opener.js';
import { SessionRegistry, type RuntimeEvents, type SessionRecord } from './session-registry.js';
import { openStore, type StorePreference } from './store-choice.js';
import { StoreJournal } from './store-journal.js';
import { StoreReader } from './store-reader.js';
import { StoreWriter } from './store-writer.js';
import { endHold, heldWorkspace, releaseHold, type SessionWorkspace, type WorkspaceHoldActor } from './workspace-holds.js';
import { WorkspaceRegistry } from './workspace-registry.js';
import type { RestartOptions } from '../core/restart-spec.js';
import { resolveRestartPolicy } from '../machines/policies/restart.policy.js';

/** Session defaults, resolved from the supervisor's options. */
export interface SessionDefaults {
  permissions: PermissionPolicy;
  permissionTimeoutMs: number;
  elicitation: ElicitationPolicy;
  elicitationTimeoutMs: number;
  stallTimeoutMs: number;
  onStall: StallPolicy;
  capabilities: { fs: boolean; terminal: boolean };
  terminalOutputByteLimit: number;
}

/** Everything a runtime is built from, validated by the facade. */
export interface RuntimeSettings {
  maxAgents: number;
  /** The supervisor-wide restart intensity. */
  overload: OverloadPolicy;
  timings: AgentTimings;
  /** The supervisor's `restart` options as given: each agent's policy is resolved from them, its protocol and its spec. */
  restartOptions?: RestartOptions;
  stderrLines: number;
  containment: ContainmentPreference;
  /** Where live processes are recorded for an orphan sweep; false: not recorded. */
  stateDir: string | false;
  /** Sweep orphans once, before the first spawn. */
  sweepOnStart: boolean;
  sessions: SessionDefaults;
  /** Where sessions, transcripts, logs and the event log are kept (docs/store.md). */
  store: StorePreference;
  retention: Retention;
  /** At most one `workspace:status` per workspace per this many ms (docs/workspaces.md). */
  workspaceStatusIntervalMs: number;
  /** The embedder's answers to agents' extension methods (docs/acp.md). */
  extensions: ExtensionHandlers;
  /** How long an authenticate() may take by default (it may wait for a person). */
  authTimeoutMs: number;
  /** Runs an agent's terminal login (ACP `auth.terminal`), when the embedder can. */
  terminalLogin?: TerminalLogin;
  clock?: Clock;
  clockForTimers: Clock;
  inspect?: Observer<InspectionEvent> | ((event: InspectionEvent) => void);
}

export type AgentActorRef = ActorRefFrom<typeof agentMachine>;

/** How long a session control (set_mode, set_config_option, set_model) may wait for the agent's answer. */
const controlTimeoutMs = 30_000;

/** How often retention is enforced while writes come in (real time). */
const pruneEveryMs = 60_000;

export class SupervisorRuntime {
  readonly actor: Actor<typeof supervisorMachine>;
  readonly connections = new LiveConnections();
  readonly events = new EventHub<RuntimeEvents>();
  readonly sessions: SessionRegistry;
  readonly opener: SessionOpener;
  readonly broker: PermissionBroker;
  readonly elicitations: ElicitationBroker;
  /** The containment in effect, and the stronger mechanisms refused on this host. */
  readonly containment: ContainmentChoice;
  private readonly specs = new Map<string, AgentSpec>();
  private readonly records: AgentRecords | null;
  /** The start-up sweep while it runs: commands wait for it, so no spawn comes before it. */
  private sweeping: Promise<void> | null = null;
  /** Agent processes whose exit is still under way after their machine stopped waiting (a container being removed). */
  private readonly exits = new ProcessExits();
  /** The pods made for agents through the Kubernetes API (docs/runtimes-kubernetes.md): one per agent, deleted when it stops for good. */
  private readonly pods: KubernetesPods;
  private readonly writer: StoreWriter;
  private readonly journal: StoreJournal;
  /** Reads back what the store keeps, after the writes queued so far. */
  readonly reader: StoreReader;
  /** Every workspace in use by this supervisor's agents and sessions (docs/workspaces.md). */
  readonly workspaces: WorkspaceRegistry;
  /** The supervisor's time (a SimulatedClock's in tests): what failures are stamped with. */
  private readonly now: () => number;
  /** Each stream-json agent's conversation: a restart resumes it; a stop forgets it (docs/stream-json.md). */
  private readonly streamJsonSessions = new Map<string, string>();
  /** Ids of the failure reports whose classification the agent machine answers. */
  private classifications = 0;
  /** The terminals of the pty agents (docs/pty.md). */
  readonly ptyTerminals: PtyTerminals;
  /** The authenticate() calls under way: their timeout, cancel and what the agent asked a person to do. */
  readonly authAttempts: AuthAttempts;
  /** Requests of a connected agent outside sessions: its session list, deletions, extensions, terminal logins. */
  readonly requests: AgentRequests;
  /** Sessions' modes, config options and models (docs/acp.md). */
  readonly controls: SessionControls;
  /** When each agent entered its current status (the supervisor's clock, epoch ms): `describe(name).since`. */
  private readonly statusSince = new Map<string, number>();
  /** The supervisor's restart options as given, under each agent's own. */
  private readonly restartOptions: RestartOptions | undefined;

  constructor(settings: RuntimeSettings) {
    this.restartOptions = settings.restartOptions;
    this.now = () => clockNow(settings.clockForTimers);
    this.authAttempts = new AuthAttempts(settings.authTimeoutMs);
    this.requests = new AgentRequests({ clock: settings.clockForTimers, authTimeoutMs: settings.authTimeoutMs, terminalLogin: settings.terminalLogin });
    this.ptyTerminals = new PtyTerminals({
      clock: settings.clockForTimers,
      settings: (agent) => this.specs.get(agent)?.pty ?? {},
      activity: (agent, event) => this.events.emit('pty:activity', { agent, ...event }),
    });
    const store = openStore(settings.store, settings.stateDir); // throws store_failed: before anything starts
    this.writer = new StoreWriter(store, {
      retention: settings.retention,
      pruneEveryMs: pruneEveryMs,
      onError: (error, droppedWrites) => this.events.emit('store:error', { kind: 'store_failed', message: error.message, droppedWrites }),
    });
    this.journal = new StoreJournal(this.writer);
    this.reader = new StoreReader(store, this.writer, this.events);
    this.workspaces = new WorkspaceRegistry({ stateDir: settings.stateDir, statusIntervalMs: settings.workspaceStatusIntervalMs, events: this.events });
    this.sessions = new SessionRegistry({
      events: this.events,
      agentActor: (agent) => this.agentActor(agent),
      closeOnAgent: (agent, sessionId) => this.closeOnAgent(agent, sessionId),
      // Question ids carry their broker's prefix; the other broker has no such question.
      askExpired: (requestId) => (this.broker.expire(requestId), this.elicitations.expire(requestId)),
      opened: (record) => this.journalSession(record),
      // A session's own workspace: its hold hears that the session ends (busy or not), then that it is gone.
      closing: (record) => {
        if (record.resources.workspace) endHold(record.resources.workspace, busyReason(record.agent, [{ sessionId: record.id, status: record.status() }]));
      },
      ended: (record) => (record.resources.workspace ? releaseHold(record.resources.workspace) : undefined),
    });
    this.opener = new SessionOpener({
      sessions: this.sessions,
      terminalOutputByteLimit: settings.sessions.terminalOutputByteLimit,
      containment: () => this.containment.mechanism,
      clock: settings.clockForTimers,
      recordTerminal: (agent, command, pid, contained) => recordSpawned(this.records, { agent, command, pid, contained, terminal: true }),
      claimWorkspace: (workspace, agent, sessionId) => this.workspaces.claim(workspace.key, { agent, sessionId }),
      refused: (agent, error, cause) => this.reportRefusal(agent, error, cause),
    });
    this.controls = new SessionControls({
      connectionOf: (agent) => this.connections.usable(agent),
      displayName: (agent) => this.specs.get(agent)?.displayName ?? agent,
      clock: settings.clockForTimers,
      timeoutMs: controlTimeoutMs,
    });
    // A person is being asked (a permission, an elicitation): the session machine waits, it is not a stall.
    const asking = {
      // The session machine times the question when a turn holds it (it asks the machine first).
      pending: (agent: string, sessionId: string, requestId: string, timeoutMs: number) => {
        const actor = this.sessions.get(agent, sessionId)?.actor();
        const event = { type: 'permission.requested', requestId, timeoutMs } as const;
        if (!actor?.getSnapshot().can(event)) return false;
        actor.send(event);
        return true;
      },
      settled: (agent: string, sessionId: string, requestId: string) => {
        // A request answered because the connection closed is not the turn going on: the
        // agent is gone, and the session is about to fail (agent.lost clears the request).
        if (!this.connections.usable(agent)) return;
        this.sessions.get(agent, sessionId)?.actor()?.send({ type: 'permission.settled', requestId });
      },
    };
    this.elicitations = new ElicitationBroker({
      clock: settings.clockForTimers,
      timeoutMs: settings.sessions.elicitationTimeoutMs,
      ask: (request) => this.deliverAsk('elicitation:request', request, request.sessionId),
      ...asking,
      journal: {
        requested: (requestId, request) => this.journal.elicitation(requestId, request),
        answered: (agent, sessionId, requestId, answer) => this.journal.elicitationOutcome(agent, sessionId, requestId, answer),
      },
      invalidAnswer: (request, issue) =>
        this.events.emit('protocol:warning', { agent: request.agent, message: `The elicitation policy's answer does not fit the agent's schema (${issue}): answered cancel`, suppressed: 0 }),
    });
    this.broker = new PermissionBroker({
      clock: settings.clockForTimers,
      timeoutMs: settings.sessions.permissionTimeoutMs,
      ask: (permission) => this.deliverAsk('permission:request', permission, permission.sessionId),
      ...asking,
      journal: {
        requested: (requestId, request) => this.journal.permission(requestId, request),
        answered: (agent, sessionId, requestId, response) => this.journal.permissionOutcome(agent, sessionId, requestId, response),
      },
    });
    this.containment = chooseContainment(settings.containment);
    const { mechanism, refused } = this.containment;
    if (settings.containment !== 'none' && (refused.length > 0 || !mechanism)) {
      // After the caller's synchronous set-up, so listeners added right after creation hear it.
      queueMicrotask(() => this.events.emit('containment:degraded', { kind: mechanism?.kind ?? null, refused: [...refused] }));
    }
    this.records = settings.stateDir === false ? null : new AgentRecords(settings.stateDir);
    const instance = supervisorInstance();
    this.pods = new KubernetesPods({
      records: this.records,
      owner: { supervisorInstance: instance, supervisorProcess: instance.slice(instance.lastIndexOf('/') + 1), host: hostLabel() },
      handshakeTimeoutMs: settings.timings.handshakeTimeoutMs,
      clock: settings.clockForTimers,
    });
    if (settings.sweepOnStart) this.sweepOnStart();
    const handlerDeps = {
      capabilities: settings.sessions.capabilities,
      sessions: this.sessions,
      broker: this.broker,
      elicitations: this.elicitations,
      elicitation: settings.sessions.elicitation,
      extensions: settings.extensions,
      events: this.events,
      clock: settings.clockForTimers,
    };
    const agentProcess = createAgentProcessActor({
      getSpec: (agent) => this.spec(agent),
      connections: this.connections,
      stderrLines: settings.stderrLines,
      containment: this.containment.mechanism,
      records: this.records,
      exits: this.exits,
      connector: this.pods,
      onStderrLine: (agent, line) => {
        this.journal.stderr(agent, line);
        this.events.emit('agent:stderr', { agent, line });
        const prompt = this.authAttempts.promptsIn(agent, line);
        if (prompt) this.relay('agent:auth_prompt', agent, { agent, methodId: prompt.methodId, urls: prompt.urls, line });
      },
      acpOptions: (agent) => {
        const capabilities = servedCapabilities(this.specs.get(agent)?.runtime?.kind, settings.sessions.capabilities);
        return {
          clientCapabilities: clientCapabilities(capabilities, settings.sessions.elicitation, settings.terminalLogin !== undefined),
          handlers: createClientHandlers(agent, { ...handlerDeps, capabilities }),
        };
      },
      hasWorkspace: (agent) => this.specs.get(agent)?.workspace !== undefined,
      now: this.now,
      pty: this.ptyTerminals,
      streamJsonSession: (agent) => {
        const known = this.streamJsonSessions.get(agent);
        if (known) return { sessionId: known, resume: true };
        const sessionId = randomUUID();
        this.streamJsonSessions.set(agent, sessionId);
        return { sessionId, resume: false };
      },
    });
    const connectionOf = (agent: string) => this.connections.usable(agent);
    const session = sessionMachine.provide({
      actors: {
        promptTurn: createPromptTurnActor({
          connectionOf,
          cancelPermissions: (agent, sessionId) => {
            this.broker.cancelSession(agent, sessionId);
            this.elicitations.cancelSession(agent, sessionId);
          },
          onTurn: (agent, sessionId, turn) => {
            if ('prompt' in turn) this.journal.prompt(agent, sessionId, turn.prompt);
            else this.journal.promptResult(agent, sessionId, turn);
            this.events.emit('session:turn', { agent, sessionId, ...turn });
          },
          clock: settings.clockForTimers,
        }),
        loadSession: createLoadSessionActor({
          connectionOf,
          capabilitiesOf: (agent) => this.connections.get(agent)?.initialize.agentCapabilities ?? {},
          sessionParams: (agent, sessionId) => {
            const resources = this.sessions.get(agent, sessionId)?.resources;
            const capabilities = this.connections.get(agent)?.initialize.agentCapabilities;
            return resources && { cwd: resources.cwd, mcpServers: resources.mcpServers, ...sessionRequestExtras(capabilities, resources.roots, resources.meta) };
          },
          reopened: async (agent, sessionId, answer) => {
            const record = this.sessions.get(agent, sessionId);
            if (!record) return;
            record.state.fromAnswer(answer);
            await this.reapplyChoices(record);
          },
          replaying: (agent, sessionId, replaying) => {
            const record = this.sessions.get(agent, sessionId);
            if (!record) return;
            record.replaying = replaying;
            record.stored = true; // live here since it was opened: its transcript is in the store
          },
        }),
      },
    });
    const authenticate = createAuthenticateActor({
      connectionOf,
      bounds: (agent) => this.authAttempts.bounds(agent),
      displayName: (agent) => this.specs.get(agent)?.displayName ?? agent,
      clock: settings.clockForTimers,
    });
    const workspace = workspaceMachine.provide({
      actors: createWorkspaceActors({
        acquire: (hold) => this.workspaces.acquire(hold, () => this.specs.get(hold.agent)?.workspace),
        restore: (hold) => this.workspaces.restore(hold, () => this.specs.get(hold.agent)?.workspace),
        detach: (hold) => this.workspaces.detach(hold),
        clean: (hold, strategy) => this.workspaces.clean(hold, strategy),
        keep: (hold, why, strategy) => this.workspaces.keep(hold, why, strategy),
      }),
    });
    const machine = supervisorMachine.provide({ actors: { agent: agentMachine.provide({ actors: { agentProcess, session, authenticate, workspace } }) } });
    this.actor = createActor(machine, {
      input: { maxAgents: settings.maxAgents, timings: settings.timings, overload: settings.overload },
      ...(settings.clock ? { clock: settings.clock } : {}),
      ...(settings.inspect ? { inspect: settings.inspect } : {}),
    });
    this.actor.on('agent:status', ({ agent, status, previous }) => {
      this.statusSince.set(agent, this.now());
      this.journal.agentStatus(agent, status, previous);
      if (status === 'idle') this.streamJsonSessions.delete(agent);
      // Stopped (or ended, no restart to come): its pod goes; a crash or a dropped stream keeps it for the restart.
      if (status === 'idle' || status === 'exited') this.pods.release(agent);
    });
    this.actor.on('error', ({ agent, failure }) => this.journal.agentError(agent, failure));
    // Parked agents and the supervisor's escalation: to listeners and to the event log.
    this.actor.on('agent:needs_auth', ({ agent, failure, authMethods }) => this.relay('agent:needs_auth', agent, { agent, failure, authMethods }));
    this.actor.on('agent:rate_limited', ({ agent, failure, retryAt }) => this.relay('agent:rate_limited', agent, { agent, failure, retryAt }));
    this.actor.on('supervisor:overloaded', ({ restarts, intensity, periodMs }) => this.relay('supervisor:overloaded', null, { restarts, intensity, periodMs }));
    this.actor.on('supervisor:overload_reset', () => this.relay('supervisor:overload_reset', null, {}));
    this.actor.on('agent:exited', ({ agent, exit, when }) => this.relay('agent:exited', agent, { agent, exit, when }));
    // The set's name and what failed with the one before: never a value of its env.
    this.actor.on('agent:credential', ({ agent, credential, previous, failure }) =>
      this.relay('agent:credential', agent, { agent, credential, previous, failure: { kind: failure.kind, class: failure.class ?? null, message: failure.message } }),
    );
    this.actor.start();
  }

  /** Keeps the spec (env stays here, never in machine context) and spawns the agent actor. */
  register(name: string, spec: AgentSpec): void {
    this.specs.set(name, { ...spec, args: [...(spec.args ?? [])], env: { ...spec.env } });
    this.journal.agentRegistered(name, spec);
    this.statusSince.set(name, this.now());
    const { handshakeTimeoutMs, shutdownTimeoutMs, killTimeoutMs } = spec;
    this.actor.send({
      type: 'agent.register',
      agent: name,
      displayName: spec.displayName ?? name,
      jitterSeed: Math.floor(Math.random() * 2 ** 32),
      timings: {
        restart: resolveRestartPolicy(spec.protocol, this.restartOptions, spec.restart),
        ...(handshakeTimeoutMs !== undefined ? { handshakeTimeoutMs } : {}),
        ...(shutdownTimeoutMs !== undefined ? { shutdownTimeoutMs } : {}),
        ...(killTimeoutMs !== undefined ? { killTimeoutMs } : {}),
      },
      failurePatterns: toFailurePatterns(spec.failurePatterns),
      credentials: (spec.credentials ?? []).map((set) => set.name),
    });
  }

  /** When the agent entered its current status (the supervisor's clock, epoch ms); null before its first report. */
  since(agent: string): number | null {
    return this.statusSince.get(agent) ?? null;
  }

  /** restart(name, { reason }): said to listeners and the event log before the agent's machine runs it. */
  noteRestart(agent: string, reason: string | null): void {
    this.relay('agent:restart', agent, { agent, reason });
  }

  /** resetOverload(): the supervisor machine releases the automatic restarts it holds. */
  resetOverload(): void {
    this.actor.send({ type: 'overload.reset' });
  }

  /** Whether the supervisor machine is overloaded (holding automatic restarts). */
  get overloaded(): boolean {
    return this.actor.getSnapshot().matches({ running: 'overloaded' });
  }

  private relay<K extends 'agent:needs_auth' | 'agent:rate_limited' | 'agent:auth_prompt' | 'supervisor:overloaded' | 'supervisor:overload_reset' | 'agent:exited' | 'agent:credential' | 'agent:restart'>(
    type: K,
    agent: string | null,
    event: RuntimeEvents[K],
  ): void {
    this.journal.event(agent, type, event);
    this.events.emit(type, event);
  }

  /**
   * session/new or session/load refused by the agent: its machine classifies the failure (and
   * parks the agent for a login or a limit); the caller's error carries the same class.
   */
  private reportRefusal(agent: string, error: AgentError, cause: unknown): AgentError {
    const report = {
      type: 'agent.failure' as const,
      phase: 'session' as const,
      kind: error.kind,
      detail: `${error.message}${cause && typeof cause === 'object' && 'message' in cause ? ` (${describeError(cause)})` : ''}`,
      ...rpcErrorDetails(cause),
      at: this.now(),
    };
    const actor = this.agentActor(agent);
    if (!actor) return error;
    // The agent machine classifies (and parks for a login or a limit); its answer is emitted
    // while it takes the report, synchronously: nothing else is being processed here.
    const requestId = `classify-${++this.classifications}`;
    let classified: AgentFailure | undefined;
    const answer = actor.on('failure.classified', (event) => {
      if (event.requestId === requestId) classified = event.failure;
    });
    actor.send({ ...report, requestId });
    answer.unsubscribe();
    return classified?.class === undefined ? error : error.withClass({ class: classified.class, retryable: classified.retryable ?? false, retryAt: classified.retryAt ?? null });
  }

  /** True when `register(name)` would be accepted by the supervisor machine right now. */
  canRegister(name: string): boolean {
    return this.actor.getSnapshot().can({ type: 'agent.register', agent: name, displayName: name, jitterSeed: 0 });
  }

  has(name: string): boolean {
    return this.specs.has(name);
  }

  names(): string[] {
    return [...this.specs.keys()];
  }

  /** The spec of a registered agent; throws `unknown_agent`. */
  spec(name: string): AgentSpec {
    const spec = this.specs.get(name);
    if (!spec) throw toError(name, failures.unknownAgent(name));
    return spec;
  }

  /** Whether the agent runs as a process of this host (or a local client of a remote one); false for a pod the supervisor made, whose pid is the pod's. */
  runsLocally(name: string): boolean {
    return !this.pods.handles(this.spec(name));
  }

  agentActor(name: string): AgentActorRef | undefined {
    // Own children only: a name like `constructor` must not find Object.prototype's.
    const children = this.actor.getSnapshot().children;
    return Object.hasOwn(children, name) ? (children[name] as AgentActorRef) : undefined;
  }

  /**
   * Sends a command to the supervisor machine and settles with its answer. A supervisor
   * that has reached `stopped` (final) takes no events; its answers are fixed: every agent is
   * idle, so a stop is done and a start is refused `shutting_down`.
   */
  command(event: AgentCommandEvent extends infer E ? (E extends AgentCommandEvent ? Omit<E, 'requestId'> : never) : never, options: RequestOptions = {}): Promise<unknown> {
    // In order, after the start-up sweep: no agent is spawned before its orphans are gone.
    if (this.sweeping) return this.sweeping.then(() => this.command(event, options));
    if (this.actor.getSnapshot().status !== 'active') {
      if (event.type === 'agent.stop') return this.has(event.agent) ? Promise.resolve() : Promise.reject(toError(event.agent, failures.unknownAgent(event.agent)));
      return Promise.reject(toError(event.agent, shutdownRefusal(event)));
    }
    // A stop is answered once the agent is idle: after its workspace, and its sessions' own, were cleaned up or kept.
    return request(this.actor, 'command.settled', event, event.agent, options);
  }

  /** A session's workspace (`newSession(agent, { workspace })`); rejects with `workspace_failed`. */
  async sessionWorkspace(agent: string, spec: WorkspaceSpec): Promise<SessionWorkspace> {
    const hold = randomUUID();
    // The supervisor machine refuses an unknown agent and a session during shutdown; else the agent spawns the hold, which makes the workspace.
    await this.command({ type: 'session.admit', agent, hold, workspace: spec });
    const actorId = sessionWorkspaceId(hold);
    const actor = this.agentActor(agent)?.getSnapshot().children[actorId] as WorkspaceHoldActor | undefined;
    try {
      if (!actor) throw new Error('its workspace hold is gone');
      return await heldWorkspace(actor, agent, actorId);
    } catch (error) {
      throw workspaceFailed(agent, this.spec(agent).displayName ?? agent, describeError(error), error);
    }
  }

  /**
   * Stops every agent (the machine's shutdown) and every terminal, then writes what is left
   * to the store and closes it; resolves when all of that is done.
   */
  shutdown(): Promise<void> {
    return new Promise<void>((resolve) => {
      const terminals = this.sessions.releaseAll();
      // Every session released (its workspace cleaned up), every git command and watcher done.
      const workspaces = async () => {
        await Promise.all(this.sessions.all().flatMap((record) => (record.resources.workspace ? [record.released] : [])));
        await this.workspaces.close();
      };
      // The pty agents' screens and activity machines last until every process is gone.
      // And every process's exit under way (a container being removed: nothing is left when shutdown resolves).
      const finish = () =>
        void terminals
          .then(workspaces)
          .then(() => this.exits.all())
          .then(() => this.pods.settled())
          .then(() => this.pods.close())
          .then(() => this.ptyTerminals.dispose())
          .then(() => this.reader.close())
          .then(() => resolve());
      if (this.actor.getSnapshot().status !== 'active') return finish();
      // Also from an errored actor (a defect, never by design): shutdown always resolves.
      const done = () => {
        subscription.unsubscribe();
        finish();
      };
      const subscription = this.actor.subscribe({ complete: done, error: done });
      this.actor.send({ type: 'shutdown' });
    });
  }

  /**
   * Kills what crashed supervisors left behind (records of dead owners), or with `dryRun` only
   * lists it. `only` narrows it to those pids, each of which must be a dead owner's leftover
   * here: otherwise it rejects `orphan_not_found` and nothing is done. Emits `orphans:swept`
   * after a sweep, never after a dry run (which changed nothing).
   */
  async sweepOrphans(options: SweepOptions = {}): Promise<SweepResult> {
    const dryRun = options.dryRun ?? false;
    const plan = this.records?.plan(options.only);
    const refused = plan ? plan.refused : [...new Set(options.only ?? [])].map((pid) => ({ pid, reason: 'not recorded' as const }));
    if (refused.length > 0) throw orphanNotFound(refused, this.records?.dir ?? null);
    const result: SweepResult = plan ? await plan.run(dryRun) : { dryRun, orphans: [], killed: [], skipped: [] };
    if (!dryRun) this.events.emit('orphans:swept', result);
    return result;
  }

  /**
   * The start-up sweep. Without a dead owner's record (the usual case) it is settled at once
   * and nothing waits; otherwise commands wait until it is done.
   */
  private sweepOnStart(): void {
    const killing = this.records?.hasOrphans() ?? false;
    // Asynchronous: `orphans:swept` reaches listeners added right after creation.
    const sweep = this.sweepOrphans().then(
      () => void (this.sweeping = null),
      () => void (this.sweeping = null),
    );
    if (killing) this.sweeping = sweep;
  }

  /** During shutdown: every agent skips to the ladder's SIGKILL now (a second signal). */
  forceShutdown(): void {
    if (this.actor.getSnapshot().status === 'active') this.actor.send({ type: 'shutdown.force' });
  }

  /** Keeps a session opened here in the store: its opening, status changes and every update. */
  private journalSession(record: SessionRecord): void {
    this.journal.sessionOpened(record.agent, record.id, record.resources.cwd);
    record.channel.on('update', (update) => this.journal.update(record, update));
    record.channel.on('status', ({ status }) => this.journal.sessionStatus(record.agent, record.id, status));
  }

  /** An `'ask'` policy's request, to its session's listeners and the supervisor's; false when nobody listens. */
  private deliverAsk<K extends 'permission:request' | 'elicitation:request'>(type: K, request: RuntimeEvents[K], sessionId: string | null): boolean {
    const record = sessionId === null ? undefined : this.sessions.get(request.agent, sessionId);
    const heardBySession = record ? (record.ask as (type: K, request: RuntimeEvents[K]) => boolean)(type, request) : false;
    const heardBySupervisor = this.events.listenerCount(type) > 0;
    if (heardBySupervisor) this.events.emit(type, request);
    return heardBySession || heardBySupervisor;
  }

  /**
   * After the agent reopened a session with other modes or models than its user chose, sets
   * them again; what it no longer offers or refuses is reported (`session:choice_dropped`).
   */
  private async reapplyChoices(record: SessionRecord): Promise<void> {
    for (const { what, error } of await this.controls.reapply(record)) {
      this.events.emit('session:choice_dropped', { agent: record.agent, sessionId: record.id, choice: what, kind: error.kind, message: error.message });
    }
  }

  private closeOnAgent(agent: string, sessionId: string): void {
    const connection = this.connections.usable(agent);
    if (!connection || !this.connections.get(agent)?.initialize.agentCapabilities?.sessionCapabilities?.close) return;
    // Not awaited: an unresponsive agent must not hold up close() (and shutdown with it).
    connection.agent.request(acpMethods.agent.session.close, { sessionId }).catch(() => {});
  }
}
