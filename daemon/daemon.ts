/**
 * `agentvisor serve`: a supervisor with the store, behind the HTTP + WebSocket API
 * (docs/http-api.md) and the dashboard. Started by the CLI, or embedded:
 *
 * @example
 * const daemon = await startDaemon({ supervisor: { agents: { echo: presets.echo() } }, port: 0 });
 * console.log(daemon.url, daemon.token);
 * await daemon.close();
 *
 * `startDaemon()` rejects with an `AgentError` of one of the daemon's own kinds
 * (`DaemonErrorKind`: `daemon_running`, `address_unavailable`); importing this entry adds them
 * to `AgentErrorKind` (daemon/daemon-errors.ts).
 */
export { DEFAULT_PORT, type Daemon, type DaemonOptions } from './daemon-types.js';
export type { DaemonErrorKind } from './daemon-errors.js';
export { startDaemon } from './daemon-server.js';
