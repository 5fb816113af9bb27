#!/usr/bin/env node
/**
 * prompt-load-client — the daemon-ws-status benchmark's load, in a process of its own (as
 * `agentvisor prompt` clients would be): keeps one prompt turn running per agent through the
 * daemon's own API, `POST /v1/prompt` with `Accept: application/x-ndjson` (the daemon opens
 * or reuses the agent's named session `default`, runs the turn, stores every update and
 * streams it back as a line), starting the next turn as soon as one ends. It counts the
 * update lines without parsing them. Driven over IPC; every answer carries its request's id:
 *
 * - `{ type: 'configure', port, token, agents, text }` → `{}`;
 * - `{ type: 'once', text }` → `{ updates }`: one turn of `text` on every agent, together (opens the sessions);
 * - `{ type: 'start' }` → `{}` once every agent's turn has streamed its first update;
 * - `{ type: 'stop' }` → `{ updates, turns, ms, perAgent }`: stops starting turns, cancels the
 *   running ones (`POST /v1/sessions/:id/cancel`), and answers once every turn has ended;
 * - `{ type: 'exit' }`.
 *
 * Plain JavaScript, run with plain `node` (no tsx).
 */
import { Agent, request as httpRequest } from 'node:http';
import { serveParent } from './ipc-child.mjs';

let config;
const keepAlive = new Agent({ keepAlive: true });
/** Per agent: its session id (from the stream's `session` line) and the turn in flight. */
const agents = new Map();
let running = false;
let loops = [];
let counting = { updates: 0, turns: 0, startedAt: 0, errors: [] };

function headers(extra = {}) {
  return { Host: `127.0.0.1:${config.port}`, Authorization: `Bearer ${config.token}`, ...extra };
}

/** One turn: resolves with the number of update lines once the `done` (or `error`) line is in. */
function turn(name, onFirstUpdate, text = config.text) {
  const state = agents.get(name);
  return new Promise((resolve, reject) => {
    const body = JSON.stringify({ agent: name, text });
    const request = httpRequest(
      { host: '127.0.0.1', port: config.port, method: 'POST', path: '/v1/prompt', agent: keepAlive, headers: headers({ 'Content-Type': 'application/json', Accept: 'application/x-ndjson' }) },
      (response) => {
        if (response.statusCode !== 200) {
          let text = '';
          response.on('data', (chunk) => (text += chunk));
          response.on('end', () => reject(new Error(`POST /v1/prompt (${name}): ${response.statusCode} ${text.slice(0, 300)}`)));
          return;
        }
        let pending = '';
        let updates = 0;
        let last;
        response.setEncoding('utf8');
        response.on('data', (chunk) => {
          pending += chunk;
          let newline;
          while ((newline = pending.indexOf('\n')) >= 0) {
            const line = pending.slice(0, newline);
            pending = pending.slice(newline + 1);
            // Update lines are only counted; the others (session, started, done, error) are read.
            if (line.startsWith('{"type":"update"')) {
              if (updates++ === 0) onFirstUpdate?.();
              continue;
            }
            const message = JSON.parse(line);
            if (message.type === 'session') state.sessionId = message.sessionId;
            else if (message.type === 'done' || message.type === 'error') last = message;
          }
        });
        response.on('end', () => {
          if (last?.type === 'error') reject(new Error(`prompt (${name}): ${last.error.kind}: ${last.error.message}`));
          else if (last?.type !== 'done') reject(new Error(`prompt (${name}): the stream ended without done`));
          else resolve({ updates, stopReason: last.stopReason });
        });
        response.on('error', reject);
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}

async function loop(name, onFirstUpdate) {
  const state = agents.get(name);
  let first = onFirstUpdate;
  while (running) {
    state.inTurn = true;
    try {
      const { updates } = await turn(name, first);
      first = undefined;
      counting.updates += updates;
      counting.turns += 1;
      state.updates += updates;
    } catch (error) {
      counting.errors.push(error instanceof Error ? error.message : String(error));
      first?.();
      first = undefined;
      if (!running) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    } finally {
      state.inTurn = false;
    }
  }
}

function cancel(sessionId) {
  return new Promise((resolve) => {
    const request = httpRequest({ host: '127.0.0.1', port: config.port, method: 'POST', path: `/v1/sessions/${encodeURIComponent(sessionId)}/cancel`, agent: keepAlive, headers: headers() }, (response) => {
      response.resume();
      response.on('end', resolve);
      response.on('error', resolve);
    });
    request.on('error', resolve);
    request.end();
  });
}

const handlers = {
  configure(message) {
    config = { port: message.port, token: message.token, text: message.text };
    for (const name of message.agents) agents.set(name, { sessionId: undefined, inTurn: false, updates: 0 });
    return {};
  },
  async once(message) {
    const results = await Promise.all([...agents.keys()].map((name) => turn(name, undefined, message.text)));
    return { updates: results.reduce((sum, result) => sum + result.updates, 0) };
  },
  async start() {
    if (running) throw new Error('already running');
    running = true;
    counting = { updates: 0, turns: 0, startedAt: performance.now(), errors: [] };
    for (const state of agents.values()) state.updates = 0;
    let waiting = agents.size;
    await new Promise((resolve) => {
      loops = [...agents.keys()].map((name) => loop(name, () => --waiting === 0 && resolve()));
    });
    return {};
  },
  async stop() {
    running = false;
    const stoppedAt = performance.now();
    await Promise.all([...agents.values()].filter((state) => state.inTurn && state.sessionId).map((state) => cancel(state.sessionId)));
    await Promise.all(loops);
    loops = [];
    return {
      updates: counting.updates,
      turns: counting.turns,
      ms: stoppedAt - counting.startedAt,
      errors: counting.errors.slice(0, 5),
      errorCount: counting.errors.length,
      perAgent: [...agents.values()].map((state) => state.updates),
    };
  },
};

serveParent(handlers, () => {
  running = false;
  keepAlive.destroy();
});
