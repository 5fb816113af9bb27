/**
 * The public face of the supervisor: promises and listeners over the supervisor actor. It
 * decides nothing: each method validates its input, sends one event and awaits the
 * machine's answer (`command.settled`), then shapes it for the caller.
 */
import { resolve } from 'node:path';
import type { Actor, StateValue } from 'xstate';
import { agentNameSchema, validateAgentSpec } from '../core/agent-spec.js';
import { runsOnThisHost } from '../core/runtime-spec.js';
import { describeSchemaIssue } from '../core/schema.js';
import { cannotResume, failures, invalidOptions, toError } from '../core/errors.js';
import { reopenMethod } from '../services/acp-client.service.js';
import type { supervisorMachine } from '../machines/supervisor.machine.js';
import type { LiveConnection } from '../runtime/live-connections.js';
import { handleSignalsFor } from '../runtime/signal-handling.js';
import { ResourceSampler } from '../runtime/resource-usage.js';
import { storedSpec } from '../runtime/store-journal.js';
import { SupervisorRuntime } from '../runtime/supervisor-runtime.js';
import type { ResumeFallback, SessionRecord, RuntimeEvents } from '../runtime/session-registry.js';
import type { SessionSettings } from '../runtime/session-opener.js';
import { abandonHold } from '../runtime/workspace-holds.js';
import { abortable } from '../util/abort.js';
import { maxTimerMs, resolveAgentSpecPaths, resolveOptions, resolvePruneOptions, resolveSessionOptions } from './options.js';
import { resolveSweepOptions, type SweepOrphansOptions } from './sweep-options.js';
import type {
  AgentHandle,
  AgentSessionPage,
  AgentSpec,
  AgentSpecSummary,
  AgentStatus,
  AgentSummary,
  AgentTerminal,
  CallOptions,
  ContainmentReport,
  EventEntry,
  LogEntry,
  NewSessionOptions,
  OrphanSweepResult,
  PruneOptions,
  PruneResult,
  ReadOptions,
  ResourceUsage,
  SessionOptions,
  StoredSession,
  StoreStats,
  SupervisorEventMap,
  SupervisorOptions,
  TranscriptEntry,
  WorkspaceInfo,
  WorkspaceSpec,
} from './public-types.js';
import { Session } from './session.js';

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
  private readonly runtime: SupervisorRuntime;
  private readonly settings: ReturnType<typeof resolveOptions>;
  private readonly handles = new WeakMap<LiveConnection, AgentHandle>();
  private readonly sessionFaces = new WeakMap<SessionRecord, Session>();
  private shutdownPromise: Promise<void> | undefined;
  /** Stops handling host signals for this supervisor (runtime/signal-handling.ts). */
  private readonly releaseSignals: (() => void) | undefined;
  /** Each agent's last CPU sample (runtime/resource-usage.ts). */
  private readonly usage: ResourceSampler;

  constructor(options: SupervisorOptions = {}) {
    this.settings = resolveOptions(options);
    this.usage = new ResourceSampler(this.settings.clockForTimers);
    this.runtime = new SupervisorRuntime(this.settings);
    this.actor = this.runtime.actor;
    for (const [name, spec] of Object.entries(options.agents ?? {})) this.register(name, spec);
    if (options.handleSignals ?? true) this.releaseSignals = handleSignalsFor(this);
  }

  /**
   * True while the supervisor is overloaded: its agents restarted more than
   * `overload.intensity` times within `overload.periodMs`, and it holds every automatic
   * restart until `resetOverload()` (docs/failures.md). Callers' starts still run.
   */
  get overloaded(): boolean {
    return this.runtime.overloaded;
  }

  /**
   * The terminal of a `protocol: 'pty'` agent (docs/pty.md): type into it, resize it, read its
   * rendered screen and its scrollback (kept across restarts), follow its activity (starting,
   * running, needsInput, stale, exited). Throws `unknown_agent`, or `not_supported` for an
   * agent of another protocol.
   *
   * @example
   * const terminal = supervisor.terminal('shell');
   * terminal.write('ls\r');
   * terminal.on('activity', ({ state }) => console.log(state));
   */
  terminal(name: string): AgentTerminal {
    const spec = this.runtime.spec(agentName(name));
    if (spec.protocol !== 'pty') throw toError(name, failures.notAPtyAgent(name));
    return this.runtime.ptyTerminals.view(name);
  }

  /** Ends an overload: the held automatic restarts run, and counting starts afresh (`supervisor:overload_reset`). */
  resetOverload(): void {
    this.runtime.resetOverload();
  }

  /** The containment this supervisor's agents run in, and what was refused on this host. */
  get containment(): ContainmentReport {
    const { mechanism, refused } = this.runtime.containment;
    return { kind: mechanism?.kind ?? null, refused: [...refused] };
  }

  /**
   * Kills what crashed supervisors left behind, from the records in `stateDir`
   * (docs/containment.md): a record whose owner still runs is left alone ('owner alive'); a
   * dead owner's processes are killed through their containment, never a pid whose start
   * time differs from the recorded one ('pid reused'), and the record is removed. Emits
   * `orphans:swept`. With `stateDir: false` there is nothing to sweep.
   *
   * `{ dryRun: true }` only lists them (`orphans`: pid, agent, start time, command, container)
   * and touches nothing: no signal, no record removed, no `orphans:swept`. `{ only: [pid, …] }`
   * kills just those leftovers; a pid that is no dead supervisor's leftover here (in no record,
   * its supervisor alive, another host's) rejects `orphan_not_found` and nothing is killed.
   * Bad options reject `invalid_options`.
   *
   * @example
   * const { orphans } = await supervisor.sweepOrphans({ dryRun: true });
   * if (orphans.length > 0) await supervisor.sweepOrphans({ only: [orphans[0].pid] });
   */
  sweepOrphans(options: SweepOrphansOptions = {}): Promise<OrphanSweepResult> {
    try {
      return this.runtime.sweepOrphans(resolveSweepOptions(options));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Adds an agent at runtime. Throws `invalid_options` for a bad spec (also a `cwd` that is
   * not an existing directory, for an agent that runs on this host) or a taken name.
   */
  register(name: string, spec: AgentSpec): void {
    const valid = validateAgentSpec(name, spec);
    if (this.runtime.has(name)) throw invalidOptions(`An agent named "${name}" is already registered`, name);
    this.requireStateDirFor(valid.workspace, `spec.workspace of agent "${name}"`);
    const resolved = resolveAgentSpecPaths(name, valid);
    if (!this.runtime.canRegister(name)) throw toError(name, failures.shuttingDown(name, 'register'));
    this.runtime.register(name, resolved);
  }

  /** Every registered agent with its status, pid, attempt counter and last error. */
  list(): AgentSummary[] {
    return this.runtime.names().map((name) => this.summary(name));
  }

  /** One agent's row of `list()`. Throws `unknown_agent` for an unregistered name. */
  describe(name: string): AgentSummary {
    return this.summary(agentName(name));
  }

  /**
   * What the agent's processes on this host cost now: CPU (% of one core) and resident memory
   * of the agent, its containment's wrapper and everything they started (docs/containment.md);
   * null while it has no process, or where /proc cannot be read. The CPU share is measured
   * since the previous call when that was 0.1-10 s ago, else over a fresh 250 ms. Of a remote
   * runtime (ssh, docker, `kubectl exec`) only the local client's processes count; an agent in a
   * pod the supervisor made has no process here (null). Throws `unknown_agent`.
   */
  async resourceUsage(name: string): Promise<ResourceUsage | null> {
    const { pid } = this.summary(agentName(name));
    return (await this.usage.sample([{ name, pid: this.localPid(name, pid) }])).get(name) ?? null;
  }

  /** {@link resourceUsage} of every registered agent, by name, measured together (one wait at most). */
  async resourceUsages(): Promise<Record<string, ResourceUsage | null>> {
    const rows = this.list().map(({ name, pid }) => ({ name, pid: this.localPid(name, pid) }));
    return Object.fromEntries(await this.usage.sample(rows));
  }

  /** The agent's pid on this host: none for an agent in a pod (its pid is the pod's, and names some other process here). */
  private localPid(name: string, pid: number | null): number | null {
    return this.runtime.runsLocally(name) ? pid : null;
  }

  /** The agent's spec, without its env values (their names only). Throws `unknown_agent`. */
  agentSpec(name: string): AgentSpecSummary {
    const spec = this.runtime.spec(agentName(name));
    const { command, args, cwd, envNames } = storedSpec(spec); // env names, never values
    return {
      command,
      args,
      cwd,
      envNames,
      protocol: spec.protocol ?? 'acp',
      runtime: spec.runtime?.kind ?? 'local',
      workspace: spec.workspace ?? null,
      handshakeTimeoutMs: spec.handshakeTimeoutMs ?? null,
      shutdownTimeoutMs: spec.shutdownTimeoutMs ?? null,
      killTimeoutMs: spec.killTimeoutMs ?? null,
    };
  }

  /** The agent's current status. Throws `unknown_agent` for an unregistered name. */
  getStatus(name: string): AgentStatus {
    return this.summary(agentName(name)).status;
  }

  /**
   * Resolves with the connected agent, starting it if needed (after a stop in progress has
   * finished). Concurrent calls share one start; a connected agent resolves at once with the
   * same handle. Abort stops waiting, not the start (other callers may share it).
   */
  async ensureAgent(name: string, options: CallOptions = {}): Promise<AgentHandle> {
    await this.runtime.command({ type: 'agent.ensure', agent: agentName(name) }, options);
    return this.handle(name);
  }

  /**
   * Reconnects a disconnected agent now: resets its attempt counter and spawns (a pending
   * backoff timer is cancelled). A connected or starting agent resolves with its current
   * connection; an idle one is started as by `ensureAgent`.
   */
  async reconnect(name: string, options: CallOptions = {}): Promise<AgentHandle> {
    await this.runtime.command({ type: 'agent.reconnect', agent: agentName(name) }, options);
    return this.handle(name);
  }

  /**
   * Stops one agent through the stop ladder; resolves when its process group is gone (and its
   * workspaces are cleaned up or kept). `force: true` sends SIGKILL to the agent's whole
   * containment at once — for an agent that ignores SIGTERM, or when waiting out the ladder
   * is not wanted; also during a graceful stop already under way.
   */
  async stop(name: string, options: CallOptions & { force?: boolean } = {}): Promise<void> {
    const agent = agentName(name);
    if (options.force !== undefined && typeof options.force !== 'boolean') throw invalidOptions(`Option stop options.force: must be a boolean (got ${JSON.stringify(options.force)})`, agent);
    await this.runtime.command({ type: 'agent.stop', agent, ...(options.force ? { force: true } : {}) }, options);
  }

  /**
   * Restarts one agent: the stop ladder, then a start; resolves with the new connection. Its
   * sessions fail their turn in flight and are resumed as after a crash (`session.resume()`, or
   * by themselves at the next prompt); its workspace stays. A stopped or exited agent is just
   * started. `reason` goes to the `agent:restart` event and the event log. Rejects like
   * `ensureAgent` when the new process fails to start; `stopped` when a stop comes first.
   */
  async restart(name: string, options: CallOptions & { reason?: string } = {}): Promise<AgentHandle> {
    const agent = agentName(name);
    if (options.reason !== undefined && typeof options.reason !== 'string') throw invalidOptions(`Option restart options.reason: must be a string (got ${JSON.stringify(options.reason)})`, agent);
    // An unknown agent is refused by the supervisor machine; only a known one's restart is said.
    if (this.runtime.has(agent)) this.runtime.noteRestart(agent, options.reason ?? null);
    await this.runtime.command({ type: 'agent.restart', agent }, options);
    return this.handle(agent);
  }

  /**
   * Stops every agent in parallel; resolves when every process has exited. Afterwards every
   * start is refused with kind `shutting_down`. Idempotent. `force: true` (also during a
   * shutdown already under way) skips every agent to the ladder's SIGKILL at once.
   */
  shutdown(options: CallOptions & { force?: boolean } = {}): Promise<void> {
    this.shutdownPromise ??= this.runtime.shutdown().finally(() => this.releaseSignals?.());
    if (options.force) this.runtime.forceShutdown();
    return abortable(this.shutdownPromise, options.signal, 'shutdown');
  }

  /**
   * Listens to `agent:status`, `error` and the session events; returns the function that
   * unsubscribes.
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
      const subscription = this.actor.on('error', ({ agent, failure }) => {
        const { kind, message, detail, stderr, command, installHint } = failure;
        const classInfo = failure.class === undefined ? {} : { class: failure.class, retryable: failure.retryable ?? false, retryAt: failure.retryAt ?? null };
        safe({ agent, kind, message, detail, stderr, ...(command ? { command } : {}), ...(installHint ? { installHint } : {}), ...classInfo } as SupervisorEventMap[K]);
      });
      return () => subscription.unsubscribe();
    }
    return this.runtime.events.on(type as keyof RuntimeEvents, listener as (event: unknown) => void);
  }

  /**
   * Opens an ACP session (`session/new`) on the agent, starting it if needed. Rejects with
   * `auth_required` (and the agent's `authMethods`) when the agent wants `authenticate` first.
   * With `workspace`, the workspace is made first and is the session's cwd (docs/workspaces.md);
   * without `cwd`, a session of an agent with a workspace works in the agent's workspace.
   *
   * @example
   * const session = await supervisor.newSession('codex', { cwd: '/work/repo', permissions: 'deny' });
   * console.log(await session.prompt('Summarise the README'));
   */
  async newSession(agent: string, options: NewSessionOptions = {}): Promise<Session> {
    agentName(agent);
    options ??= {}; // null as "no options": validated as {} below, and never dereferenced as null
    const settings = this.sessionSettings(options, agent);
    return this.inWorkspace(agent, settings, async (settings) => {
      let fallback: ResumeFallback | null = null;
      if (options.resume) {
        const [latest] = await this.runtime.reader.sessions({ agent, cwd: this.sessionCwd(agent, settings) });
        if (latest) {
          try {
            return await this.openLoaded(agent, latest.sessionId, { ...settings, reopen: 'resume' }, options.signal);
          } catch (error) {
            // It cannot be resumed: a new session, which says why (as the daemon's named sessions do).
            if (!cannotResume(error)) throw error;
            fallback = { sessionId: latest.sessionId, kind: error.kind, message: error.message };
            const failed = this.runtime.sessions.get(agent, latest.sessionId);
            if (failed) await this.runtime.sessions.close(failed);
          }
        }
      }
      const handle = await this.ensureAgent(agent, { signal: options.signal });
      const record = await this.runtime.opener.create(handle, { ...settings, cwd: this.sessionCwd(agent, settings) }, options.signal);
      record.resumeFallback = fallback;
      return record;
    });
  }

  /**
   * Loads an earlier session (`session/load`, its history replayed to `onUpdate`; an agent
   * that can only resume gets `session/resume`); `not_supported` when it can do neither.
   * A session of that id that failed is resumed; one that is open is returned as it is.
   */
  async loadSession(agent: string, sessionId: string, options: SessionOptions = {}): Promise<Session> {
    agentName(agent);
    options ??= {};
    if (typeof sessionId !== 'string' || sessionId === '') throw invalidOptions('A session id must be a non-empty string');
    const settings = this.sessionSettings(options, agent);
    return this.inWorkspace(agent, settings, (settings) => this.openLoaded(agent, sessionId, settings, options.signal));
  }

  /**
   * Every workspace this supervisor's agents and sessions use, and the stale ones its state
   * directory holds (owner null), with their branch, clean/dirty, changed files and
   * ahead/behind counts against their base (docs/workspaces.md).
   */
  workspaces(): Promise<WorkspaceInfo[]> {
    return this.runtime.workspaces.list();
  }

  /**
   * Cleans up the stale workspaces in the state directory — their owner ended (and their
   * cleanup was refused or deferred by `keep`), or the process that held them is gone — with
   * each one's strategy (`keep` ones are removed), or `strategy` for all; dirty worktrees are
   * refused unless `force`. Then `git worktree prune` in each repository. Resolves with what it did.
   */
  pruneWorkspaces(options: PruneOptions = {}): Promise<PruneResult> {
    try {
      return this.runtime.workspaces.prune(resolvePruneOptions(options));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** The sessions open in this process (live), optionally of one agent. */
  openSessions(agent?: string): Session[] {
    return this.runtime.sessions
      .all()
      .filter((record) => agent === undefined || record.agent === agent)
      .map((record) => this.sessionFace(record));
  }

  /**
   * The sessions the store keeps, from this run and earlier ones (docs/store.md), newest
   * first: all, of one agent, and/or in one cwd; `sessionId`: that one (of each agent that has it), read by its id.
   *
   * @example
   * const [latest] = await supervisor.sessions({ agent: 'codex', cwd: '/work/repo' });
   */
  sessions(filter: { agent?: string; cwd?: string; sessionId?: string } = {}): Promise<StoredSession[]> {
    return this.runtime.reader.sessions({
      ...(filter.agent === undefined ? {} : { agent: filter.agent }),
      ...(filter.cwd === undefined ? {} : { cwd: resolve(filter.cwd) }),
      ...(filter.sessionId === undefined ? {} : { sessionId: filter.sessionId }),
    });
  }

  /**
   * A session's transcript, oldest first: every update with its time, the prompts sent and
   * how each turn ended, permission requests and their answers. Pages through the store;
   * `after` is an entry's `seq`. Rejects `session_not_found`.
   *
   * @example
   * for await (const entry of supervisor.history(session.id)) console.log(entry.kind, entry.data);
   */
  async *history(sessionId: string, options: ReadOptions & { agent?: string } = {}): AsyncIterableIterator<TranscriptEntry> {
    const stored = await this.runtime.reader.find(sessionId, options.agent);
    yield* this.runtime.reader.transcript(stored.agent, sessionId, options);
  }

  /**
   * An agent's stderr lines as the store keeps them; with `follow`, then each new line as it
   * comes, until the loop breaks, the signal fires or the supervisor shuts down. Live lines
   * are also `agent:stderr` events.
   */
  logs(agent: string, options: ReadOptions & { follow?: boolean } = {}): AsyncIterableIterator<LogEntry> {
    return this.runtime.reader.logs(agentName(agent), options);
  }

  /** The event log: status changes and errors of every agent, or of one, oldest first. */
  eventLog(options: ReadOptions & { agent?: string } = {}): AsyncIterableIterator<EventEntry> {
    return this.runtime.reader.eventLog(options.agent === undefined ? {} : { agent: options.agent }, options);
  }

  /** How much the store holds, by kind, and its file size. */
  storeStats(): Promise<StoreStats> {
    return this.runtime.reader.stats();
  }

  /**
   * Resumes a stored session, also one of an earlier run of the host: starts its agent if
   * needed and reopens the session in its stored cwd — `session/resume` where the agent
   * offers it (nothing replayed: the store holds the transcript), else `session/load` (what
   * the agent replays is not stored twice). Rejects `session_not_found`, and `not_supported`
   * when the agent can do neither (never a silent fresh session).
   */
  async resumeSession(sessionId: string, options: SessionOptions & { agent?: string } = {}): Promise<Session> {
    options ??= {};
    const stored = await this.runtime.reader.find(sessionId, options.agent);
    const inStoredCwd = options.cwd === undefined && !options.workspace;
    // Its stored directory, unless the caller gives one: gone since, it is refused by name rather than handed to the agent.
    const settings = this.sessionSettings({ ...(inStoredCwd ? { cwd: stored.cwd } : {}), ...options }, stored.agent, inStoredCwd ? `The stored cwd of session ${sessionId}` : undefined);
    return this.inWorkspace(stored.agent, settings, (settings) => this.openLoaded(stored.agent, sessionId, { ...settings, reopen: 'resume' }, options.signal));
  }

  /**
   * The agent's own sessions (`session/list`), one page at a time, newest as the agent
   * orders them; `cwd` filters, `cursor` is the last page's `nextCursor`. Starts the agent if
   * needed. `unsupported` when the agent does not advertise session listing.
   *
   * @example
   * for (let cursor: string | null | undefined; cursor !== null; ) {
   *   const page = await supervisor.listAgentSessions('codex', { cursor });
   *   page.sessions.forEach((info) => console.log(info.sessionId, info.title));
   *   cursor = page.nextCursor;
   * }
   */
  async listAgentSessions(agent: string, options: CallOptions & { cwd?: string; cursor?: string | null } = {}): Promise<AgentSessionPage> {
    options ??= {};
    if (options.cwd !== undefined && (typeof options.cwd !== 'string' || options.cwd === '')) throw invalidOptions('Option cwd must be a non-empty string', agent);
    if (options.cursor != null && typeof options.cursor !== 'string') throw invalidOptions('Option cursor must be a string', agent);
    const handle = await this.ensureAgent(agent, { signal: options.signal });
    const params = { ...(options.cwd !== undefined ? { cwd: resolve(options.cwd) } : {}), ...(options.cursor != null ? { cursor: options.cursor } : {}) };
    return this.runtime.requests.listSessions(handle, params, options.signal);
  }

  /**
   * Deletes one of the agent's own sessions (`session/delete`); once the agent has, a session
   * of that id open here is closed too. `unsupported` when the agent does not advertise
   * deleting sessions.
   */
  async deleteAgentSession(agent: string, sessionId: string, options: CallOptions = {}): Promise<void> {
    if (typeof sessionId !== 'string' || sessionId === '') throw invalidOptions('A session id must be a non-empty string', agent);
    const handle = await this.ensureAgent(agent, { signal: options?.signal });
    await this.runtime.requests.deleteSession(handle, sessionId, options?.signal);
    // Deleted on the agent: the session open here ends too (a refusal above left it as it was).
    const open = this.runtime.sessions.get(agent, sessionId);
    if (open) await this.runtime.sessions.close(open);
  }

  /**
   * Calls one of the agent's extension methods (`_`-prefixed) and resolves with its answer;
   * the agent's refusal rejects `protocol_error`. Starts the agent if needed.
   *
   * @example
   * const answer = await supervisor.callAgent('codex', '_codex/status', {});
   */
  async callAgent(agent: string, method: string, params: unknown = {}, options: CallOptions = {}): Promise<unknown> {
    extensionMethod(agent, method);
    const handle = await this.ensureAgent(agent, { signal: options?.signal });
    return this.runtime.requests.request(handle, method, params, options?.signal);
  }

  /** Sends an extension notification (`_`-prefixed method) to the agent. Starts the agent if needed. */
  async notifyAgent(agent: string, method: string, params: unknown = {}, options: CallOptions = {}): Promise<void> {
    extensionMethod(agent, method);
    const handle = await this.ensureAgent(agent, { signal: options?.signal });
    await this.runtime.requests.notify(handle, method, params);
  }

  /**
   * Calls the agent's ACP `authenticate` with one of its `authMethods` (the agent is started
   * first when it has no process) and resolves with the agent connected; the way out of
   * `needsAuth` (docs/failures.md). A refusal rejects `auth_required` and the agent stays
   * parked. Auth failures are never retried by themselves. Bounded: after `timeoutMs`
   * (default `authTimeoutMs`, 120 s) the login is cancelled and rejects `auth_timeout`, naming
   * any URL the agent asked a person to open (also `agent:auth_prompt` events as it does);
   * aborting `signal` cancels the login (`aborted`) for every caller waiting on it.
   */
  async authenticate(agent: string, methodId: string, options: CallOptions & { timeoutMs?: number } = {}): Promise<AgentHandle> {
    if (typeof methodId !== 'string' || methodId === '') throw invalidOptions('An auth method id must be a non-empty string', agent);
    options ??= {};
    if (options.timeoutMs !== undefined && !(Number.isInteger(options.timeoutMs) && options.timeoutMs > 0 && options.timeoutMs <= maxTimerMs)) {
      throw invalidOptions(`Option timeoutMs must be a whole number of ms from 1 to ${maxTimerMs}`, agent);
    }
    // The latest handshake's methods (also of a parked agent whose process is gone): a terminal login is never sent to `authenticate`.
    const method = this.runtime.connections.lastHandshake(agentName(agent))?.authMethods?.find((candidate) => candidate.id === methodId);
    if (method && 'type' in method && method.type === 'terminal') return this.terminalLogin(agent, method, options);
    // Bounded: the timeout, and the caller's signal cancel the login itself (not only the wait).
    const end = this.runtime.authAttempts.begin(agent, methodId, options);
    try {
      await this.runtime.command({ type: 'agent.authenticate', agent: agentName(agent), methodId }, options);
    } finally {
      end();
    }
    return this.handle(agent);
  }

  /**
   * A `terminal` auth method (ACP `auth.terminal`): the embedder's `terminalLogin` runs the
   * agent's command with the method's arguments and environment (bounded like authenticate());
   * a zero exit is a login: a parked agent is reconnected to pick it up, a connected one stays
   * as it is. Never sent to `authenticate`.
   */
  private async terminalLogin(agent: string, method: { id: string; args?: string[]; env?: Record<string, string> }, options: CallOptions & { timeoutMs?: number }): Promise<AgentHandle> {
    await this.runtime.requests.terminalLogin(agent, this.runtime.spec(agent), method, options);
    // A parked agent starts afresh with the login; a connected one stays as it is (its process keeps its state).
    return this.reconnect(agent, options);
  }

  /** A session's settings from its options; a git worktree needs a state directory. */
  private sessionSettings(options: SessionOptions, agent: string, cwdLabel?: string): SessionSettings {
    const settings = resolveSessionOptions(options, this.settings.sessions, this.agentRunsHere(agent), cwdLabel);
    this.requireStateDirFor(settings.workspace, 'session options.workspace');
    return settings;
  }

  /** Whether the agent works with this host's files (a local or sandboxed one, or one not registered: checked as local). */
  private agentRunsHere(agent: string): boolean {
    return !this.runtime.has(agent) || runsOnThisHost(this.runtime.spec(agent).runtime?.kind);
  }

  private requireStateDirFor(workspace: WorkspaceSpec | undefined, field: string): void {
    if (workspace?.kind === 'git-worktree' && this.settings.stateDir === false) {
      throw invalidOptions(`Option ${field}: a git-worktree workspace lives in the state directory, and stateDir is false`);
    }
  }

  /** Where a session works: its own cwd or workspace, else its agent's workspace, else the host's cwd. */
  private sessionCwd(agent: string, settings: SessionSettings): string {
    return settings.cwdGiven || settings.heldWorkspace ? settings.cwd : (this.runtime.workspaces.agentPath(agent) ?? settings.cwd);
  }

  /**
   * Opens a session in its own workspace when it asks for one: the workspace first (its hold,
   * spawned by the agent's machine; nothing is started when it fails: `workspace_failed`),
   * then `open` with it as the cwd. A workspace that no session ended up holding is abandoned:
   * its hold removes a worktree it made.
   */
  private async inWorkspace(agent: string, settings: SessionSettings, open: (settings: SessionSettings) => Promise<SessionRecord>): Promise<Session> {
    if (!settings.workspace) return this.sessionFace(await open(settings));
    const workspace = await this.runtime.sessionWorkspace(agent, settings.workspace);
    const held = () => this.runtime.sessions.all().some((record) => record.resources.workspace === workspace);
    try {
      const record = await open({ ...settings, cwd: workspace.path, heldWorkspace: workspace });
      if (!held()) await abandonHold(workspace); // an open session of that id answered
      return this.sessionFace(record);
    } catch (error) {
      if (!held()) await abandonHold(workspace);
      throw error;
    }
  }

  /** `session/load` on the connected agent; a failed session of that id is resumed. */
  private async openLoaded(agent: string, sessionId: string, settings: SessionSettings, signal: AbortSignal | undefined): Promise<SessionRecord> {
    const handle = await this.ensureAgent(agent, { signal });
    const stored = (await this.runtime.reader.sessions({ agent, sessionId })).length > 0;
    const record = await this.runtime.opener.load(handle, sessionId, { ...settings, cwd: this.sessionCwd(agent, settings), stored });
    await this.sessionFace(record).ensureOpen({ signal });
    return record;
  }

  private summary(name: string): AgentSummary {
    const spec = this.runtime.spec(name);
    const snapshot = this.runtime.agentActor(name)?.getSnapshot();
    const context = snapshot?.context;
    const handshake = this.runtime.connections.get(name)?.initialize;
    return {
      name,
      displayName: spec.displayName ?? name,
      status: context?.status ?? 'idle',
      state: snapshot ? statePath(snapshot.value) : 'idle',
      pid: context?.pid ?? null,
      attempt: context?.attempt ?? 0,
      lastError: context?.lastError ?? null,
      containment: context?.containment ?? null,
      since: this.runtime.since(name),
      lastExit: context?.lastExit ?? null,
      restart: context?.restart.when ?? 'always',
      credential: context ? (context.credentials[context.credentialIndex] ?? null) : null,
      agentInfo: handshake?.agentInfo ?? null,
      agentCapabilities: handshake ? (handshake.agentCapabilities ?? {}) : null,
      authMethods: handshake ? (handshake.authMethods ?? []) : null,
    };
  }

  private sessionFace(record: SessionRecord): Session {
    let session = this.sessionFaces.get(record);
    if (!session) {
      session = new Session(record, {
        sessions: this.runtime.sessions,
        controls: this.runtime.controls,
        canLoadSessions: async (agent, signal) => reopenMethod((await this.ensureAgent(agent, { signal })).agentCapabilities, 'resume') !== null,
        promptCapabilities: (agent) => {
          const live = this.runtime.connections.get(agent);
          return live ? (live.initialize.agentCapabilities?.promptCapabilities ?? {}) : undefined;
        },
        displayName: (agent) => this.runtime.spec(agent).displayName ?? agent,
      });
      this.sessionFaces.set(record, session);
    }
    return session;
  }

  /** The handle of a connected agent: one object per connection. */
  private handle(name: string): AgentHandle {
    const live = this.runtime.connections.get(name);
    if (!live) throw toError(name, failures.notConnected(name));
    let handle = this.handles.get(live);
    if (!handle) {
      const { initialize } = live;
      handle = {
        name,
        displayName: this.runtime.spec(name).displayName ?? name,
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

/** An extension method name: `invalid_options` unless it starts with `_` (ACP keeps the rest for itself). */
function extensionMethod(agent: string, method: unknown): void {
  if (typeof method !== 'string' || !/^_./.test(method)) throw invalidOptions(`An extension method starts with _ (got ${JSON.stringify(method)})`, agent);
}

/** The name a method was called with, checked: `invalid_options` unless it is a possible agent name. */
function agentName(name: unknown): string {
  const valid = agentNameSchema.safeParse(name);
  if (!valid.success) throw invalidOptions(`An agent name ${describeSchemaIssue(valid.error)}`);
  return valid.data;
}

/** A state value as a dotted path of its active leaf: `{ connected: 'stable' }` → `connected.stable`. */
function statePath(value: StateValue): string {
  if (typeof value === 'string') return value;
  const [key, child] = Object.entries(value)[0] ?? [];
  if (key === undefined) return '';
  const rest = child === undefined ? '' : statePath(child);
  return rest ? `${key}.${rest}` : key;
}

/** Creates and starts a supervisor. See README.md and docs/ for the options. */
export function createSupervisor(options: SupervisorOptions = {}): Supervisor {
  return new Supervisor(options);
}
