/** The daemon's options and handle (daemon/daemon.ts is the entry). */
import type { Supervisor, SupervisorOptions } from '../index.js';

/** The default port of `agentvisor serve`. */
export const DEFAULT_PORT = 7433;

export interface DaemonOptions {
  /** The supervisor's options (agents, store, restart, ...); `stateDir` is where the daemon files go too. */
  supervisor: SupervisorOptions;
  /** Where to listen: loopback by default. Another address is allowed, and warned about. */
  host?: string;
  /** 0 picks a free port. Default {@link DEFAULT_PORT}. */
  port?: number;
  /** Write `daemon.json` and `daemon.token` into the state directory (default true). */
  writeFiles?: boolean;
}

export interface Daemon {
  readonly url: string;
  readonly host: string;
  readonly port: number;
  readonly token: string;
  readonly stateDir: string | null;
  readonly supervisor: Supervisor;
  /** The dashboard's address, token included. */
  readonly dashboardUrl: string;
  /** Resolves once the daemon has stopped (close(), or `POST /v1/shutdown`). */
  readonly closed: Promise<void>;
  /** Stops accepting requests, ends every stream, shuts the supervisor down, removes the daemon files. Idempotent. */
  close(): Promise<void>;
}
