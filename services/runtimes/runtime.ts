/**
 * The seam between an agent's runtime (docs/runtimes.md) and the process actor: what to
 * spawn on this host so that the agent runs where its spec says, how the stop ladder's
 * signals reach it there, and how a failure of the runtime itself (an unreachable host, a
 * refused login, a changed host key, a missing container) is told apart from the agent's.
 */
import type { AgentErrorKind } from '../../core/errors.js';

/**
 * The line a runtime's wrapper (ssh, docker, kubectl) prints on stderr before the agent's own
 * output: `agentvisor-remote-pid <pid>`, the agent's pid (and process group) where it runs.
 */
export const remotePidMarker = 'agentvisor-remote-pid';

export interface RuntimeCommand {
  /** What this host spawns (bwrap, ssh, docker, kubectl), and its arguments: the agent's command is inside them. */
  command: string;
  args: string[];
  /** The environment of that local process (the agent's own env travels inside `args` where the runtime needs it). */
  env?: Record<string, string>;
  /** Whether the supervisor's containment applies to the local process (false: the runtime contains the agent itself, or it is remote). */
  localContainment: boolean;
  /**
   * Delivers a stop-ladder signal to the agent's process group inside the runtime (a remote
   * host, a container). Absent: signalling the local process group reaches the agent.
   */
  signalInside?(signal: 'SIGTERM' | 'SIGKILL'): Promise<void>;
  /** Reads a line of the local process's stderr (a marker the runtime's wrapper prints); true: it is not the agent's. */
  onStderrLine?(line: string): boolean;
  /** A failure of the runtime itself, from how the local process ended before the agent answered; null: the agent's own. */
  failureOf?(exit: { exitCode: number | null; signal: string | null }, stderr: readonly string[]): { kind: AgentErrorKind; detail: string } | null;
}
