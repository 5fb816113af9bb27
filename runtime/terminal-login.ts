/**
 * Terminal logins (ACP `auth.terminal`): an agent may offer an auth method of type
 * `terminal`, which the client runs as the agent's own command with the method's extra
 * arguments and environment, in an interactive terminal the embedder provides; a zero exit
 * is a login. Such a method is never sent to `authenticate` (docs/acp.md). The agent must run
 * on this host (no `runtime`): the login is for the agent's own machine.
 */

/** What the embedder runs in its terminal: the agent's command with the method's arguments and environment. */
export interface TerminalLoginCommand {
  agent: string;
  methodId: string;
  command: string;
  args: string[];
  /** The agent's spec env with the method's over it (the host's environment is not included). */
  env: Record<string, string>;
  cwd: string | undefined;
  /** Aborted when the login times out (`authTimeoutMs`) or its caller gives up: end the terminal. */
  signal: AbortSignal;
}

/** Runs a terminal login and resolves with its exit code (0: logged in), or null when it ended by a signal. */
export type TerminalLogin = (login: TerminalLoginCommand) => Promise<number | null>;
