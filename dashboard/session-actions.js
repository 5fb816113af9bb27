// @ts-check
/**
 * What the person does to a session and to what waits for them, through the HTTP API: pick a
 * mode, a model or a config option's value; cancel the running turn; close the session;
 * answer an elicitation; log an agent in. And what the page reads for them: the pending
 * permissions and elicitations (after a connection or a resync), a client terminal's output
 * (read again while it runs: the daemon sends no event for it). Part of the controller
 * (controller.js), split off to keep each module readable; it owns no element.
 */
import { ApiError } from './api.js';
import { errorText } from './format.js';
import { elicitationResolved, takeElicitations, takeSessionRow, takeTerminal, terminalKey, terminalRunning } from './session-store.js';
import { takePermissions } from './store.js';
import { coalesced } from './tasks.js';

/** @import { ApiClient } from './api.js' */
/** @import { Notice } from './dom.js' */
/** @import { FormContent } from './elicitation-form.js' */
/** @import { Picker } from './session-view.js' */
/** @import { DashboardState, Effect } from './store.js' */

/** How often a running client terminal's output is read again, in ms. */
export const TERMINAL_POLL_MS = 1000;

/** The key of a call under way in `state.pending`: what it changes, of which session. */
export function pendingKey(/** @type {string} */ what, /** @type {string} */ sessionId) {
  return `${what}\n${sessionId}`;
}

/**
 * @param {object} parts
 * @param {DashboardState} parts.state
 * @param {ApiClient} parts.api
 * @param {Notice} parts.notice
 * @param {(effects: Effect[]) => void} parts.run Carries out the store's effects.
 * @param {() => Promise<void>} parts.refreshSessions The selected agent's sessions, listed again.
 */
export function createSessionActions({ state, api, notice, run, refreshSessions }) {
  /** @type {Map<string, ReturnType<typeof setTimeout> | null>} */
  const watching = new Map();

  /**
   * Runs a call on a session while its control waits (`state.pending`), and says a failure.
   * @param {string} key
   * @param {string} failure What the notice says before the error.
   * @param {() => Promise<void>} call
   */
  async function pendingCall(key, failure, call) {
    if (state.pending.has(key)) return;
    state.pending.add(key);
    run([{ type: 'render', part: 'session' }]);
    try {
      await call();
    } catch (error) {
      notice.show(`${failure}: ${errorText(error)}`);
    } finally {
      state.pending.delete(key);
      run([{ type: 'render', part: 'session' }]);
    }
  }

  /**
   * A terminal's output read now, and again while it runs and its session is shown.
   * @param {string} sessionId
   * @param {string} terminalId
   */
  async function readTerminal(sessionId, terminalId) {
    const key = terminalKey(sessionId, terminalId);
    try {
      run(takeTerminal(state, sessionId, terminalId, await api.terminalOutput(sessionId, terminalId)));
    } catch (error) {
      const gone = error instanceof ApiError && error.kind === 'terminal_not_found';
      run(takeTerminal(state, sessionId, terminalId, { error: gone ? 'no longer readable (its session is not open in the daemon)' : `cannot be read: ${errorText(error)}` }));
    }
    if (state.selectedSession === sessionId && terminalRunning(state, sessionId, terminalId)) {
      watching.set(
        key,
        setTimeout(() => void readTerminal(sessionId, terminalId), TERMINAL_POLL_MS),
      );
    } else {
      watching.delete(key);
    }
  }

  return {
    /**
     * A picker's choice: `POST /v1/sessions/:id/mode`, `/model` or `/config`; the session's row
     * as the answer says it. A refusal is said, and the picker shows the current value again.
     * @param {string} sessionId
     * @param {Pick<Picker, 'route' | 'configId'>} picker
     * @param {string | boolean} value
     */
    setControl(sessionId, picker, value) {
      const what = picker.route === 'config' ? `config ${picker.configId}` : picker.route;
      return pendingCall(pendingKey(what, sessionId), `Could not set the ${picker.route === 'config' ? `option ${picker.configId}` : picker.route}`, async () => {
        const row =
          picker.route === 'mode'
            ? await api.setMode(sessionId, String(value))
            : picker.route === 'model'
              ? await api.setModel(sessionId, String(value))
              : await api.setConfig(sessionId, picker.configId ?? '', value);
        run(takeSessionRow(state, row));
      });
    },

    /** Cancels the session's running turn (and drops its queued prompts); says what it did. */
    cancel(/** @type {string} */ sessionId) {
      return pendingCall(pendingKey('cancel', sessionId), 'Could not cancel', async () => {
        const result = await api.cancelSession(sessionId);
        const dropped = result.droppedQueued > 0 ? ` and dropped ${result.droppedQueued} queued ${result.droppedQueued === 1 ? 'prompt' : 'prompts'}` : '';
        notice.show(result.cancelledRunning ? `Cancelled the running turn${dropped}.` : `Nothing was running${dropped ? `; ${dropped.slice(5)}` : ''}.`, 'info');
      });
    },

    /** Closes the session (its queued prompts are dropped); the list says it is no longer open. */
    close(/** @type {string} */ sessionId) {
      return pendingCall(pendingKey('close', sessionId), 'Could not close the session', async () => {
        run(takeSessionRow(state, await api.closeSession(sessionId)));
        void refreshSessions();
      });
    },

    /**
     * Answers an elicitation. A refusal of the values (`invalid_request`) stays in its dialog,
     * which stays open for a correct answer; one answered meanwhile elsewhere closes.
     * @param {string} id
     * @param {{ action: 'accept', content?: FormContent } | { action: 'decline' } | { action: 'cancel' }} answer
     */
    async answerElicitation(id, answer) {
      const row = state.elicitations.get(id);
      if (!row || row.answering) return;
      row.answering = true;
      row.error = null;
      run([{ type: 'render', part: 'elicitations' }]);
      try {
        await api.answerElicitation(id, answer);
        run(elicitationResolved(state, id));
      } catch (error) {
        row.answering = false;
        if (error instanceof ApiError && error.kind === 'elicitation_not_found') {
          run(elicitationResolved(state, id));
          notice.show('That question was answered meanwhile (by another client, a cancel or its timeout).', 'info');
          return;
        }
        row.error = errorText(error);
        run([{ type: 'render', part: 'elicitations' }]);
      }
    },

    /** Logs an agent in with one of its methods (`POST /v1/agents/:name/authenticate`); its row waits meanwhile. */
    async authenticate(/** @type {string} */ name, /** @type {string} */ methodId) {
      const agent = state.agents.get(name);
      if (!agent || agent.busy) return;
      agent.busy = true;
      run([{ type: 'render', part: 'agents' }]);
      try {
        await api.authenticate(name, methodId);
        notice.show(`${name} is logged in.`, 'info');
      } catch (error) {
        notice.show(`Could not log ${name} in: ${errorText(error)}`);
      } finally {
        const current = state.agents.get(name);
        if (current) current.busy = false;
        run([{ type: 'render', part: 'agents' }]);
      }
    },

    /**
     * A tool call shows a client terminal: its output is read, and read again every
     * {@link TERMINAL_POLL_MS} while it runs and its session is shown. One that ended is read once.
     * @param {string} sessionId
     * @param {string} terminalId
     */
    watchTerminal(sessionId, terminalId) {
      const key = terminalKey(sessionId, terminalId);
      if (watching.has(key) || (state.terminals.has(key) && !terminalRunning(state, sessionId, terminalId))) return;
      watching.set(key, null);
      void readTerminal(sessionId, terminalId);
    },

    /** The pending permission requests, read again (after a resync). */
    refreshPermissions: coalesced(async () => {
      try {
        run(takePermissions(state, (await api.permissions()).permissions));
      } catch (error) {
        notice.show(`Could not list the permission requests: ${errorText(error)}`);
      }
    }),

    /** The waiting elicitations, read (a connection's hello does not list them). */
    refreshElicitations: coalesced(async () => {
      try {
        run(takeElicitations(state, (await api.elicitations()).elicitations));
      } catch (error) {
        notice.show(`Could not list the questions waiting: ${errorText(error)}`);
      }
    }),
  };
}

/** @typedef {ReturnType<typeof createSessionActions>} SessionActions */
