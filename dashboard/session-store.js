// @ts-check
/**
 * The state changes of what a session holds beyond its transcript: its state fields (modes,
 * config options, commands, plan, usage, title, models: `session:state`, a control's answer),
 * the elicitations waiting for an answer, and its client terminals' output. Like store.js,
 * each returns the effects the page then carries out. Pure
 * (tests/unit/dashboard-session-store.test.ts).
 */

/** @import { ElicitationRow, SessionRow, TerminalOutputBody } from '../daemon/api-types.js' */
/** @import { SessionStateChange } from '../index.js' */
/** @import { DashboardState, Effect, Part } from './store.js' */

/**
 * An elicitation as the page holds it: while this page's answer is under way (`answering`),
 * and what the daemon refused of it (`error`: the form stays open for a correct answer).
 * @typedef {ElicitationRow & { answering?: boolean, error?: string | null }} ClientElicitation
 */

/**
 * A client terminal's output as last read (`GET /v1/sessions/:id/terminals/:terminalId`), or
 * why it cannot be read.
 * @typedef {TerminalOutputBody & { error?: string | null }} TerminalState
 */

/** @param {Part} part @returns {Effect} */
const render = (part) => ({ type: 'render', part });

/**
 * One field of a session's state changed (`session:state`): the selected agent's row of it
 * takes the value. A session of another agent is read with its list when that agent is
 * selected.
 * @param {DashboardState} state
 * @param {string} sessionId
 * @param {SessionStateChange} change
 * @returns {Effect[]}
 */
export function takeSessionState(state, sessionId, change) {
  const row = state.sessions.find((session) => session.sessionId === sessionId);
  if (!row) return [];
  /** @type {Record<string, unknown>} */ (/** @type {unknown} */ (row))[change.field] = change.value;
  /** @type {Effect[]} */
  const effects = [];
  if (change.field === 'title') effects.push(render('sessions'));
  if (sessionId === state.selectedSession) effects.push(render('session'));
  return effects;
}

/**
 * A session's row as an answer of the API says it now (a control, a close): it replaces the
 * listed one.
 * @param {DashboardState} state
 * @param {SessionRow} row
 * @returns {Effect[]}
 */
export function takeSessionRow(state, row) {
  const index = state.sessions.findIndex((session) => session.sessionId === row.sessionId);
  if (index < 0) return [];
  state.sessions[index] = row;
  return [render('sessions'), ...(row.sessionId === state.selectedSession ? [render('session')] : [])];
}

/** The selected session's row, when it is listed. @param {DashboardState} state */
export function selectedSessionRow(state) {
  return state.sessions.find((session) => session.sessionId === state.selectedSession) ?? null;
}

/**
 * An elicitation heard (the event stream, a prompt's answer, the list): waiting, unless it was
 * answered already.
 * @param {DashboardState} state
 * @param {ElicitationRow} row
 * @returns {Effect[]}
 */
export function elicitationAsked(state, row) {
  if (state.elicitationsAnswered.has(row.id) || state.elicitations.has(row.id)) return [];
  state.elicitations.set(row.id, { ...row });
  return [render('elicitations')];
}

/**
 * Answered (here, by another client, by a cancel or the timeout): its dialog closes.
 * @param {DashboardState} state
 * @param {string} id
 * @returns {Effect[]}
 */
export function elicitationResolved(state, id) {
  state.elicitationsAnswered.add(id);
  return state.elicitations.delete(id) ? [render('elicitations')] : [];
}

/**
 * The waiting elicitations as `GET /v1/elicitations` lists them (after a connection, a
 * resync): those listed stay (with what this page was doing with them), the others go.
 * @param {DashboardState} state
 * @param {ElicitationRow[]} rows
 * @returns {Effect[]}
 */
export function takeElicitations(state, rows) {
  const known = state.elicitations;
  state.elicitations = new Map(rows.map((row) => [row.id, { ...known.get(row.id), ...row }]));
  return [render('elicitations')];
}

/** The key of a session's terminal in `state.terminals`. */
export function terminalKey(/** @type {string} */ sessionId, /** @type {string} */ terminalId) {
  return `${sessionId}\n${terminalId}`;
}

/**
 * A terminal's output as just read, or why it could not be (its output as last read kept).
 * @param {DashboardState} state
 * @param {string} sessionId
 * @param {string} terminalId
 * @param {TerminalOutputBody | { error: string }} read
 * @returns {Effect[]}
 */
export function takeTerminal(state, sessionId, terminalId, read) {
  const key = terminalKey(sessionId, terminalId);
  if ('error' in read) {
    const known = state.terminals.get(key);
    state.terminals.set(key, { sessionId, terminalId, output: known?.output ?? '', truncated: known?.truncated ?? false, exitStatus: known?.exitStatus ?? null, error: read.error });
  } else {
    state.terminals.set(key, read);
  }
  return sessionId === state.selectedSession ? [render('terminals')] : [];
}

/**
 * Whether a terminal is worth reading again: not read yet, or still running (no exit status,
 * no error).
 * @param {DashboardState} state
 * @param {string} sessionId
 * @param {string} terminalId
 */
export function terminalRunning(state, sessionId, terminalId) {
  const terminal = state.terminals.get(terminalKey(sessionId, terminalId));
  return !terminal || (terminal.exitStatus === null && !terminal.error);
}
