// @ts-check
/**
 * The selected session's transcript: drawn whole from its feed once the history is loaded,
 * then grown item by item as they come live. transcript-model.js decides the entries; this
 * module carries out its operations on the elements.
 */
import { byTestId, h, stickToBottom } from './dom.js';
import { TranscriptModel } from './transcript-model.js';

/** @import { ChildList } from './dom.js' */
/** @import { TranscriptItem } from './feed.js' */
/** @import { DashboardState } from './store.js' */
/** @import { TranscriptOp } from './transcript-model.js' */

/** @typedef {{ title: HTMLSpanElement, status: HTMLSpanElement, output: HTMLPreElement }} ToolParts */

export function createTranscriptPanel() {
  const container = byTestId('transcript', HTMLDivElement);
  const heading = byTestId('transcript-session', HTMLSpanElement);
  const model = new TranscriptModel();
  /** The open message's text, which later chunks extend. @type {Text | null} */
  let openText = null;
  /** @type {Map<string, ToolParts>} */
  let tools = new Map();

  function reset() {
    container.replaceChildren();
    model.reset();
    openText = null;
    tools = new Map();
  }

  /**
   * An entry: its label, then its body.
   * @param {string} kind
   * @param {string} label
   * @param {ChildList} body
   */
  function entry(kind, label, body) {
    container.append(
      h('div', { class: `entry entry-${kind}`, 'data-testid': 'transcript-entry', 'data-kind': kind }, h('span', { class: 'entry-label' }, label), h('div', { class: 'entry-body' }, body)),
    );
  }

  /** @param {TranscriptOp} op */
  function carryOut(op) {
    switch (op.op) {
      case 'entry':
        entry(op.kind, op.label, [op.emphasis ? h('span', { class: 'entry-text' }, op.text) : op.text, op.note === null ? null : h('span', { class: 'muted' }, op.note)]);
        return;
      case 'message': {
        const text = document.createTextNode(op.text);
        entry(op.kind, op.label, [h('span', { class: 'entry-text', 'data-testid': 'transcript-text' }, text)]);
        openText = text;
        return;
      }
      case 'extend':
        openText?.appendData(op.text);
        return;
      case 'plan':
        entry('plan', 'plan', [h('ul', {}, op.steps.map((step) => h('li', { 'data-status': step.status }, step.text)))]);
        return;
      case 'tool': {
        let tool = tools.get(op.toolCallId);
        if (op.created || !tool) {
          tool = { title: h('span', { class: 'entry-text' }), status: h('span', { class: 'tool-status' }), output: h('pre', { class: 'tool-output' }) };
          entry('tool', 'tool', [tool.title, ' ', tool.status, tool.output]);
          tools.set(op.toolCallId, tool);
        }
        if (op.title !== null) tool.title.textContent = op.title;
        if (op.status !== null) tool.status.textContent = op.status;
        if (op.output) tool.output.append(op.output);
        return;
      }
    }
  }

  /** @param {TranscriptItem} item */
  function show(item) {
    for (const op of model.apply(item)) carryOut(op);
  }

  return {
    /** The selected session's transcript, whole (or what it waits for). */
    render(/** @type {DashboardState} */ state) {
      reset();
      const sessionId = state.selectedSession;
      heading.textContent = sessionId ? `· ${sessionId}` : '';
      container.dataset.sessionId = sessionId ?? '';
      const feed = sessionId ? state.transcripts.get(sessionId) : null;
      if (!sessionId || !feed?.loaded) {
        container.dataset.loaded = 'false';
        container.append(h('p', { class: 'empty' }, sessionId ? 'Loading…' : 'Select a session, or send a prompt.'));
        return;
      }
      container.dataset.loaded = 'true';
      for (const item of feed.items) show(item);
      container.scrollTop = container.scrollHeight;
    },
    /** One more item of the session shown, heard live. */
    append(/** @type {TranscriptItem} */ item) {
      stickToBottom(container, () => show(item));
    },
  };
}
