// @ts-check
/**
 * The event stream (`GET /v1/events`, a WebSocket, all topics, frames batched): connected,
 * read, and connected again with a backoff when it drops — from where the page stood
 * (`?since=<last seq applied>&epoch=`), so that the daemon replays what it missed — unless the
 * daemon refuses the token (a daemon started again has a new one, which this page cannot
 * learn). The backoff, the address and the frames' parsing are pure
 * (tests/unit/dashboard-api.test.ts).
 */

/** @import { ServerMessage } from '../daemon/api-types.js' */
/** @import { ConnectionState, StreamCursor } from './store.js' */

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
 * The stream's address: every topic, each frame a JSON array of messages (`batch=1`), and —
 * once the page has applied a message of this daemon — where to go on from.
 * @param {string} base `ws://host:port`
 * @param {string} token
 * @param {StreamCursor} cursor
 */
export function streamUrl(base, token, cursor) {
  const since = cursor.lastSeq !== null && cursor.epoch !== null ? `&since=${cursor.lastSeq}&epoch=${encodeURIComponent(cursor.epoch)}` : '';
  return `${base}/v1/events?token=${encodeURIComponent(token)}&batch=1${since}`;
}

/**
 * The messages of one frame: a JSON array of them (`batch=1`), or one; none when it does not
 * parse.
 * @param {string} data
 * @returns {ServerMessage[]}
 */
export function frameMessages(data) {
  let parsed;
  try {
    parsed = JSON.parse(data);
  } catch {
    return [];
  }
  return /** @type {ServerMessage[]} */ (Array.isArray(parsed) ? parsed : [parsed]);
}

/**
 * @typedef {object} EventStreamOptions
 * @property {() => string} url The stream's `ws://` address, with the token, asked at each connection.
 * @property {(message: ServerMessage) => void} onMessage Each message that parses.
 * @property {(state: ConnectionState, text: string) => void} onStatus The connection's state, and what the top bar says.
 * @property {() => Promise<boolean>} tokenRefused Asked after each drop: true stops the retries.
 * @property {() => void} onRefused Heard once the token is refused.
 */

/**
 * Connects now, and again after every drop. It is live once the daemon's `hello` came (an open
 * socket alone says nothing yet).
 * @param {EventStreamOptions} options
 */
export function openEventStream({ url, onMessage, onStatus, tokenRefused, onRefused }) {
  let delay = RECONNECT_INITIAL_MS;

  function connect() {
    onStatus('connecting', 'connecting…');
    const socket = new WebSocket(url());
    socket.addEventListener('message', (event) => {
      for (const message of frameMessages(String(event.data))) {
        if (message.type === 'hello') {
          delay = RECONNECT_INITIAL_MS;
          onStatus('open', 'live');
        }
        onMessage(message);
      }
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
