/**
 * Working directories over the daemon's API and in the library on real fixture agents: a
 * cwd that does not exist, is a file or is relative is `400 invalid_options` (the daemon
 * resolves nothing against its own directory); a named session asked for in another
 * directory than the one it works in is refused — open, or stored and resumed by a later
 * daemon — while the same directory (or `new`) is fine; resumeSession checks a cwd given,
 * and the stored one when none is.
 */
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDaemon, type Daemon } from '../../daemon/daemon.js';
import { createSupervisor } from '../../index.js';
import { call, streamLines } from '../support/daemon-http.js';
import { fixtureSpec, scratch } from '../support/real-agents.js';

let daemon: Daemon;
let files: ReturnType<typeof scratch>;
const dir = (name: string) => files.path(name);
const daemonOptions = () => ({
  supervisor: { agents: { fixture: fixtureSpec(), loader: fixtureSpec(['--load-session', '--state-file', dir('loader-sessions.json')]) }, stateDir: dir('state') },
  port: 0,
});

beforeAll(async () => {
  files = scratch();
  for (const name of ['a', 'b']) mkdirSync(dir(name));
  symlinkSync(dir('a'), dir('a-link'));
  writeFileSync(dir('file.txt'), 'not a directory');
  daemon = await startDaemon(daemonOptions());
});

afterAll(async () => {
  await daemon?.close();
  files.cleanup();
});

describe('the daemon', () => {
  it('answers a cwd that does not exist, is a file or is relative with 400 invalid_options, and opens nothing', async () => {
    const missing = dir('does/not/exist');
    for (const [path, body] of [
      ['/v1/prompt', { agent: 'fixture', text: 'hi', cwd: missing }],
      ['/v1/prompt', { agent: 'fixture', text: 'hi', session: 'fresh', new: true, cwd: missing }],
      ['/v1/sessions', { agent: 'fixture', cwd: missing }],
      ['/v1/sessions', { agent: 'fixture', name: 'named', cwd: missing }],
      ['/v1/sessions', { agent: 'fixture', cwd: missing, resume: true }],
    ] as const) {
      const answer = await call(daemon, 'POST', path, { body });
      expect(answer.status).toBe(400);
      expect(answer.json.error).toMatchObject({ kind: 'invalid_options', message: `Option session options.cwd: ${missing} does not exist` });
    }
    const file = await call(daemon, 'POST', '/v1/prompt', { body: { agent: 'fixture', text: 'hi', cwd: dir('file.txt') } });
    expect(file.status).toBe(400);
    expect(file.json.error).toMatchObject({ kind: 'invalid_options', message: `Option session options.cwd: ${dir('file.txt')} is not a directory` });
    for (const [method, path, body] of [
      ['POST', '/v1/prompt', { agent: 'fixture', text: 'hi', cwd: 'a' }],
      ['POST', '/v1/sessions', { agent: 'fixture', cwd: './a' }],
      ['GET', '/v1/sessions?cwd=a', undefined],
    ] as const) {
      const answer = await call(daemon, method, path, body === undefined ? {} : { body });
      expect(answer.status).toBe(400);
      expect(answer.json.error).toMatchObject({ kind: 'invalid_options', message: expect.stringContaining('is a relative path; the daemon needs an absolute one') });
    }
    expect((await call(daemon, 'GET', '/v1/sessions')).json.sessions).toEqual([]);
  });

  it('opens a session in the cwd given; refuses its name in another directory; the same one (or new) is fine', async () => {
    const first = await streamLines(daemon, 'POST', '/v1/prompt', { agent: 'fixture', session: 'work', text: 'one', cwd: dir('a') });
    expect(first[0]).toMatchObject({ type: 'session', name: 'work', opened: 'new' });
    const sessionId = first[0].sessionId;
    expect((await call(daemon, 'GET', `/v1/sessions/${sessionId}`)).json).toMatchObject({ cwd: dir('a') });

    const elsewhere = await call(daemon, 'POST', '/v1/prompt', { body: { agent: 'fixture', session: 'work', text: 'two', cwd: dir('b') } });
    expect(elsewhere.status).toBe(400);
    expect(elsewhere.json.error).toMatchObject({ kind: 'invalid_options', agent: 'fixture', message: expect.stringContaining(`Session "work" of agent "fixture" works in ${dir('a')}, not in ${dir('b')}`) });
    const opened = await call(daemon, 'POST', '/v1/sessions', { body: { agent: 'fixture', name: 'work', cwd: dir('b') } });
    expect(opened.json.error).toMatchObject({ kind: 'invalid_options' });

    const same = await call(daemon, 'POST', '/v1/prompt', { body: { agent: 'fixture', session: 'work', text: 'three', cwd: dir('a') } });
    expect(same.json).toMatchObject({ sessionId, text: 'three' });
    const throughLink = await call(daemon, 'POST', '/v1/prompt', { body: { agent: 'fixture', session: 'work', text: 'four', cwd: dir('a-link') } });
    expect(throughLink.json).toMatchObject({ sessionId, text: 'four' });
    const withoutCwd = await call(daemon, 'POST', '/v1/prompt', { body: { agent: 'fixture', session: 'work', text: 'five' } });
    expect(withoutCwd.json).toMatchObject({ sessionId, text: 'five' });

    const fresh = await streamLines(daemon, 'POST', '/v1/prompt', { agent: 'fixture', session: 'work', text: 'six', cwd: dir('b'), new: true });
    expect(fresh[0]).toMatchObject({ name: 'work', opened: 'new' });
    expect((await call(daemon, 'GET', `/v1/sessions/${fresh[0].sessionId}`)).json).toMatchObject({ cwd: dir('b'), name: 'work' });
  });

  it('a later daemon refuses a stored named session in another directory, and resumes it in its own', async () => {
    const first = await streamLines(daemon, 'POST', '/v1/prompt', { agent: 'loader', session: 'kept', text: 'remember', cwd: dir('a') });
    await daemon.close();
    daemon = await startDaemon({ ...daemonOptions(), restore: false }); // resumed at its next prompt, not at start
    const elsewhere = await call(daemon, 'POST', '/v1/prompt', { body: { agent: 'loader', session: 'kept', text: 'here?', cwd: dir('b') } });
    expect(elsewhere.status).toBe(400);
    expect(elsewhere.json.error).toMatchObject({ kind: 'invalid_options', message: expect.stringContaining(`works in ${dir('a')}, not in ${dir('b')}`) });
    const resumed = await streamLines(daemon, 'POST', '/v1/prompt', { agent: 'loader', session: 'kept', text: 'there', cwd: dir('a') });
    expect(resumed[0]).toMatchObject({ sessionId: first[0].sessionId, opened: 'resumed' });
    expect(resumed.at(-1)).toMatchObject({ type: 'done', text: 'there' });
  });
});

describe('the library', () => {
  it('resumeSession refuses a cwd given that does not exist, and a stored one that is gone', async () => {
    mkdirSync(dir('gone'));
    const supervisor = createSupervisor({ agents: { loader: fixtureSpec(['--load-session', '--state-file', dir('library-sessions.json')]) }, stateDir: dir('library-state'), handleSignals: false });
    try {
      const session = await supervisor.newSession('loader', { cwd: dir('gone') });
      await session.close();
      await expect(supervisor.resumeSession(session.id, { cwd: dir('missing') })).rejects.toMatchObject({ kind: 'invalid_options', message: `Option session options.cwd: ${dir('missing')} does not exist` });
      rmSync(dir('gone'), { recursive: true });
      await expect(supervisor.resumeSession(session.id)).rejects.toMatchObject({ kind: 'invalid_options', message: `The stored cwd of session ${session.id}: ${dir('gone')} does not exist` });
      const elsewhere = await supervisor.resumeSession(session.id, { cwd: dir('b') });
      expect(elsewhere.cwd).toBe(dir('b'));
    } finally {
      await supervisor.shutdown();
    }
  });
});
