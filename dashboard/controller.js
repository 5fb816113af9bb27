// @ts-check
/**
 * The dashboard's conductor. It applies what the event stream says to the state (store.js),
 * carries out the effects the store answers with (draw a part again, reload a list, say
 * something), and does what the person asks through the HTTP API. It owns no element: the
 * panels draw, the API client talks.
 *
 * Sources of truth: the event stream for agents, states, permissions, session updates and log
 * lines; the HTTP API for history (transcripts, logs, sessions) and actions. A prompt's NDJSON
 * answer says which session it runs in and how the turn ends; its updates are also on the event
 * stream, which is the one source the transcript takes them from (never both).
 */
import { promptContent } from './attachments.js';
import { feedOf, logKey, transcriptKey } from './feed.js';
import { errorText } from './format.js';
import { promptStatusText, promptTarget } from './prompt-model.js';
import { killedNotice } from './rows.js';
import { createSessionActions } from './session-actions.js';
import { elicitationAsked } from './session-store.js';
import {
  applyServerMessage,
  permissionAsked,
  selectAgent as selectAgentIn,
  selectSession as selectSessionIn,
  sessionOpened,
  takeAgentRow,
  takeOrphans,
  takeSessionCount,
  takeSessions,
} from './store.js';
import { coalesced } from './tasks.js';

/** @import { ServerMessage } from '../daemon/api-types.js' */
/** @import { ApiClient } from './api.js' */
/** @import { Attachment } from './attachments.js' */
/** @import { Notice } from './dom.js' */
/** @import { LogItem, TranscriptItem } from './feed.js' */
/** @import { AgentAction } from './rows.js' */
/** @import { ConnectionState, DashboardState, Draft, Effect, Part } from './store.js' */

/** Log lines shown when an agent is selected (the newest), before the live ones. */
export const LOG_TAIL = 1000;

/** @typedef {{ render(state: DashboardState): void }} View */

/**
 * The parts of the page the controller draws.
 * @typedef {object} Panels
 * @property {{ renderVersion(state: DashboardState): void, renderConnection(state: DashboardState): void }} topBar
 * @property {View} agents
 * @property {View} chart
 * @property {View} permissions
 * @property {View} orphans
 * @property {View} elicitations
 * @property {View} sessions
 * @property {View} session The selected session's bar: its controls, plan and usage.
 * @property {View & { append(item: TranscriptItem): void, renderTerminals(): void }} transcript
 * @property {View & { append(entry: LogItem): void }} logs
 * @property {{ draft(): Draft, setDraft(draft: Draft): void, setSessionName(name: string): void, setStatus(line: string): void }} prompt
 */

/**
 * @param {object} parts
 * @param {DashboardState} parts.state
 * @param {ApiClient} parts.api
 * @param {Panels} parts.panels
 * @param {Notice} parts.notice
 */
export function createController({ state, api, panels, notice }) {
  /** Draws a part of the page again from the state. @param {Part} part */
  function render(part) {
    if (part === 'version') panels.topBar.renderVersion(state);
    else if (part === 'connection') panels.topBar.renderConnection(state);
    else if (part === 'terminals') panels.transcript.renderTerminals();
    else panels[part].render(state);
  }

  /** Carries out what the store asked for, in order. @param {Effect[]} effects */
  function run(effects) {
    for (const effect of effects) {
      switch (effect.type) {
        case 'render':
          render(effect.part);
          break;
        case 'show-transcript-item':
          panels.transcript.append(effect.item);
          break;
        case 'show-log':
          panels.logs.append(effect.entry);
          break;
        case 'select-agent':
          selectAgent(effect.agent);
          break;
        case 'reload-selected':
          reloadSelected();
          break;
        case 'refresh-agents':
          void refreshAgents();
          break;
        case 'refresh-sessions':
          void refreshSessions();
          break;
        case 'refresh-session-count':
          void refreshSessionCount(effect.agent);
          break;
        case 'refresh-orphans':
          void refreshOrphans();
          break;
        case 'refresh-permissions':
          void sessionActions.refreshPermissions();
          break;
        case 'refresh-elicitations':
          void sessionActions.refreshElicitations();
          break;
        case 'notice':
          notice.show(effect.message, effect.kind);
          break;
      }
    }
  }

  /** Selects an agent (null: none): its sessions, statechart, prompt draft and logs. */
  function selectAgent(/** @type {string | null} */ name) {
    const draft = selectAgentIn(state, name, panels.prompt.draft());
    if (!draft) return;
    panels.prompt.setDraft(draft);
    for (const part of /** @type {Part[]} */ (['agents', 'chart', 'sessions', 'session', 'transcript'])) render(part);
    void refreshSessions();
    showLogs();
  }

  /** Selects a session of the selected agent: its transcript, its name in the prompt box. */
  function selectSession(/** @type {string} */ sessionId) {
    panels.prompt.setSessionName(selectSessionIn(state, sessionId));
    render('sessions');
    render('session');
    render('transcript');
    loadTranscript(sessionId);
  }

  /** The selected agent's sessions, listed again; with none selected yet, the newest is. */
  const refreshSessions = coalesced(async () => {
    const agent = state.selectedAgent;
    if (!agent) return;
    try {
      const taken = takeSessions(state, agent, (await api.sessions(agent)).sessions);
      if (!taken) return;
      if (taken.select) selectSession(taken.select);
      render('sessions');
      render('session');
    } catch (error) {
      notice.show(`Could not list the sessions: ${errorText(error)}`);
    }
  });

  /** @type {Map<string, () => Promise<void>>} */
  const sessionCounts = new Map();

  /** An agent's open-session count, read again (coalesced per agent). */
  function refreshSessionCount(/** @type {string} */ name) {
    let refresh = sessionCounts.get(name);
    if (!refresh) {
      refresh = coalesced(async () => {
        try {
          takeSessionCount(state, name, (await api.agent(name)).sessions);
          render('agents');
        } catch {
          // the next status change brings it
        }
      });
      sessionCounts.set(name, refresh);
    }
    return refresh();
  }

  /** Every agent's row again: state moves are among what a slow page may have missed. */
  async function refreshAgents() {
    try {
      for (const row of (await api.agents()).agents) run(takeAgentRow(state, row));
      render('agents');
    } catch (error) {
      notice.show(`Could not list the agents: ${errorText(error)}`);
    }
  }

  /** The orphans listed again: on hello, after a sweep anyone made (`orphans:swept`), after a kill here. */
  const refreshOrphans = coalesced(async () => {
    try {
      takeOrphans(state, await api.orphans());
    } catch (error) {
      notice.show(`Could not list the orphans: ${errorText(error)}`);
    }
    render('orphans');
  });

  /** Loads a session's history once, joined to what came live meanwhile. */
  function loadTranscript(/** @type {string} */ sessionId) {
    feedOf(state.transcripts, sessionId).backfill({
      fetchPast: async () => (await api.history(sessionId)).map((entry) => ({ kind: entry.kind, data: entry.data })),
      key: transcriptKey,
      failed: (error) => notice.show(`Could not load the transcript: ${errorText(error)}`),
      settled: () => state.selectedSession === sessionId && render('transcript'),
    });
  }

  /** Shows the selected agent's log, its tail loaded once. */
  function showLogs() {
    const agent = state.selectedAgent;
    render('logs');
    if (!agent) return;
    feedOf(state.logs, agent).backfill({
      fetchPast: async () => (await api.logTail(agent, LOG_TAIL)).entries.map((entry) => ({ at: entry.at, line: entry.line })),
      key: logKey,
      failed: (error) => notice.show(`Could not load the logs: ${errorText(error)}`),
      settled: () => state.selectedAgent === agent && render('logs'),
    });
  }

  const sessionActions = createSessionActions({ state, api, notice, run, refreshSessions });

  /** After a gap (a connection that did not resume, a resync): what is selected, loaded again. */
  function reloadSelected() {
    render('transcript');
    render('logs');
    if (state.selectedSession) loadTranscript(state.selectedSession);
    showLogs();
    void refreshSessions();
  }

  /**
   * Runs a prompt and follows its answer: the line under the box says how it goes; the
   * session it runs in is selected; a permission it waits for is listed.
   * @param {string} agent
   * @param {string} text
   * @param {string} sessionName
   * @param {Attachment[]} attachments
   */
  async function runPrompt(agent, text, sessionName, attachments) {
    const target = promptTarget(state, agent, attachments.length > 0 ? promptContent(text, attachments) : text, sessionName);
    let updates = 0;
    // The prompt itself shows when the event stream brings it (session:turn), as every client's
    // prompts do: one source for the transcript, in the order the daemon sent it.
    panels.prompt.setStatus('sending…');
    await api.prompt(target.path, target.body, (line) => {
      if (line.type === 'update') updates += 1; // rendered from the event stream (session:update); counted here
      const status = promptStatusText(line, updates);
      if (status !== null) panels.prompt.setStatus(status);
      switch (line.type) {
        case 'session':
          if (line.notice) notice.show(line.notice, 'info');
          if (line.opened === 'new') sessionOpened(state, line.sessionId);
          if (agent === state.selectedAgent && state.selectedSession !== line.sessionId) selectSession(line.sessionId);
          if (agent === state.selectedAgent) panels.prompt.setSessionName(line.name ?? '');
          void refreshSessions();
          break;
        case 'permission':
          run(permissionAsked(state, line.permission));
          break;
        case 'elicitation':
          run(elicitationAsked(state, line.elicitation));
          break;
        case 'done':
          void refreshSessions();
          break;
        case 'error':
          notice.show(line.error?.message ?? 'The prompt failed');
          break;
      }
    });
  }

  return {
    render,
    selectAgent,
    selectSession,
    ...sessionActions,

    /** One message of the event stream. */
    onServerMessage(/** @type {ServerMessage} */ message) {
      run(applyServerMessage(state, message));
    },

    /** The event stream's connection changed. */
    onConnection(/** @type {ConnectionState} */ connection, /** @type {string} */ text) {
      state.connection = { state: connection, text };
      render('connection');
    },

    /**
     * Sends a prompt to the selected agent, with the files attached; false (nothing sent) when
     * none is selected.
     * @param {string} text
     * @param {string} sessionName The session field, trimmed.
     * @param {Attachment[]} [attachments]
     */
    sendPrompt(text, sessionName, attachments = []) {
      const agent = state.selectedAgent;
      if (!agent) return false;
      runPrompt(agent, text, sessionName, attachments).catch((/** @type {unknown} */ error) => {
        panels.prompt.setStatus(`error: ${errorText(error)}`);
        notice.show(`The prompt failed: ${errorText(error)}`);
      });
      return true;
    },

    /**
     * start, stop, kill or restart an agent (a restart with the reason given, if any); its
     * buttons wait meanwhile.
     * @param {string} name
     * @param {AgentAction} action
     * @param {{ reason?: string }} [options]
     */
    async agentAction(name, action, options = {}) {
      const agent = state.agents.get(name);
      if (!agent) return;
      agent.busy = true;
      render('agents');
      try {
        const row = await api.agentAction(name, action, options);
        // The event stream has said all this already, maybe newer: the answer counts only without it.
        if (state.connection.state !== 'open') run(takeAgentRow(state, row));
      } catch (error) {
        notice.show(`${action} ${name}: ${errorText(error)}`);
      } finally {
        const current = state.agents.get(name);
        if (current) current.busy = false;
        render('agents');
      }
    },

    /** Answers a pending permission request; its answer reaches the transcript with `permission:resolved`. */
    async answerPermission(/** @type {string} */ id, /** @type {string} */ optionId) {
      const row = state.permissions.get(id);
      if (!row) return;
      row.answering = true;
      render('permissions');
      try {
        await api.answerPermission(id, optionId);
        if (state.permissions.delete(id)) render('permissions');
      } catch (error) {
        notice.show(`Could not answer the permission request: ${errorText(error)}`);
        row.answering = false;
        render('permissions');
      }
    },

    /** Kills the leftovers of `pids`, or every one (null); says what was killed, and lists them again. */
    async killOrphans(/** @type {number[] | null} */ pids) {
      /** @type {number | 'all'} */
      const key = pids?.[0] ?? 'all';
      state.orphans.killing.add(key);
      render('orphans');
      try {
        notice.show(killedNotice(await api.killOrphans(pids)), 'info');
      } catch (error) {
        notice.show(`Could not kill: ${errorText(error)}`);
      } finally {
        state.orphans.killing.delete(key);
        await refreshOrphans();
      }
    },
  };
}

/** @typedef {ReturnType<typeof createController>} Controller */
