/**
 * The process actor: owns one agent process and its ACP connection for as long as it runs.
 * It spawns, performs the handshake, reports to the agent machine with `sendBack`, runs
 * the stop ladder's rungs on command, and when it is stopped (released) it kills whatever
 * is left of the process group — so no path through the machine can orphan a process.
 */
import { randomUUID } from 'node:crypto';
import type { Readable, Writable } from 'node:stream';
import { fromCallback } from 'xstate';
import type { ClientConnection, InitializeResponse } from '../core/acp-types.js';
import type { AgentSpec } from '../core/agent-spec.js';
import { describeError, type AgentErrorKind } from '../core/errors.js';
import { rpcErrorDetails } from '../core/rpc-error.js';
import type { AgentProcessInput, ProcessCommand, ProcessEvent } from '../machines/agent-events.js';
import { openAcpConnection, type AcpClientOptions } from '../services/acp-client.service.js';
import { spawnAgentProcess, transportAgentProcess, type ProcessExit, type SupervisedProcess } from '../services/agent-process.service.js';
import type { AgentRecords } from '../services/agent-records.service.js';
import type { ContainmentMechanism } from '../services/containment/containment.js';
import { openPtyBridge } from '../services/pty/pty.bridge.js';
import { spawnPtyProcess, type PtyProcess, type PtyScreen } from '../services/pty/pty.service.js';
import type { RuntimeConnector, RuntimeTransport } from '../services/runtimes/runtime.js';
import { runtimeCommandFor, type RuntimeCommand } from '../services/runtimes/runtimes.js';
import { openStreamJsonBridge } from '../services/stream-json/stream-json.bridge.js';

/** A connected agent's live objects, which machine context (plain JSON) cannot hold. */
export interface LiveConnection {
  agent: string;
  pid: number;
  connection: ClientConnection;
  initialize: InitializeResponse;
}

/** Where the actor publishes its connection while it is usable (the runtime's registry). */
export interface ConnectionPublisher {
  add(live: LiveConnection): void;
  /** Removes the entry only if it is still this connection. */
  remove(agent: string, connection: ClientConnection): void;
}

export interface AgentProcessDependencies {
  /** The launch spec of an agent (kept out of machine context: env may hold secrets). */
  getSpec(agent: string): AgentSpec;
  connections: ConnectionPublisher;
  /** ACP client options for an agent's connection (capabilities, handlers). */
  acpOptions?(agent: string): AcpClientOptions;
  stderrLines?: number;
  /** The containment every agent process runs in (services/containment/); none: process groups. */
  containment?: ContainmentMechanism | null;
  /** Where live processes are recorded for an orphan sweep (services/agent-records.service.ts); none: not recorded. */
  records?: AgentRecords | null;
  /** Hears every line an agent writes to stderr. */
  onStderrLine?(agent: string, line: string): void;
  /**
   * Whether the agent has a workspace (docs/workspaces.md): then the process asks its agent
   * machine for it (`workspace.acquire`) and spawns once the machine answers with the
   * directory (`workspace.ready`), or not at all (`workspace.failed`: kind `workspace_failed`).
   */
  hasWorkspace?(agent: string): boolean;
  /** The supervisor's clock (epoch ms): the time every report but `initialized` carries. Date.now by default. */
  now?(): number;
  /**
   * A stream-json agent's conversation (docs/stream-json.md): the session id its next process
   * runs, and whether that process resumes it (`--resume`) or starts it (`--session-id`).
   */
  streamJsonSession?(agent: string): { sessionId: string; resume: boolean };
  /** The terminals of `protocol: 'pty'` agents (the runtime's PtyTerminals): screens that outlive processes, activity. */
  pty?: PtyHost;
  /** The exits still under way (a container being removed after the machine stopped waiting): the next start waits for them. */
  exits?: ProcessExits;
  /**
   * A runtime that places the agent itself and supplies its streams (a pod made through the
   * Kubernetes API): for a spec it handles, the process opens it instead of spawning.
   */
  connector?: RuntimeConnector | null;
}

/** How long a start waits for its agent's previous process to be gone, at most (its cleanup's own bound, and the reap's). */
export const previousExitWaitMs = 25_000;

/**
 * The processes whose exit is still under way, by agent, of those that leave something in
 * their runtime. The machine stops waiting for a process after a handshake failure or
 * `killTimeoutMs`, but its exit path may still be at work — removing its container
 * (services/runtimes/container.runtime.ts `cleanup`) — and a restart must not start next to
 * what it removes: the next process of that agent waits for it, and `shutdown()` waits for
 * all of them. Each wait is bounded by {@link previousExitWaitMs}: a
 * process stuck in the kernel never holds its agent forever.
 */
export class ProcessExits {
  private readonly pending = new Map<string, Promise<void>>();

  /**
   * Tracks `exited` as `agent`'s exit under way until it settles (or the bound passes). Call it
   * before anything else waits on `exited`: the entry is gone in the same turn the exit is
   * known, before the process actor reports it, so a start that follows a reported exit never waits.
   */
  track(agent: string, exited: Promise<unknown>): void {
    const entry: Promise<void> = new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        if (this.pending.get(agent) === entry) this.pending.delete(agent);
        resolve();
      };
      const timer = setTimeout(done, previousExitWaitMs).unref();
      void exited.then(done);
    });
    this.pending.set(agent, entry);
  }

  /** The exit under way of `agent`'s previous process, if any. */
  of(agent: string): Promise<void> | null {
    return this.pending.get(agent) ?? null;
  }

  /** Every exit under way. */
  all(): Promise<void> {
    return Promise.all(this.pending.values()).then(() => {});
  }
}

/** One process's link to its agent's terminal. */
export interface PtyAttachment {
  output(data: string): void;
  exited(exit: ProcessExit): void;
}

/** What the process actor needs of the runtime's terminals for a pty agent. */
export interface PtyHost {
  /** The screen the agent's next process renders on (a restart's separator written first). */
  screenForProcess(agent: string): PtyScreen;
  /**
   * A process runs: where input and resizes go. What it prints and how it ends are told to
   * the attachment, which ignores a process that has been replaced meanwhile.
   */
  attach(agent: string, io: { write(input: string): void; resize(cols: number, rows: number): void }): PtyAttachment;
  /** Calls `listener` whenever the CLI waits for input again (or exits); returns the unsubscribe. */
  onIdle(agent: string, listener: () => void): () => void;
}


/** Creates the `agentProcess` actor logic that agent machines are provided with. */
export function createAgentProcessActor(deps: AgentProcessDependencies) {
  return fromCallback<ProcessCommand, AgentProcessInput, ProcessEvent>(({ input, sendBack, receive }) => {
    let released = false;
    const now = deps.now ?? Date.now;
    const report = (event: ProcessEvent) => {
      if (!released) sendBack(event.type === 'process.initialized' || event.type === 'process.connectionClosed' ? event : { ...event, at: now() });
    };
    const spec = withCredential(deps.getSpec(input.agent), input.credential);
    const previous = deps.exits?.of(input.agent) ?? null;
    let preparing: Promise<string> | null = null;
    let workspaceAnswer: { ready(path: string): void; failed(message: string): void } | null = null;
    if (deps.hasWorkspace?.(input.agent)) {
      preparing = new Promise<string>((resolve, reject) => {
        workspaceAnswer = { ready: resolve, failed: (message) => reject(new Error(message)) };
      });
      sendBack({ type: 'workspace.acquire' });
    }
    const connector = deps.connector?.handles(spec) ? deps.connector : null;
    if (!preparing && !previous && !connector) {
      const running = runProcess(deps, input.agent, spec, report);
      receive((command) => running.command(command));
      return () => {
        released = true;
        running.release();
      };
    }

    // The previous process's exit first (its container removed), and the workspace
    // (docs/workspaces.md): nothing is spawned until both are done, and nothing at all when
    // the workspace cannot be made. A stop meanwhile ends the attempt once the git command in
    // flight has finished (it is never killed halfway through a worktree).
    // And a runtime that places the agent itself (a pod): opened once the rest is ready. A
    // stop meanwhile aborts it — a pod still Pending is not waited for.
    let running: RunningProcess | null = null;
    let stopAsked = false;
    const opening = new AbortController();
    const exitedUnspawned = () => report({ type: 'process.exited', exitCode: null, signal: null, stderr: [], reason: 'exit' });
    const ready: Promise<string | undefined> = Promise.all([previous, preparing]).then(([, cwd]) => cwd ?? undefined);
    ready.then(
      (cwd) => {
        if (released) return;
        if (stopAsked) return exitedUnspawned();
        const launched = cwd === undefined ? spec : { ...spec, cwd };
        if (!connector) {
          running = runProcess(deps, input.agent, launched, report);
          return;
        }
        connector.open(input.agent, launched, opening.signal).then(
          (transport) => {
            if (released || stopAsked) {
              // Started after all, but nobody waits for it: ended where it runs, and its stream dropped.
              void transport.signalInside('SIGKILL').finally(() => transport.close());
              if (!released) exitedUnspawned();
              return;
            }
            running = runProcess(deps, input.agent, launched, report, transport);
          },
          (error: unknown) => {
            if (released) return;
            if (!opening.signal.aborted) {
              const failure = error as { kind?: unknown; detail?: unknown };
              const kind = typeof failure.kind === 'string' ? (failure.kind as AgentErrorKind) : 'spawn_failed';
              report({ type: 'process.failed', kind, detail: typeof failure.detail === 'string' ? failure.detail : describeError(error), stderr: [] });
            }
            exitedUnspawned();
          },
        );
      },
      (error: unknown) => {
        report({ type: 'process.failed', kind: 'workspace_failed', detail: describeError(error), stderr: [] });
        exitedUnspawned();
      },
    );
    receive((command) => {
      if (command.type === 'workspace.ready') return workspaceAnswer?.ready(command.path);
      if (command.type === 'workspace.failed') return workspaceAnswer?.failed(command.message);
      if (running) running.command(command);
      else {
        stopAsked = true;
        opening.abort(new Error('stopped while its runtime was being prepared'));
      }
    });
    return () => {
      released = true;
      opening.abort(new Error('released while its runtime was being prepared'));
      running?.release();
    };
  });
}

/**
 * The spec the process runs with: the chosen credential set's variables merged over the
 * agent's own (docs/failures.md, "Credentials with failover"). Values stay here: only the
 * set's name ever reaches the machine, events and the store.
 */
function withCredential(spec: AgentSpec, index: number | undefined): AgentSpec {
  const set = index === undefined ? undefined : spec.credentials?.[index];
  return set ? { ...spec, env: { ...spec.env, ...set.env } } : spec;
}

/** One spawned process, as the actor drives it. */
interface RunningProcess {
  command(command: ProcessCommand): void;
  /** The actor was stopped: kill whatever is left of the process group. */
  release(): void;
}

/** One launched agent: its process, the agent side of its ACP connection, and where its errors are written. */
interface Launched {
  proc: SupervisedProcess;
  /** The ACP agent's stdin and stdout: the child's own, or a bridge in front of it. */
  input: Writable;
  output: Readable;
  /** The last lines the agent wrote where its errors go (stderr; a PTY's screen). */
  errorLines(): string[];
  /** The process is gone; runs before `process.exited` is reported. */
  onExit?(exit: ProcessExit): Promise<void>;
  /** Where the agent runs when not here (docs/runtimes.md): the stop ladder's signals and the runtime's own failures go through it. */
  runtime?: RuntimeCommand | null;
}

/**
 * Launches the agent per its spec's protocol: ACP over the child's stdio; Claude Code's
 * stream-json through an in-process ACP bridge; an interactive CLI in a PTY through another.
 * What follows — the handshake, the stop ladder, the reports — is the same for all.
 */
function launch(deps: AgentProcessDependencies, agent: string, spec: AgentSpec, transport?: RuntimeTransport): Launched {
  if (transport) return launchOverTransport(deps, agent, transport);
  const acpOptions = deps.acpOptions?.(agent);
  if (spec.protocol === 'pty') return launchPty(deps, agent, spec);
  const streamJson = spec.protocol === 'stream-json' ? (deps.streamJsonSession?.(agent) ?? { sessionId: randomUUID(), resume: false }) : null;
  const launched = streamJson ? { ...spec, args: [...(spec.args ?? []), streamJson.resume ? '--resume' : '--session-id', streamJson.sessionId] } : spec;
  // Where it runs: a runtime other than this host's turns the spec into the command this host spawns.
  const runtime = runtimeCommandFor(launched, launched.cwd ?? process.cwd(), agent);
  const spawned: AgentSpec = runtime
    ? { command: runtime.command, args: runtime.args, env: runtime.env ?? {}, ...(spec.runtime?.kind === 'sandbox' && launched.cwd ? { cwd: launched.cwd } : {}), ...(spec.installHint ? { installHint: spec.installHint } : {}) }
    : launched;
  const onStderrLine = deps.onStderrLine;
  const proc = spawnAgentProcess(spawned, {
    stderrLines: deps.stderrLines,
    containment: runtime && !runtime.localContainment ? null : deps.containment,
    agent,
    records: deps.records,
    // The runtime's wrapper reads this before the agent's stream (an ssh or kubectl agent's env: never in an argv).
    ...(runtime?.stdinPreamble ? { stdinPreamble: runtime.stdinPreamble } : {}),
    ...(runtime ? { remote: runtime } : {}),
    onStderrLine: (line) => {
      if (runtime?.onStderrLine?.(line)) return; // the runtime's own marker, not the agent's
      onStderrLine?.(agent, line);
    },
  });
  const agentSide = streamJson
    ? openStreamJsonBridge(proc, {
        sessionId: streamJson.sessionId,
        partialMessages: (spec.args ?? []).includes('--include-partial-messages'),
        onWarning: (message) => acpOptions?.handlers?.protocolWarning?.(message),
      })
    : { input: proc.stdin, output: proc.stdout };
  return { proc, input: agentSide.input, output: agentSide.output, errorLines: () => proc.stderr.snapshot(), runtime };
}

/**
 * An agent whose streams its runtime supplies (a pod's exec stream): ACP over them, the
 * ladder's signals and the runtime's failures through the transport, as `runtime` says for a
 * spawned one.
 */
function launchOverTransport(deps: AgentProcessDependencies, agent: string, transport: RuntimeTransport): Launched {
  const onStderrLine = deps.onStderrLine;
  const proc = transportAgentProcess(transport, { stderrLines: deps.stderrLines, onStderrLine: (line) => onStderrLine?.(agent, line) });
  const runtime: RuntimeCommand = {
    command: 'kubernetes-api',
    args: [],
    localContainment: false,
    signalInside: (signal) => transport.signalInside(signal),
    failureOf: (exit, stderr) => transport.failureOf(exit, stderr),
  };
  return { proc, input: proc.stdin, output: proc.stdout, errorLines: () => proc.stderr.snapshot(), runtime };
}

/** A CLI in a pseudo-terminal (docs/pty.md): the runtime's terminal renders it, the PTY bridge speaks ACP for it. */
function launchPty(deps: AgentProcessDependencies, agent: string, spec: AgentSpec): Launched {
  const host = deps.pty;
  if (!host) throw new Error('pty agents need the runtime\'s terminals (AgentProcessDependencies.pty)');
  let proc: PtyProcess | null = null;
  let attachment: PtyAttachment | null = null;
  const bridge = openPtyBridge({ sessionId: randomUUID(), write: (input) => proc?.write(input) });
  const screen = host.screenForProcess(agent);
  // A pty agent runs here, or in a sandbox (the spec allows no remote runtime for it).
  const runtime = runtimeCommandFor(spec, spec.cwd ?? process.cwd(), agent);
  const command = runtime ? { command: runtime.command, args: runtime.args, ...(runtime.env ? { env: runtime.env } : {}) } : { command: spec.command, args: spec.args ?? [], ...(spec.env ? { env: spec.env } : {}) };
  proc = spawnPtyProcess(
    { ...command, ...(spec.cwd ? { cwd: spec.cwd } : {}), ...(spec.installHint ? { installHint: spec.installHint } : {}) },
    {
      screen,
      ...(spec.pty?.cols !== undefined ? { cols: spec.pty.cols } : {}),
      ...(spec.pty?.rows !== undefined ? { rows: spec.pty.rows } : {}),
      agent,
      records: deps.records ?? null,
      onData: (data) => {
        attachment?.output(data);
        bridge.feed(data);
      },
    },
  );
  const running = proc;
  attachment = host.attach(agent, { write: (input) => running.write(input), resize: (cols, rows) => running.resize(cols, rows) });
  const offIdle = running.pid === undefined ? null : host.onIdle(agent, () => bridge.idle());
  // Nothing ran: the terminal's activity ends at once (starting → exited), as for a process that died at start.
  if (running.pid === undefined) attachment.exited({ exitCode: null, signal: null });
  let lastLines: string[] = [];
  return {
    proc: running,
    input: bridge.input,
    output: bridge.output,
    errorLines: () => lastLines,
    async onExit(exit) {
      offIdle?.();
      attachment?.exited(exit); // at once: no input reaches a process that is gone
      await screen.settled();
      lastLines = screen.scrollback().filter((line) => line.trim() !== '').slice(-(deps.stderrLines ?? 20));
      bridge.end();
    },
  };
}

/** Spawns the agent, opens ACP and reports every step with `report`. */
function runProcess(deps: AgentProcessDependencies, agent: string, spec: AgentSpec, report: (event: ProcessEvent) => void, transport?: RuntimeTransport): RunningProcess {
  let released = false;
  const launched = launch(deps, agent, spec, transport);
  const { proc } = launched;
  const pid = proc.pid;

  // Only a process that leaves something in its runtime (a container) holds its agent's next
  // start: a local process's group is reaped in the exit path, and the next may start at once.
  if (pid !== undefined && launched.runtime?.cleanup) deps.exits?.track(agent, proc.exited);
  if (pid === undefined) {
    void proc.spawnFailure.then((failure) => {
      if (released) return;
      report({ type: 'process.failed', ...(failure ?? { kind: 'spawn_failed', detail: 'spawn failed' }), stderr: [] });
      report({ type: 'process.exited', exitCode: null, signal: null, stderr: [], reason: 'exit' });
    });
    return {
      command: () => {},
      release: () => {
        released = true;
      },
    };
  }

  // Uncontained, the spawned pid is the agent's; a wrapper's agent pid is found a moment later.
  if (proc.containment === null) report({ type: 'process.spawned', pid, containment: null });
  else void proc.agentPid.then((agentPid) => report({ type: 'process.spawned', pid: agentPid ?? pid, containment: proc.containment }));
  const acp = openAcpConnection(launched.input, launched.output, deps.acpOptions?.(agent));
  const { connection } = acp;
  let streamClosed = false;
  let initialized = false;

  acp.initialize().then(
    async (initialize) => {
      const agentPid = (await proc.agentPid) ?? pid;
      if (released || !proc.isRunning()) return;
      initialized = true;
      deps.connections.add({ agent, pid: agentPid, connection, initialize });
      report({ type: 'process.initialized', initialize });
    },
    (error: unknown) => {
      // A closed stream is reported by the exit path below, with the exit code.
      if (connection.signal.aborted) return;
      const { rpcCode } = rpcErrorDetails(error);
      // What the agent wrote to stderr before it answered may sit unread in the other pipe
      // when the answer is read: one turn of the event loop lets those reads run first.
      setImmediate(() => {
        if (connection.signal.aborted) return;
        report({ type: 'process.failed', kind: 'handshake_failed', detail: describeError(error), stderr: launched.errorLines(), rpcCode });
      });
    },
  );

  // Stdout closing usually means the process is exiting; the agent machine gives it a grace
  // on its clock and kills it (`kill` with reason stream_closed) if it is still running.
  void connection.closed.then(() => {
    // A closed connection is useless to callers at once, whatever the process does next.
    deps.connections.remove(agent, connection);
    report({ type: 'process.connectionClosed' });
  });

  void proc.exited.then(async (exit) => {
    await launched.onExit?.(exit);
    connection.close();
    deps.connections.remove(agent, connection);
    // Before the handshake, a wrapper that could not exec the agent (its command changed since
    // the check before the spawn) is a spawn failure, as without a wrapper; a runtime's own
    // failure (an unreachable host, a refused login, a changed host key, a missing container)
    // is reported as such, not as the agent's.
    const spawnFailure = initialized ? null : (proc.spawnFailureOfExit?.(exit) ?? null);
    const runtimeFailure = initialized || spawnFailure ? null : (launched.runtime?.failureOf?.(exit, launched.errorLines()) ?? null);
    if (spawnFailure) report({ type: 'process.failed', ...spawnFailure, stderr: launched.errorLines() });
    if (runtimeFailure) report({ type: 'process.failed', kind: runtimeFailure.kind, detail: runtimeFailure.detail, stderr: launched.errorLines() });
    report({
      type: 'process.exited',
      exitCode: exit.exitCode,
      signal: exit.signal,
      stderr: launched.errorLines(),
      reason: streamClosed ? 'stream_closed' : 'exit',
    });
  });

  return {
    command(command) {
      switch (command.type) {
        case 'closeInput':
          connection.close();
          proc.closeInput();
          break;
        case 'terminate':
          // Inside the runtime (a remote host, a container) when the agent is there; else its process group here.
          if (launched.runtime?.signalInside) void launched.runtime.signalInside('SIGTERM');
          else proc.signalGroup('SIGTERM');
          break;
        case 'kill':
          if (command.reason === 'stream_closed') streamClosed = true;
          // Inside first, the local client last: a `docker exec` client has no signal proxy, and its
          // death would lose the agent's exit status (signalInside always settles, within its timeout).
          if (launched.runtime?.signalInside) void launched.runtime.signalInside('SIGKILL').finally(() => proc.signalGroup('SIGKILL'));
          else proc.signalGroup('SIGKILL');
          break;
      }
    },
    release() {
      released = true;
      deps.connections.remove(agent, connection);
      connection.close();
      // Leader or not, nothing of this group may outlive its actor (a no-op once the leader has
      // exited: the exit path reaps the group, and its number may be reused).
      proc.signalGroup('SIGKILL');
    },
  };
}
