#!/usr/bin/env node
/**
 * ws-stream-client — the daemon-stream benchmark's client, in a process of its own (as a
 * dashboard would be): a WebSocket on the event stream with `?batch=1` that counts the
 * `session:update` messages it receives and checks their seqs. The benchmark drives it over
 * IPC; every answer carries the id of its request:
 *
 * - `{ type: 'connect', url }` → `{ helloBytes, epoch, seq }` once `hello` has arrived;
 * - `{ type: 'reset' }` → the counts so far, then zeroed;
 * - `{ type: 'wait', updates, timeoutMs }` → the counts once `updates` updates have arrived
 *   since the last reset (rejects after `timeoutMs`);
 * - `{ type: 'exit' }`: closes the socket and exits.
 *
 * Counts: `updates`, `frames` (WebSocket messages), `messages` (in them), `bytes`, `resyncs`,
 * `notArrays` (frames that were not a JSON array: must be 0 with batch=1), `outOfOrder`
 * (a seq not above the one before it: must be 0), `lastSeq`.
 *
 * Plain JavaScript, run with plain `node` (no tsx).
 */
import WebSocket from 'ws';
import { serveParent } from './ipc-child.mjs';

let socket;
let counts = fresh();
let lastSeq = 0;
let wake = () => {};

function fresh() {
  return { updates: 0, frames: 0, messages: 0, bytes: 0, resyncs: 0, notArrays: 0, outOfOrder: 0 };
}

function connect(url) {
  return new Promise((resolve, reject) => {
    socket = new WebSocket(url, { perMessageDeflate: false });
    let hello;
    socket.on('message', (data) => {
      const text = data.toString();
      const parsed = JSON.parse(text);
      counts.frames++;
      counts.bytes += text.length;
      if (!Array.isArray(parsed)) counts.notArrays++;
      for (const message of Array.isArray(parsed) ? parsed : [parsed]) {
        counts.messages++;
        if (message.type === 'hello') {
          hello = { helloBytes: text.length, epoch: message.epoch, seq: message.seq };
          lastSeq = message.seq;
          resolve(hello);
          continue;
        }
        if (message.seq <= lastSeq) counts.outOfOrder++;
        lastSeq = message.seq;
        if (message.type === 'resync') counts.resyncs++;
        if (message.type === 'session:update') counts.updates++;
      }
      wake();
    });
    socket.once('unexpected-response', (_request, response) => reject(new Error(`upgrade refused: ${response.statusCode}`)));
    socket.once('error', (error) => (hello === undefined ? reject(error) : process.stderr.write(`ws-stream-client: ${error.message}\n`)));
  });
}

function waitFor(updates, timeoutMs) {
  return new Promise((resolve, reject) => {
    const done = () => counts.updates >= updates;
    if (done()) return resolve({ ...counts, lastSeq });
    const timer = setTimeout(() => {
      wake = () => {};
      reject(new Error(`${counts.updates} of ${updates} updates within ${timeoutMs} ms`));
    }, timeoutMs);
    wake = () => {
      if (!done()) return;
      wake = () => {};
      clearTimeout(timer);
      resolve({ ...counts, lastSeq });
    };
  });
}

serveParent(
  {
    connect: ({ url }) => connect(url),
    reset: () => {
      const before = { ...counts, lastSeq };
      counts = fresh();
      return before;
    },
    wait: ({ updates, timeoutMs }) => waitFor(updates, timeoutMs ?? 120_000),
  },
  () => socket?.close(),
);
