// @ts-check
/**
 * The prompt box's decisions: where a prompt goes, and what the line under the box says as
 * the prompt's NDJSON answer streams. Pure (tests/unit/dashboard-prompt.test.ts).
 */
import { counted } from './format.js';

/** @import { PromptStreamLine } from '../daemon/api-types.js' */
/** @import { ContentBlock } from '../index.js' */
/** @import { DashboardState } from './store.js' */

/** The session a prompt goes to when the session field is empty and none is selected. */
export const DEFAULT_SESSION = 'default';

/**
 * Where a prompt for `agent` goes. A session field that names a session (or is empty with no
 * session selected: `default`) goes through `POST /v1/prompt` by name; an empty field with a
 * session selected means that session, an unnamed one maybe, reachable only by its id (`POST
 * /v1/sessions/:id/prompt`).
 * The prompt is its text (`{ text }`), or its content blocks when files are attached
 * (`{ content }`).
 * @param {DashboardState} state
 * @param {string} agent
 * @param {string | ContentBlock[]} prompt
 * @param {string} sessionName The session field, trimmed.
 * @returns {{ path: string, body: ({ text: string } | { content: ContentBlock[] }) & ({ agent: string, session: string } | {}) }}
 */
export function promptTarget(state, agent, prompt, sessionName) {
  const input = typeof prompt === 'string' ? { text: prompt } : { content: prompt };
  const byId = !sessionName && state.selectedSession ? state.selectedSession : null;
  if (byId) return { path: `/v1/sessions/${encodeURIComponent(byId)}/prompt`, body: input };
  return { path: '/v1/prompt', body: { agent, ...input, session: sessionName || DEFAULT_SESSION } };
}

/**
 * What the line under the prompt box says after a line of the prompt's answer; null: it
 * stays as it is. `updates` counts the `update` lines so far, this one included.
 * @param {PromptStreamLine} line
 * @param {number} updates
 * @returns {string | null}
 */
export function promptStatusText(line, updates) {
  switch (line.type) {
    case 'queued':
      return `queued behind ${line.position}`;
    case 'started':
      return 'running…';
    case 'update':
      return `running… ${counted(updates, 'update')}`;
    case 'permission':
      return 'waiting for a permission answer';
    case 'elicitation':
      return 'waiting for an answer to its question';
    case 'done':
      return `done: ${line.stopReason}`;
    case 'error':
      return `error: ${line.error?.message ?? line.error?.kind}`;
    default:
      return null;
  }
}
