// @ts-check
/** The top bar: the daemon's version, and whether the event stream is live. */
import { byTestId } from './dom.js';

/** @import { DashboardState } from './store.js' */

export function createTopBar() {
  const version = byTestId('daemon-version', HTMLSpanElement);
  const connection = byTestId('connection', HTMLSpanElement);
  return {
    /** The version `hello` said. */
    renderVersion(/** @type {DashboardState} */ state) {
      version.textContent = state.version ? `v${state.version}` : '';
    },
    /** The connection's state (`data-state`: connecting, open, closed) and what it says. */
    renderConnection(/** @type {DashboardState} */ state) {
      connection.dataset.state = state.connection.state;
      connection.textContent = state.connection.text;
    },
  };
}
