// @ts-check
/**
 * The event stream (`GET /v1/events`, a WebSocket, all topics): connected, read, and connected
 * again with a backoff when it drops — unless the daemon refuses the token (a daemon started
 * again has a new one, which this page cannot learn). The backoff is pure
 * (tests/unit/dashboard-api.test.ts).
 */

/** @import { ServerMessage } from '../daemon/api-types.js' */
/** @import { ConnectionState } from './store.js' */

/** The first delay before connecting again, in ms; it doubles up to the longest. */
export const RECONNECT_INITIAL_MS = 250;
export const RECONNECT_MAX_MS = 8000;

/** The delay after `delay`: doubled, at most {@link RECONNECT_MAX_MS}. */
export function nextReconnectDelay(/** @type {number} */ delay) {
  return Math.min(RECONNECT_MAX_MS, delay * 2);
}

/** What the top bar says while the stream waits `delay` ms to connect again. */
export function retryingText(/** @type {number} */ delay) {
  return `disconnected — retrying in ${(delay / 1000).toFixed(1)} s`;
}

/**
 * @typedef {object} EventStreamOptions
 * @property {string} url The stream's `ws://` address, with the token.
 * @property {(message: ServerMessage) => void} onMessage Each message that parses.
 * @property {(state: ConnectionState, text: string) => void} onStatus The connection's state, and what the top bar says.
 * @property {() => Promise<boolean>} tokenRefused Asked after each drop: true stops the retries.
 * @property {() => void} onRefused Heard once the token is refused.
 */

/**
 * Connects now, and again after every drop.
 * @param {EventStreamOptions} options
 */
export function openEventStream({ url, onMessage, onStatus, tokenRefused, onRefused }) {
  let delay = RECONNECT_INITIAL_MS;

  function connect() {
    onStatus('connecting', 'connecting…');
    const socket = new WebSocket(url);
    socket.addEventListener('open', () => {
      delay = RECONNECT_INITIAL_MS;
      onStatus('open', 'live');
    });
    socket.addEventListener('message', (event) => {
      let message;
      try {
        message = /** @type {ServerMessage} */ (JSON.parse(String(event.data)));
      } catch {
        return;
      }
      onMessage(message);
    });
    socket.addEventListener('close', async () => {
      const wait = delay;
      delay = nextReconnectDelay(delay);
      onStatus('closed', retryingText(wait));
      if (await tokenRefused()) {
        onStatus('closed', 'token refused');
        onRefused();
        return;
      }
      setTimeout(connect, wait);
    });
  }

  connect();
}
