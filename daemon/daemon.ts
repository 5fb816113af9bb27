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
 * to `AgentErrorKind` (daemon/daemon-errors.ts). A bad option (`orphans`, `restore`, the supervisor's) is
 * `invalid_options`, before anything listens.
 */
export {
  DEFAULT_ORPHAN_POLICY,
  DEFAULT_PORT,
  ORPHAN_POLICIES,
  RESTORED_STATUSES,
  type Daemon,
  type DaemonOptions,
  type OrphanPolicy,
  type RestoredAgent,
  type RestoredSession,
  type RestoreOutcome,
  type RestoreReport,
  type StartupOrphanReport,
} from './daemon-types.js';
export type { DaemonErrorKind } from './daemon-errors.js';
export { startDaemon } from './daemon-server.js';
export type { FeedClientStats, FeedStats } from './event-feed.js';
