// @ts-check
/**
 * The selected session's transcript: drawn whole from its feed once the history is loaded,
 * then grown item by item as they come live. transcript-model.js decides the entries; this
 * module carries out its operations on the elements: a tool call's diff as a line diff, its
 * client terminal as the terminal's output (read by the controller, redrawn here).
 */
import { byTestId, h, stickToBottom } from './dom.js';
import { terminalView } from './session-view.js';
import { terminalKey } from './session-store.js';
import { TranscriptModel } from './transcript-model.js';

/** @import { ChildList } from './dom.js' */
/** @import { TranscriptItem } from './feed.js' */
/** @import { DashboardState } from './store.js' */
/** @import { ToolContentView, TranscriptOp } from './transcript-model.js' */

/** @typedef {{ title: HTMLSpanElement, status: HTMLSpanElement, content: HTMLDivElement }} ToolParts */
/** @typedef {{ output: HTMLPreElement, status: HTMLSpanElement, element: HTMLDivElement }} TerminalParts */

/** The signs a diff's lines are marked with. */
const DIFF_SIGNS = { same: ' ', add: '+', del: '-' };

/**
 * @param {object} hooks
 * @param {() => DashboardState} hooks.state The page's state (a terminal shown is drawn from it).
 * @param {(sessionId: string, terminalId: string) => void} hooks.watchTerminal A tool call shows a
 *   client terminal: its output is to be read (and read again while it runs).
 */
export function createTranscriptPanel({ state: currentState, watchTerminal }) {
  const container = byTestId('transcript', HTMLDivElement);
  const heading = byTestId('transcript-session', HTMLSpanElement);
  const model = new TranscriptModel();
  /** The open message's text, which later chunks extend. @type {Text | null} */
  let openText = null;
  /** @type {Map<string, ToolParts>} */
  let tools = new Map();
  /** The terminals shown, by `terminalKey`: several tool calls may show one. @type {Map<string, TerminalParts[]>} */
  let terminals = new Map();
  /** The session drawn. @type {string | null} */
  let shownSession = null;

  function reset() {
    container.replaceChildren();
    model.reset();
    openText = null;
    tools = new Map();
    terminals = new Map();
  }

  /**
   * A diff: its file, how many lines it adds and removes, and its hunks (the unchanged runs
   * between folded).
   * @param {Extract<ToolContentView, { type: 'diff' }>} diff
   */
  function diffElement(diff) {
    const body = diff.hunks.map((hunk) =>
      hunk.type === 'gap'
        ? h('span', { class: 'diff-line diff-gap' }, `⋯ ${hunk.count} unchanged ${hunk.count === 1 ? 'line' : 'lines'}\n`)
        : hunk.lines.map((line) => h('span', { class: `diff-line diff-${line.op}`, 'data-op': line.op }, `${DIFF_SIGNS[line.op]} ${line.text}\n`)),
    );
    return h(
      'div',
      { class: 'diff', 'data-testid': 'diff', 'data-path': diff.path },
      h('div', { class: 'diff-head' }, h('span', { class: 'diff-path' }, diff.path), ' ', h('span', { class: 'diff-stat' }, `${diff.created ? 'new file · ' : ''}+${diff.added} −${diff.removed}`)),
      h('pre', { class: 'diff-body' }, diff.hunks.length > 0 ? body : h('span', { class: 'diff-line diff-gap' }, 'no change')),
    );
  }

  /**
   * A client terminal's box, filled from the state now and again as it is read.
   * @param {string} terminalId
   */
  function terminalElement(terminalId) {
    const sessionId = shownSession ?? '';
    const key = terminalKey(sessionId, terminalId);
    const parts = { output: h('pre', { class: 'terminal-output', 'data-testid': 'terminal-output' }), status: h('span', { class: 'terminal-status', 'data-testid': 'terminal-status' }) };
    const element = h('div', { class: 'terminal', 'data-testid': 'terminal', 'data-terminal-id': terminalId }, h('div', { class: 'terminal-head' }, `terminal ${terminalId} · `, parts.status), parts.output);
    const shown = { ...parts, element };
    terminals.set(key, [...(terminals.get(key) ?? []), shown]);
    fillTerminal(shown, key);
    watchTerminal(sessionId, terminalId);
    return element;
  }

  /** @param {TerminalParts} parts @param {string} key */
  function fillTerminal(parts, key) {
    const view = terminalView(currentState().terminals.get(key));
    if (parts.output.textContent !== view.output) parts.output.textContent = view.output;
    parts.status.textContent = view.status;
    parts.element.dataset.running = String(view.running);
  }

  /** A tool call's content, as shown. @param {ToolContentView} part */
  function contentElement(part) {
    switch (part.type) {
      case 'text':
        return h('pre', { class: 'tool-output' }, part.text);
      case 'diff':
        return diffElement(part);
      case 'terminal':
        return terminalElement(part.terminalId);
    }
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
        entry('plan', 'plan', [h('ul', {}, op.steps.map((step) => h('li', { 'data-status': step.status, 'data-priority': step.priority }, step.text)))]);
        return;
      case 'tool': {
        let tool = tools.get(op.toolCallId);
        if (op.created || !tool) {
          tool = { title: h('span', { class: 'entry-text' }), status: h('span', { class: 'tool-status' }), content: h('div', { class: 'tool-content' }) };
          entry('tool', 'tool', [tool.title, ' ', tool.status, tool.content]);
          tools.set(op.toolCallId, tool);
        }
        if (op.title !== null) tool.title.textContent = op.title;
        if (op.status !== null) tool.status.textContent = op.status;
        if (op.content !== null) tool.content.replaceChildren(...op.content.map(contentElement));
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
      shownSession = sessionId;
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
    /** The terminals shown, from their output as last read. */
    renderTerminals() {
      stickToBottom(container, () => {
        for (const [key, shown] of terminals) {
          // A tool call's content is replaced by its updates: a box no longer shown is let go.
          const attached = shown.filter((parts) => parts.element.isConnected);
          if (attached.length < shown.length) terminals.set(key, attached);
          for (const parts of attached) fillTerminal(parts, key);
        }
      });
    },
  };
}
