// @ts-check
/**
 * The page's state, and how it changes: each event-stream message (`applyServerMessage`), each
 * answer of the API and each choice of the person is a function that changes the state and
 * returns the effects the page must then carry out (what to draw again, what to reload, what
 * to say). Pure: no DOM, no network (tests/unit/dashboard-store.test.ts); the controller runs
 * the effects.
 */
import { feedOf } from './feed.js';
import { elicitationAsked, elicitationResolved, takeSessionState } from './session-store.js';

/** @import { AgentRow, OrphansBody, PermissionAnswerBody, PermissionRow, ServerMessage, SessionRow } from '../daemon/api-types.js' */
/** @import { Attachment } from './attachments.js' */
/** @import { Feed, LogItem, TranscriptItem } from './feed.js' */
/** @import { ClientElicitation, TerminalState } from './session-store.js' */

/** States listed in the trail under the statechart. */
export const TRAIL_LENGTH = 12;

/**
 * An agent's last error as the page shows it: the row's `lastError`, or what an `agent:error`
 * message said since.
 * @typedef {{ kind: string, message: string, class?: string | undefined }} AgentErrorView
 */

/**
 * An agent as the page holds it: its latest row, and whether a lifecycle call of this page is
 * under way (its buttons wait for it).
 * @typedef {Omit<AgentRow, 'lastError'> & { lastError: AgentErrorView | null, busy?: boolean }} ClientAgent
 */

/**
 * A permission request as the page holds it: while this page's answer is under way
 * (`answering`), and once it is answered anywhere (`answered`, kept to put the answer in the
 * transcript once).
 * @typedef {PermissionRow & { answering?: boolean, answered?: boolean }} ClientPermission
 */

/**
 * What is typed in an agent's prompt box: its text, session field, and the files attached.
 * @typedef {{ text: string, session: string, attachments?: Attachment[] }} Draft
 */

/** @typedef {'connecting' | 'open' | 'closed'} ConnectionState */

/**
 * Where the page stands in the event stream: the daemon's `epoch` and the `seq` of the last
 * message applied (null before the first `hello`). It reconnects with them (`?since=&epoch=`)
 * and is replayed what it missed.
 * @typedef {{ epoch: string | null, lastSeq: number | null }} StreamCursor
 */

/** @typedef {OrphansBody['orphans'][number]} Orphan */

/**
 * What crashed supervisors left, as last listed; the daemon's start-up policy; the kills under
 * way (a pid, or `all`).
 * @typedef {{ rows: Orphan[], policy: string | null, killing: Set<number | 'all'> }} OrphansState
 */

/**
 * Everything the page knows.
 * @typedef {object} DashboardState
 * @property {string | null} version The daemon's, from `hello`.
 * @property {{ state: ConnectionState, text: string }} connection The event stream's.
 * @property {StreamCursor} stream
 * @property {Map<string, ClientAgent>} agents By name, in the daemon's order.
 * @property {Map<string, string[]>} trails Recent dotted states per agent, oldest first.
 * @property {Map<string, ClientPermission>} permissions Pending, by id.
 * @property {Map<string, ClientPermission>} permissionsSeen Every one seen, by id, kept once answered (its session, its options).
 * @property {Map<string, ClientElicitation>} elicitations Waiting for an answer, by id.
 * @property {Set<string>} elicitationsAnswered Ids answered since the page loaded (a late request of one is not shown again).
 * @property {Map<string, string[]>} authPrompts The URLs an agent asked a person to open during its login, by agent.
 * @property {string | null} selectedAgent
 * @property {SessionRow[]} sessions The selected agent's, newest first.
 * @property {string | null} selectedSession
 * @property {Map<string, Feed<TranscriptItem>>} transcripts By session id.
 * @property {Map<string, Feed<LogItem>>} logs By agent.
 * @property {Map<string, Draft>} drafts The prompt box of each agent, kept while another is selected.
 * @property {Map<string, TerminalState>} terminals Client terminals' output as last read, by `terminalKey`.
 * @property {Set<string>} pending The session calls under way (a control's choice, a cancel, a close), by `pendingKey`: their controls wait.
 * @property {OrphansState} orphans
 */

/**
 * A part of the page drawn from the state.
 * @typedef {'version' | 'connection' | 'agents' | 'chart' | 'permissions' | 'elicitations' | 'orphans' | 'sessions' | 'session' | 'transcript' | 'terminals' | 'logs'} Part
 */

/**
 * What the page does after a change of state.
 * @typedef {(
 *   | { type: 'render', part: Part }
 *   | { type: 'show-transcript-item', item: TranscriptItem }
 *   | { type: 'show-log', entry: LogItem }
 *   | { type: 'select-agent', agent: string | null }
 *   | { type: 'reload-selected' }
 *   | { type: 'refresh-agents' }
 *   | { type: 'refresh-sessions' }
 *   | { type: 'refresh-session-count', agent: string }
 *   | { type: 'refresh-orphans' }
 *   | { type: 'refresh-permissions' }
 *   | { type: 'refresh-elicitations' }
 *   | { type: 'notice', message: string, kind: 'error' | 'info' }
 * )} Effect
 */

/** @returns {DashboardState} */
export function createState() {
  return {
    version: null,
    connection: { state: 'connecting', text: 'connecting…' },
    stream: { epoch: null, lastSeq: null },
    agents: new Map(),
    trails: new Map(),
    permissions: new Map(),
    permissionsSeen: new Map(),
    elicitations: new Map(),
    elicitationsAnswered: new Set(),
    authPrompts: new Map(),
    selectedAgent: null,
    sessions: [],
    selectedSession: null,
    transcripts: new Map(),
    logs: new Map(),
    drafts: new Map(),
    terminals: new Map(),
    pending: new Set(),
    orphans: { rows: [], policy: null, killing: new Set() },
  };
}

/** @param {Part} part @returns {Effect} */
const render = (part) => ({ type: 'render', part });

/**
 * What one message of the event stream changes. A message at or before the last `seq`
 * applied was applied already (it is skipped); `hello` and `resync` set where the page stands.
 * @param {DashboardState} state
 * @param {ServerMessage} message
 * @returns {Effect[]}
 */
export function applyServerMessage(state, message) {
  switch (message.type) {
    case 'hello':
      return hello(state, message);
    case 'resync':
      state.stream.lastSeq = message.seq;
      resetFeeds(state);
      return [
        { type: 'notice', message: `The daemon no longer holds what this page missed (${resyncReasons[message.reason] ?? message.reason}): everything shown is read again.`, kind: 'info' },
        { type: 'refresh-agents' },
        { type: 'refresh-permissions' },
        { type: 'refresh-elicitations' },
        { type: 'refresh-orphans' },
        { type: 'reload-selected' },
      ];
    default: {
      const last = state.stream.lastSeq;
      if (last !== null && message.seq <= last) return [];
      state.stream.lastSeq = message.seq;
      return applyPublished(state, message);
    }
  }
}

/** What a resync's reason means, said in its notice. */
const resyncReasons = {
  epoch: 'the daemon was started again',
  expired: 'the page was away too long',
  overflow: 'the page read too slowly',
};

/**
 * The first message of a connection. Resumed (`replayFrom` set: it asked with `since` and the
 * daemon holds what followed), the page keeps what it has and the missed messages follow;
 * else it starts from the hello's agents and permissions, and every feed loads again.
 * @param {DashboardState} state
 * @param {Extract<ServerMessage, { type: 'hello' }>} message
 * @returns {Effect[]}
 */
function hello(state, message) {
  state.version = message.version;
  const resumed = message.replayFrom !== null && state.stream.epoch === message.epoch && state.stream.lastSeq !== null;
  state.stream.epoch = message.epoch;
  if (resumed) {
    const missed = message.seq - (state.stream.lastSeq ?? message.seq);
    return [render('version'), { type: 'notice', message: missed > 0 ? `Reconnected: ${missed} missed ${missed === 1 ? 'message' : 'messages'} replayed.` : 'Reconnected: nothing was missed.', kind: 'info' }];
  }
  state.stream.lastSeq = message.seq;
  state.agents = new Map();
  const effects = [render('version'), ...message.agents.flatMap((row) => takeAgentRow(state, row))];
  state.permissions = new Map();
  for (const row of message.permissions) addPermission(state, row);
  // Elicitations are read over REST with their dialogs' state (the hello's list is the same).
  effects.push(render('permissions'), { type: 'refresh-elicitations' }, { type: 'refresh-orphans' });
  // The page may have missed anything while it was away: every feed starts over.
  resetFeeds(state);
  if (!state.selectedAgent || !state.agents.has(state.selectedAgent)) {
    state.selectedAgent = null;
    effects.push(render('agents'), { type: 'select-agent', agent: message.agents[0]?.name ?? null });
  } else {
    effects.push(render('agents'), render('chart'), { type: 'reload-selected' });
  }
  return effects;
}

/**
 * A message the daemon published to a topic.
 * @param {DashboardState} state
 * @param {Exclude<ServerMessage, { type: 'hello' | 'resync' }>} message
 * @returns {Effect[]}
 */
function applyPublished(state, message) {
  switch (message.type) {
    case 'agent:status':
      return [...takeAgentRow(state, message.row), render('agents')];
    case 'agent:state': {
      const agent = state.agents.get(message.agent);
      if (!agent) return [];
      agent.state = message.state;
      agent.status = /** @type {ClientAgent['status']} */ (message.status);
      return [...noteState(state, message.agent, message.state), render('agents')];
    }
    case 'agent:error': {
      const agent = state.agents.get(message.agent);
      if (!agent) return [];
      agent.lastError = { ...agent.lastError, kind: message.kind, message: message.message, class: message.class };
      return [render('agents')];
    }
    case 'agent:auth_prompt':
      state.authPrompts.set(message.agent, message.urls);
      return [render('agents'), { type: 'notice', message: `${message.agent} asks you to open ${message.urls.join(', ')} to log in (the link is in its row).`, kind: 'info' }];
    case 'session:update':
      return liveTranscriptItem(state, message.sessionId, { kind: 'update', data: message.update });
    case 'session:turn':
      // A prompt as sent (by any client), then how its turn ended: the transcript's own shapes.
      return 'prompt' in message.turn
        ? liveTranscriptItem(state, message.sessionId, { kind: 'prompt', data: { prompt: message.turn.prompt } })
        : liveTranscriptItem(state, message.sessionId, { kind: 'prompt_result', data: message.turn });
    case 'session:status':
      return [...(message.agent === state.selectedAgent ? [/** @type {Effect} */ ({ type: 'refresh-sessions' })] : []), { type: 'refresh-session-count', agent: message.agent }];
    case 'session:state':
      return takeSessionState(state, message.sessionId, message);
    case 'permission:request': {
      const { permission } = message;
      return [
        ...permissionAsked(state, permission),
        ...liveTranscriptItem(state, permission.sessionId, { kind: 'permission', data: { toolCall: permission.toolCall, options: permission.options } }),
      ];
    }
    case 'permission:resolved':
      return resolvePermission(state, message.id, message.outcome);
    case 'elicitation:request': {
      const { elicitation } = message;
      return [
        ...elicitationAsked(state, elicitation),
        ...liveTranscriptItem(state, elicitation.sessionId, { kind: 'elicitation', data: { mode: elicitation.mode, message: elicitation.message, url: elicitation.url, toolCallId: elicitation.toolCallId } }),
      ];
    }
    case 'elicitation:resolved':
      return [...elicitationResolved(state, message.id), ...liveTranscriptItem(state, message.sessionId, { kind: 'elicitation_outcome', data: { action: message.action } })];
    case 'log':
      return liveLog(state, message.agent, { at: message.at, line: message.line });
    case 'orphans:swept':
      return [{ type: 'refresh-orphans' }];
    default:
      // the restore's progress, workspaces, pty activity and terminal output: nothing on this page shows them yet.
      return [];
  }
}

/**
 * Takes a newer row of an agent, keeping what the page knows that the row does not (its
 * buttons busy), and notes its state in the trail.
 * @param {DashboardState} state
 * @param {AgentRow | ClientAgent} row
 * @returns {Effect[]}
 */
export function takeAgentRow(state, row) {
  const known = state.agents.get(row.name);
  state.agents.set(row.name, { ...known, ...row });
  // A login's URLs matter while it waits for one.
  if (row.status !== 'needsAuth') state.authPrompts.delete(row.name);
  return noteState(state, row.name, row.state);
}

/**
 * Adds a dotted state to an agent's trail (not twice in a row; the oldest go past
 * {@link TRAIL_LENGTH}). The chart is drawn again when it shows that agent.
 * @param {DashboardState} state
 * @param {string} agent
 * @param {string | null | undefined} dotted
 * @returns {Effect[]}
 */
export function noteState(state, agent, dotted) {
  if (!dotted) return [];
  const trail = state.trails.get(agent) ?? [];
  if (trail.at(-1) !== dotted) {
    trail.push(dotted);
    if (trail.length > TRAIL_LENGTH) trail.shift();
  }
  state.trails.set(agent, trail);
  return agent === state.selectedAgent ? [render('chart')] : [];
}

/**
 * A permission request heard (event stream or a prompt's stream): pending, unless it was
 * answered already (the answer can overtake the request on a busy page).
 * @param {DashboardState} state
 * @param {PermissionRow} row
 * @returns {Effect[]}
 */
export function permissionAsked(state, row) {
  if (state.permissionsSeen.get(row.id)?.answered) return [];
  addPermission(state, row);
  return [render('permissions')];
}

/** @param {DashboardState} state @param {PermissionRow} row */
function addPermission(state, row) {
  const permission = { ...row };
  state.permissionsSeen.set(row.id, permission);
  state.permissions.set(row.id, permission);
}

/**
 * The pending requests as `GET /v1/permissions` lists them (after a resync): those listed
 * are pending, the others answered.
 * @param {DashboardState} state
 * @param {PermissionRow[]} rows
 * @returns {Effect[]}
 */
export function takePermissions(state, rows) {
  const listed = new Set(rows.map((row) => row.id));
  for (const id of state.permissions.keys()) if (!listed.has(id)) state.permissions.delete(id);
  for (const row of rows) if (!state.permissions.has(row.id)) addPermission(state, row);
  return [render('permissions')];
}

/**
 * Answered (here or elsewhere, as the event stream says): no longer pending; the answer joins
 * its session's transcript once.
 * @param {DashboardState} state
 * @param {string} id
 * @param {PermissionAnswerBody['outcome']} outcome
 * @returns {Effect[]}
 */
export function resolvePermission(state, id, outcome) {
  const row = state.permissionsSeen.get(id);
  /** @type {Effect[]} */
  const effects = state.permissions.delete(id) ? [render('permissions')] : [];
  if (row && !row.answered) {
    row.answered = true;
    effects.push(...liveTranscriptItem(state, row.sessionId, { kind: 'permission_outcome', data: { outcome } }));
  }
  return effects;
}

/**
 * An item heard live for a session's transcript: kept in its feed, and shown at once when that
 * session is shown with its history loaded (else it shows with the history).
 * @param {DashboardState} state
 * @param {string | null | undefined} sessionId
 * @param {TranscriptItem} item
 * @returns {Effect[]}
 */
export function liveTranscriptItem(state, sessionId, item) {
  if (!sessionId) return [];
  const feed = feedOf(state.transcripts, sessionId);
  feed.push(item);
  return sessionId === state.selectedSession && feed.loaded ? [{ type: 'show-transcript-item', item }] : [];
}

/**
 * A log line heard live: kept in its agent's feed, shown at once when that agent's log is
 * shown with its tail loaded.
 * @param {DashboardState} state
 * @param {string} agent
 * @param {LogItem} entry
 * @returns {Effect[]}
 */
export function liveLog(state, agent, entry) {
  const feed = feedOf(state.logs, agent);
  feed.push(entry);
  return agent === state.selectedAgent && feed.loaded ? [{ type: 'show-log', entry }] : [];
}

/** Every feed starts over (after a connection that did not resume, or a resync): they load again when shown. */
export function resetFeeds(/** @type {DashboardState} */ state) {
  for (const feed of state.transcripts.values()) feed.reset();
  for (const feed of state.logs.values()) feed.reset();
}

/**
 * Selects an agent (null: none). The prompt box's `current` draft stays with the agent left;
 * returns the draft to show for the one selected, or null when it was selected already.
 * @param {DashboardState} state
 * @param {string | null} name
 * @param {Draft} current
 * @returns {Draft | null}
 */
export function selectAgent(state, name, current) {
  if (state.selectedAgent === name) return null;
  // Each agent has its own prompt box: what was typed for one is not sent to another.
  if (state.selectedAgent) state.drafts.set(state.selectedAgent, current);
  state.selectedAgent = name;
  state.selectedSession = null;
  state.sessions = [];
  return (name && state.drafts.get(name)) || { text: '', session: '' };
}

/**
 * Selects a session of the selected agent; returns what the prompt box's session field
 * then says: its name, '' for an unnamed one (prompted by its id).
 * @param {DashboardState} state
 * @param {string} sessionId
 * @returns {string}
 */
export function selectSession(state, sessionId) {
  state.selectedSession = sessionId;
  return state.sessions.find((session) => session.sessionId === sessionId)?.name ?? '';
}

/**
 * The sessions of `agent` as listed now. Ignored (null) when another agent was selected
 * meanwhile; else the session to select: the newest, when none is selected yet.
 * @param {DashboardState} state
 * @param {string} agent
 * @param {SessionRow[]} sessions
 * @returns {{ select: string | null } | null}
 */
export function takeSessions(state, agent, sessions) {
  if (agent !== state.selectedAgent) return null;
  state.sessions = sessions;
  return { select: !state.selectedSession && sessions[0] ? sessions[0].sessionId : null };
}

/**
 * An agent's open-session count, as `GET /v1/agents/:name` says it (it changes without a status
 * change). Only that is taken from the row: the event stream may have newer states than it.
 * @param {DashboardState} state
 * @param {string} name
 * @param {number} count
 */
export function takeSessionCount(state, name, count) {
  const agent = state.agents.get(name);
  if (agent) agent.sessions = count;
}

/**
 * A session opened by this page's prompt just now: it has no history but what the event
 * stream brought since the page loaded, so its feed is complete, and the turn shows live from
 * its first update.
 * @param {DashboardState} state
 * @param {string} sessionId
 */
export function sessionOpened(state, sessionId) {
  feedOf(state.transcripts, sessionId).loaded = true;
}

/**
 * The orphans as `GET /v1/orphans` lists them.
 * @param {DashboardState} state
 * @param {OrphansBody} body
 */
export function takeOrphans(state, body) {
  state.orphans.rows = body.orphans;
  state.orphans.policy = body.startup?.policy ?? null;
}
