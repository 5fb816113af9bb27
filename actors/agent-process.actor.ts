/**
 * The process actor: owns one agent process and its ACP connection for as long as it runs.
 * It spawns, performs the handshake, reports to the agent machine with `sendBack`, runs
 * the stop ladder's rungs on command, and when it is stopped (released) it kills whatever
 * is left of the process group — so no path through the machine can orphan a process.
 */
import { fromCallback } from 'xstate';
import type { ClientConnection, InitializeResponse } from '../core/acp-types.js';
import type { AgentSpec } from '../core/agent-spec.js';
import { describeError } from '../core/errors.js';
import type { AgentProcessInput, ProcessCommand, ProcessEvent } from '../machines/agent-events.js';
import { openAcpConnection, type AcpClientOptions } from '../services/acp-client.service.js';
import { spawnAgentProcess } from '../services/agent-process.service.js';
import type { AgentRecords } from '../services/agent-records.service.js';
import type { ContainmentMechanism } from '../services/containment/containment.js';
import { signalGroup } from '../services/process-group.service.js';

/** How long a process whose ACP stream closed may take to exit before it is killed. */
const streamClosedGraceMs = 1000;

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
   * The agent's workspace (docs/workspaces.md), made before the spawn: resolves with the
   * directory the agent runs in, rejects with the reason (kind `workspace_failed`); null
   * when the agent has none.
   */
  prepareWorkspace?(agent: string): Promise<string> | null;
}


/** Creates the `agentProcess` actor logic that agent machines are provided with. */
export function createAgentProcessActor(deps: AgentProcessDependencies) {
  return fromCallback<ProcessCommand, AgentProcessInput, ProcessEvent>(({ input, sendBack, receive }) => {
    let released = false;
    const report = (event: ProcessEvent) => {
      if (!released) sendBack(event);
    };
    const spec = deps.getSpec(input.agent);
    const preparing = deps.prepareWorkspace?.(input.agent) ?? null;
    if (!preparing) {
      const running = runProcess(deps, input.agent, spec, report);
      receive((command) => running.command(command));
      return () => {
        released = true;
        running.release();
      };
    }

    // The workspace first (docs/workspaces.md): nothing is spawned until it exists, and
    // nothing at all when it cannot be made. A stop meanwhile ends the attempt once the git
    // command in flight has finished (it is never killed halfway through a worktree).
    let running: RunningProcess | null = null;
    let stopAsked = false;
    preparing.then(
      (cwd) => {
        if (released) return;
        if (stopAsked) return report({ type: 'process.exited', exitCode: null, signal: null, stderr: [], reason: 'exit' });
        running = runProcess(deps, input.agent, { ...spec, cwd }, report);
      },
      (error: unknown) => {
        report({ type: 'process.failed', kind: 'workspace_failed', detail: describeError(error), stderr: [] });
        report({ type: 'process.exited', exitCode: null, signal: null, stderr: [], reason: 'exit' });
      },
    );
    receive((command) => {
      if (running) running.command(command);
      else stopAsked = true;
    });
    return () => {
      released = true;
      running?.release();
    };
  });
}

/** One spawned process, as the actor drives it. */
interface RunningProcess {
  command(command: ProcessCommand): void;
  /** The actor was stopped: kill whatever is left of the process group. */
  release(): void;
}

/** Spawns the agent, opens ACP and reports every step with `report`. */
function runProcess(deps: AgentProcessDependencies, agent: string, spec: AgentSpec, report: (event: ProcessEvent) => void): RunningProcess {
  let released = false;
  const onStderrLine = deps.onStderrLine;
  const proc = spawnAgentProcess(spec, {
    stderrLines: deps.stderrLines,
    containment: deps.containment,
    agent,
    records: deps.records,
    onStderrLine: onStderrLine && ((line) => onStderrLine(agent, line)),
  });
  const pid = proc.pid;

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
  const acp = openAcpConnection(proc.stdin, proc.stdout, deps.acpOptions?.(agent));
  const { connection } = acp;
  let closingOnPurpose = false;
  let streamClosed = false;
  let groupGone = false; // once reaped, the pgid may be reused: never signal it again

  acp.initialize().then(
    async (initialize) => {
      const agentPid = (await proc.agentPid) ?? pid;
      if (released || !proc.isRunning()) return;
      deps.connections.add({ agent, pid: agentPid, connection, initialize });
      report({ type: 'process.initialized', initialize });
    },
    (error: unknown) => {
      // A closed stream is reported by the exit path below, with the exit code.
      if (connection.signal.aborted) return;
      report({ type: 'process.failed', kind: 'handshake_failed', detail: describeError(error), stderr: proc.stderr.snapshot() });
    },
  );

  // Stdout closing usually means the process is exiting; if it is still running after a
  // short grace, it closed its stream but kept running — useless without one, so kill it.
  let streamGrace: NodeJS.Timeout | undefined;
  void connection.closed.then(() => {
    // A closed connection is useless to callers at once, whatever the process does next.
    deps.connections.remove(agent, connection);
    report({ type: 'process.connectionClosed' });
    if (closingOnPurpose || !proc.isRunning()) return;
    streamGrace = setTimeout(() => {
      if (closingOnPurpose || !proc.isRunning()) return;
      streamClosed = true;
      proc.signalGroup('SIGKILL');
    }, streamClosedGraceMs);
  });

  void proc.exited.then((exit) => {
    clearTimeout(streamGrace);
    connection.close();
    deps.connections.remove(agent, connection);
    groupGone = true; // `exited` resolves only after the group was reaped
    report({
      type: 'process.exited',
      exitCode: exit.exitCode,
      signal: exit.signal,
      stderr: proc.stderr.snapshot(),
      reason: streamClosed ? 'stream_closed' : 'exit',
    });
  });

  return {
    command(command) {
      switch (command.type) {
        case 'closeInput':
          closingOnPurpose = true;
          connection.close();
          proc.closeInput();
          break;
        case 'terminate':
          proc.signalGroup('SIGTERM');
          break;
        case 'kill':
          proc.signalGroup('SIGKILL');
          break;
      }
    },
    release() {
      released = true;
      closingOnPurpose = true;
      clearTimeout(streamGrace);
      deps.connections.remove(agent, connection);
      connection.close();
      // Leader or not, nothing of this group may outlive its actor.
      if (!groupGone) signalGroup(pid, 'SIGKILL');
    },
  };
}
