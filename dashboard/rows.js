// @ts-check
/**
 * What each row and panel of the page shows, decided from the state: plain objects of text,
 * titles and flags that the panels write into their elements. Pure, no DOM
 * (tests/unit/dashboard-rows.test.ts).
 */
import { clockTime, dateTime, exitText } from './format.js';

/** @import { OrphansKillBody, SessionRow } from '../daemon/api-types.js' */
/** @import { ClientAgent, ClientPermission, Orphan, OrphansState } from './store.js' */

/** The lifecycle buttons of an agent's row, in their order. */
export const AGENT_ACTIONS = /** @type {const} */ (['start', 'stop', 'kill', 'restart']);

/** @typedef {(typeof AGENT_ACTIONS)[number]} AgentAction */

/**
 * An agent's row: its name (with its display name), status badge, facts, last error, and
 * whether its buttons wait for a call of this page. `kill` never waits: it is the way out of
 * a graceful stop that hangs. Parked for a login (`needsAuth`), its login methods are buttons
 * (a `terminal` method runs in a terminal, which this page is not: it is left out) and the
 * URLs the login asked a person to open are links.
 * @param {ClientAgent} agent
 * @param {boolean} selected
 * @param {string[]} [authUrls] What the agent's login asked to open (`agent:auth_prompt`).
 */
export function agentRowView(agent, selected, authUrls = []) {
  const error = agent.lastError;
  const parked = agent.status === 'needsAuth';
  return {
    selected,
    status: agent.status,
    label: agent.displayName && agent.displayName !== agent.name ? `${agent.displayName} (${agent.name})` : agent.name,
    labelTitle: agent.state ?? '',
    statusTitle: agent.since ? `since ${dateTime(agent.since)} · restart policy ${agent.restart ?? 'always'}` : '',
    pid: agent.pid === null || agent.pid === undefined ? '—' : String(agent.pid),
    restarts: String(agent.restarts ?? 0),
    sessions: String(agent.sessions ?? 0),
    lastExit: exitText(agent.lastExit),
    lastExitTitle: agent.lastExit ? dateTime(agent.lastExit.at) : '',
    credential: agent.credential ?? '—',
    error: error ? { message: error.message ?? '', title: [error.kind, error.class].filter(Boolean).join(' · ') } : null,
    waits: Boolean(agent.busy),
    login: parked
      ? (agent.authMethods ?? [])
          .filter((method) => /** @type {{ type?: string }} */ (method).type !== 'terminal')
          .map((method) => ({ methodId: method.id, label: `log in: ${method.name}`, title: method.description ?? '' }))
      : [],
    authUrls: parked ? authUrls.map((url) => ({ url, href: /^https?:\/\//i.test(url) ? url : null })) : [],
  };
}

/**
 * A row of the sessions list: listed by its name, else its title, else its id; a title the
 * agent gives a named session is a fact beside the name.
 * @param {SessionRow} session
 * @param {boolean} selected
 */
export function sessionRowView(session, selected) {
  const title = session.name && session.title ? `“${session.title}”` : null;
  const facts = [title, session.state, session.busy && 'busy', session.queued && `${session.queued} queued`, !session.live && 'not open', clockTime(session.updatedAt)];
  return {
    selected,
    label: session.name || session.title || session.sessionId,
    title: [session.title, session.sessionId, session.cwd].filter(Boolean).join('\n'),
    facts: facts.filter(Boolean).join(' · '),
  };
}

/**
 * A pending permission request: what the tool call is, whose, when; its options as buttons,
 * which wait while this page's answer is under way.
 * @param {ClientPermission} row
 */
export function permissionRowView(row) {
  return {
    title: row.toolCall?.title || row.toolCall?.toolCallId || 'A tool call',
    subtitle: `${row.agent} · ${row.toolCall?.kind ?? 'tool'} · ${clockTime(row.requestedAt)}`,
    options: row.options.map((option) => ({ optionId: option.optionId, name: option.name, kind: option.kind })),
    waits: Boolean(row.answering),
  };
}

/**
 * A leftover of a crashed supervisor: its pid and agent, its command, when it started, who
 * left it, and what is left of it when its process is gone.
 * @param {Orphan} orphan
 */
export function orphanRowView(orphan) {
  const started = orphan.startedAt === null ? 'start unknown' : `started ${dateTime(orphan.startedAt)}`;
  if (orphan.pod) {
    // A pod the supervisor made: nothing of it runs here (pid 0), and a kill names pids, so only `kill all` deletes it.
    return {
      title: `pod ${orphan.pod} · ${orphan.agent}`,
      command: orphan.command,
      facts: `recorded ${dateTime(orphan.recordedAt)} · left by pid ${orphan.owner}`,
      killTitle: 'kill all deletes this pod through the Kubernetes API',
      killable: false,
    };
  }
  const left = [orphan.running ? null : 'its process is gone', orphan.container ? `container ${orphan.container}` : null].filter(Boolean).join(' · ');
  return {
    title: `pid ${orphan.pid} · ${orphan.agent}${orphan.terminal ? ' (terminal)' : ''}`,
    command: orphan.command,
    facts: `${started} · left by pid ${orphan.owner}${left ? ` · ${left}` : ''}`,
    killTitle: `SIGKILL what is left of pid ${orphan.pid}`,
    killable: true,
  };
}

/** What tells one leftover's row from the others: its pod (pods all show pid 0), else its pid. */
export function orphanKey(/** @type {Orphan} */ orphan) {
  return orphan.pod ? `pod:${orphan.pod}` : String(orphan.pid);
}

/**
 * The orphans panel around its rows: the empty line, `kill all` (for two or more), the
 * start-up policy beside the title, and which kill buttons wait for a kill under way.
 * @param {OrphansState} orphans
 */
export function orphansPanelView(orphans) {
  return {
    empty: orphans.rows.length === 0,
    // Kill all for two or more, and for a pod (no row of a pod has a kill of its own).
    killAllShown: orphans.rows.length >= 2 || orphans.rows.some((orphan) => Boolean(orphan.pod)),
    killAllWaits: orphans.killing.size > 0,
    policy: orphans.policy ? `· at start: ${orphans.policy}` : '',
    /** @param {number} pid */
    killWaits: (pid) => orphans.killing.has(pid) || orphans.killing.has('all'),
  };
}

/** What a kill did, said above the panels. */
export function killedNotice(/** @type {OrphansKillBody} */ result) {
  return result.killed.length > 0 ? `Killed ${result.killed.map((killed) => `pid ${killed.pid} (${killed.agent})`).join(', ')}` : 'Nothing was left to kill.';
}
