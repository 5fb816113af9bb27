// @ts-check
/** The selected agent's log: its stderr's last lines once loaded, then each new one. */
import { byTestId, h, stickToBottom } from './dom.js';
import { FEED_LIMIT } from './feed.js';
import { clockTime } from './format.js';

/** @import { LogItem } from './feed.js' */
/** @import { DashboardState } from './store.js' */

export function createLogsPanel() {
  const list = byTestId('logs', HTMLOListElement);
  const heading = byTestId('logs-agent', HTMLSpanElement);
  const line = (/** @type {LogItem} */ entry) => h('li', { 'data-testid': 'log-line' }, h('time', {}, clockTime(entry.at)), ' ', entry.line);
  return {
    /** The selected agent's log, whole once loaded (empty until then). */
    render(/** @type {DashboardState} */ state) {
      heading.textContent = state.selectedAgent ? `· ${state.selectedAgent}` : '';
      const feed = state.selectedAgent ? state.logs.get(state.selectedAgent) : undefined;
      list.replaceChildren(...(feed?.loaded ? feed.items.map(line) : []));
      list.scrollTop = list.scrollHeight;
    },
    /** One more line of the agent shown, heard live. */
    append(/** @type {LogItem} */ entry) {
      stickToBottom(list, () => {
        list.append(line(entry));
        while (list.childElementCount > FEED_LIMIT) list.firstElementChild?.remove();
      });
    },
  };
}
