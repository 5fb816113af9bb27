/**
 * Rows as the daemon sends them, for the dashboard's unit tests: every field at its resting
 * value, `overrides` on top.
 */
import type { AgentRow, SessionRow } from '../../daemon/api-types.js';

/** An idle agent named `name`. */
export function agentRow(name: string, overrides: Partial<AgentRow> = {}): AgentRow {
  return {
    name,
    displayName: name,
    status: 'idle',
    state: 'idle',
    pid: null,
    attempt: 0,
    lastError: null,
    containment: null,
    since: null,
    lastExit: null,
    restart: 'always',
    credential: null,
    agentInfo: null,
    agentCapabilities: null,
    authMethods: null,
    connectedAt: null,
    restarts: 0,
    sessions: 0,
    ...overrides,
  };
}

/** A live, idle session of agent `alpha` with no state yet. */
export function sessionRow(sessionId: string, overrides: Partial<SessionRow> = {}): SessionRow {
  return { agent: 'alpha', sessionId, cwd: '/work', title: null, state: 'ready', stopReason: null, createdAt: 0, updatedAt: 0, name: null, live: true, busy: false, queued: 0, modes: null, configOptions: [], commands: [], plan: null, usage: null, models: null, ...overrides };
}
