/**
 * The whole protocol from the terminal: the built CLI against `agentvisor serve` (a real
 * process, its own state directory and config) and the real fixture agent speaking every part
 * of ACP (`--acp-features`): `sessions new|close|resume|delete`, `sessions list --from-agent`,
 * `sessions show`, `status`, `ls`'s mode/model/usage, `set-mode`/`set-model`/`set`,
 * `prompt --file`, the permission flags of `prompt`, `sessions new` and `run`, `elicitations`
 * (and the questions a prompt asks on a real pseudo-terminal), `--json` on every command, and
 * `logs -f` across a restart and a daemon that goes away. Each with its bad input.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { spawn as spawnPty, type IPty } from '@lydell/node-pty';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { AgentsBody, ElicitationsBody, SessionRow, SessionsBody } from '../../daemon/api-types.js';
import { createSupervisor } from '../../index.js';
import { cliEnvironment, cliMain, startCli, stopServe, waitForLine } from '../support/cli-process.js';
import { fixtureSpec, isRunning, scratch } from '../support/real-agents.js';

// Each test runs many CLI processes one after another (each a Node start), some starting agents.
vi.setConfig({ testTimeout: 180_000, hookTimeout: 60_000 });

let files: ReturnType<typeof scratch>;
let env: Record<string, string>;
let serve: ReturnType<typeof startCli> | undefined;

const stateDir = () => files.path('state');
const globals = () => ['--state-dir', stateDir(), '--config', files.path('agentvisor.config.json')];
/**
 * `agentvisor --state-dir <the daemon's> --config <scratch config> ...args`, in the scratch
 * folder. A generous safety net: on a loaded host a CLI that starts an agent takes seconds.
 */
const cli = (...args: string[]) => startCli([...globals(), ...args], { env, cwd: files.dir, timeout: 60_000 });
/** A line the CLI prints, waited for with the same safety net. */
const waitFor = (stream: NodeJS.ReadableStream, matches: (line: string) => boolean, what: string) => waitForLine(stream, matches, what, 60_000);
const jsonLines = (text: string) => text.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
const json = <T>(text: string) => JSON.parse(text) as T;
/** The fixture's agent-side state file: its sessions outlive its process, for session/list and resume. */
const fxState = () => files.path('fx-state.json');
const command = (value: Record<string, unknown>) => JSON.stringify(value);

async function sessionsOf(agent: string): Promise<SessionRow[]> {
  return json<SessionsBody>((await cli('sessions', '--agent', agent, '--json')).stdout).sessions;
}
const named = async (agent: string, name: string) => (await sessionsOf(agent)).find((row) => row.name === name && row.live);

/** A PNG's first bytes and a little more: an image by its signature. */
const png = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.from('0000000d49484452', 'hex'), Buffer.alloc(40, 7)]);

beforeAll(async () => {
  files = scratch();
  env = cliEnvironment(files.dir);
  const agents = {
    fx: fixtureSpec(['--acp-features', '--state-file', fxState(), '--stderr', 'fx says hello']),
    gem: fixtureSpec(['--acp-features', '--unstable-models', '--mode-announcement', 'none']),
    plain: fixtureSpec(['--stderr', 'plain says hello']),
  };
  writeFileSync(files.path('agentvisor.config.json'), JSON.stringify({ agents }));
  serve = startCli([...globals(), 'serve', '--port', '0'], { env, cwd: files.dir, timeout: 0 });
  await waitFor(serve.stdout, (line) => line.startsWith('dashboard: '), 'the daemon to listen');
});

afterAll(async () => {
  await stopServe(serve);
  files.cleanup();
});

describe('sessions new and close', () => {
  it('new opens a named session (default "default") where the CLI runs, says when one is open already, and refuses bad input before anything opens', async () => {
    const opened = await cli('sessions', 'new', 'fx', '-s', 'work');
    expect(opened.exitCode).toBe(0);
    const id = /^fx\/work: opened session (\S+) in (.+)\n$/.exec(opened.stdout);
    expect(id?.[2]).toBe(files.dir);
    const [again, quiet, dflt] = await Promise.all([cli('sessions', 'new', 'fx', '-s', 'work'), cli('sessions', 'new', 'fx', '-s', 'work', '--format', 'quiet'), cli('sessions', 'new', 'fx')]);
    expect(again.stdout).toBe(`fx/work: already open: session ${id![1]} in ${files.dir}\n`);
    expect(quiet.stdout).toBe(`${id![1]}\n`);
    expect(dflt.stdout).toMatch(/^fx\/default: opened session \S+ in /);
    expect(await named('fx', 'work')).toMatchObject({ sessionId: id![1], cwd: files.dir, live: true });

    const [missingCwd, bothFlags, unknown, otherPolicy] = await Promise.all([
      cli('sessions', 'new', 'fx', '-s', 'elsewhere', '--cwd', files.path('no-such-dir')),
      cli('sessions', 'new', 'fx', '-s', 'both', '--approve-all', '--deny-all'),
      cli('sessions', 'new', 'nope'),
      cli('sessions', 'new', 'fx', '-s', 'work', '--deny-all'),
    ]);
    expect(missingCwd.exitCode).toBe(2);
    expect(missingCwd.stderr).toContain(files.path('no-such-dir'));
    expect(bothFlags.exitCode).toBe(2);
    expect(bothFlags.stderr).toContain("option '--approve-all' cannot be used with option '--deny-all'");
    expect(unknown.exitCode).toBe(2);
    expect(unknown.stderr).toContain('kind: unknown_agent (exit 2)');
    // Open with other inputs than those it was opened with: refused, not silently ignored.
    expect(otherPolicy.exitCode).toBe(2);
    expect(otherPolicy.stderr).toContain('kind: invalid_options (exit 2)');
    const names = (await sessionsOf('fx')).map((row) => row.name);
    expect(names).not.toContain('elsewhere');
    expect(names).not.toContain('both');
  });

  it('close closes a session by id, or an agent\'s open one by name; says when there is nothing to close; refuses an unknown one', async () => {
    expect((await cli('sessions', 'new', 'fx', '-s', 'short')).exitCode).toBe(0);
    const { sessionId } = (await named('fx', 'short'))!;
    const closed = await cli('sessions', 'close', 'fx', '-s', 'short');
    expect(closed).toMatchObject({ exitCode: 0, stdout: `closed session ${sessionId} (fx/short)\n` });
    expect(await named('fx', 'short')).toBeUndefined();
    const [byId, byName, unknown] = await Promise.all([cli('sessions', 'close', sessionId), cli('sessions', 'close', 'fx', '-s', 'short'), cli('sessions', 'close', 'no-such-session')]);
    expect(byId).toMatchObject({ exitCode: 0, stdout: `session ${sessionId} (fx/short) is not open: nothing to close\n` });
    expect(byName.exitCode).toBe(2);
    expect(byName.stderr).toContain('Agent "fx" has no open session named "short" in the daemon');
    expect(unknown.exitCode).toBe(2);
    expect(unknown.stderr).toContain('kind: session_not_found (exit 2)');

    expect((await cli('sessions', 'new', 'fx', '-s', 'by-id')).exitCode).toBe(0);
    const other = (await named('fx', 'by-id'))!;
    const closedById = await cli('sessions', 'close', other.sessionId, '--json');
    expect(json<SessionRow>(closedById.stdout)).toMatchObject({ sessionId: other.sessionId, live: false });
  });
});

describe('the session controls', () => {
  it('set-mode, set-model and set change the named session, as sessions show then says', async () => {
    const mode = await cli('set-mode', 'fx', 'plan', '-s', 'work');
    expect(mode).toMatchObject({ exitCode: 0, stdout: 'fx/work: mode plan\n' });
    expect(await cli('set-model', 'fx', 'fixture-large', '-s', 'work')).toMatchObject({ exitCode: 0, stdout: 'fx/work: model fixture-large\n' });
    expect(await cli('set', 'fx', 'fast', 'true', '-s', 'work')).toMatchObject({ exitCode: 0, stdout: 'fx/work: fast true\n' });
    const { sessionId } = (await named('fx', 'work'))!;
    const show = await cli('sessions', 'show', sessionId);
    expect(show.stdout).toMatch(/^mode: +plan {2}\(of default \(Default\), plan \(Plan\), yolo \(Yolo\), locked \(Locked\)\)$/m);
    expect(show.stdout).toMatch(/^model: +fixture-large {2}\(of fixture-small \(Small\), fixture-large \(Large\), fixture-forbidden \(Forbidden\)\)$/m);
    expect(show.stdout).toMatch(/^ {2}fast +true +Fast: true or false$/m);
    const asJson = await cli('set-mode', 'fx', 'default', '-s', 'work', '--json');
    expect(json<SessionRow>(asJson.stdout).modes?.currentModeId).toBe('default');
    // The unstable models of a gemini-like agent: session/set_model.
    expect((await cli('sessions', 'new', 'gem')).exitCode).toBe(0);
    expect(await cli('set-model', 'gem', 'fixture-large')).toMatchObject({ exitCode: 0, stdout: 'gem/default: model fixture-large\n' });
  });

  it('what the session does not offer is refused naming what it does, and nothing is sent; the agent\'s own refusal exits 5', async () => {
    const [mode, model, value, option, noSession] = await Promise.all([
      cli('set-mode', 'fx', 'nope', '-s', 'work'),
      cli('set-model', 'fx', 'huge', '-s', 'work'),
      cli('set', 'fx', 'fast', 'maybe', '-s', 'work'),
      cli('set', 'fx', 'speed', '1', '-s', 'work'),
      cli('set-mode', 'fx', 'plan', '-s', 'nobody'),
    ]);
    expect(mode.exitCode).toBe(2);
    expect(mode.stderr).toBe('agentvisor: Session "work" of fx offers no mode "nope"\nits modes: default (Default), plan (Plan), yolo (Yolo), locked (Locked)\nkind: invalid_options (exit 2)\n');
    expect(model.exitCode).toBe(2);
    expect(model.stderr).toContain('its models: fixture-small (Small), fixture-large (Large), fixture-forbidden (Forbidden)');
    expect(value.exitCode).toBe(2);
    expect(value.stderr).toContain('takes true or false for "fast", not "maybe"');
    expect(option.exitCode).toBe(2);
    expect(option.stderr).toContain('has no config option "speed"\nits options: mode, model, fast');
    expect(noSession.exitCode).toBe(2);
    expect(noSession.stderr).toContain('kind: session_not_found (exit 2)');
    const refused = await cli('set-mode', 'fx', 'locked', '-s', 'work');
    expect(refused.exitCode).toBe(5);
    expect(refused.stderr).toContain('fixture: mode locked');
    // What the agent received: the controls sent, none of the refused ones but its own refusal.
    const received = await cli('prompt', 'fx', '-s', 'work', command({ op: 'controls-received' }));
    const controls = JSON.parse(received.stdout.trim().replace(/^controls:/, '')) as string[];
    expect(controls).toEqual(['set_mode plan', 'set_config_option model=fixture-large', 'set_config_option fast=true', 'set_mode default', 'set_mode locked']);
    // An agent that offers no modes: refused by the CLI, kind unsupported.
    expect((await cli('sessions', 'new', 'plain')).exitCode).toBe(0);
    const none = await cli('set-mode', 'plain', 'plan');
    expect(none.exitCode).toBe(2);
    expect(none.stderr).toContain('kind: unsupported (exit 2)');
  });
});

describe('what the agent reported, at a glance', () => {
  it('sessions show, status and ls show the mode, model, usage, title, commands and plan', async () => {
    const updates = await cli('prompt', 'fx', command({ op: 'state-updates' }));
    expect(updates).toMatchObject({ exitCode: 0, stdout: 'state:done\n' });
    const dflt = (await named('fx', 'default'))!;
    const [show, status, statusJson, ls, lsJson, one, unknown] = await Promise.all([
      cli('sessions', 'show', dflt.sessionId),
      cli('status'),
      cli('status', '--json'),
      cli('ls'),
      cli('ls', '--json'),
      cli('status', 'fx'),
      cli('status', 'nope'),
    ]);
    expect(show.stdout).toMatch(/^title: +Fixture title$/m);
    expect(show.stdout).toMatch(/^mode: +plan /m);
    expect(show.stdout).toMatch(/^model: +fixture-large /m);
    expect(show.stdout).toMatch(/^usage: +1\.2k\/200k \(1%\), 0\.25 USD$/m);
    expect(show.stdout).toMatch(/^commands:\n {2}\/later +Added later$/m);
    expect(show.stdout).toMatch(/^plan:\n {2}✓ Outline the change \(high\)\n {2}▸ Apply the change \(medium\)$/m);

    expect(status.exitCode).toBe(0);
    expect(status.stdout).toMatch(new RegExp(`^daemon +running +pid ${serve!.pid} +uptime \\d+[smhd] +version \\S+ +http://127\\.0\\.0\\.1:\\d+$`, 'm'));
    expect(status.stdout).toMatch(new RegExp(`^ {2}state dir +${stateDir()}$`, 'm'));
    expect(status.stdout).toMatch(/^ {2}restore +done: nothing to restore$/m);
    expect(status.stdout).toMatch(/^agents: 3 of 8 running \(idle: claude, claude-stream-json, codex, gemini, echo\)$/m);
    expect(status.stdout).toMatch(/^fx +connected +connected\.\S+ +\d+ /m);
    expect(status.stdout).toMatch(new RegExp(`^fx +default +${dflt.sessionId} +plan +fixture-large +1\\.2k/200k \\(1%\\), 0\\.25 USD +\\S+ +0 `, 'm'));
    expect(status.stdout).toMatch(/^fx +work +\S+ +default +fixture-large +- /m);
    const report = json<{ daemon: { pid: number; stateDir: string }; agents: Array<{ name: string }>; sessions: SessionRow[] }>(statusJson.stdout);
    expect(report.daemon).toMatchObject({ pid: serve!.pid, stateDir: stateDir() });
    expect(report.sessions.every((row) => row.live)).toBe(true);
    expect(report.sessions.map((row) => `${row.agent}/${row.name}`)).toEqual(expect.arrayContaining(['fx/default', 'fx/work', 'gem/default', 'plain/default']));
    expect(one.stdout).toMatch(/^name +status +state +pid /m);
    expect(one.stdout).not.toMatch(/^gem /m);
    expect(one.stdout).not.toContain('gem ');
    expect(unknown.exitCode).toBe(2);
    expect(unknown.stderr).toContain('kind: unknown_agent (exit 2)');

    expect(ls.stdout.split('\n')[0]).toMatch(/^name +status +state +pid +uptime +restarts +cpu +mem +sessions +mode +model +usage +last error$/);
    // The default session's, the one `prompt fx` goes to.
    expect(ls.stdout).toMatch(/^fx +connected +\S+ +\d+ +\S+ +0 +\S+ +\S+ \S+ +\d+ +plan +fixture-large +1\.2k\/200k \(1%\), 0\.25 USD +-$/m);
    expect(ls.stdout).toMatch(/^codex +idle +idle +- +- +0 +- +- +0 +- +- +- +-$/m);
    const fxRow = json<{ agents: Array<{ name: string; session: unknown }> }>(lsJson.stdout).agents.find((row) => row.name === 'fx');
    expect(fxRow?.session).toEqual({ sessionId: dflt.sessionId, name: 'default', mode: 'plan', model: 'fixture-large', usage: { used: 1200, size: 200000, cost: { amount: 0.25, currency: 'USD' } } });
    const quiet = await cli('status', '--format', 'quiet');
    expect(quiet.stdout.trim().split('\n').sort()).toEqual(['fx', 'gem', 'plain']);
  });
});

describe("the agent's own sessions", () => {
  let foreign: string;

  it('sessions list --from-agent lists them, marked with what the daemon has of each; pages with --limit and --cursor', async () => {
    // A session only the agent keeps: opened by another client of the same agent (its state file).
    const other = createSupervisor({ agents: { fx: fixtureSpec(['--acp-features', '--state-file', fxState()]) }, store: 'memory', stateDir: false, handleSignals: false });
    try {
      const session = await other.newSession('fx', { cwd: files.dir });
      foreign = session.id;
      await session.prompt('remember me');
    } finally {
      await other.shutdown();
    }
    const listed = await cli('sessions', 'list', '--agent', 'fx', '--from-agent');
    expect(listed.exitCode).toBe(0);
    expect(listed.stdout.split('\n')[0]).toMatch(/^session +updated +title +daemon +cwd$/);
    expect(listed.stdout).toMatch(new RegExp(`^${foreign} +\\S+ +- +- +${files.dir}$`, 'm'));
    const work = (await named('fx', 'work'))!;
    expect(listed.stdout).toMatch(new RegExp(`^${work.sessionId} .* open +${files.dir}$`, 'm'));
    const all = json<{ sessions: Array<{ sessionId: string; daemon: string | null }>; nextCursor: string | null }>((await cli('sessions', 'list', '--agent', 'fx', '--from-agent', '--json')).stdout);
    expect(all.sessions.find((row) => row.sessionId === foreign)?.daemon).toBeNull();
    expect(all.sessions.length).toBeGreaterThan(2);
    expect(all.nextCursor).toBeNull();
    // The fixture answers two a page: --limit 2 stops after one, and its cursor goes on from there.
    const first = await cli('sessions', 'list', '--agent', 'fx', '--from-agent', '--limit', '2', '--json');
    const page = json<{ sessions: Array<{ sessionId: string }>; nextCursor: string }>(first.stdout);
    expect(page.sessions).toHaveLength(2);
    expect(page.nextCursor).toMatch(/^fixture-cursor-/);
    const rest = json<{ sessions: Array<{ sessionId: string }> }>((await cli('sessions', 'list', '--agent', 'fx', '--from-agent', '--cursor', page.nextCursor, '--json')).stdout);
    expect([...page.sessions, ...rest.sessions].map((row) => row.sessionId)).toEqual(all.sessions.map((row) => row.sessionId));
    const text = await cli('sessions', 'list', '--agent', 'fx', '--from-agent', '--limit', '2');
    // The fixture numbers its cursors per listing: the text's is another listing's.
    expect(text.stderr).toMatch(/^more sessions than --limit 2; the next page: --cursor fixture-cursor-\d+\n$/);
    expect(text.stdout.trim().split('\n')).toHaveLength(3);

    const [noAgent, cursorAlone, unsupported] = await Promise.all([
      cli('sessions', 'list', '--from-agent'),
      cli('sessions', 'list', '--cursor', 'x'),
      cli('sessions', 'list', '--agent', 'plain', '--from-agent'),
    ]);
    expect(noAgent.exitCode).toBe(2);
    expect(noAgent.stderr).toContain('say which with --agent');
    expect(cursorAlone.exitCode).toBe(2);
    expect(unsupported.exitCode).toBe(2);
    expect(unsupported.stderr).toContain('kind: unsupported (exit 2)');
  });

  it('sessions resume opens one of them in the daemon under a name (its cwd found in session/list); a prompt then continues it', async () => {
    const resumed = await cli('sessions', 'resume', 'fx', foreign, '-s', 'adopted');
    expect(resumed).toMatchObject({ exitCode: 0, stdout: `fx/adopted: resumed session ${foreign} in ${files.dir}\n` });
    expect((await cli('sessions', 'resume', 'fx', foreign, '-s', 'adopted')).stdout).toBe(`fx/adopted: already open: session ${foreign} in ${files.dir}\n`);
    expect(await cli('prompt', 'fx', '-s', 'adopted', 'and', 'more')).toMatchObject({ exitCode: 0, stdout: 'and more\n' });
    expect(await named('fx', 'adopted')).toMatchObject({ sessionId: foreign, live: true });
    // A session the daemon stored: closed, then resumed by id.
    const closed = (await sessionsOf('fx')).find((row) => row.name === 'short')!;
    const again = await cli('sessions', 'resume', 'fx', closed.sessionId, '--json');
    expect(json<SessionRow>(again.stdout)).toMatchObject({ sessionId: closed.sessionId, live: true });
    const unknown = await cli('sessions', 'resume', 'fx', 'fixture-no-such');
    expect(unknown.exitCode).toBe(2);
    expect(unknown.stderr).toContain('Neither the daemon nor fx keeps a session fixture-no-such');
    const badCwd = await cli('sessions', 'resume', 'fx', foreign, '--cwd', files.path('nowhere'));
    expect(badCwd.exitCode).toBe(2);
  });

  it('sessions delete deletes one at the agent; an agent that cannot is refused', async () => {
    const deleted = await cli('sessions', 'delete', 'fx', foreign);
    expect(deleted).toMatchObject({ exitCode: 0, stdout: `deleted session ${foreign} of fx\n` });
    const after = json<{ sessions: Array<{ sessionId: string }> }>((await cli('sessions', 'list', '--agent', 'fx', '--from-agent', '--json')).stdout);
    expect(after.sessions.map((row) => row.sessionId)).not.toContain(foreign);
    const plain = (await named('plain', 'default'))!;
    const refused = await cli('sessions', 'delete', 'plain', plain.sessionId);
    expect(refused.exitCode).toBe(2);
    expect(refused.stderr).toContain('kind: unsupported (exit 2)');
  });
});

describe('prompt --file', () => {
  const notes = '# Notes\nthe build is red\n';
  beforeAll(() => {
    mkdirSync(files.path('in'), { recursive: true });
    writeFileSync(files.path('in/shot.png'), png);
    writeFileSync(files.path('in/notes.md'), notes);
    writeFileSync(files.path('in/blob.bin'), Buffer.from([0, 1, 2, 3, 0xff]));
    writeFileSync(files.path('in/big.txt'), Buffer.alloc(1024 * 1024 + 10, 'a'));
    writeFileSync(files.path('in/two-thirds.txt'), Buffer.alloc(700 * 1024, 'b'));
  });

  it('sends an image and a text file as content blocks with the text', async () => {
    const result = await cli('prompt', 'fx', '-s', 'files', command({ op: 'describe-prompt' }), '--file', 'in/shot.png', '--file', files.path('in/notes.md'));
    expect(result.exitCode).toBe(0);
    const blocks = JSON.parse(/^prompt:(.*?)meta:/.exec(result.stdout)![1]!) as unknown[];
    expect(blocks).toEqual([
      { type: 'image', mimeType: 'image/png', uri: pathToFileURL(files.path('in/shot.png')).href, bytes: png.length },
      { type: 'resource', mimeType: 'text/markdown', uri: pathToFileURL(files.path('in/notes.md')).href, bytes: Buffer.byteLength(notes) },
    ]);
    // Files alone: no text block.
    expect((await cli('prompt', 'fx', '-s', 'files', '--file', 'in/notes.md')).exitCode).toBe(0);
    const history = jsonLines((await cli('sessions', 'history', (await named('fx', 'files'))!.sessionId, '--json')).stdout);
    const prompts = history.filter((entry) => entry.kind === 'prompt').map((entry) => (entry.data as { prompt: Array<{ type: string }> }).prompt.map((block) => block.type));
    expect(prompts).toEqual([['text', 'image', 'resource'], ['resource']]);
  });

  it('an agent without embedded context gets a link to a text file; an image it cannot take is refused before anything is opened', async () => {
    const linked = await cli('prompt', 'plain', '-s', 'linked', 'read', 'it', '--file', 'in/notes.md');
    expect(linked).toMatchObject({ exitCode: 0, stdout: 'read it\n' });
    expect(linked.stderr).toContain(`· plain takes no embedded files: sent as links for it to read (${files.path('in/notes.md')})`);
    const image = await cli('prompt', 'plain', '-s', 'image', 'look', '--file', 'in/shot.png');
    expect(image.exitCode).toBe(2);
    expect(image.stderr).toContain('--file in/shot.png is an image (image/png), and the agent takes none (its promptCapabilities.image is not set)');
    expect(image.stderr).toContain('kind: unsupported (exit 2)');
    expect((await sessionsOf('plain')).map((row) => row.name)).not.toContain('image');
  });

  it('what is neither text nor an image, a missing file, and a prompt over the daemon body limit are refused, nothing sent', async () => {
    const [binary, missing, big, together] = await Promise.all([
      cli('prompt', 'fx', '-s', 'refused', 'x', '--file', 'in/blob.bin'),
      cli('prompt', 'fx', '-s', 'refused', 'x', '--file', 'in/nothing.txt'),
      cli('prompt', 'fx', '-s', 'refused', 'x', '--file', 'in/big.txt'),
      cli('prompt', 'fx', '-s', 'refused', 'x', '--file', 'in/two-thirds.txt', '--file', 'in/two-thirds.txt'),
    ]);
    expect(binary.exitCode).toBe(2);
    expect(binary.stderr).toContain('--file in/blob.bin is neither text nor a PNG, JPEG, GIF or WebP image');
    expect(missing.exitCode).toBe(2);
    expect(missing.stderr).toContain(`${files.path('in/nothing.txt')} does not exist`);
    expect(big.exitCode).toBe(2);
    expect(big.stderr).toContain('--file in/big.txt is 1.00 MiB: over the 1.00 MiB the daemon reads in one request');
    expect(big.stderr).toContain('kind: too_large (exit 2)');
    expect(together.exitCode).toBe(2);
    expect(together.stderr).toMatch(/The prompt with its files is 1\.37 MiB: over the 1\.00 MiB the daemon reads in one request\nthe files: two-thirds\.txt 700 KiB, two-thirds\.txt 700 KiB;/);
    expect((await sessionsOf('fx')).map((row) => row.name)).not.toContain('refused');
  });
});

describe('permission flags', () => {
  const permission = (kind?: string, title = 'a tool') => command({ op: 'permission', title, ...(kind ? { kind } : {}) });

  it('prompt --approve-all and --deny-all answer every request of the session; sessions new takes them too', async () => {
    const [allowed, denied] = await Promise.all([cli('prompt', 'fx', '-s', 'yes', '--approve-all', permission('edit')), cli('prompt', 'fx', '-s', 'no', '--deny-all', permission('read'))]);
    expect(allowed).toMatchObject({ exitCode: 0, stdout: 'permission:allow\n' });
    expect(denied).toMatchObject({ exitCode: 0, stdout: 'permission:reject\n' });
    expect((await cli('sessions', 'new', 'fx', '-s', 'trusted', '--approve-all')).exitCode).toBe(0);
    // A later prompt without a flag: the session keeps the policy it was opened with.
    expect(await cli('prompt', 'fx', '-s', 'trusted', permission('execute'))).toMatchObject({ exitCode: 0, stdout: 'permission:allow\n' });
  });

  it('--approve-reads answers the read-only tool calls and leaves the others waiting for an answer', async () => {
    expect(await cli('prompt', 'fx', '-s', 'reads', '--approve-reads', permission('search'))).toMatchObject({ exitCode: 0, stdout: 'permission:allow\n' });
    const edit = cli('prompt', 'fx', '-s', 'reads', permission('edit', 'edit it'));
    const notice = await waitFor(edit.stderr, (line) => line.includes('asks permission'), 'the edit to wait');
    const id = /permissions answer (\S+) allow\|deny/.exec(notice)![1]!;
    expect((await cli('permissions', 'answer', id, 'deny')).exitCode).toBe(0);
    expect(await edit).toMatchObject({ exitCode: 0, stdout: 'permission:reject\n' });
    const [conflict, otherPolicy] = await Promise.all([cli('prompt', 'fx', '-s', 'x', '--approve-reads', '--deny-all', 'hi'), cli('prompt', 'fx', '-s', 'reads', '--approve-all', 'hi')]);
    expect(conflict.exitCode).toBe(2);
    expect(conflict.stderr).toContain("option '--approve-reads' cannot be used with option '--deny-all'");
    expect(otherPolicy.exitCode).toBe(2);
    expect(otherPolicy.stderr).toContain('kind: invalid_options (exit 2)');
  });

  it('run --approve-reads allows the reads; the rest is denied when there is no terminal to ask on', async () => {
    const [read, edit, conflict] = await Promise.all([
      cli('run', 'fx', '--approve-reads', permission('read')),
      cli('run', 'fx', '--approve-reads', permission('edit', 'change it')),
      cli('run', 'fx', '--approve-reads', '--approve-all', 'hi'),
    ]);
    expect(read).toMatchObject({ exitCode: 0, stdout: 'permission:allow\n' });
    expect(edit).toMatchObject({ exitCode: 0, stdout: 'permission:reject\n' });
    expect(edit.stderr).toContain('denied permission for "change it" (no terminal to ask on)');
    expect(conflict.exitCode).toBe(2);
  });
});

describe('elicitations', () => {
  const waitingIds = async () => json<ElicitationsBody>((await cli('elicitations', '--json')).stdout).elicitations.map((row) => row.id);

  it('a prompt without a terminal says how to answer; elicitations lists it; answer checks the fields, then accepts', async () => {
    const prompt = cli('prompt', 'fx', '-s', 'ask', command({ op: 'elicit' }));
    const notice = await waitFor(prompt.stderr, (line) => line.includes('asks:'), 'the elicitation notice');
    const id = /elicitations answer (\S+) accept/.exec(notice)![1]!;
    expect(notice).toBe(`? fx asks: Fixture: fill in the form — answer with \`agentvisor elicitations answer ${id} accept --field name=… --field count=… --field color=… --field ok=…\` (or decline, cancel)`);
    const list = await cli('elicitations');
    expect(list.stdout.split('\n')[0]).toMatch(/^id +agent +session +waiting +message +asks for$/);
    expect(list.stdout).toMatch(new RegExp(`^${id} +fx +\\S+ +\\d+s +Fixture: fill in the form +name\\*: text; count: a whole number from 1 to 5; color: one of red, green; ok: true or false$`, 'm'));
    const [required, range, choice, unknownField, badAction] = await Promise.all([
      cli('elicitations', 'answer', id, 'accept', '--field', 'count=3'),
      cli('elicitations', 'answer', id, 'accept', '--field', 'name=Ada', '--field', 'count=9'),
      cli('elicitations', 'answer', id, 'accept', '--field', 'name=Ada', '--field', 'color=blue'),
      cli('elicitations', 'answer', id, 'accept', '--field', 'name=Ada', '--field', 'age=3'),
      cli('elicitations', 'answer', id, 'maybe'),
    ]);
    expect(required.stderr).toContain(`The form of elicitation ${id} needs --field name=…`);
    expect(range.stderr).toContain('--field count: 9 is above 5; it takes a whole number from 1 to 5');
    expect(choice.stderr).toContain('"blue" is not one of red, green');
    expect(unknownField.stderr).toContain(`has no field "age"`);
    expect(badAction.stderr).toContain('The action is accept, decline or cancel, not "maybe"');
    for (const refused of [required, range, choice, unknownField, badAction]) expect(refused.exitCode).toBe(2);
    expect(await waitingIds()).toEqual([id]); // still waiting: nothing was sent
    const accepted = await cli('elicitations', 'answer', id, 'accept', '--field', 'name=Ada', '--field', 'count=3', '--field', 'ok=no');
    expect(accepted).toMatchObject({ exitCode: 0, stdout: `${id}: accepted\n` });
    expect((await prompt).stdout).toBe('elicitation:{"action":"accept","content":{"name":"Ada","count":3,"ok":false}}\n');
    const again = await cli('elicitations', 'answer', id, 'decline');
    expect(again.exitCode).toBe(2);
    expect(again.stderr).toContain('kind: elicitation_not_found (exit 2)');
  });

  it("what only the daemon's check refuses keeps the request open; decline, and a URL accepted without fields", async () => {
    const schema = { type: 'object', properties: { code: { type: 'string', pattern: '^[0-9]+$' } }, required: ['code'] };
    const coded = cli('prompt', 'fx', '-s', 'ask', command({ op: 'elicit', schema }));
    const id = /elicitations answer (\S+) accept/.exec(await waitFor(coded.stderr, (line) => line.includes('asks:'), 'the form'))![1]!;
    const wrong = await cli('elicitations', 'answer', id, 'accept', '--field', 'code=abc');
    expect(wrong.exitCode).toBe(2);
    expect(wrong.stderr).toContain('kind: invalid_request (exit 2)');
    expect(await waitingIds()).toEqual([id]);
    expect((await cli('elicitations', 'answer', id, 'accept', '--field', 'code=42', '--json')).stdout).toBe(`${JSON.stringify({ id, action: 'accept' })}\n`);
    expect((await coded).stdout).toBe('elicitation:{"action":"accept","content":{"code":"42"}}\n');

    const declined = cli('prompt', 'fx', '-s', 'ask', command({ op: 'elicit' }));
    const second = /elicitations answer (\S+) accept/.exec(await waitFor(declined.stderr, (line) => line.includes('asks:'), 'the form'))![1]!;
    expect((await cli('elicitations', 'answer', second, 'decline', '--field', 'name=x')).exitCode).toBe(2);
    expect(await cli('elicitations', 'answer', second, 'decline')).toMatchObject({ exitCode: 0, stdout: `${second}: declined\n` });
    expect((await declined).stdout).toBe('elicitation:{"action":"decline"}\n');

    const url = cli('prompt', 'fx', '-s', 'ask', command({ op: 'elicit', mode: 'url' }));
    const notice = await waitFor(url.stderr, (line) => line.includes('asks:'), 'the url');
    const third = /elicitations answer (\S+) accept/.exec(notice)![1]!;
    expect(notice).toContain(`open https://example.invalid/login, then \`agentvisor elicitations answer ${third} accept|decline|cancel\``);
    expect((await cli('elicitations')).stdout).toContain('open https://example.invalid/login');
    expect((await cli('elicitations', 'answer', third, 'accept', '--field', 'x=1')).exitCode).toBe(2);
    expect((await cli('elicitations', 'answer', third, 'accept')).stdout).toBe(`${third}: accepted\n`);
    expect((await url).stdout).toBe('elicitation:{"action":"accept"}\n');
  });

  describe('on a terminal', () => {
    /** The CLI on a real pseudo-terminal: what it printed so far, keys typed as it asks, and its exit. */
    function onTerminal(args: string[]) {
      const terminal: IPty = spawnPty(process.execPath, [cliMain, ...globals(), ...args], { cwd: files.dir, env, cols: 200, rows: 40 });
      let output = '';
      let seen = 0;
      const waiters: Array<() => void> = [];
      terminal.onData((data) => {
        output += data;
        for (const waiter of waiters.splice(0)) waiter();
      });
      const exited = new Promise<number>((resolve) => terminal.onExit(({ exitCode }) => resolve(exitCode)));
      return {
        exited,
        output: () => output,
        /** Waits for `pattern` in what came since the last answer, then types `keys`. */
        async answer(pattern: RegExp, keys: string) {
          const deadline = Date.now() + 60_000;
          while (!pattern.test(output.slice(seen))) {
            if (Date.now() > deadline) throw new Error(`timed out waiting for ${pattern} in ${JSON.stringify(output)}`);
            await new Promise<void>((resolve) => {
              waiters.push(resolve);
              setTimeout(resolve, 500).unref();
            });
          }
          seen = output.length;
          terminal.write(keys);
        },
        kill: () => terminal.kill('SIGKILL'),
      };
    }

    it("prompt asks the form's fields, again with why when one does not fit, and answers", async () => {
      const run = onTerminal(['prompt', 'fx', '-s', 'tty', command({ op: 'elicit' })]);
      try {
        await run.answer(/Fill it in\? \[a\]ccept, \[d\]ecline, \[c\]ancel \(Enter: accept\): /, 'a\r');
        await run.answer(/Name \(text, required\): /, '\r');
        await run.answer(/it is required[\s\S]*Name \(text, required\): /, 'Ada\r');
        await run.answer(/count \(a whole number from 1 to 5, Enter: leave out\): /, '7\r');
        await run.answer(/7 is above 5[\s\S]*count \(/, '2\r');
        await run.answer(/color \(one of red, green, Enter: leave out\): /, '\r');
        await run.answer(/ok \(true or false, Enter: leave out\): /, 'y\r');
        expect(await run.exited).toBe(0);
      } finally {
        run.kill();
      }
      expect(run.output()).toContain('? fx asks: Fixture: fill in the form');
      expect(run.output()).toContain('elicitation:{"action":"accept","content":{"name":"Ada","count":2,"ok":true}}');
    });

    it('a URL is shown and confirmed; Ctrl-C while a question is open cancels the turn (exit 130) and its elicitation', async () => {
      const url = onTerminal(['prompt', 'fx', '-s', 'tty', command({ op: 'elicit', mode: 'url' })]);
      try {
        await url.answer(/open: https:\/\/example\.invalid\/login[\s\S]*Done\? \[a\]ccept, \[d\]ecline, \[c\]ancel/, 'd\r');
        expect(await url.exited).toBe(0);
      } finally {
        url.kill();
      }
      expect(url.output()).toContain('elicitation:{"action":"decline"}');

      const interrupted = onTerminal(['prompt', 'fx', '-s', 'tty', command({ op: 'elicit' })]);
      try {
        await interrupted.answer(/Fill it in\?/, '\x03');
        expect(await interrupted.exited).toBe(130);
      } finally {
        interrupted.kill();
      }
      // The CLI left once the turn ended: cancelled, its elicitation with it.
      expect(interrupted.output()).toContain('agentvisor: Interrupted');
      expect(await waitingIds()).toEqual([]);
      expect(await named('fx', 'tty')).toMatchObject({ busy: false, queued: 0 });
      const history = jsonLines((await cli('sessions', 'history', (await named('fx', 'tty'))!.sessionId, '--json')).stdout);
      expect(history.filter((entry) => entry.kind === 'prompt_result').at(-1)).toMatchObject({ data: { stopReason: 'cancelled' } });
    });
  });
});

describe('--json', () => {
  it('works on every command that prints, before or after its name; with another --format it is refused', async () => {
    expect((await cli('sessions', 'new', 'fx', '-s', 'work')).exitCode).toBe(0); // open already when the tests before ran
    const work = (await named('fx', 'work'))!;
    const commands = [
      ['ls'],
      ['status'],
      ['status', 'fx'],
      ['describe', 'fx'],
      ['sessions'],
      ['sessions', 'list', '--agent', 'fx', '--from-agent'],
      ['sessions', 'show', work.sessionId],
      ['sessions', 'history', work.sessionId],
      ['sessions', 'new', 'fx', '-s', 'work'],
      ['set-mode', 'fx', 'plan', '-s', 'work'],
      ['permissions'],
      ['elicitations'],
      ['logs', 'fx'],
      ['doctor'],
      ['dashboard'],
      ['orphans'],
      ['monit', '--count', '1'],
      ['startup'],
      ['prompt', 'fx', '-s', 'work', 'hi'],
      ['cancel', 'fx', '-s', 'work'],
      ['start', 'fx'],
    ];
    // After the command's name for each; before it for every other one (the option is global either way).
    const runs = commands.map((args, index) => (index % 2 === 0 ? [...args, '--json'] : ['--json', ...args]));
    // A few at a time: forty CLI processes at once would measure the host, not the CLI.
    const results: Array<Awaited<ReturnType<typeof cli>> & { args: string }> = [];
    for (let index = 0; index < runs.length; index += 4) {
      results.push(...(await Promise.all(runs.slice(index, index + 4).map(async (args) => ({ ...(await cli(...args)), args: args.join(' ') })))));
    }
    results.forEach((result) => {
      const { args } = result;
      expect(result.exitCode, `${args}: ${result.stderr}`).toBe(0);
      expect(result.stdout, args).not.toBe('');
      expect(() => jsonLines(result.stdout), `${args}: ${result.stdout}`).not.toThrow();
    });
    const conflict = await cli('ls', '--json', '--format', 'text');
    expect(conflict.exitCode).toBe(2);
    expect(conflict.stderr).toContain('--json and --format text say different things: give one of them');
    expect((await cli('ls', '--json', '--format', 'json')).exitCode).toBe(0);
  }, 600_000); // some twenty CLI processes, each a Node start: minutes on a host loaded by other test files
});

describe('logs -f', () => {
  it("of every agent follows across an agent's restart and ends on Ctrl-C (exit 130)", async () => {
    const follow = cli('logs', '-f', '--lines', '1');
    await waitFor(follow.stdout, (line) => /^fx +\| fx says hello$/.test(line), 'the last line so far');
    const again = waitFor(follow.stdout, (line) => /^plain +\| plain says hello$/.test(line), 'the restarted agent to say hello');
    expect((await cli('restart', 'plain')).exitCode).toBe(0);
    await again;
    follow.kill('SIGINT');
    const result = await follow;
    expect(result.exitCode).toBe(130);
    expect(result.stderr).toBe('agentvisor: Interrupted\nkind: interrupted (exit 130)\n');
  });

  it('says so and exits 6 when the daemon goes away; status then exits 6 and starts none', async () => {
    const one = cli('logs', 'fx', '-f');
    const every = cli('logs', '-f');
    await Promise.all([waitFor(one.stdout, (line) => line === 'fx says hello', 'one to follow'), waitFor(every.stdout, (line) => line.endsWith('| fx says hello'), 'all to follow')]);
    const { agents } = json<AgentsBody>((await cli('ls', '--json')).stdout);
    const pids = agents.map((row) => row.pid).filter((pid): pid is number => pid !== null);
    expect((await cli('shutdown')).exitCode).toBe(0);
    const [oneResult, everyResult] = await Promise.all([one, every]);
    expect(oneResult.exitCode).toBe(6);
    expect(oneResult.stderr).toContain('The daemon ended the log stream of fx: it stopped (or is stopping)');
    expect(everyResult.exitCode).toBe(6);
    expect(pids.filter(isRunning)).toEqual([]);
    const status = await startCli([...globals(), 'status'], { env: { ...env, AGENTVISOR_NO_AUTOSTART: '' }, cwd: files.dir });
    expect(status.exitCode).toBe(6);
    expect(status.stderr).toContain(`no daemon running for state dir ${stateDir()}`);
    expect(existsSync(files.path('state/daemon.json'))).toBe(false);
  });
});
