/**
 * The daemon's sessions on real fixture agents: named sessions and their queues, streamed
 * and plain prompts, cancel, permissions answered over HTTP, logs and their follow, the
 * event stream's topics and session filter, and a named session resumed by a new daemon
 * (session/load) or replaced, with a notice, when the agent cannot load sessions.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDaemon, type Daemon } from '../../daemon/daemon.js';
import { call, openEvents, streamLines } from '../support/daemon-http.js';
import { command, fixtureSpec } from '../support/real-agents.js';

let daemon: Daemon;
let stateDir: string;
let agentState: string;

const daemonOptions = () => ({
  supervisor: {
    agents: {
      fixture: fixtureSpec(['--stderr', 'hello log']),
      loader: fixtureSpec(['--load-session', '--state-file', agentState]),
    },
    stateDir,
  },
  port: 0,
});

beforeAll(async () => {
  stateDir = mkdtempSync(join(tmpdir(), 'agentvisor-daemon-sessions-'));
  agentState = join(stateDir, 'loader-sessions.json');
  daemon = await startDaemon(daemonOptions());
});

afterAll(async () => {
  await daemon?.close();
  rmSync(stateDir, { recursive: true, force: true });
});

describe('prompts', () => {
  it('streams a prompt line by line in a named session, and answers plain JSON too', async () => {
    const lines = await streamLines(daemon, 'POST', '/v1/prompt', { agent: 'fixture', session: 'work', text: 'one two three' });
    expect(lines.map((line) => line.type)).toEqual(['session', 'started', 'update', 'update', 'update', 'done']);
    expect(lines[0]).toMatchObject({ name: 'work', opened: 'new' });
    expect(lines.at(-1)).toMatchObject({ stopReason: 'end_turn', text: 'one two three' });
    const sessionId = lines[0].sessionId;

    const again = await call(daemon, 'POST', '/v1/prompt', { body: { agent: 'fixture', session: 'work', text: 'four' } });
    expect(again.json).toEqual({ sessionId, stopReason: 'end_turn', text: 'four' });
    const byId = await call(daemon, 'POST', `/v1/sessions/${sessionId}/prompt`, { body: { text: 'five' } });
    expect(byId.json).toEqual({ sessionId, stopReason: 'end_turn', text: 'five' });
    const fresh = await streamLines(daemon, 'POST', '/v1/prompt', { agent: 'fixture', session: 'work', text: 'six', new: true });
    expect(fresh[0]).toMatchObject({ opened: 'new', name: 'work' });
    expect(fresh[0].sessionId).not.toBe(sessionId);

    const history = await call(daemon, 'GET', `/v1/sessions/${sessionId}/history?limit=1000`);
    const prompts = history.json.entries.filter((entry: { kind: string }) => entry.kind === 'prompt');
    expect(prompts).toHaveLength(3);
    const firstPage = await call(daemon, 'GET', `/v1/sessions/${sessionId}/history?limit=2`);
    expect(firstPage.json.entries).toHaveLength(2);
    const secondPage = await call(daemon, 'GET', `/v1/sessions/${sessionId}/history?limit=2&after=${firstPage.json.next}`);
    expect(secondPage.json.entries[0].seq).toBeGreaterThan(firstPage.json.next);

    const row = await call(daemon, 'GET', `/v1/sessions/${sessionId}`);
    expect(row.json).toMatchObject({ agent: 'fixture', sessionId, name: null, live: true, busy: false, queued: 0 });
    const listed = await call(daemon, 'GET', '/v1/sessions?agent=fixture');
    expect(listed.json.sessions.map((session: { sessionId: string }) => session.sessionId)).toContain(sessionId);
  });

  it('queues prompts to a busy session and runs them in order', async () => {
    // The first turn waits for a permission answer: the second prompt surely finds it running.
    const firstLines: Array<{ type: string; sessionId?: string; permission?: { id: string }; text?: string }> = [];
    const first = call(daemon, 'POST', '/v1/prompt', { body: { agent: 'fixture', session: 'queue', text: command({ op: 'permission', title: 'hold' }) }, onLine: (line) => firstLines.push(line) });
    await expect.poll(() => firstLines.some((line) => line.type === 'permission')).toBe(true);
    const secondLines: Array<{ type: string }> = [];
    const second = call(daemon, 'POST', '/v1/prompt', { body: { agent: 'fixture', session: 'queue', text: 'after' }, onLine: (line) => secondLines.push(line) });
    await expect.poll(() => secondLines.some((line) => line.type === 'queued')).toBe(true);
    const held = firstLines.find((line) => line.type === 'permission')!.permission!.id;
    await call(daemon, 'POST', `/v1/permissions/${held}`, { body: { optionId: 'allow' } });
    await Promise.all([first, second]);
    expect(secondLines.map((line) => line.type)).toEqual(['session', 'queued', 'started', 'update', 'done']);
    expect(secondLines[1]).toMatchObject({ position: 1 });
    expect(firstLines[0]?.sessionId).toBe((secondLines[0] as unknown as { sessionId: string }).sessionId);
    expect(firstLines.at(-1)).toMatchObject({ type: 'done', text: 'permission:allow' });
  });

  it('cancel ends the running turn and drops the queued prompts', async () => {
    const running: Array<{ type: string; sessionId?: string }> = [];
    const slow = call(daemon, 'POST', '/v1/prompt', { body: { agent: 'fixture', session: 'cancel', text: command({ op: 'slow', count: 100, intervalMs: 50 }) }, onLine: (line) => running.push(line) });
    await expect.poll(() => running.some((line) => line.type === 'update')).toBe(true);
    const queued = streamLines(daemon, 'POST', '/v1/prompt', { agent: 'fixture', session: 'cancel', text: 'never' });
    const sessionId = running[0]!.sessionId!;
    await expect.poll(async () => (await call(daemon, 'GET', `/v1/sessions/${sessionId}`)).json.queued).toBe(1);
    const cancelled = await call(daemon, 'POST', `/v1/sessions/${sessionId}/cancel`);
    expect(cancelled.json).toEqual({ sessionId, cancelledRunning: true, droppedQueued: 1 });
    await slow;
    expect(running.at(-1)).toMatchObject({ type: 'done', stopReason: 'cancelled' });
    expect((await queued).at(-1)).toMatchObject({ type: 'done', stopReason: 'cancelled', text: '' });
  });

  it('a failed prompt ends its stream with a typed error', async () => {
    const lines = await streamLines(daemon, 'POST', '/v1/prompt', { agent: 'fixture', session: 'fail', text: command({ op: 'fail', message: 'fixture: no' }) });
    expect(lines.at(-1)).toMatchObject({ type: 'error', error: { kind: 'protocol_error' } });
    const plain = await call(daemon, 'POST', '/v1/prompt', { body: { agent: 'fixture', session: 'fail', text: command({ op: 'fail' }) } });
    expect(plain.status).toBe(424);
    expect(plain.json.error.kind).toBe('protocol_error');
    // What the agent put in the error's data is part of the message (agents put the real reason there).
    const detailed = await call(daemon, 'POST', '/v1/prompt', { body: { agent: 'fixture', session: 'fail', text: command({ op: 'fail', message: 'Internal error', data: { details: 'Claude Code process exited with code 1' } }) } });
    expect(detailed.json.error.message).toBe('session/prompt failed: Internal error: Claude Code process exited with code 1');
  });
});

describe('permissions', () => {
  it('waits for an answer over HTTP, announces it, and refuses a second answer', async () => {
    const events = await openEvents(daemon, 'topics=permissions');
    const lines: Array<{ type: string; permission?: { id: string } }> = [];
    const turn = call(daemon, 'POST', '/v1/prompt', { body: { agent: 'fixture', session: 'ask', text: command({ op: 'permission', title: 'Run rm' }) }, onLine: (line) => lines.push(line) });
    const announced = await events.next((message) => message.type === 'permission:request', 'permission:request');
    expect(announced.permission).toMatchObject({ agent: 'fixture', toolCall: { title: 'Run rm' } });
    const pending = await call(daemon, 'GET', '/v1/permissions');
    expect(pending.json.permissions).toEqual([announced.permission]);
    await expect.poll(() => lines.find((line) => line.type === 'permission')?.permission?.id).toBe(announced.permission.id);

    const wrongOption = await call(daemon, 'POST', `/v1/permissions/${announced.permission.id}`, { body: { optionId: 'sudo' } });
    expect(wrongOption.status).toBe(400);
    const answer = await call(daemon, 'POST', `/v1/permissions/${announced.permission.id}`, { body: { optionId: 'allow' } });
    expect(answer.json).toEqual({ id: announced.permission.id, outcome: { outcome: 'selected', optionId: 'allow' } });
    await turn;
    expect(lines.at(-1)).toMatchObject({ type: 'done', text: 'permission:allow' });
    await events.next((message) => message.type === 'permission:resolved' && message.id === announced.permission.id, 'permission:resolved');
    const again = await call(daemon, 'POST', `/v1/permissions/${announced.permission.id}`, { body: { cancel: true } });
    expect(again.json.error.kind).toBe('permission_not_found');
    expect((await call(daemon, 'GET', '/v1/permissions')).json.permissions).toEqual([]);
    events.close();
  });

  it('withdraws a request whose turn was cancelled', async () => {
    const events = await openEvents(daemon, 'topics=permissions');
    const turn = streamLines(daemon, 'POST', '/v1/prompt', { agent: 'fixture', session: 'withdrawn', text: command({ op: 'permission', title: 'Deploy' }) });
    const announced = await events.next((message) => message.type === 'permission:request', 'permission:request');
    await call(daemon, 'POST', `/v1/sessions/${announced.permission.sessionId}/cancel`);
    const resolved = await events.next((message) => message.type === 'permission:resolved', 'permission:resolved');
    expect(resolved).toMatchObject({ id: announced.permission.id, agent: 'fixture', sessionId: announced.permission.sessionId, outcome: { outcome: 'cancelled' } });
    expect((await turn).at(-1)).toMatchObject({ type: 'done', stopReason: 'cancelled' });
    events.close();
  });
});

describe('logs and the event stream', () => {
  it('reads the stderr lines kept, the last N, and follows new ones', async () => {
    await call(daemon, 'POST', '/v1/agents/fixture/start');
    await expect.poll(async () => (await call(daemon, 'GET', '/v1/agents/fixture/logs')).json.entries.map((entry: { line: string }) => entry.line)).toContain('hello log');
    const tail = await call(daemon, 'GET', '/v1/agents/fixture/logs?tail=1');
    expect(tail.json.entries).toHaveLength(1);

    const followed: Array<{ line: string }> = [];
    const follow = call(daemon, 'GET', '/v1/agents/fixture/logs?follow=1&tail=0', { onLine: (line) => followed.push(line) });
    const restarted = await call(daemon, 'POST', '/v1/agents/fixture/restart'); // the new process writes its line again
    expect(restarted.json.status).toBe('connected');
    await expect.poll(() => followed.map((entry) => entry.line)).toContain('hello log');
    expect(followed).toHaveLength(1);
    // The follow stays open until the daemon closes (checked in daemon-api.test.ts); leave it to afterAll.
    void follow;
  });

  it('sends status, state moves, updates of the sessions subscribed to, and session status', async () => {
    const events = await openEvents(daemon, 'topics=status,state,updates,sessions,logs,errors');
    await events.next((message) => message.type === 'hello', 'hello');
    await call(daemon, 'POST', '/v1/agents/fixture/restart');
    const statuses = events.messages.filter((message) => message.type === 'agent:status' && message.agent === 'fixture').map((message) => message.status);
    // A restart is the agent machine's own: the stop ladder in restarting, then a spawn (not a stop, then a start).
    expect(statuses).toEqual(['restarting', 'reconnecting', 'connected']);
    const connected = events.messages.find((message) => message.type === 'agent:status' && message.status === 'connected');
    expect(connected.row).toMatchObject({ name: 'fixture', status: 'connected' });
    expect(events.messages.filter((message) => message.type === 'agent:state').map((message) => message.state)).toEqual(expect.arrayContaining(['restarting.closing', 'reconnecting.spawning', 'connected.settling']));
    await events.next((message) => message.type === 'log' && message.line === 'hello log', 'log line');

    const opened = await call(daemon, 'POST', '/v1/sessions', { body: { agent: 'fixture' } });
    expect(opened.status).toBe(201);
    const watched = opened.json.sessionId;
    events.socket.send(JSON.stringify({ type: 'subscribe', sessions: [watched] }));
    await call(daemon, 'POST', '/v1/prompt', { body: { agent: 'fixture', session: 'unwatched', text: 'not for you' } });
    await call(daemon, 'POST', `/v1/sessions/${watched}/prompt`, { body: { text: 'for you' } });
    await events.next((message) => message.type === 'session:update' && message.update.content?.text === 'you', 'update of the watched session');
    const updates = events.messages.filter((message) => message.type === 'session:update');
    expect(new Set(updates.map((message) => message.sessionId))).toEqual(new Set([watched]));
    expect(events.messages.some((message) => message.type === 'session:status' && message.sessionId === watched)).toBe(true);
    const turns = events.messages.filter((message) => message.type === 'session:turn').map((message) => message.turn);
    expect(turns).toEqual([{ prompt: [{ type: 'text', text: 'for you' }] }, { stopReason: 'end_turn' }]);

    const closed = await call(daemon, 'POST', `/v1/sessions/${watched}/close`);
    expect(closed.json).toMatchObject({ sessionId: watched, live: false });
    events.socket.send('not a subscription');
    expect((await events.closed).code).toBe(1008);
    expect((await call(daemon, 'GET', '/v1/health')).status).toBe(200);
  });
});

describe('a later daemon', () => {
  it('resumes a named session with session/load, or opens a new one and says why', async () => {
    const first = await streamLines(daemon, 'POST', '/v1/prompt', { agent: 'loader', session: 'long', text: 'remember this' });
    const loaderSession = first[0].sessionId;
    const plain = await streamLines(daemon, 'POST', '/v1/prompt', { agent: 'fixture', session: 'short', text: 'forget this' });
    await daemon.close();

    // restore: false: the name is resumed at its next prompt (the restore at start: daemon-restore.test.ts).
    daemon = await startDaemon({ ...daemonOptions(), restore: false });
    const resumed = await streamLines(daemon, 'POST', '/v1/prompt', { agent: 'loader', session: 'long', text: 'and this' });
    expect(resumed[0]).toMatchObject({ type: 'session', sessionId: loaderSession, opened: 'resumed' });
    expect(resumed.at(-1)).toMatchObject({ type: 'done', text: 'and this' });
    const history = await call(daemon, 'GET', `/v1/sessions/${loaderSession}/history?limit=1000`);
    expect(history.json.entries.filter((entry: { kind: string }) => entry.kind === 'prompt')).toHaveLength(2);

    const replaced = await streamLines(daemon, 'POST', '/v1/prompt', { agent: 'fixture', session: 'short', text: 'hello again' });
    expect(replaced[0]).toMatchObject({ opened: 'new', notice: expect.stringContaining('could not be resumed') });
    expect(replaced[0].sessionId).not.toBe(plain[0].sessionId);
  });
});
