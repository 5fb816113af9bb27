#!/usr/bin/env node
/**
 * stream-agent — the fixture agent's `{"op":"stream","count":N,"text":"x"}` prompt command,
 * without its pacing. The fixture (tests/fixtures/fixture-agent.ts) sends each chunk after
 * `sleep(0)`, i.e. a `setTimeout(0)` that Node clamps to 1 ms, so it cannot stream faster
 * than ~700-1,000 chunks/s on this machine: 200,000 chunks would take ~4-5 minutes per side
 * and the benchmark would measure that timer, not the client. This agent sends the chunks
 * back to back (each `notify` awaited, so stdout backpressure still applies) and is
 * otherwise the echo agent: same helpers, imported from the built dist/.
 *
 * Plain JavaScript, so `node bench/agents/stream-agent.mjs` runs it without a build step of
 * its own (it needs dist/, which `npm run bench` builds).
 */
import { agent, methods, PROTOCOL_VERSION, RequestError } from '@agentclientprotocol/sdk';
import { promptText, sendAgentText, serveStdio, TurnTracker } from '../../dist/examples/echo-agent.js';

const sessions = new Set();
const turns = new TurnTracker();
let counter = 0;

const app = agent({ name: 'stream-agent' })
  .onRequest(methods.agent.initialize, () => ({
    protocolVersion: PROTOCOL_VERSION,
    agentInfo: { name: 'stream-agent', version: '0.1.0' },
    agentCapabilities: { loadSession: false },
    authMethods: [],
  }))
  .onRequest(methods.agent.session.new, () => {
    const sessionId = `stream-${++counter}`;
    sessions.add(sessionId);
    return { sessionId };
  })
  .onRequest(methods.agent.session.prompt, async ({ params, client, signal }) => {
    if (!sessions.has(params.sessionId)) throw RequestError.sessionNotFound(params.sessionId);
    let command;
    try {
      command = JSON.parse(promptText(params.prompt));
    } catch {
      throw RequestError.invalidParams(undefined, 'stream-agent: the prompt must be {"op":"stream","count":N,"text":"x"}');
    }
    if (command?.op !== 'stream') throw RequestError.invalidParams(undefined, `stream-agent: unknown op '${command?.op}'`);
    const turn = turns.begin(params.sessionId, signal);
    try {
      const count = command.count ?? 1;
      const text = command.text ?? 'x';
      for (let i = 0; i < count; i++) {
        if (turn.signal.aborted) return { stopReason: 'cancelled' };
        await sendAgentText(client, params.sessionId, text);
      }
      return { stopReason: 'end_turn' };
    } finally {
      turn.end();
    }
  })
  .onNotification(methods.agent.session.cancel, ({ params }) => {
    turns.cancel(params.sessionId);
  });

serveStdio(app);
