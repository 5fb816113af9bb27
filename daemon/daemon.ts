/**
 * `agentvisor serve`: a supervisor with the store, behind the HTTP + WebSocket API
 * (docs/http-api.md) and the dashboard. Started by the CLI, or embedded:
 *
 * @example
 * const daemon = await startDaemon({ supervisor: { agents: { echo: presets.echo() } }, port: 0 });
 * console.log(daemon.url, daemon.token);
 * await daemon.close();
 */
export { DEFAULT_PORT, type Daemon, type DaemonOptions } from './daemon-types.js';
export { startDaemon } from './daemon-server.js';
