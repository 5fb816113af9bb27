/**
 * The daemon restores what the last daemon on its state directory ran, on real fixture agents
 * (in-process daemons; the CLI's SIGKILL and shutdown cases are cli-restore.test.ts): the
 * agents a caller started and did not stop are started again and their open named sessions
 * reopened with session/load, in the background — `startDaemon()` resolves while an agent that
 * hangs in its handshake is still starting (health says `restoring`), and that agent's failure
 * is logged, reported in health and on the event stream (`restore:failed`, then `restore:done`),
 * never fatal. An agent the config no longer has is skipped with a log line, a session the
 * agent cannot load is reported (not replaced), a stopped or never-started agent stays idle.
 * `restore: false` restores nothing.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startDaemon, type Daemon, type DaemonOptions, type RestoreReport } from '../../daemon/daemon.js';
import type { AgentSpec } from '../../index.js';
import { call, openEvents, streamLines, type EventClient } from '../support/daemon-http.js';
import { fixtureSpec, isRunning, scratch } from '../support/real-agents.js';

let files: ReturnType<typeof scratch>;
let daemons: Daemon[];
let events: EventClient | undefined;

const stateDir = () => files.path('state');
const runningInFile = () => (JSON.parse(readFileSync(files.path('state/daemon-state.json'), 'utf8')) as { running: { agents: string[]; sessions: Array<Record<string, string>> } }).running;
const agents = (): Record<string, AgentSpec> => ({
  loader: fixtureSpec(['--load-session', '--state-file', files.path('loader-sessions.json')]),
  plain: fixtureSpec(),
  // Hangs in its handshake once the control file says so (read at each spawn).
  hang: fixtureSpec([], { env: { FIXTURE_CONTROL_FILE: files.path('hang-control.json') }, handshakeTimeoutMs: 4000 }),
  gone: fixtureSpec(),
  idle: fixtureSpec(),
  stopped: fixtureSpec(),
});
const start = async (options: Partial<DaemonOptions> = {}, specs = agents()): Promise<Daemon> => {
  const daemon = await startDaemon({ port: 0, ...options, supervisor: { agents: specs, stateDir: stateDir(), ...options.supervisor } });
  daemons.push(daemon);
  return daemon;
};
const status = async (daemon: Daemon, agent: string) => (await call(daemon, 'GET', `/v1/agents/${agent}`)).json.status as string;

beforeEach(() => {
  files = scratch();
  daemons = [];
  events = undefined;
});

afterEach(async () => {
  events?.close();
  for (const daemon of daemons) await daemon.close().catch(() => {});
  files.cleanup();
});

describe('a daemon restores what the last one ran', () => {
  it('starts the agents again and reopens their named sessions in the background; a hang, a gone agent and an unloadable session are reported, never fatal', async () => {
    const first = await start();
    for (const agent of ['loader', 'plain', 'hang', 'gone', 'stopped']) expect((await call(first, 'POST', `/v1/agents/${agent}/start`)).status).toBe(200);
    expect((await call(first, 'POST', '/v1/agents/stopped/stop')).status).toBe(200);
    const work = await streamLines(first, 'POST', '/v1/prompt', { agent: 'loader', session: 'work', text: 'remember this', cwd: files.dir });
    const workId = work[0].sessionId as string;
    const plain = await streamLines(first, 'POST', '/v1/prompt', { agent: 'plain', session: 'p', text: 'forget this', cwd: files.dir });
    // Written as it changed: a stopped agent is not in it, an open named session is, with its directory.
    expect(runningInFile()).toEqual({
      agents: ['gone', 'hang', 'loader', 'plain'],
      sessions: [
        { agent: 'loader', name: 'work', sessionId: workId, cwd: files.dir },
        { agent: 'plain', name: 'p', sessionId: plain[0].sessionId, cwd: files.dir },
      ],
    });
    await first.close(); // a graceful close records none of its stops
    expect(runningInFile().agents).toEqual(['gone', 'hang', 'loader', 'plain']);

    writeFileSync(files.path('hang-control.json'), JSON.stringify({ neverInitialize: true }));
    const withoutGone = agents();
    delete withoutGone.gone; // the config changed: gone is no more
    const logged: string[] = [];
    const second = await start({ log: (line) => logged.push(line) }, withoutGone);
    // Listening, with `hang` still in its handshake: the restore is not done, and says so.
    const health = (await call(second, 'GET', '/v1/health')).json as { restore: RestoreReport };
    expect(health.restore.state).toBe('restoring');
    expect(health.restore.agents.find((agent) => agent.agent === 'hang')).toMatchObject({ outcome: 'pending' });
    expect(await status(second, 'hang')).toBe('starting');
    events = await openEvents(second, 'topics=restore');
    const failed = await events.next((message) => message.type === 'restore:failed' && message.agent === 'hang', 'restore:failed of hang', 15_000);
    expect(failed).toMatchObject({ session: null, outcome: 'failed', error: { kind: 'handshake_timeout' } });
    const done = await events.next((message) => message.type === 'restore:done', 'restore:done', 15_000);
    const report = (await second.restored) as RestoreReport;
    expect(done.restore).toEqual(report);
    expect(report).toMatchObject({ state: 'done', startedAt: expect.any(Number), finishedAt: expect.any(Number) });
    expect(Object.fromEntries(report.agents.map((agent) => [agent.agent, [agent.outcome, agent.error?.kind ?? null]]))).toEqual({
      gone: ['skipped', 'unknown_agent'],
      hang: ['failed', 'handshake_timeout'],
      loader: ['restored', null],
      plain: ['restored', null],
    });
    expect(Object.fromEntries(report.sessions.map((session) => [session.name, [session.outcome, session.error?.kind ?? null, session.sessionId]]))).toEqual({
      work: ['restored', null, workId],
      p: ['failed', 'not_supported', plain[0].sessionId],
    });
    expect((await call(second, 'GET', '/v1/health')).json.restore).toEqual(report);

    expect(await status(second, 'loader')).toBe('connected');
    expect(await status(second, 'plain')).toBe('connected');
    expect(await status(second, 'idle')).toBe('idle');
    expect(await status(second, 'stopped')).toBe('idle');
    expect(logged).toEqual(
      expect.arrayContaining([
        expect.stringContaining('restore: Agent "gone" is not registered any more (the config changed?): not started'),
        expect.stringMatching(/^restore: agent loader started again \(pid \d+\)$/),
        `restore: session "work" of agent loader reopened (${workId})`,
        expect.stringMatching(/^restore: agent hang could not be started again \(handshake_timeout: /),
        expect.stringMatching(new RegExp(`^restore: Session "p" of agent "plain" \\(${plain[0].sessionId}\\) could not be reopened: .*\\(not_supported\\)$`)),
        'restore: done: 2 of 4 agents and 1 of 2 named sessions restored',
      ]),
    );

    // The named session is open, under its name, with its history; a prompt continues it.
    expect((await call(second, 'GET', `/v1/sessions/${workId}`)).json).toMatchObject({ name: 'work', live: true });
    const again = await streamLines(second, 'POST', '/v1/prompt', { agent: 'loader', session: 'work', text: 'and this', cwd: files.dir });
    expect(again[0]).toMatchObject({ type: 'session', sessionId: workId, opened: 'existing' });
    expect(again.at(-1)).toMatchObject({ type: 'done', text: 'and this' });
    const history = await call(second, 'GET', `/v1/sessions/${workId}/history?limit=1000`);
    expect(history.json.entries.filter((entry: { kind: string }) => entry.kind === 'prompt').map((entry: { data: { prompt: Array<{ text: string }> } }) => entry.data.prompt[0]!.text)).toEqual(['remember this', 'and this']);
    // The session plain could not load was not replaced: its name opens a new one at its next prompt, and says why.
    const replaced = await streamLines(second, 'POST', '/v1/prompt', { agent: 'plain', session: 'p', text: 'hello', cwd: files.dir });
    expect(replaced[0]).toMatchObject({ opened: 'new', notice: expect.stringContaining('could not be resumed') });

    // What runs now: hang is still wanted (it failed; a stop would drop it), gone is dropped.
    expect(runningInFile().agents).toEqual(['hang', 'loader', 'plain']);
  }, 60_000);

  it('restore: false starts nothing, says off, and keeps what this daemon runs from then on', async () => {
    const first = await start();
    await call(first, 'POST', '/v1/agents/loader/start');
    const pid = (await call(first, 'GET', '/v1/agents/loader')).json.pid as number;
    await first.close();
    expect(isRunning(pid)).toBe(false);

    const second = await start({ restore: false });
    expect(second.restore).toMatchObject({ state: 'off', agents: [], sessions: [] });
    expect(await second.restored).toMatchObject({ state: 'off' });
    expect((await call(second, 'GET', '/v1/health')).json.restore).toMatchObject({ state: 'off' });
    expect(await status(second, 'loader')).toBe('idle');
    expect(runningInFile()).toEqual({ agents: [], sessions: [] });

    const bad = await startDaemon({ port: 0, supervisor: { stateDir: files.path('other') }, restore: 'no' as never }).catch((error: unknown) => error);
    expect(bad).toMatchObject({ kind: 'invalid_options', message: 'Option restore: must be a boolean (got "no")' });
  }, 30_000);
});
