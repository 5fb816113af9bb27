/**
 * The agents' rows with what their processes cost (`GET /v1/agents`), and one agent in one
 * view (`GET /v1/agents/:name/describe`): its row, its spec without env values, its sessions
 * and its workspaces.
 */
import type { Session, StoredSession, Supervisor } from '../index.js';
import type { AgentWatch } from './agent-watch.js';
import type { AgentDescribeBody, AgentRow, SessionRow } from './api-types.js';
import type { SessionDesk } from './session-desk.js';

/** How many sessions a description lists. */
const describedSessions = 20;

/** Every agent's row, with its usage. */
export async function rowsWithUsage(supervisor: Supervisor, agents: AgentWatch): Promise<AgentRow[]> {
  const rows = agents.rows();
  const usage = await supervisor.resourceUsages();
  for (const row of rows) row.usage = usage[row.name] ?? null;
  return rows;
}

/** One agent's row, with its usage. Throws `unknown_agent`. */
export async function rowWithUsage(supervisor: Supervisor, agents: AgentWatch, name: string): Promise<AgentRow> {
  const row = agents.row(name);
  row.usage = await supervisor.resourceUsage(name);
  return row;
}

/** The store's row of an open session the store has not written yet (stamped `now`). */
export function unwrittenSession(session: Session, now: number = Date.now()): StoredSession {
  return { agent: session.agent, sessionId: session.id, cwd: session.cwd, title: null, state: session.status, stopReason: null, createdAt: now, updatedAt: now };
}

/** Everything about one agent. Throws `unknown_agent`. */
export async function describeAgent(supervisor: Supervisor, agents: AgentWatch, desk: SessionDesk, name: string): Promise<AgentDescribeBody> {
  const spec = supervisor.agentSpec(name);
  const [agent, stored, workspaces] = await Promise.all([rowWithUsage(supervisor, agents, name), supervisor.sessions({ agent: name }), supervisor.workspaces()]);
  // The open sessions the store has not written yet count too.
  const storedIds = new Set(stored.map((session) => session.sessionId));
  const now = Date.now();
  const unwritten = supervisor
    .openSessions(name)
    .filter((session) => !storedIds.has(session.id))
    .map((session) => unwrittenSession(session, now));
  const rows: SessionRow[] = [...unwritten, ...stored].map((session) => desk.row(session));
  const open = rows.filter((row) => row.live);
  const others = rows.filter((row) => !row.live);
  const own = (info: (typeof workspaces)[number]) => info.owners.some((owner) => owner.agent === name && owner.sessionId === undefined);
  return {
    agent,
    spec,
    sessions: [...open, ...others].slice(0, Math.max(describedSessions, open.length)),
    sessionsTotal: rows.length,
    workspaces: [...workspaces.filter(own), ...workspaces.filter((info) => !own(info) && info.owners.some((owner) => owner.agent === name))],
  };
}
