/**
 * The public face of the supervisor actor: promises and listeners over XState events.
 * It owns no lifecycle logic of its own — that lives in machines/ — only the glue:
 * providing the real process actor, waiting for outcomes, and turning refusals and
 * failures into `AgentError`s.
 */
import { createActor, type Actor } from 'xstate';
import { createAgentProcessActor } from '../actors/agent-process.actor.js';
import { LiveConnections, type LiveConnection } from '../actors/live-connections.js';
import { createSessionActors } from '../actors/session-turn.actor.js';
import type { AgentStatus } from '../machines/agent-events.js';
import { agentMachine } from '../machines/agent.machine.js';
import { sessionMachine } from '../machines/session.machine.js';
import { supervisorMachine } from '../machines/supervisor.machine.js';
import { acpMethods } from '../services/acp-client.service.js';
import { validateAgentSpec, type AgentSpec } from '../services/agent-spec.js';
import { AgentError } from '../services/errors.js';
import { sendStartCommand, topLevelState, waitForAgentState, type AgentActorRef, type AgentSnapshot } from './agent-waits.js';
import { createConsoleInspector } from './console-inspector.js';
import { EventHub } from './event-hub.js';
import { resolveOptions, type SupervisorOptions } from './options.js';
import type { Session } from './session.js';
import { SessionFactory, type SessionOptions } from './session-factory.js';
import { SessionHub, type SessionHubEvents } from './session-hub.js';
import type { AgentHandle, AgentSummary, CallOptions, SupervisorEventMap } from './supervisor-types.js';
import { abortable } from './waiting.js';

export type { AgentHandle, AgentSummary, AgentStatusEvent, AgentErrorEvent, SupervisorEventMap, CallOptions } from './supervisor-types.js';


/**
 * Supervises agent processes. Create it with {@link createSupervisor}.
 *
 * @example
 * const supervisor = createSupervisor({ agents: { echo: presets.echo() } });
 * const agent = await supervisor.ensureAgent('echo');
 * console.log(agent.agentInfo);
 * await supervisor.shutdown();
 */
export class Supervisor {
  /** The XState supervisor actor: subscribe, inspect, or read its snapshot. */
  readonly actor: Actor<typeof supervisorMachine>;
  private readonly specs = new Map<string, AgentSpec>();
  private readonly connections = new LiveConnections();
  private readonly handles = new WeakMap<LiveConnection, AgentHandle>();
  private readonly sessionEvents = new EventHub<SessionHubEvents>();
  private readonly sessionHub: SessionHub;
  private readonly sessionFactory: SessionFactory;
  private shutdownPromise: Promise<void> | undefined;

  constructor(options: SupervisorOptions = {}) {
    const resolved = resolveOptions(options);
    this.sessionHub = new SessionHub({
      clock: options.clock ?? { setTimeout: (fn, ms) => setTimeout(fn, ms), clearTimeout: (id) => clearTimeout(id as NodeJS.Timeout) },
      permissionTimeoutMs: resolved.sessions.permissionTimeoutMs,
      capabilities: resolved.sessions.capabilities,
      events: this.sessionEvents,
      agentActor: (agent) => this.agentActor(agent),
      connection: (agent) => this.connections.get(agent)?.connection,
      ensureConnected: async (agent, signal) => ({ canLoad: (await this.ensureAgent(agent, { signal })).agentCapabilities.loadSession === true }),
    });
    this.sessionFactory = new SessionFactory({
      hub: this.sessionHub,
      defaults: resolved.sessions,
      events: this.sessionEvents,
      ensureAgent: (agent, signal) => this.ensureAgent(agent, { signal }),
      agentActor: (agent) => this.agentActor(agent),
    });
    const agentProcess = createAgentProcessActor({
      getSpec: (agent) => this.spec(agent),
      connections: this.connections,
      stderrLines: resolved.stderrLines,
      acpOptions: (agent) => ({ clientCapabilities: this.sessionHub.clientCapabilities(), handlers: this.sessionHub.handlersFor(agent) }),
    });
    const session = sessionMachine.provide({
      actors: createSessionActors({
        connections: this.connections,
        sessionParams: (agent, sessionId) => {
          const resources = this.sessionHub.get(agent, sessionId)?.resources;
          return resources && { cwd: resources.cwd, mcpServers: resources.mcpServers };
        },
      }),
    });
    const machine = supervisorMachine.provide({ actors: { agent: agentMachine.provide({ actors: { agentProcess, session } }) } });
    const inspect = options.inspect === 'console' ? createConsoleInspector() : options.inspect;
    this.actor = createActor(machine, {
      input: { maxAgents: resolved.maxAgents, timings: resolved.timings },
      ...(options.clock ? { clock: options.clock } : {}),
      ...(inspect ? { inspect } : {}),
    });
    this.actor.start();
    for (const [name, spec] of Object.entries(options.agents ?? {})) this.register(name, spec);
  }

  /** Adds an agent at runtime. Throws `invalid_options` for a bad spec or a taken name. */
  register(name: string, spec: AgentSpec): void {
    const valid = validateAgentSpec(name, spec);
    if (this.isShutDown()) throw new AgentError('shutting_down', `Cannot register "${name}": the supervisor is shutting down`, { agent: name });
    if (this.specs.has(name)) throw new AgentError('invalid_options', `An agent named "${name}" is already registered`, { agent: name });
    this.specs.set(name, { ...valid, args: [...(valid.args ?? [])], env: { ...valid.env } });
    this.actor.send({
      type: 'agent.register',
      agent: name,
      displayName: valid.displayName ?? name,
      jitterSeed: Math.floor(Math.random() * 2 ** 32),
    });
  }

  /** Every registered agent with its status, pid, attempt counter and last error. */
  list(): AgentSummary[] {
    return [...this.specs.keys()].map((name) => this.summary(name));
  }

  /** The agent's current status. Throws `unknown_agent` for an unregistered name. */
  getStatus(name: string): AgentStatus {
    return this.summary(name).status;
  }

  /**
   * Resolves with the connected agent, starting it if needed. Concurrent calls share one
   * start; a connected agent resolves at once with the same handle. Abort stops waiting,
   * not the start (other callers may share it).
   */
  async ensureAgent(name: string, options: CallOptions = {}): Promise<AgentHandle> {
    this.requireAgent(name);
    if (this.getStatus(name) === 'stopping') await this.waitForAgent(name, (snapshot) => snapshot.matches('idle'), options.signal);
    return this.command(name, 'agent.ensure', options.signal);
  }

  /**
   * Reconnects a disconnected agent now: resets its attempt counter and spawns (a pending
   * backoff timer is cancelled). A connected or starting agent resolves with its current
   * connection; an idle one is started as by `ensureAgent`.
   */
  async reconnect(name: string, options: CallOptions = {}): Promise<AgentHandle> {
    const status = this.getStatus(name);
    if (status === 'idle' || status === 'stopping') return this.ensureAgent(name, options);
    return this.command(name, 'agent.reconnect', options.signal);
  }

  /** Stops one agent through the stop ladder; resolves when its process group is gone. */
  async stop(name: string, options: CallOptions = {}): Promise<void> {
    this.requireAgent(name);
    if (this.isShutDown()) return this.shutdown(options);
    this.actor.send({ type: 'agent.stop', agent: name });
    await this.waitForAgent(name, (snapshot) => snapshot.matches('idle'), options.signal);
  }

  /**
   * Stops every agent in parallel; resolves when every process has exited. Afterwards every
   * start is refused with kind `shutting_down`. Idempotent.
   */
  shutdown(options: CallOptions = {}): Promise<void> {
    this.shutdownPromise ??= new Promise<void>((resolve) => {
      // Terminals are not in any process group of an agent: kill them alongside the agents.
      const terminals = Promise.all(this.sessionHub.all().map((session) => session.resources.terminals.releaseAll()));
      const subscription = this.actor.subscribe({
        complete: () => {
          subscription.unsubscribe();
          void terminals.then(() => resolve());
        },
      });
      this.actor.send({ type: 'shutdown' });
    });
    return abortable(this.shutdownPromise, options.signal, 'shutdown');
  }

  /**
   * Listens to `agent:status` or `error` events; returns the function that unsubscribes.
   *
   * @example
   * const off = supervisor.on('agent:status', ({ agent, status, previous }) => console.log(agent, previous, '→', status));
   */
  on<K extends keyof SupervisorEventMap>(type: K, listener: (event: SupervisorEventMap[K]) => void): () => void {
    const safe = (event: SupervisorEventMap[K]) => {
      try {
        listener(event);
      } catch (error) {
        process.emitWarning(`agentvisor: a ${type} listener threw: ${String(error)}`);
      }
    };
    if (type === 'agent:status') {
      const subscription = this.actor.on('agent:status', ({ agent, status, previous }) => safe({ agent, status, previous } as SupervisorEventMap[K]));
      return () => subscription.unsubscribe();
    }
    if (type === 'error') {
      const subscription = this.actor.on('error', ({ agent, failure }) =>
        safe({ agent, kind: failure.kind, message: failure.message, detail: failure.detail, stderr: failure.stderr } as SupervisorEventMap[K]),
      );
      return () => subscription.unsubscribe();
    }
    return this.sessionEvents.on(type as keyof SessionHubEvents & string, listener as (event: unknown) => void);
  }

  /**
   * Opens an ACP session (`session/new`) on the agent, starting it if needed. Rejects with
   * `auth_required` (and the agent's `authMethods`) when the agent wants `authenticate` first.
   *
   * @example
   * const session = await supervisor.newSession('codex', { cwd: '/work/repo', permissions: 'deny' });
   * console.log(await session.prompt('Summarise the README'));
   */
  newSession(agent: string, options: SessionOptions = {}): Promise<Session> {
    return this.sessionFactory.create(agent, options);
  }

  /** Loads an earlier session (`session/load`); `not_supported` unless the agent advertises it. */
  loadSession(agent: string, sessionId: string, options: SessionOptions = {}): Promise<Session> {
    return this.sessionFactory.load(agent, sessionId, options);
  }

  /** The open sessions, optionally of one agent. */
  sessions(agent?: string): Session[] {
    return this.sessionHub.all().filter((session) => agent === undefined || session.agent === agent);
  }

  /** Calls the agent's `authenticate` with one of its `authMethods`. Auth failures are never retried. */
  async authenticate(agent: string, methodId: string, options: CallOptions = {}): Promise<void> {
    const handle = await this.ensureAgent(agent, options);
    try {
      await abortable(handle.connection.agent.request(acpMethods.agent.authenticate, { methodId }), options.signal, agent);
    } catch (error) {
      if (error instanceof AgentError) throw error;
      throw new AgentError('auth_required', `${handle.displayName} refused authentication with ${methodId}: ${(error as Error).message}`, {
        agent,
        cause: error,
        authMethods: handle.authMethods,
      });
    }
  }

  private spec(name: string): AgentSpec {
    const spec = this.specs.get(name);
    if (!spec) throw new AgentError('unknown_agent', `No agent named "${name}" is registered`, { agent: name });
    return spec;
  }

  private requireAgent(name: string): void {
    this.spec(name);
  }

  private isShutDown(): boolean {
    return this.shutdownPromise !== undefined || this.actor.getSnapshot().status !== 'active';
  }

  private agentActor(name: string): AgentActorRef | undefined {
    return this.actor.getSnapshot().children[name] as AgentActorRef | undefined;
  }

  private summary(name: string): AgentSummary {
    const spec = this.spec(name);
    const known = this.actor.getSnapshot().context.agents[name];
    const snapshot = this.agentActor(name)?.getSnapshot();
    const context = snapshot?.context;
    return {
      name,
      displayName: spec.displayName ?? name,
      status: (snapshot ? topLevelState(snapshot) : known?.status) ?? 'idle',
      pid: context?.pid ?? null,
      attempt: context?.attempt ?? 0,
      lastError: context?.lastError ?? null,
    };
  }

  /** Sends a start command and settles with its outcome: connected, failed, refused or stopped. */
  private command(name: string, type: 'agent.ensure' | 'agent.reconnect', signal: AbortSignal | undefined): Promise<AgentHandle> {
    if (this.isShutDown()) {
      return Promise.reject(new AgentError('shutting_down', `Cannot start "${name}": the supervisor is shutting down`, { agent: name }));
    }
    return sendStartCommand(this.waitContext(), name, type, signal);
  }

  private waitForAgent(name: string, done: (snapshot: AgentSnapshot) => boolean, signal: AbortSignal | undefined): Promise<void> {
    return waitForAgentState(this.agentActor(name), name, done, signal);
  }

  private waitContext() {
    return {
      actor: this.actor,
      agentActor: (agent: string) => this.agentActor(agent),
      handle: (agent: string) => this.handle(agent),
      isUsable: (agent: string) => this.connections.get(agent)?.connection.signal.aborted === false,
    };
  }

  private handle(name: string): AgentHandle {
    const live = this.connections.get(name);
    if (!live) throw new AgentError('agent_exited', `Agent "${name}" has no live connection`, { agent: name });
    let handle = this.handles.get(live);
    if (!handle) {
      const { initialize } = live;
      handle = {
        name,
        displayName: this.spec(name).displayName ?? name,
        pid: live.pid,
        initialize,
        protocolVersion: initialize.protocolVersion,
        agentCapabilities: initialize.agentCapabilities ?? {},
        authMethods: initialize.authMethods ?? [],
        agentInfo: initialize.agentInfo,
        connection: live.connection,
      };
      this.handles.set(live, handle);
    }
    return handle;
  }
}

/** Creates and starts a supervisor. See DESIGN.md and README.md for the options. */
export function createSupervisor(options: SupervisorOptions = {}): Supervisor {
  return new Supervisor(options);
}

