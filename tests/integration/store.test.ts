/**
 * The store on real processes and real SQLite files (docs/store.md): what a supervisor keeps
 * (sessions, transcripts with prompts and permissions, stderr lines, the event log), reading
 * it back, resuming a session after the host was killed mid-stream, retention, faults (a
 * corrupt file, a full database) and secrets (no env value in the file).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync, writeFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { createSupervisor, openSqliteStore, type AgentError, type LogEntry, type TranscriptEntry } from '../../index.js';
import { streamAgentScript } from '../../bench/lib/agentvisor.js';
import { command, eventually, fixtureAgentScript, fixtureSpec, useRealAgentEnvironment } from '../support/real-agents.js';

const env = useRealAgentEnvironment();
const root = fileURLToPath(new URL('../..', import.meta.url));

async function collect<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const entries: T[] = [];
  for await (const entry of iterable) entries.push(entry);
  return entries;
}

/** Whether this host lets a test mount a tmpfs in a mount namespace of its own (root, util-linux unshare). */
const canMountTmpfs = (() => {
  const dir = mkdtempSync(join(tmpdir(), 'agentvisor-tmpfs-'));
  try {
    execFileSync('unshare', ['--mount', 'sh', '-c', 'mount -t tmpfs -o size=64k tmpfs "$0"', dir], { stdio: 'ignore' });
    return true;
  } catch {
    console.warn('store full-disk test skipped: cannot mount a tmpfs in a mount namespace here (needs root and util-linux unshare)');
    return false;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
})();

const updatesOf = (entries: TranscriptEntry[]) => entries.filter((entry) => entry.kind === 'update').map((entry) => entry.data as { sessionUpdate: string; content?: { text?: string } });
const textOf = (entries: TranscriptEntry[]) => updatesOf(entries).filter((update) => update.sessionUpdate === 'agent_message_chunk').map((update) => update.content?.text ?? '');

describe('what the store keeps', () => {
  it('a complete transcript of 10,000 updates, in order, with the prompt and how the turn ended', async () => {
    const stateDir = env.files.path('state');
    env.supervisor = createSupervisor({ stateDir, agents: { stream: { command: process.execPath, args: [streamAgentScript] } } });
    const session = await env.supervisor.newSession('stream', { cwd: env.files.dir });
    expect(await session.prompt(command({ op: 'stream', count: 10_000, text: 'x' }))).toBe('end_turn');
    const entries = await collect(env.supervisor.history(session.id));
    expect(entries[0]).toMatchObject({ kind: 'prompt', agent: 'stream', sessionId: session.id, data: { prompt: [{ type: 'text' }] } });
    expect(textOf(entries)).toHaveLength(10_000);
    expect(entries.at(-1)).toMatchObject({ kind: 'prompt_result', data: { stopReason: 'end_turn' } });
    const seqs = entries.map((entry) => entry.seq);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(new Set(seqs).size).toBe(seqs.length);
    const times = entries.map((entry) => entry.at);
    expect(times).toEqual([...times].sort((a, b) => a - b));
    // Paging: after a seq, with a limit.
    const page = await collect(env.supervisor.history(session.id, { after: entries[99]!.seq, limit: 10 }));
    expect(page).toEqual(entries.slice(100, 110));
    expect(await env.supervisor.sessions({ agent: 'stream' })).toEqual([
      expect.objectContaining({ agent: 'stream', sessionId: session.id, cwd: env.files.dir, state: 'completed', stopReason: 'end_turn' }),
    ]);
  });

  it('permission requests and their answers, stderr lines (live and stored), the event log; never an env value', async () => {
    const stateDir = env.files.path('state');
    env.supervisor = createSupervisor({
      stateDir,
      permissions: 'allow',
      agents: { fixture: fixtureSpec(['--stderr', 'first line\\nsecond line'], { env: { SECRET_TOKEN: 'hunter2-never-stored' } }) },
    });
    const live: string[] = [];
    env.supervisor.on('agent:stderr', ({ agent, line }) => live.push(`${agent}: ${line}`));
    const session = await env.supervisor.newSession('fixture', { cwd: env.files.dir });
    await session.prompt(command({ op: 'permission', title: 'Edit file' }));
    await session.prompt(command({ op: 'updates' }));
    const entries = await collect(env.supervisor.history(session.id));
    expect(updatesOf(entries).map((update) => update.sessionUpdate)).toContain('tool_call');
    expect((await env.supervisor.sessions())[0]).toMatchObject({ sessionId: session.id, title: 'Fixture session' });
    const permission = entries.find((entry) => entry.kind === 'permission')!;
    expect(permission.data).toMatchObject({ toolCall: { title: 'Edit file' }, options: expect.any(Array) });
    const requestId = (permission.data as { requestId: string }).requestId;
    expect(entries.find((entry) => entry.kind === 'permission_outcome')).toMatchObject({ data: { requestId, outcome: { outcome: 'selected' } } });
    expect(entries.findIndex((entry) => entry.kind === 'permission')).toBeLessThan(entries.findIndex((entry) => entry.kind === 'permission_outcome'));

    await eventually(() => live.length >= 2, 'the live stderr lines');
    expect(live).toEqual(['fixture: first line', 'fixture: second line']);
    const logs = await collect(env.supervisor.logs('fixture'));
    expect(logs.map((entry) => entry.line)).toEqual(['first line', 'second line']);

    const events = await collect(env.supervisor.eventLog({ agent: 'fixture' }));
    expect(events.filter((entry) => entry.event === 'agent:status').map((entry) => (entry.data as { status: string }).status)).toEqual(['starting', 'connected']);

    await env.supervisor.shutdown();
    const files = readdirSync(stateDir).filter((name) => name.startsWith('agentvisor.db'));
    for (const name of files) expect(readFileSync(join(stateDir, name)).includes('hunter2-never-stored'), name).toBe(false);
    const reopened = openSqliteStore(join(stateDir, 'agentvisor.db'));
    try {
      const [session2] = await reopened.sessions({ agent: 'fixture' });
      expect(session2).toMatchObject({ state: 'stopped' });
    } finally {
      reopened.close();
    }
  });

  it('logs({ follow: true }) yields the stored lines, then each new one, until the loop breaks', async () => {
    env.supervisor = createSupervisor({ stateDir: env.files.path('state'), agents: { fixture: fixtureSpec(['--stderr', 'boot']) } });
    await env.supervisor.ensureAgent('fixture');
    const seen: LogEntry[] = [];
    const following = (async () => {
      for await (const entry of env.supervisor!.logs('fixture', { follow: true })) {
        seen.push(entry);
        if (seen.length === 3) break;
      }
    })();
    await eventually(() => seen.length === 1, 'the stored line');
    for (const round of [2, 3]) {
      await env.supervisor.stop('fixture');
      await env.supervisor.ensureAgent('fixture'); // a new process writes its start-up line again
      await eventually(() => seen.length === round, `line ${round}`);
    }
    await following;
    expect(seen.map((entry) => entry.line)).toEqual(['boot', 'boot', 'boot']);
    expect(seen.map((entry) => entry.seq)).toEqual([...seen.map((entry) => entry.seq)].sort((a, b) => a - b));

    // A follow ends when the supervisor shuts down.
    const lines: string[] = [];
    const ended = (async () => {
      for await (const entry of env.supervisor!.logs('fixture', { follow: true })) lines.push(entry.line);
    })();
    await eventually(() => lines.length === 3, 'the stored lines again');
    await env.supervisor.shutdown();
    await ended;
    expect(lines).toEqual(['boot', 'boot', 'boot']);
  });

  it('retention: the store keeps at most what it is told, enforced when writes come in and at shutdown', async () => {
    const stateDir = env.files.path('state');
    env.supervisor = createSupervisor({ stateDir, retention: { stderr: { maxCount: 3 }, events: { maxCount: 2 } }, agents: { fixture: fixtureSpec(['--stderr', 'a\\nb\\nc\\nd\\ne']) } });
    await env.supervisor.ensureAgent('fixture');
    await env.supervisor.stop('fixture');
    await env.supervisor.ensureAgent('fixture');
    await env.supervisor.shutdown();
    const store = openSqliteStore(join(stateDir, 'agentvisor.db'));
    try {
      expect((await store.logs('fixture', { after: 0, limit: 100 })).map((entry) => entry.line)).toEqual(['c', 'd', 'e']);
      expect(await store.events({}, { after: 0, limit: 100 })).toHaveLength(2);
    } finally {
      store.close();
    }
  });
});

describe('resuming', () => {
  it('newSession({ resume: true }) picks the latest session of that agent and cwd; none stored: a new one', async () => {
    const flags = ['--load-session', '--state-file', env.files.path('fixture-state.json')];
    env.supervisor = createSupervisor({ stateDir: env.files.path('state'), agents: { fixture: fixtureSpec(flags) } });
    const first = await env.supervisor.newSession('fixture', { cwd: env.files.dir, resume: true });
    await first.close();
    const second = await env.supervisor.newSession('fixture', { cwd: env.files.dir });
    await second.prompt('hello there');
    await second.close();
    const resumed = await env.supervisor.newSession('fixture', { cwd: env.files.dir, resume: true });
    expect(resumed.id).toBe(second.id);
    expect((await env.supervisor.sessions({ cwd: env.files.dir })).map((session) => session.sessionId)).toEqual([second.id, first.id]);
  });

  it('resume: true where the agent refuses the load (it does not know the session): a new session says why, and the refused one is not left open', async () => {
    const first = createSupervisor({ stateDir: env.files.path('state'), agents: { fixture: fixtureSpec(['--load-session']) } });
    const old = await first.newSession('fixture', { cwd: env.files.dir });
    await old.prompt('remember this');
    await first.shutdown();
    // A new process with no state file: it never heard of the stored session.
    env.supervisor = createSupervisor({ stateDir: env.files.path('state'), agents: { fixture: fixtureSpec(['--load-session']) } });
    const fresh = await env.supervisor.newSession('fixture', { cwd: env.files.dir, resume: true });
    expect(fresh.id).not.toBe(old.id);
    expect(fresh.resumeFallback).toMatchObject({ sessionId: old.id, kind: 'protocol_error' });
    expect(env.supervisor.openSessions().map((session) => session.id)).toEqual([fresh.id]);
  });

  it('an agent that cannot load sessions: resume: true opens a new session that says why (never silently); resumeSession is not_supported; an unknown id: session_not_found', async () => {
    env.supervisor = createSupervisor({ stateDir: env.files.path('state'), agents: { fixture: fixtureSpec() } });
    const session = await env.supervisor.newSession('fixture', { cwd: env.files.dir });
    expect(session.resumeFallback).toBeNull();
    await session.close();
    const fresh = await env.supervisor.newSession('fixture', { cwd: env.files.dir, resume: true });
    expect(fresh.id).not.toBe(session.id);
    expect(fresh.resumeFallback).toEqual({ sessionId: session.id, kind: 'not_supported', message: expect.stringMatching(/load/) });
    expect(await fresh.prompt('still works')).toBe('end_turn');
    await fresh.close();
    await expect(env.supervisor.resumeSession(session.id)).rejects.toMatchObject({ kind: 'not_supported' });
    await expect(env.supervisor.resumeSession('no-such-session')).rejects.toMatchObject({ kind: 'session_not_found' });
    expect(env.supervisor.openSessions()).toEqual([]);
  });

  it('a host killed mid-stream: the transcript up to the last flushed batch is intact, and the session resumes through session/load', async () => {
    const stateDir = env.files.path('state');
    const fixtureState = env.files.path('fixture-state.json');
    const flags = ['--load-session', '--state-file', fixtureState];
    const hostScript = `
      import { createSupervisor } from 'agentvisor';
      const { stateDir, cwd, args } = JSON.parse(process.env.HOST_SETTINGS);
      const supervisor = createSupervisor({ stateDir, agents: { fixture: { command: process.execPath, args } } });
      const session = await supervisor.newSession('fixture', { cwd });
      await session.prompt('a finished turn');
      console.log(JSON.stringify({ sessionId: session.id }));
      await session.prompt(JSON.stringify({ op: 'slow', count: 100000, intervalMs: 0 }));
    `;
    const settings = { stateDir, cwd: env.files.dir, args: [fixtureAgentScript, ...flags] };
    const host = execa(process.execPath, ['--input-type=module', '-e', hostScript], { cwd: root, env: { HOST_SETTINGS: JSON.stringify(settings) }, reject: false, buffer: false });
    const { sessionId } = await new Promise<{ sessionId: string }>((resolve, reject) => {
      host.stdout!.once('data', (chunk: Buffer) => resolve(JSON.parse(chunk.toString()) as { sessionId: string }));
      void host.then((result) => reject(new Error(`the host exited: ${String(result.exitCode)} ${String(result.stderr)}`)));
    });
    // Read the file from beside the host while it streams, then kill it mid-stream.
    const reader = openSqliteStore(join(stateDir, 'agentvisor.db'));
    let storedBeforeKill = 0;
    try {
      // The SQLite store reads synchronously.
      await eventually(() => (storedBeforeKill = (reader.transcript('fixture', sessionId, { after: 0, limit: 100_000 }) as TranscriptEntry[]).length) > 1_000, 'a thousand entries in the file', 30_000);
    } finally {
      reader.close();
    }
    host.kill('SIGKILL');
    await host;

    env.supervisor = createSupervisor({ stateDir, agents: { fixture: fixtureSpec(flags) } });
    const before = await collect(env.supervisor.history(sessionId));
    expect(before.length).toBeGreaterThanOrEqual(storedBeforeKill);
    // The finished turn, then the second prompt, then its chunks: `slow 1`, `slow 2`, … with no gap.
    expect(before.map((entry) => entry.kind).slice(0, 6)).toEqual(['prompt', 'update', 'update', 'update', 'prompt_result', 'prompt']);
    const slow = textOf(before).filter((text) => text.startsWith('slow '));
    expect(slow.length, 'every chunk seen in the file before the kill').toBeGreaterThanOrEqual(storedBeforeKill - 6);
    expect(slow).toEqual(slow.map((_, i) => `slow ${i + 1}\n`));

    const resumed = await env.supervisor.resumeSession(sessionId);
    expect(resumed.id).toBe(sessionId);
    const afterLoad = await collect(env.supervisor.history(sessionId));
    expect(afterLoad, 'the replayed history is not stored twice').toEqual(before);
    expect(await resumed.prompt('after the restart')).toBe('end_turn');
    const after = await collect(env.supervisor.history(sessionId));
    expect(textOf(after.slice(before.length)).join('')).toBe('after the restart');
  });
});

describe('faults', () => {
  it('a corrupt database file: createSupervisor throws store_failed naming the file, and starts nothing', () => {
    const stateDir = env.files.path('state');
    mkdirSync(stateDir);
    writeFileSync(join(stateDir, 'agentvisor.db'), 'this is not a database, it is a text file that happens to be here '.repeat(100));
    let error: AgentError | undefined;
    try {
      createSupervisor({ stateDir, agents: { fixture: fixtureSpec() } });
    } catch (thrown) {
      error = thrown as AgentError;
    }
    expect(error).toMatchObject({ kind: 'store_failed', message: expect.stringContaining(join(stateDir, 'agentvisor.db')) });
  });

  it('a full database: store:error events while the agent keeps running and its turns complete', async () => {
    const store = openSqliteStore(env.files.path('small.db'), { maxPageCount: 64 });
    env.supervisor = createSupervisor({ store, agents: { stream: { command: process.execPath, args: [streamAgentScript] } } });
    const errors: Array<{ kind: string; message: string; droppedWrites: number }> = [];
    env.supervisor.on('store:error', (event) => errors.push(event));
    const session = await env.supervisor.newSession('stream', { cwd: env.files.dir });
    expect(await session.prompt(command({ op: 'stream', count: 20_000, text: 'x'.repeat(100) }))).toBe('end_turn');
    await eventually(() => errors.length > 0, 'a store:error event');
    expect(errors[0]).toMatchObject({ kind: 'store_failed', message: expect.stringMatching(/full/i) });
    expect(env.supervisor.getStatus('stream')).toBe('connected');
    expect(await session.prompt(command({ op: 'stream', count: 3, text: 'y' }))).toBe('end_turn');
  });

  it.skipIf(!canMountTmpfs)('a real full disk (the state directory on a 1 MiB tmpfs): store:error events, the agent keeps running and answering', async () => {
    const hostScript = `
      import { createSupervisor } from 'agentvisor';
      const { stateDir, args } = JSON.parse(process.env.HOST_SETTINGS);
      const supervisor = createSupervisor({ stateDir, handleSignals: false, agents: { stream: { command: process.execPath, args } } });
      const errors = [];
      supervisor.on('store:error', (event) => errors.push(event));
      const session = await supervisor.newSession('stream', { cwd: process.cwd() });
      const first = await session.prompt(JSON.stringify({ op: 'stream', count: 30000, text: 'x'.repeat(100) }));
      await new Promise((resolve) => setTimeout(resolve, 50));
      const second = await session.prompt(JSON.stringify({ op: 'stream', count: 3, text: 'y' }));
      console.log(JSON.stringify({ first, second, status: supervisor.getStatus('stream'), errors: errors.slice(0, 2) }));
      await supervisor.shutdown();
    `;
    const settings = { stateDir: env.files.path('full'), args: [streamAgentScript] };
    mkdirSync(settings.stateDir);
    const result = await execa('unshare', ['--mount', 'sh', '-c', 'mount -t tmpfs -o size=1m tmpfs "$0" && exec "$1" --input-type=module -e "$2"', settings.stateDir, process.execPath, hostScript], {
      cwd: root,
      env: { HOST_SETTINGS: JSON.stringify(settings) },
      reject: false,
      timeout: 60_000,
    });
    expect(result.exitCode, result.stderr).toBe(0);
    const outcome = JSON.parse(result.stdout) as { first: string; second: string; status: string; errors: Array<{ kind: string; message: string }> };
    expect(outcome).toMatchObject({ first: 'end_turn', second: 'end_turn', status: 'connected' });
    expect(outcome.errors[0]).toMatchObject({ kind: 'store_failed', message: expect.stringMatching(/full|space/i) });
  });

  it("option store must be 'sqlite', 'memory' or a Store; retention limits must be numbers", () => {
    expect(() => createSupervisor({ store: 'postgres' as never })).toThrow(expect.objectContaining({ kind: 'invalid_options' }));
    expect(() => createSupervisor({ store: { write() {} } as never })).toThrow(expect.objectContaining({ kind: 'invalid_options', message: expect.stringContaining('options.store: must be') }));
    expect(() => createSupervisor({ retention: { stderr: { maxCount: -1 } } })).toThrow(expect.objectContaining({ kind: 'invalid_options' }));
    expect(() => createSupervisor({ retention: { logs: {} } as never })).toThrow(expect.objectContaining({ kind: 'invalid_options' }));
  });
});
