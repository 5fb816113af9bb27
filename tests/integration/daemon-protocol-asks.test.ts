/**
 * The daemon's API over the whole protocol, part two, on real agents: elicitations listed,
 * streamed and answered like permissions (and the daemon's `elicitation` option), the
 * `'allow-reads'` permission policy, per-session inputs (MCP servers, more directories, a
 * permission policy) checked and passed to the agent, a session's client terminal read over
 * HTTP, and the event topics for what was library-only: `elicitations`, `workspaces`, `pty`,
 * `terminals`.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDaemon, type Daemon } from '../../daemon/daemon.js';
import { presets } from '../../index.js';
import { call, openEvents, streamLines, type Loose } from '../support/daemon-http.js';
import { hasGit, makeRepoAt } from '../support/git-repo.js';
import { command, fixtureSpec } from '../support/real-agents.js';

const interactiveCli = fileURLToPath(new URL('../fixtures/interactive-cli.mjs', import.meta.url));

let daemon: Daemon;
let stateDir: string;
let repo: string | null = null;

beforeAll(async () => {
  stateDir = mkdtempSync(join(tmpdir(), 'agentvisor-daemon-asks-'));
  if (hasGit) repo = makeRepoAt(join(stateDir, 'repo'));
  daemon = await startDaemon({
    supervisor: {
      agents: {
        features: fixtureSpec(['--acp-features']),
        plain: fixtureSpec(),
        // A turn typed into it ends once the CLI waits for input again: after 300 ms without output.
        cli: presets.pty(process.execPath, [interactiveCli], { displayName: 'CLI', pty: { needsInputTimeoutMs: 300 } }),
        ...(repo ? { keeper: fixtureSpec([], { workspace: { kind: 'git-worktree', repo, name: 'daemon-kept' } }) } : {}),
      },
      stateDir,
      workspaceStatusIntervalMs: 50,
    },
    port: 0,
  });
});

afterAll(async () => {
  await daemon?.close();
  rmSync(stateDir, { recursive: true, force: true });
});

/** Runs a streamed prompt in the background, its lines collected as they come. */
function streamed(body: Record<string, unknown>) {
  const lines: Loose[] = [];
  const done = call(daemon, 'POST', '/v1/prompt', { body, onLine: (line) => lines.push(line) });
  return { lines, done };
}

describe('elicitations', () => {
  it('lists a form, streams and announces it, refuses values that do not fit (it stays open), then takes an answer once', async () => {
    const events = await openEvents(daemon, 'topics=elicitations');
    const turn = streamed({ agent: 'features', session: 'form', text: command({ op: 'elicit', toolCallId: 'tool-1' }) });
    const announced = await events.next((message) => message.type === 'elicitation:request', 'elicitation:request');
    const row = announced.elicitation;
    expect(row).toMatchObject({ agent: 'features', mode: 'form', toolCallId: 'tool-1', message: 'Fixture: fill in the form', url: null, requestedAt: expect.any(Number) });
    expect(row.requestedSchema.required).toEqual(['name']);
    await expect.poll(() => turn.lines.find((line) => line.type === 'elicitation')?.elicitation.id).toBe(row.id);
    expect(row.sessionId).toBe(turn.lines[0].sessionId);
    expect((await call(daemon, 'GET', '/v1/elicitations')).json.elicitations).toEqual([row]);
    // A client that connects now hears of it in its hello.
    const late = await openEvents(daemon, 'topics=status');
    expect((await late.next((message) => message.type === 'hello', 'hello')).elicitations).toEqual([row]);
    late.close();

    for (const content of [{ count: 2 }, { name: 'Ada', count: 9 }, { name: 'Ada', colour: 'blue' }, { name: 'Ada', ok: 'yes' }]) {
      const refused = await call(daemon, 'POST', `/v1/elicitations/${row.id}`, { body: { action: 'accept', content } });
      expect({ content, status: refused.status, kind: refused.json.error.kind }).toEqual({ content, status: 400, kind: 'invalid_request' });
    }
    expect((await call(daemon, 'GET', '/v1/elicitations')).json.elicitations).toEqual([row]);

    const accepted = await call(daemon, 'POST', `/v1/elicitations/${row.id}`, { body: { action: 'accept', content: { name: 'Ada', count: 2, color: 'red', ok: true } } });
    expect(accepted.json).toEqual({ id: row.id, action: 'accept' });
    await turn.done;
    expect(turn.lines.at(-1)).toMatchObject({ type: 'done', text: 'elicitation:{"action":"accept","content":{"name":"Ada","count":2,"color":"red","ok":true}}' });
    const resolved = await events.next((message) => message.type === 'elicitation:resolved', 'elicitation:resolved');
    expect(resolved).toMatchObject({ type: 'elicitation:resolved', id: row.id, agent: 'features', sessionId: row.sessionId, action: 'accept' });
    expect(JSON.stringify(resolved)).not.toContain('Ada'); // a form's values are never broadcast
    const again = await call(daemon, 'POST', `/v1/elicitations/${row.id}`, { body: { action: 'decline' } });
    expect(again.status).toBe(404);
    expect(again.json.error.kind).toBe('elicitation_not_found');
    expect((await call(daemon, 'GET', '/v1/elicitations')).json.elicitations).toEqual([]);
    events.close();
  });

  it('declines a URL, cancels one, lists a request-scoped one without a session, and withdraws the ones of a cancelled turn', async () => {
    const events = await openEvents(daemon, 'topics=elicitations');
    const pending = async (count: number): Promise<Loose[]> => {
      await expect.poll(async () => (await call(daemon, 'GET', '/v1/elicitations')).json.elicitations.length).toBe(count);
      return (await call(daemon, 'GET', '/v1/elicitations')).json.elicitations;
    };
    const url = streamed({ agent: 'features', session: 'url', text: command({ op: 'elicit', mode: 'url' }) });
    const [link] = await pending(1);
    expect(link).toMatchObject({ mode: 'url', url: 'https://example.invalid/login', elicitationId: expect.stringMatching(/^fixture-elicitation-/), requestedSchema: null });
    const withContent = await call(daemon, 'POST', `/v1/elicitations/${link.id}`, { body: { action: 'accept', content: { name: 'x' } } });
    expect(withContent.status).toBe(400); // a URL is accepted without content
    expect((await call(daemon, 'POST', `/v1/elicitations/${link.id}`, { body: { action: 'decline' } })).json).toEqual({ id: link.id, action: 'decline' });
    await url.done;
    expect(url.lines.at(-1)).toMatchObject({ type: 'done', text: 'elicitation:{"action":"decline"}' });

    const scoped = streamed({ agent: 'features', session: 'scoped', text: command({ op: 'elicit', scope: 'request' }) });
    const [unscoped] = await pending(1);
    expect(unscoped.sessionId).toBeNull();
    expect(scoped.lines.some((line) => line.type === 'elicitation')).toBe(false); // not the session's: no stream line
    expect((await call(daemon, 'POST', `/v1/elicitations/${unscoped.id}`, { body: { action: 'cancel' } })).json.action).toBe('cancel');
    await scoped.done;
    expect(scoped.lines.at(-1).text).toBe('elicitation:{"action":"cancel"}');

    const withdrawn = streamed({ agent: 'features', session: 'withdrawn', text: command({ op: 'elicit' }) });
    const [open] = await pending(1);
    await call(daemon, 'POST', `/v1/sessions/${open.sessionId}/cancel`);
    await withdrawn.done;
    expect(withdrawn.lines.at(-1)).toMatchObject({ type: 'done', stopReason: 'cancelled' });
    await events.next((message) => message.type === 'elicitation:resolved' && message.id === open.id && message.action === 'cancel', 'the withdrawn one resolved');
    expect(await pending(0)).toEqual([]);
    events.close();
  });

  it('refuses bad answers and unknown ids, typed', async () => {
    const turn = streamed({ agent: 'features', session: 'bad-answers', text: command({ op: 'elicit' }) });
    await expect.poll(async () => (await call(daemon, 'GET', '/v1/elicitations')).json.elicitations.length).toBe(1);
    const [row] = (await call(daemon, 'GET', '/v1/elicitations')).json.elicitations;
    const cases: Array<[unknown, number, string]> = [
      [{ action: 'maybe' }, 400, 'invalid_request'],
      [{}, 400, 'invalid_request'],
      [undefined, 400, 'invalid_request'],
      [{ action: 'decline', content: {} }, 400, 'invalid_request'],
      [{ action: 'accept', content: { name: { first: 'Ada' } } }, 400, 'invalid_request'],
      [{ action: 'accept', content: 'Ada' }, 400, 'invalid_request'],
    ];
    for (const [body, status, kind] of cases) {
      const answer = await call(daemon, 'POST', `/v1/elicitations/${row.id}`, body === undefined ? {} : { body });
      expect({ body, status: answer.status, kind: answer.json.error.kind }).toEqual({ body, status, kind });
    }
    const huge = await call(daemon, 'POST', `/v1/elicitations/${row.id}`, { body: { action: 'accept', content: { name: 'x'.repeat(1024 * 1024) } } });
    expect({ status: huge.status, kind: huge.json.error.kind }).toEqual({ status: 413, kind: 'payload_too_large' });
    const unknown = await call(daemon, 'POST', '/v1/elicitations/nope', { body: { action: 'cancel' } });
    expect({ status: unknown.status, kind: unknown.json.error.kind }).toEqual({ status: 404, kind: 'elicitation_not_found' });
    expect((await call(daemon, 'POST', '/v1/elicitations', { body: { action: 'cancel' } })).status).toBe(405);
    await call(daemon, 'POST', `/v1/elicitations/${row.id}`, { body: { action: 'cancel' } });
    await turn.done;
  });

  it("a daemon whose options say elicitation: 'decline' declines at once and lists nothing", async () => {
    const otherState = mkdtempSync(join(tmpdir(), 'agentvisor-daemon-decline-'));
    const declining = await startDaemon({ supervisor: { agents: { features: fixtureSpec(['--acp-features']) }, stateDir: otherState, elicitation: 'decline' }, port: 0 });
    try {
      const answer = await call(declining, 'POST', '/v1/prompt', { body: { agent: 'features', text: command({ op: 'elicit' }) } });
      expect(answer.json.text).toBe('elicitation:{"action":"decline"}');
      expect((await call(declining, 'GET', '/v1/elicitations')).json.elicitations).toEqual([]);
    } finally {
      await declining.close();
      rmSync(otherState, { recursive: true, force: true });
    }
  });
});

describe('per-session inputs', () => {
  it("'allow-reads' allows read-only tool calls and asks for the rest", async () => {
    const reads = { agent: 'features', session: 'reads', permissions: 'allow-reads' };
    for (const kind of ['read', 'search', 'fetch', 'think']) {
      const lines = await streamLines(daemon, 'POST', '/v1/prompt', { ...reads, text: command({ op: 'permission', kind }) });
      expect({ kind, asked: lines.some((line) => line.type === 'permission'), text: lines.at(-1).text }).toEqual({ kind, asked: false, text: 'permission:allow' });
    }
    for (const kind of ['edit', 'execute', undefined]) {
      const turn = streamed({ ...reads, text: command({ op: 'permission', ...(kind ? { kind } : {}) }) });
      await expect.poll(() => turn.lines.some((line) => line.type === 'permission'), { message: `asked for ${kind ?? 'no kind'}` }).toBe(true);
      const asked = turn.lines.find((line) => line.type === 'permission').permission;
      await call(daemon, 'POST', `/v1/permissions/${asked.id}`, { body: { optionId: 'reject' } });
      await turn.done;
      expect(turn.lines.at(-1).text).toBe('permission:reject');
    }
    // The same policy again, or none, uses the open session; another one is refused: it cannot change on an open session.
    expect((await call(daemon, 'POST', '/v1/prompt', { body: { ...reads, text: 'same' } })).json.text).toBe('same');
    expect((await call(daemon, 'POST', '/v1/prompt', { body: { agent: 'features', session: 'reads', text: 'none' } })).json.text).toBe('none');
    const other = await call(daemon, 'POST', '/v1/prompt', { body: { ...reads, permissions: 'allow', text: 'other' } });
    expect({ status: other.status, kind: other.json.error.kind }).toEqual({ status: 400, kind: 'invalid_options' });
    const fresh = await call(daemon, 'POST', '/v1/prompt', { body: { ...reads, permissions: 'deny', new: true, text: command({ op: 'permission', kind: 'edit' }) } });
    expect(fresh.json.text).toBe('permission:reject');
  });

  it('passes MCP servers and more directories to the agent: session/new carries them, and the sandbox takes the directories', async () => {
    const extra = mkdtempSync(join(tmpdir(), 'agentvisor-extra-root-'));
    writeFileSync(join(extra, 'notes.txt'), 'from the extra root');
    try {
      const mcpServers = [
        { name: 'tools', command: '/usr/bin/env', args: ['tools-mcp'], env: [{ name: 'TOKEN', value: 'x' }] },
        { name: 'bare', command: '/usr/bin/env' },
        { type: 'http', name: 'web', url: 'https://mcp.example.invalid/mcp', headers: [{ name: 'Authorization', value: 'Bearer y' }] },
      ];
      const opened = await call(daemon, 'POST', '/v1/sessions', { body: { agent: 'features', name: 'inputs', mcpServers, additionalDirectories: [extra] } });
      expect(opened.status, opened.text).toBe(201);
      const setup = await call(daemon, 'POST', '/v1/prompt', { body: { agent: 'features', session: 'inputs', text: command({ op: 'session-setup' }) } });
      expect(JSON.parse(setup.json.text.slice('setup:'.length))).toEqual({
        mcpServers: [
          { name: 'tools', command: '/usr/bin/env', args: ['tools-mcp'], env: [{ name: 'TOKEN', value: 'x' }] },
          { name: 'bare', command: '/usr/bin/env', args: [], env: [] },
          { type: 'http', name: 'web', url: 'https://mcp.example.invalid/mcp', headers: [{ name: 'Authorization', value: 'Bearer y' }] },
        ],
        additionalDirectories: [extra],
      });
      const read = await call(daemon, 'POST', '/v1/prompt', { body: { agent: 'features', session: 'inputs', text: command({ op: 'read', path: join(extra, 'notes.txt') }) } });
      expect(read.json.text).toBe('read:from the extra root');
      // Without the directory, the same read is outside the sandbox.
      const outside = await call(daemon, 'POST', '/v1/prompt', { body: { agent: 'features', session: 'no-extra', text: command({ op: 'read', path: join(extra, 'notes.txt') }) } });
      expect(outside.json.text).toMatch(/^error:.*Access denied/);
      // Other inputs for the open session are refused; a fresh session under the name takes them.
      const changed = await call(daemon, 'POST', '/v1/prompt', { body: { agent: 'features', session: 'inputs', mcpServers: [], text: 'x' } });
      expect(changed.json.error.kind).toBe('invalid_options');
    } finally {
      rmSync(extra, { recursive: true, force: true });
    }
  });

  it('refuses inputs that do not fit, typed, before anything is opened', async () => {
    const before = (await call(daemon, 'GET', '/v1/sessions?agent=features')).json.sessions.length;
    const cases: Array<[Record<string, unknown>, number, string]> = [
      [{ mcpServers: [{ name: 'x' }] }, 400, 'invalid_request'],
      [{ mcpServers: [{ name: 'x', command: '/bin/true', colour: 'red' }] }, 400, 'invalid_request'],
      [{ mcpServers: [{ type: 'http', name: 'x', url: 'not a url' }] }, 400, 'invalid_request'],
      [{ mcpServers: [{ type: 'stdio', name: 'x', command: '/bin/true' }] }, 400, 'invalid_request'],
      [{ mcpServers: { name: 'x', command: '/bin/true' } }, 400, 'invalid_request'],
      [{ mcpServers: [{ type: 'sse', name: 'events', url: 'https://mcp.example.invalid/sse' }] }, 422, 'unsupported'], // the agent does not take sse
      [{ additionalDirectories: ['relative/dir'] }, 400, 'invalid_options'],
      [{ additionalDirectories: [join(stateDir, 'no-such-dir')] }, 400, 'invalid_options'],
      [{ additionalDirectories: '/tmp' }, 400, 'invalid_request'],
      [{ permissions: 'sometimes' }, 400, 'invalid_request'],
    ];
    for (const [inputs, status, kind] of cases) {
      for (const [path, body] of [
        ['/v1/sessions', { agent: 'features', ...inputs }],
        ['/v1/prompt', { agent: 'features', session: 'refused-inputs', text: 'x', ...inputs }],
      ] as const) {
        const answer = await call(daemon, 'POST', path, { body });
        expect({ path, inputs, status: answer.status, kind: answer.json.error?.kind }).toEqual({ path, inputs, status, kind });
      }
    }
    const plain = await call(daemon, 'POST', '/v1/sessions', { body: { agent: 'plain', mcpServers: [{ type: 'http', name: 'web', url: 'https://mcp.example.invalid/' }] } });
    expect({ status: plain.status, kind: plain.json.error.kind }).toEqual({ status: 422, kind: 'unsupported' });
    expect((await call(daemon, 'GET', '/v1/sessions?agent=features')).json.sessions.length).toBe(before);
  });
});

describe("a session's client terminals", () => {
  it("reads a terminal a tool call showed, and refuses an unknown terminal, session, or a closed session's", async () => {
    const opened = await call(daemon, 'POST', '/v1/sessions', { body: { agent: 'features' } });
    const id = opened.json.sessionId;
    const turn = await call(daemon, 'POST', `/v1/sessions/${id}/prompt`, { body: { text: command({ op: 'tool-detail' }) } });
    const terminalId = /^tool:(\S+)$/.exec(turn.json.text)![1]!;
    const output = await call(daemon, 'GET', `/v1/sessions/${id}/terminals/${terminalId}`);
    expect(output.status).toBe(200);
    expect(output.json).toEqual({ sessionId: id, terminalId, output: 'terminal-detail\n', truncated: false, exitStatus: { exitCode: 0, signal: null } });
    const cases: Array<[string, number, string]> = [
      [`/v1/sessions/${id}/terminals/term-nope`, 404, 'terminal_not_found'],
      ['/v1/sessions/no-such-session/terminals/term-nope', 404, 'session_not_found'],
    ];
    await call(daemon, 'POST', `/v1/sessions/${id}/close`);
    cases.push([`/v1/sessions/${id}/terminals/${terminalId}`, 404, 'terminal_not_found']);
    for (const [path, status, kind] of cases) {
      const answer = await call(daemon, 'GET', path);
      expect({ path, status: answer.status, kind: answer.json.error.kind }).toEqual({ path, status, kind });
    }
  });
});

describe('event topics for what was library-only', () => {
  it("sends a pty agent's activity (topic pty) and its terminal output (topic terminals)", async () => {
    const events = await openEvents(daemon, 'topics=pty,terminals');
    const hello = await events.next((message) => message.type === 'hello', 'hello');
    expect(hello.topics).toEqual(['pty', 'terminals']);
    await call(daemon, 'POST', '/v1/agents/cli/start');
    await events.next((message) => message.type === 'pty:activity' && message.agent === 'cli' && message.state === 'running', 'the CLI running');
    expect(events.messages.find((message) => message.type === 'pty:activity')).toMatchObject({ agent: 'cli', state: 'starting' });
    await expect.poll(() => events.messages.filter((message) => message.type === 'terminal:output' && message.agent === 'cli').map((message) => message.data).join('')).toContain('interactive-cli 1.0');
    const answer = await call(daemon, 'POST', '/v1/prompt', { body: { agent: 'cli', text: 'hello there' }, onLine: () => {} });
    expect(answer.status).toBe(200);
    await expect.poll(() => events.messages.filter((message) => message.type === 'terminal:output').map((message) => message.data).join('')).toContain('you said: hello there');
    await call(daemon, 'POST', '/v1/agents/cli/stop');
    await events.next((message) => message.type === 'pty:activity' && message.state === 'exited', 'the CLI exited');
    events.close();
  });

  it.skipIf(!hasGit)("sends a workspace's status and its cleanup (topic workspaces)", async () => {
    const events = await openEvents(daemon, 'topics=workspaces');
    await call(daemon, 'POST', '/v1/agents/keeper/start');
    const first = await events.next((message) => message.type === 'workspace:status', 'the first status');
    expect(first).toMatchObject({ owner: { agent: 'keeper' }, branch: 'agentvisor/daemon-kept', clean: true, changedFiles: [] });
    mkdirSync(join(first.path, 'src'));
    writeFileSync(join(first.path, 'src', 'new.ts'), 'export {};\n');
    const changed = await events.next((message) => message.type === 'workspace:status' && message.changedCount === 1, 'a status with the new file');
    expect(changed.changedFiles).toEqual(['src/new.ts']);
    await call(daemon, 'POST', '/v1/agents/keeper/stop');
    const cleaned = await events.next((message) => message.type === 'workspace:cleaned', 'the cleanup');
    expect(cleaned).toMatchObject({ owner: { agent: 'keeper' }, path: first.path, strategy: 'keep', action: 'kept' });
    events.close();
  });
});
