/**
 * The library, loaded when a command needs it (`run`, `serve`, the presets): the commands
 * that only talk to a daemon start without it, in a fraction of the time.
 */

/** The agentvisor library (index.ts), imported once, on first use. */
export function loadLibrary(): Promise<typeof import('../index.js')> {
  return import('../index.js');
}

/** Whether `error` is the library's `AgentError` (duck-typed: the library may not be loaded). */
export function isAgentError(error: unknown): error is import('../index.js').AgentError {
  return error instanceof Error && error.name === 'AgentError' && typeof (error as { kind?: unknown }).kind === 'string';
}
