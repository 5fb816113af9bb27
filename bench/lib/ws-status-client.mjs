#!/usr/bin/env node
/**
 * ws-status-client — the daemon-ws-status benchmark's client, in a process of its own (as a
 * dashboard or a CLI watching the daemon would be): a WebSocket on the event stream
 * (`?topics=status`) that notes when each `agent:status` message arrives, on the same clock
 * as the daemon's `t` field (process.hrtime: CLOCK_MONOTONIC, one clock for every process of
 * the host), and the HTTP client that toggles an agent (`POST /v1/agents/:name/stop`, then
 * `/start`). The benchmark drives it over IPC; every answer carries the id of its request:
 *
 * - `{ type: 'connect', url }` → `{ helloBytes }` once `hello` has arrived;
 * - `{ type: 'clock' }` → `{ ns }`: this process's process.hrtime.bigint(), for the clock check;
 * - `{ type: 'toggle', port, token, agent, cycles }` → `{ requests }`: `cycles` × (stop, start),
 *   each request's send and answer time, once the statuses of the last start have arrived;
 * - `{ type: 'flush' }` → `{ records }`: every `agent:status` received since the last flush;
 * - `{ type: 'exit' }`: closes the socket and exits.
 *
 * Plain JavaScript, run with plain `node` (no tsx).
 */
import { Agent, request as httpRequest } from 'node:http';
import WebSocket from 'ws';
import { serveParent } from './ipc-child.mjs';

/** `agent:status` messages received since the last flush. */
let records = [];
/** Wakes whoever waits for a record (`toggle` waiting for its last statuses). */
let wake = () => {};
let socket;
const keepAlive = new Agent({ keepAlive: true, maxSockets: 1 });

function connect(url) {
  return new Promise((resolve, reject) => {
    socket = new WebSocket(url, { perMessageDeflate: false });
    let helloBytes;
    socket.on('message', (data) => {
      const receivedNs = process.hrtime.bigint();
      const text = data.toString();
      const message = JSON.parse(text);
      if (message.type === 'hello') {
        helloBytes = text.length;
        resolve({ helloBytes });
        return;
      }
      if (message.type !== 'agent:status') return;
      records.push({
        agent: message.agent,
        status: message.status,
        previous: message.previous,
        tNs: message.t,
        receivedNs: String(receivedNs),
        latencyNs: Number(receivedNs - BigInt(message.t)),
        bytes: text.length,
      });
      wake();
    });
    socket.once('unexpected-response', (_request, response) => reject(new Error(`upgrade refused: ${response.statusCode}`)));
    socket.once('error', (error) => (helloBytes === undefined ? reject(error) : process.stderr.write(`ws-status-client: ${error.message}\n`)));
  });
}

function post(port, token, path) {
  return new Promise((resolve, reject) => {
    const headers = { Host: `127.0.0.1:${port}`, Authorization: `Bearer ${token}` };
    const request = httpRequest({ host: '127.0.0.1', port, method: 'POST', path, headers, agent: keepAlive }, (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk) => (text += chunk));
      response.on('end', () => (response.statusCode === 200 ? resolve(JSON.parse(text)) : reject(new Error(`POST ${path}: ${response.statusCode} ${text.slice(0, 300)}`))));
      response.on('error', reject);
    });
    request.on('error', reject);
    request.end();
  });
}

/** Resolves once `predicate()` holds (checked on every record), or rejects after `ms`. */
function until(predicate, ms, what) {
  return new Promise((resolve, reject) => {
    if (predicate()) return resolve();
    const timer = setTimeout(() => {
      wake = () => {};
      reject(new Error(`timed out after ${ms} ms waiting for ${what}`));
    }, ms);
    wake = () => {
      if (!predicate()) return;
      wake = () => {};
      clearTimeout(timer);
      resolve();
    };
  });
}

async function toggle({ port, token, agent, cycles }) {
  const path = (action) => `/v1/agents/${encodeURIComponent(agent)}/${action}`;
  const requests = [];
  const seen = () => records.filter((record) => record.agent === agent).length;
  const before = seen();
  for (let i = 0; i < cycles; i++) {
    for (const action of ['stop', 'start']) {
      const sentNs = process.hrtime.bigint();
      const row = await post(port, token, path(action));
      requests.push({ action, sentNs: String(sentNs), answeredNs: String(process.hrtime.bigint()), status: row.status });
    }
  }
  // Every cycle is connected → stopping → idle → starting → connected: four statuses.
  await until(() => seen() - before >= 4 * cycles, 10_000, `${4 * cycles} agent:status messages of ${agent} (got ${seen() - before})`);
  return { requests };
}

const handlers = {
  connect: ({ url }) => connect(url),
  clock: () => ({ ns: String(process.hrtime.bigint()) }),
  toggle,
  flush: () => {
    const out = records;
    records = [];
    return { records: out };
  },
};

serveParent(handlers, () => {
  socket?.close();
  keepAlive.destroy();
});
