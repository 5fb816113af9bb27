// @ts-check
/**
 * How transcript items become the transcript's entries: one entry per prompt, permission
 * request, elicitation, answer, turn end and plan; consecutive message chunks of one kind
 * joined into one message; a tool call's entry updated in place by its updates, its content
 * shown as what it is (text, a diff as a line diff, a client terminal's output). Pure: it
 * answers each item with the operations the transcript panel carries out on its elements
 * (tests/unit/dashboard-transcript.test.ts).
 */
import { diffHunks, diffStats, lineDiff } from './diff.js';
import { promptText } from './format.js';

/** @import { ContentBlock, SessionUpdate } from '../index.js' */
/** @import { DiffHunk } from './diff.js' */
/** @import { TranscriptItem } from './feed.js' */

/**
 * One part of a tool call's content as shown: its text, a diff (the file's path, its hunks,
 * the lines added and removed; `created` when there was no old text), a client terminal (its
 * output is read by its id), or another block named by its type.
 * @typedef {(
 *   | { type: 'text', text: string }
 *   | { type: 'diff', path: string, created: boolean, hunks: DiffHunk[], added: number, removed: number }
 *   | { type: 'terminal', terminalId: string }
 * )} ToolContentView
 */

/**
 * A tool call's content as ACP sends it.
 * @typedef {{ type: string, content?: ContentBlock, path?: string, oldText?: string | null, newText?: string, terminalId?: string }} ToolCallContent
 */

/**
 * An operation on the transcript's elements:
 * - `entry`: a new entry of `kind` (its CSS class `entry-<kind>`), labelled, with a text
 *   (`emphasis`: in the entry's text span) and a `note` after it;
 * - `message`: a new entry whose text later chunks extend (`extend`) until another entry comes;
 * - `plan`: a new entry listing the plan's steps;
 * - `tool`: a tool call's entry, new (`created`) or updated: its title and status when given,
 *   and its content when given (it replaces what was shown: ACP sends the whole content).
 * @typedef {(
 *   | { op: 'entry', kind: string, label: string, text: string, emphasis: boolean, note: string | null }
 *   | { op: 'message', kind: string, label: string, text: string }
 *   | { op: 'extend', text: string }
 *   | { op: 'plan', steps: Array<{ status: string, priority: string, text: string }> }
 *   | { op: 'tool', toolCallId: string, created: boolean, title: string | null, status: string | null, content: ToolContentView[] | null }
 * )} TranscriptOp
 */

/** @typedef {{ toolCall?: { title?: string | null, toolCallId?: string }, options?: Array<{ optionId: string, name: string }> }} PermissionData */

/** The transcript's entries so far, as far as the next item depends on them. */
export class TranscriptModel {
  /** The kind of the message that chunks still join; null once another entry came. @type {string | null} */
  open = null;
  /** Tool calls that have their entry. @type {Set<string>} */
  tools = new Set();
  /** Option names of the latest permission requests, by id: their answers say the name. @type {Map<string, string>} */
  options = new Map();

  /** Empty again (the panel draws another session, or the same from the start). */
  reset() {
    this.open = null;
    this.tools = new Set();
    this.options = new Map();
  }

  /**
   * The operations that show one more item.
   * @param {TranscriptItem} item
   * @returns {TranscriptOp[]}
   */
  apply(item) {
    const data = item.data ?? {};
    switch (item.kind) {
      case 'prompt':
        return [this.entry('user', 'you', promptText(/** @type {{ prompt?: unknown }} */ (data).prompt), true)];
      case 'prompt_result': {
        const result = /** @type {{ stopReason?: string, error?: { kind?: string, message?: string } }} */ (data);
        return [result.error ? this.entry('error', '', `turn failed: ${result.error.message ?? result.error.kind}`) : this.entry('result', '', `turn ended: ${result.stopReason}`)];
      }
      case 'permission': {
        const permission = /** @type {PermissionData} */ (data);
        const options = permission.options ?? [];
        for (const option of options) this.options.set(option.optionId, option.name);
        const title = permission.toolCall?.title || permission.toolCall?.toolCallId || 'a tool call';
        return [this.entry('permission', 'permission', title, true, ` — ${options.map((option) => option.name).join(' / ')}`)];
      }
      case 'permission_outcome': {
        const outcome = /** @type {{ outcome?: { outcome?: string, optionId?: string } }} */ (data).outcome ?? {};
        const answer = outcome.outcome === 'selected' ? `answered: ${this.options.get(outcome.optionId ?? '') ?? outcome.optionId}` : 'cancelled';
        return [this.entry('permission-outcome', '', answer)];
      }
      case 'elicitation': {
        const asked = /** @type {{ mode?: string, message?: string, url?: string | null }} */ (data);
        return [this.entry('elicitation', 'question', asked.message ?? '', true, asked.mode === 'url' && asked.url ? ` — ${asked.url}` : null)];
      }
      case 'elicitation_outcome': {
        const { action } = /** @type {{ action?: string }} */ (data);
        return [this.entry('elicitation-outcome', '', action === 'accept' ? 'answered' : action === 'decline' ? 'declined' : 'cancelled')];
      }
      case 'update':
        return this.update(/** @type {SessionUpdate} */ (data));
      default:
        return [this.entry('other', item.kind, JSON.stringify(data))];
    }
  }

  /**
   * @param {SessionUpdate} update
   * @returns {TranscriptOp[]}
   */
  update(update) {
    switch (update.sessionUpdate) {
      case 'agent_message_chunk':
        return [this.chunk('agent', 'agent', contentText(update.content))];
      case 'agent_thought_chunk':
        return [this.chunk('thought', 'thinking', contentText(update.content))];
      case 'user_message_chunk':
        return [this.chunk('user', 'you', contentText(update.content))];
      case 'tool_call':
      case 'tool_call_update':
        return [this.tool(update)];
      case 'plan':
        this.open = null;
        return [{ op: 'plan', steps: (update.entries ?? []).map((entry) => ({ status: entry.status, priority: entry.priority, text: `${entry.content} (${entry.status.replace('_', ' ')}, ${entry.priority})` })) }];
      case 'current_mode_update':
        return [this.entry('info', '', `mode: ${update.currentModeId}`)];
      case 'session_info_update':
        return [this.entry('info', '', `title: ${update.title ?? '—'}`)];
      case 'usage_update':
      case 'available_commands_update':
        // State, not an event of the conversation: the session bar shows it (its meter, the palette).
        return [];
      case 'config_option_update':
        return [this.entry('info', '', `options: ${update.configOptions.map((option) => `${option.name} ${String(option.currentValue)}`).join(', ')}`)];
      default:
        return [this.entry('info', '', /** @type {{ sessionUpdate?: string }} */ (update).sessionUpdate ?? 'update')];
    }
  }

  /**
   * A new entry; it ends the open message.
   * @returns {TranscriptOp}
   */
  entry(/** @type {string} */ kind, /** @type {string} */ label, /** @type {string} */ text, emphasis = false, /** @type {string | null} */ note = null) {
    this.open = null;
    return { op: 'entry', kind, label, text, emphasis, note };
  }

  /**
   * A message chunk: it extends the open message of its kind, else begins one.
   * @returns {TranscriptOp}
   */
  chunk(/** @type {string} */ kind, /** @type {string} */ label, /** @type {string} */ text) {
    if (this.open === kind) return { op: 'extend', text };
    this.open = kind;
    return { op: 'message', kind, label, text };
  }

  /**
   * A tool call's entry, made by its first update (whichever kind), updated by the others.
   * @param {{ toolCallId: string, title?: string | null, kind?: string | null, status?: string | null, content?: ToolCallContent[] | null }} update
   * @returns {TranscriptOp}
   */
  tool(update) {
    const created = !this.tools.has(update.toolCallId);
    this.tools.add(update.toolCallId);
    this.open = null;
    const title = update.title ? (update.kind ? `${update.title} (${update.kind})` : update.title) : null;
    const content = Array.isArray(update.content) ? update.content.map(toolContentView) : null;
    return { op: 'tool', toolCallId: update.toolCallId, created, title, status: update.status || null, content };
  }
}

/** A message chunk's text: a text block's, else its type in brackets. */
function contentText(/** @type {ContentBlock | undefined} */ content) {
  if (!content) return '';
  return content.type === 'text' ? content.text : `[${content.type}]`;
}

/**
 * One part of a tool call's content, as shown.
 * @param {ToolCallContent} part
 * @returns {ToolContentView}
 */
export function toolContentView(part) {
  switch (part.type) {
    case 'content':
      return { type: 'text', text: part.content?.type === 'text' ? part.content.text : `[${part.content?.type ?? 'content'}]` };
    case 'diff': {
      const lines = lineDiff(part.oldText, part.newText);
      return { type: 'diff', path: part.path ?? '', created: part.oldText === null || part.oldText === undefined, hunks: diffHunks(lines), ...diffStats(lines) };
    }
    case 'terminal':
      return { type: 'terminal', terminalId: part.terminalId ?? '' };
    default:
      return { type: 'text', text: `[${part.type}]` };
  }
}
