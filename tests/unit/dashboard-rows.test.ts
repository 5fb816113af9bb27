/**
 * What the dashboard's rows and panels say, without a browser (dashboard/rows.js,
 * dashboard/format.js): an agent's row, a session's, a permission request's, an orphan's and
 * the orphans panel around them, and the formatting under them.
 */
import { describe, expect, it } from 'vitest';
import type { SessionRow } from '../../daemon/api-types.js';
import { clockTime, counted, dateTime, errorText, exitText, promptText } from '../../dashboard/format.js';
import { agentRowView, killedNotice, orphanKey, orphanRowView, orphansPanelView, permissionRowView, sessionRowView } from '../../dashboard/rows.js';
import type { ClientAgent, ClientPermission, Orphan } from '../../dashboard/store.js';
import { agentRow, sessionRow } from './dashboard-samples.js';

const at = 1_700_000_000_000;

function agent(overrides: Partial<ClientAgent> = {}): ClientAgent {
  return { ...agentRow('claude'), ...overrides };
}

function session(overrides: Partial<SessionRow> = {}): SessionRow {
  return sessionRow('sess-1', { agent: 'claude', createdAt: at, updatedAt: at, ...overrides });
}

function orphan(overrides: Partial<Orphan> = {}): Orphan {
  return { agent: 'one', pid: 4242, startedAt: at, command: 'sleep', running: true, containment: null, owner: 17, recordedAt: at, ...overrides };
}

describe('format', () => {
  it('writes exits, counts, errors and times', () => {
    expect([exitText(null), exitText({ code: 0, signal: null, at }), exitText({ code: null, signal: 'SIGKILL', at }), exitText({ code: null, signal: null, at })]).toEqual(['—', 'code 0', 'SIGKILL', 'code ?']);
    expect([counted(1, 'update'), counted(2, 'update'), counted(0, 'update')]).toEqual(['1 update', '2 updates', '0 updates']);
    expect([errorText(new Error('boom')), errorText('plain')]).toEqual(['boom', 'plain']);
    expect([clockTime(null), clockTime(undefined), clockTime(at)]).toEqual(['', '', new Date(at).toLocaleTimeString()]);
    expect(dateTime(at)).toBe(new Date(at).toLocaleString());
  });

  it("writes a prompt's blocks as one text: other blocks as their type", () => {
    expect(promptText([{ type: 'text', text: 'look at ' }, { type: 'image', data: '...' }, { type: 'text', text: ' this' }])).toBe('look at [image] this');
    expect(promptText('not blocks')).toBe('');
    expect(promptText(undefined)).toBe('');
  });
});

describe("an agent's row", () => {
  it('an idle agent: its name, dashes for what it lacks, its buttons free', () => {
    expect(agentRowView(agent(), false)).toEqual({
      selected: false,
      status: 'idle',
      label: 'claude',
      labelTitle: 'idle',
      statusTitle: '',
      pid: '—',
      restarts: '0',
      sessions: '0',
      lastExit: '—',
      lastExitTitle: '',
      credential: '—',
      error: null,
      waits: false,
      login: [],
      authUrls: [],
    });
  });

  it('parked for a login: a button per login method it can use here, and the links its login asked to open', () => {
    const authMethods = [
      { id: 'token', name: 'Token', description: 'an API key from the environment' },
      { id: 'term', name: 'Terminal login', type: 'terminal' as const, args: ['--login'] },
    ];
    const parked = agentRowView(agent({ status: 'needsAuth', authMethods }), true, ['https://example.test/device', 'javascript:alert(1)']);
    expect(parked.login).toEqual([{ methodId: 'token', label: 'log in: Token', title: 'an API key from the environment' }]);
    expect(parked.authUrls).toEqual([
      { url: 'https://example.test/device', href: 'https://example.test/device' },
      { url: 'javascript:alert(1)', href: null },
    ]);
    // Connected again: nothing to log in with, the links gone.
    expect(agentRowView(agent({ status: 'connected', authMethods }), true, ['https://example.test/device'])).toMatchObject({ login: [], authUrls: [] });
  });

  it('a running agent: its display name beside its name, its facts, since when and its restart policy, its last exit and error', () => {
    const view = agentRowView(
      agent({
        displayName: 'Claude Code',
        status: 'connected',
        state: 'connected.stable',
        pid: 4711,
        restarts: 2,
        sessions: 1,
        since: at,
        restart: 'on-failure',
        credential: 'work',
        lastExit: { code: null, signal: 'SIGTERM', at },
        lastError: { kind: 'process_exited', message: 'exited with code 1', class: 'crash' },
        busy: true,
      }),
      true,
    );
    expect(view).toMatchObject({
      selected: true,
      label: 'Claude Code (claude)',
      labelTitle: 'connected.stable',
      statusTitle: `since ${new Date(at).toLocaleString()} · restart policy on-failure`,
      pid: '4711',
      restarts: '2',
      sessions: '1',
      lastExit: 'SIGTERM',
      lastExitTitle: new Date(at).toLocaleString(),
      credential: 'work',
      error: { message: 'exited with code 1', title: 'process_exited · crash' },
      waits: true,
    });
  });

  it("an error without a class: its kind alone on hover", () => {
    expect(agentRowView(agent({ lastError: { kind: 'not_installed', message: 'no claude' } }), false).error).toEqual({ message: 'no claude', title: 'not_installed' });
  });
});

describe("a session's row", () => {
  it('a named session keeps its name; the title the agent gave it is a fact beside it', () => {
    const view = sessionRowView(session({ name: 'default', title: 'Fixing the tests', busy: true, queued: 2 }), true);
    expect(view).toEqual({
      selected: true,
      label: 'default',
      title: 'Fixing the tests\nsess-1\n/work',
      facts: `“Fixing the tests” · ready · busy · 2 queued · ${new Date(at).toLocaleTimeString()}`,
    });
  });

  it('an unnamed one is listed by its title, else its id; a closed one says it is not open', () => {
    expect(sessionRowView(session({ title: 'Titled' }), false).label).toBe('Titled');
    const closed = sessionRowView(session({ live: false, state: 'stopped' }), false);
    expect(closed.label).toBe('sess-1');
    expect(closed.facts).toBe(`stopped · not open · ${new Date(at).toLocaleTimeString()}`);
  });
});

describe('a permission request', () => {
  const row: ClientPermission = {
    id: 'p1',
    agent: 'claude',
    sessionId: 's1',
    requestedAt: at,
    toolCall: { toolCallId: 'call-1', title: 'Write <the> file', kind: 'edit' },
    options: [{ optionId: 'allow', name: 'Allow once', kind: 'allow_once' }],
  };

  it('says what the tool call is, whose and when, with its options', () => {
    expect(permissionRowView(row)).toEqual({
      title: 'Write <the> file',
      subtitle: `claude · edit · ${new Date(at).toLocaleTimeString()}`,
      options: [{ optionId: 'allow', name: 'Allow once', kind: 'allow_once' }],
      waits: false,
    });
  });

  it('without a title says its tool call; its options wait while this page answers', () => {
    const view = permissionRowView({ ...row, toolCall: { toolCallId: 'call-1' }, answering: true });
    expect(view).toMatchObject({ title: 'call-1', subtitle: `claude · tool · ${new Date(at).toLocaleTimeString()}`, waits: true });
  });
});

describe('orphans', () => {
  it('a leftover: pid, agent, command, start, who left it', () => {
    expect(orphanRowView(orphan())).toEqual({
      title: 'pid 4242 · one',
      command: 'sleep',
      facts: `started ${new Date(at).toLocaleString()} · left by pid 17`,
      killTitle: 'SIGKILL what is left of pid 4242',
      killable: true,
    });
    expect(orphanKey(orphan())).toBe('4242');
  });

  it('a pod a crashed supervisor made: named by its pod (all pods show pid 0), no kill of its own, kill all shown for it', () => {
    const pods = [orphan({ pid: 0, pod: 'ai/agentvisor-coder-1', running: false, containment: null }), orphan({ pid: 0, pod: 'ai/agentvisor-coder-2', running: false })];
    expect(orphanRowView(pods[0]!)).toEqual({
      title: 'pod ai/agentvisor-coder-1 · one',
      command: 'sleep',
      facts: `recorded ${new Date(at).toLocaleString()} · left by pid 17`,
      killTitle: 'kill all deletes this pod through the Kubernetes API',
      killable: false,
    });
    expect(new Set(pods.map(orphanKey)).size).toBe(2);
    expect(orphansPanelView({ rows: [pods[0]!], policy: null, killing: new Set() }).killAllShown).toBe(true);
  });

  it('a terminal command, its start unknown, its process gone and its container left', () => {
    const view = orphanRowView(orphan({ terminal: true, startedAt: null, running: false, container: 'c0ffee' }));
    expect(view.title).toBe('pid 4242 · one (terminal)');
    expect(view.facts).toBe('start unknown · left by pid 17 · its process is gone · container c0ffee');
  });

  it('the panel: empty, kill all for two or more, the start-up policy, the kills under way', () => {
    expect(orphansPanelView({ rows: [], policy: null, killing: new Set() })).toMatchObject({ empty: true, killAllShown: false, killAllWaits: false, policy: '' });
    const one = orphansPanelView({ rows: [orphan()], policy: 'report', killing: new Set([4242]) });
    expect(one).toMatchObject({ empty: false, killAllShown: false, killAllWaits: true, policy: '· at start: report' });
    expect([one.killWaits(4242), one.killWaits(5)]).toEqual([true, false]);
    const all = orphansPanelView({ rows: [orphan(), orphan({ pid: 5 })], policy: 'kill', killing: new Set(['all']) });
    expect(all.killAllShown).toBe(true);
    expect([all.killWaits(4242), all.killWaits(5)]).toEqual([true, true]);
  });

  it('says what a kill did', () => {
    expect(killedNotice({ dryRun: false, orphans: [], killed: [{ agent: 'one', pid: 1, command: 'a' }, { agent: 'two', pid: 2, command: 'b' }], skipped: [] })).toBe('Killed pid 1 (one), pid 2 (two)');
    expect(killedNotice({ dryRun: false, orphans: [], killed: [], skipped: [] })).toBe('Nothing was left to kill.');
  });
});
