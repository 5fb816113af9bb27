/**
 * The daemon's sessions: the ones it opened (by name or not), their prompt queues, and the
 * names kept in the state directory (`daemon-state.json`) so that a later daemon resumes
 * a named session with `session/load` — at its next prompt, or at start when it was open
 * (`reopenNamed`, the restore). One prompt runs per session; the others wait in order.
 * Every update of every session the daemon holds is passed to `onUpdate`.
 */
import { realpathSync } from 'node:fs';
import { AgentError, type ContentBlock, type McpServer, type Session, type SessionOptions, type StoredSession, type Supervisor } from '../index.js';
import { cannotResume } from '../core/errors.js';
import type { PromptStreamLine, SessionRow, TerminalOutputBody } from './api-types.js';
import type { ElicitationDesk } from './elicitation-desk.js';
import { ApiError, errorBody } from './http-kit.js';
import type { DaemonStateFile, OpenNamedSession } from './daemon-state-file.js';
import type { PermissionDesk } from './permission-desk.js';

/** ACP's JSON-RPC error code for an unknown resource: what an agent answers for a session id it does not know. */
const resourceNotFound = -32002;

/** Where a prompt's lines go: a stream, or a collector for a plain JSON answer. */
export type PromptSink = (line: PromptStreamLine) => void;

/** What a prompt sends: a text (one text block), or content blocks. */
export type PromptContent = string | ContentBlock[];

/**
 * What a session is opened with besides its cwd (`POST /v1/sessions`, `POST /v1/prompt`): the
 * library's session options `mcpServers`, `additionalRoots` and `permissions`. Absent: the
 * daemon's defaults (no MCP server, no more roots, the daemon's policy).
 */
export interface SessionInputs {
  mcpServers?: McpServer[] | undefined;
  additionalRoots?: string[] | undefined;
  permissions?: 'ask' | 'allow' | 'deny' | 'allow-reads' | undefined;
}

interface PromptJob {
  prompt: PromptContent;
  sink: PromptSink;
  finished: () => void;
}

/** A session the daemon holds open, with its queue. */
export interface HeldSession {
  session: Session;
  name: string | null;
  /** The inputs it was opened with, comparable ({@link inputsKey}). */
  inputs: string;
  queue: PromptJob[];
  running: PromptJob | null;
  offUpdates: () => void;
}

export interface SessionDeskOptions {
  supervisor: Supervisor;
  permissions: PermissionDesk;
  elicitations: ElicitationDesk;
  /** Where the names are kept (in memory only without a state directory). */
  names: DaemonStateFile;
  onUpdate(agent: string, sessionId: string, update: unknown): void;
  /** The named sessions it holds open changed (one opened, closed, renamed, let go). */
  onChange?(): void;
}

export type Opened = { held: HeldSession; opened: 'new' | 'existing' | 'resumed'; notice?: string };

export class SessionDesk {
  private readonly held = new Map<string, HeldSession>();
  /** Named sessions being opened: concurrent prompts to one name share one open. */
  private readonly opening = new Map<string, Promise<Opened>>();
  /** Named sessions an earlier daemon had open, being reopened at start: a prompt to one waits for it. */
  private readonly restoring = new Map<string, Promise<unknown>>();
  private readonly names: DaemonStateFile;

  constructor(private readonly options: SessionDeskOptions) {
    this.names = options.names;
  }

  /**
   * The open session of that name, else its stored one resumed, else a new one (`fresh`:
   * always new). With `cwd` (absolute), the session must work there: a new one is opened in
   * it, and an open or stored one of that name in another directory is refused
   * (`invalid_options`) rather than used somewhere the caller did not ask for. Without, a
   * new one works where the library puts it (the agent's workspace, else the daemon's cwd).
   * `inputs` are what a session opened or resumed here gets; an open one given other inputs
   * than it was opened with is refused (`invalid_options`): they cannot change on an open session.
   */
  openNamed(agent: string, name: string, cwd: string | undefined, fresh = false, inputs: SessionInputs = {}): Promise<Opened> {
    const key = `${agent}\u0000${name}`;
    // Reopened by the restore: once that settled (opened, or not), the name is looked at as usual.
    const restoring = this.restoring.get(key);
    if (restoring) return restoring.then(() => this.openNamed(agent, name, cwd, fresh, inputs));
    const inFlight = this.opening.get(key);
    if (inFlight) {
      // Shared with a concurrent open of that name: its session must suit this caller's cwd and inputs too.
      return inFlight.then((opened) => {
        refuseOtherCwd(agent, name, opened.held.session.cwd, cwd);
        refuseOtherInputs(agent, `Session "${name}"`, opened.held, inputs);
        return opened;
      });
    }
    const opening = this.resolveNamed(agent, name, cwd, fresh, inputs).finally(() => this.opening.delete(key));
    this.opening.set(key, opening);
    return opening;
  }

  /**
   * Reopens a named session an earlier daemon had open (the restore): the same session, in
   * its directory — `session/resume` or `session/load` through the library (resumeSession
   * when the store keeps it, else loadSession) — and holds it under its name. Never a new
   * session in its place: a session the agent cannot reopen rejects (`not_supported`,
   * `session_not_found`, ...), and the name is left as it was. It runs with the daemon's
   * defaults: the inputs it was first opened with are not kept across daemons.
   */
  reopenNamed({ agent, name, sessionId, cwd }: OpenNamedSession): Promise<Session> {
    const key = `${agent}\u0000${name}`;
    const reopening = (async () => {
      const stored = (await this.options.supervisor.sessions({ agent })).some((session) => session.sessionId === sessionId);
      const session = stored ? await this.options.supervisor.resumeSession(sessionId, { agent, cwd }) : await this.options.supervisor.loadSession(agent, sessionId, { cwd });
      if (!this.held.has(session.id)) this.hold(session, name);
      return session;
    })();
    const settled = reopening.then(
      () => undefined,
      () => undefined,
    );
    this.restoring.set(key, settled);
    void settled.then(() => {
      if (this.restoring.get(key) === settled) this.restoring.delete(key);
    });
    return reopening;
  }

  /** The named sessions it holds open (not closed or stopped; a failed one is resumed at its next prompt). */
  openNamedSessions(): OpenNamedSession[] {
    return [...this.held.values()]
      .filter((held) => held.name !== null && held.session.status !== 'stopped')
      .map((held) => ({ agent: held.session.agent, name: held.name!, sessionId: held.session.id, cwd: held.session.cwd }));
  }

  /** A new unnamed session, or (`resume`) the latest stored one of that agent and cwd. */
  async openUnnamed(agent: string, cwd: string | undefined, resume: boolean, inputs: SessionInputs = {}): Promise<Opened> {
    const session = await this.options.supervisor.newSession(agent, { ...sessionOptions(cwd, inputs), resume });
    const existing = this.held.get(session.id);
    if (existing) {
      refuseOtherInputs(agent, `Session ${session.id}`, existing, inputs);
      return { held: existing, opened: 'existing' };
    }
    return { held: this.hold(session, null, inputs), opened: resume ? 'resumed' : 'new' };
  }

  /**
   * One of the agent's own sessions (`session/list`) opened in the daemon, under `name` when
   * given (the name moves to it from another session, as a fresh named session takes it). One
   * the daemon holds is answered as it is (resumed first if it failed); one the store keeps is
   * resumed (`resumeSession`: `session/resume`, else `session/load`), in `cwd` or its stored
   * directory; any other is loaded (`loadSession`: `session/load`, else `session/resume`, its
   * history replayed into the store) in `cwd`, which it then needs (`invalid_options`).
   * `not_supported` when the agent can do neither.
   */
  async adopt(agent: string, sessionId: string, cwd: string | undefined, name: string | null): Promise<Opened> {
    let opened: Opened;
    const held = this.held.get(sessionId);
    const own = held !== undefined && held.session.agent === agent ? held : undefined;
    if (own && own.session.status !== 'stopped') {
      refuseOtherCwd(agent, name ?? sessionId, own.session.cwd, cwd);
      if (own.session.status === 'failed' && !own.running) await own.session.resume();
      opened = { held: own, opened: 'existing' };
    } else {
      if (own) this.release(own);
      const stored = (await this.options.supervisor.sessions({ agent })).some((session) => session.sessionId === sessionId);
      if (!stored && cwd === undefined) {
        throw new ApiError(400, 'invalid_options', `Session ${sessionId} of agent "${agent}" is not in the daemon's store: give its cwd (the directory session/list shows for it)`, { agent });
      }
      const session = await (stored
        ? this.options.supervisor.resumeSession(sessionId, { agent, ...(cwd === undefined ? {} : { cwd }) })
        : this.options.supervisor.loadSession(agent, sessionId, { cwd: cwd! })
      ).catch((error: unknown) => {
        // The agent's "Resource not found" (-32002) for the very id asked about: that session is unknown to it.
        if (error instanceof AgentError && error.kind === 'protocol_error' && (error.cause as { code?: unknown } | undefined)?.code === resourceNotFound) {
          throw new ApiError(404, 'session_not_found', `Agent "${agent}" does not know session ${sessionId}: ${error.message}`, { agent });
        }
        throw error;
      });
      const existing = this.held.get(session.id);
      opened = existing ? { held: existing, opened: 'existing' } : { held: this.hold(session, null), opened: 'resumed' };
    }
    if (name !== null) this.rename(opened.held, name);
    return opened;
  }

  /** A session the daemon holds, resumed first if it failed; one it does not hold is resumed from the store. */
  async byId(sessionId: string): Promise<HeldSession> {
    const held = this.held.get(sessionId);
    if (held && held.session.status !== 'stopped') {
      if (held.session.status === 'failed' && !held.running) await held.session.resume();
      return held;
    }
    if (held) this.release(held);
    const session = await this.options.supervisor.resumeSession(sessionId);
    return this.held.get(session.id) ?? this.hold(session, this.names.nameOf(sessionId));
  }

  /**
   * What a client terminal of a session the daemon holds shows (the library's
   * `session.terminalOutput()`). `terminal_not_found` for a terminal the session never had, or
   * a session the daemon does not hold (its terminals ended with it); the caller tells an
   * unknown session first.
   */
  terminalOutput(sessionId: string, terminalId: string): TerminalOutputBody {
    const held = this.held.get(sessionId);
    if (!held) throw new ApiError(404, 'terminal_not_found', `Session ${sessionId} is not open in the daemon: its terminals ended with it`);
    try {
      return { sessionId, terminalId, ...held.session.terminalOutput(terminalId) };
    } catch (error) {
      if (error instanceof AgentError && error.kind === 'invalid_options') {
        throw new ApiError(404, 'terminal_not_found', `Session ${sessionId} has no terminal ${JSON.stringify(terminalId)} (the library keeps the last eight released ones)`, { agent: held.session.agent });
      }
      throw error;
    }
  }

  /**
   * Deletes one of the agent's own sessions (`session/delete`, the library's
   * `deleteAgentSession`); once the agent has, a session of that id the daemon holds is let go
   * (its queued prompts end `cancelled`). The agent's refusal leaves everything as it was.
   */
  async deleteOnAgent(agent: string, sessionId: string): Promise<void> {
    await this.options.supervisor.deleteAgentSession(agent, sessionId);
    // A name of the deleted session would resume nothing: the next prompt under it opens a new session, without a notice.
    this.names.forget(sessionId);
    const held = this.held.get(sessionId);
    if (held && held.session.agent === agent) {
      this.cancel(sessionId);
      await held.session.close(); // already closed by the library: resolves at once
      this.release(held);
    }
  }

  /**
   * Queues a prompt on the session and resolves once it has run (or was dropped). Lines go
   * to `sink`: `queued` when it waits, `started`, every `update`, `permission` requests and
   * `elicitation`s of the session, then `done` or `error`.
   */
  prompt(held: HeldSession, prompt: PromptContent, sink: PromptSink): Promise<void> {
    return new Promise<void>((finished) => {
      const position = held.queue.length + (held.running ? 1 : 0);
      held.queue.push({ prompt, sink, finished });
      if (position > 0) sink({ type: 'queued', sessionId: held.session.id, position });
      void this.drain(held);
    });
  }

  /** Cancels the running turn and drops the queued prompts (each ends `cancelled`). */
  cancel(sessionId: string): { cancelledRunning: boolean; droppedQueued: number } {
    const held = this.held.get(sessionId);
    if (!held) return { cancelledRunning: false, droppedQueued: 0 };
    const dropped = held.queue.splice(0);
    for (const job of dropped) {
      job.sink({ type: 'done', sessionId, stopReason: 'cancelled', text: '' });
      job.finished();
    }
    const cancelledRunning = held.running !== null;
    if (cancelledRunning) held.session.cancel();
    return { cancelledRunning, droppedQueued: dropped.length };
  }

  /** Closes a session the daemon holds (its queued prompts are dropped first). */
  async close(sessionId: string): Promise<void> {
    const held = this.held.get(sessionId);
    if (!held) return;
    this.cancel(sessionId);
    await held.session.close();
    this.release(held);
  }

  /**
   * The daemon's view of a stored session: the store's row, its name, and — while the daemon
   * holds it open — its queue and the session's state (modes, config options, commands, plan,
   * usage, models, the live title). Reads the live values without copying them: the row is
   * sent at once.
   */
  row(stored: StoredSession): SessionRow {
    const held = this.held.get(stored.sessionId);
    const open = held !== undefined && held.session.status !== 'stopped' ? held.session : null;
    return {
      agent: stored.agent,
      sessionId: stored.sessionId,
      cwd: stored.cwd,
      title: open?.title ?? stored.title,
      state: stored.state,
      stopReason: stored.stopReason,
      createdAt: stored.createdAt,
      updatedAt: stored.updatedAt,
      name: held?.name ?? this.names.nameOf(stored.sessionId),
      live: open !== null && open.status !== 'failed',
      busy: held?.running != null,
      queued: held?.queue.length ?? 0,
      modes: open ? open.modes : null,
      configOptions: open ? open.configOptions : [],
      commands: open ? open.commands : [],
      plan: open ? open.plan : null,
      usage: open ? open.usage : null,
      models: open ? open.models : null,
    };
  }

  /** How many sessions the daemon holds open, by agent. */
  openCounts(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const { session } of this.held.values()) if (session.status !== 'stopped') counts.set(session.agent, (counts.get(session.agent) ?? 0) + 1);
    return counts;
  }

  /** Ends every queue (their prompts get `shutting_down`) and lets go of every session. */
  closeAll(): void {
    for (const held of [...this.held.values()]) {
      for (const job of held.queue.splice(0)) {
        job.sink({ type: 'error', error: { kind: 'shutting_down', message: 'The daemon is shutting down' } });
        job.finished();
      }
      this.release(held);
    }
  }

  private async resolveNamed(agent: string, name: string, cwd: string | undefined, fresh: boolean, inputs: SessionInputs): Promise<Opened> {
    const open = [...this.held.values()].find((held) => held.name === name && held.session.agent === agent);
    let notice: string | undefined;
    if (open && !fresh && open.session.status !== 'stopped') {
      refuseOtherCwd(agent, name, open.session.cwd, cwd);
      refuseOtherInputs(agent, `Session "${name}"`, open, inputs);
      if (open.session.status !== 'failed' || open.running) return { held: open, opened: 'existing' };
      try {
        await open.session.resume();
        return { held: open, opened: 'resumed' };
      } catch (error) {
        if (!cannotResume(error)) throw error;
        notice = `Session "${name}" (${open.session.id}) could not be resumed (${(error as Error).message}); a new session was opened`;
      }
    }
    if (open) {
      open.name = null; // the name moves to the session opened below
      this.options.onChange?.();
    }
    const storedId = fresh || open ? undefined : this.names.idOf(agent, name);
    if (storedId) {
      const stored = (await this.options.supervisor.sessions({ agent })).find((session) => session.sessionId === storedId);
      if (stored) refuseOtherCwd(agent, name, stored.cwd, cwd);
      try {
        const session = await this.options.supervisor.resumeSession(storedId, { agent, ...sessionOptions(undefined, inputs) });
        return { held: this.held.get(session.id) ?? this.hold(session, name, inputs), opened: 'resumed' };
      } catch (error) {
        if (!cannotResume(error)) throw error;
        notice = `Session "${name}" (${storedId}) could not be resumed (${(error as Error).message}); a new session was opened`;
      }
    }
    const session = await this.options.supervisor.newSession(agent, sessionOptions(cwd, inputs));
    this.names.set(agent, name, session.id);
    return { held: this.hold(session, name, inputs), opened: 'new', ...(notice ? { notice } : {}) };
  }

  private hold(session: Session, name: string | null, inputs: SessionInputs = {}): HeldSession {
    const offUpdates = session.on('update', (update) => this.options.onUpdate(session.agent, session.id, update));
    const held: HeldSession = { session, name, inputs: inputsKey(inputs), queue: [], running: null, offUpdates };
    this.held.set(session.id, held);
    if (name !== null) this.names.set(session.agent, name, session.id);
    this.options.onChange?.();
    return held;
  }

  /** Puts `held` under `name`: another open session of its agent that had the name loses it. */
  private rename(held: HeldSession, name: string): void {
    if (held.name === name) return;
    for (const other of this.held.values()) if (other !== held && other.name === name && other.session.agent === held.session.agent) other.name = null;
    held.name = name;
    this.names.set(held.session.agent, name, held.session.id);
    this.options.onChange?.();
  }

  private release(held: HeldSession): void {
    held.offUpdates();
    if (this.held.get(held.session.id) === held) this.held.delete(held.session.id);
    this.options.onChange?.();
  }

  /** Runs the session's queued prompts one after the other. */
  private async drain(held: HeldSession): Promise<void> {
    if (held.running) return;
    const job = held.queue.shift();
    if (!job) return;
    held.running = job;
    const sessionId = held.session.id;
    let text = '';
    const offUpdates = held.session.on('update', (update) => {
      if (update.sessionUpdate === 'agent_message_chunk' && update.content.type === 'text') text += update.content.text;
      job.sink({ type: 'update', sessionId, update });
    });
    const offPermissions = this.options.permissions.listen({
      requested: (permission) => permission.sessionId === sessionId && job.sink({ type: 'permission', permission }),
      resolved: () => {},
    });
    const offElicitations = this.options.elicitations.listen({
      requested: (elicitation) => elicitation.sessionId === sessionId && job.sink({ type: 'elicitation', elicitation }),
      resolved: () => {},
    });
    try {
      if (held.session.status === 'failed') await held.session.resume();
      job.sink({ type: 'started', sessionId });
      const stopReason = await held.session.prompt(job.prompt);
      job.sink({ type: 'done', sessionId, stopReason, text });
    } catch (error) {
      job.sink({ type: 'error', error: errorBody(error).body.error });
    } finally {
      offUpdates();
      offPermissions();
      offElicitations();
      held.running = null;
      job.finished();
    }
    void this.drain(held);
  }
}

/** The library's session options of a `cwd` and the inputs given. */
function sessionOptions(cwd: string | undefined, inputs: SessionInputs): SessionOptions {
  return {
    ...(cwd === undefined ? {} : { cwd }),
    ...(inputs.mcpServers === undefined ? {} : { mcpServers: inputs.mcpServers }),
    ...(inputs.additionalRoots === undefined ? {} : { additionalRoots: inputs.additionalRoots }),
    ...(inputs.permissions === undefined ? {} : { permissions: inputs.permissions }),
  };
}

/** The inputs as a comparable string, every absent one at its default. */
function inputsKey(inputs: SessionInputs): string {
  return JSON.stringify([inputs.mcpServers ?? [], inputs.additionalRoots ?? [], inputs.permissions ?? null]);
}

/**
 * `invalid_options` when the caller gave inputs and the open session was opened with others:
 * MCP servers, roots and the permission policy cannot change on an open session, and using it
 * with other ones than asked (another policy!) must not happen silently. No inputs: it is used as it is.
 */
function refuseOtherInputs(agent: string, what: string, held: HeldSession, inputs: SessionInputs): void {
  const given = inputs.mcpServers !== undefined || inputs.additionalRoots !== undefined || inputs.permissions !== undefined;
  if (!given || inputsKey(inputs) === held.inputs) return;
  throw new ApiError(
    400,
    'invalid_options',
    `${what} of agent "${agent}" is open with other session options (mcpServers, additionalDirectories, permissions) than these, and they cannot change on an open session: open a fresh session (new: true; agentvisor prompt --new), or leave them out to use it as it is`,
    { agent },
  );
}

/** `invalid_options` when the caller asked for the named session in `cwd` and it works elsewhere. */
function refuseOtherCwd(agent: string, name: string, sessionCwd: string, cwd: string | undefined): void {
  if (cwd === undefined || sameDirectory(sessionCwd, cwd)) return;
  throw new ApiError(
    400,
    'invalid_options',
    `Session "${name}" of agent "${agent}" works in ${sessionCwd}, not in ${cwd}: prompt it from its own directory, open a fresh session under the name (new: true; agentvisor prompt --new), or use another name`,
    { agent },
  );
}

/** The same directory: the same path, or two paths to it (a symlink on the way). */
function sameDirectory(a: string, b: string): boolean {
  if (a === b) return true;
  try {
    return realpathSync(a) === realpathSync(b);
  } catch {
    return false;
  }
}
