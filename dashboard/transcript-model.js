// @ts-check
/**
 * How transcript items become the transcript's entries: one entry per prompt, permission
 * request, answer, turn end and plan; consecutive message chunks of one kind joined into one
 * message; a tool call's entry updated in place by its updates. Pure: it answers each item
 * with the operations the transcript panel carries out on its elements
 * (tests/unit/dashboard-transcript.test.ts).
 */
import { promptText } from './format.js';

/** @import { ContentBlock, SessionUpdate } from '../index.js' */
/** @import { TranscriptItem } from './feed.js' */

/**
 * An operation on the transcript's elements:
 * - `entry`: a new entry of `kind` (its CSS class `entry-<kind>`), labelled, with a text
 *   (`emphasis`: in the entry's text span) and a `note` after it;
 * - `message`: a new entry whose text later chunks extend (`extend`) until another entry comes;
 * - `plan`: a new entry listing the plan's steps;
 * - `tool`: a tool call's entry, new (`created`) or updated: its title and status when given,
 *   and `output` appended.
 * @typedef {(
 *   | { op: 'entry', kind: string, label: string, text: string, emphasis: boolean, note: string | null }
 *   | { op: 'message', kind: string, label: string, text: string }
 *   | { op: 'extend', text: string }
 *   | { op: 'plan', steps: Array<{ status: string, text: string }> }
 *   | { op: 'tool', toolCallId: string, created: boolean, title: string | null, status: string | null, output: string }
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
        return [{ op: 'plan', steps: (update.entries ?? []).map((entry) => ({ status: entry.status, text: `${entry.content} (${entry.status})` })) }];
      case 'current_mode_update':
        return [this.entry('info', '', `mode: ${update.currentModeId}`)];
      case 'session_info_update':
        return [this.entry('info', '', `title: ${update.title ?? '—'}`)];
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
   * @param {{ toolCallId: string, title?: string | null, kind?: string | null, status?: string | null, content?: Array<{ type: string, content?: ContentBlock, path?: string }> | null }} update
   * @returns {TranscriptOp}
   */
  tool(update) {
    const created = !this.tools.has(update.toolCallId);
    this.tools.add(update.toolCallId);
    this.open = null;
    const output = (update.content ?? []).map((part) => `${toolContentText(part)}\n`).join('');
    const title = update.title ? (update.kind ? `${update.title} (${update.kind})` : update.title) : null;
    return { op: 'tool', toolCallId: update.toolCallId, created, title, status: update.status || null, output };
  }
}

/** A message chunk's text: a text block's, else its type in brackets. */
function contentText(/** @type {ContentBlock | undefined} */ content) {
  if (!content) return '';
  return content.type === 'text' ? content.text : `[${content.type}]`;
}

/** One part of a tool call's content, as a line of its output. */
function toolContentText(/** @type {{ type: string, content?: ContentBlock, path?: string }} */ part) {
  if (part.type === 'content' && part.content?.type === 'text') return part.content.text;
  if (part.type === 'diff') return `diff ${part.path}`;
  return `[${part.type}]`;
}
