/**
 * The dashboard's state without a browser (dashboard/store.js): what each event-stream
 * message changes and which effects the page is asked to carry out, the selection with its
 * per-agent prompt drafts, the sessions list's answers.
 */
import { describe, expect, it } from 'vitest';
import type { PermissionRow, ServerMessage, SessionRow } from '../../daemon/api-types.js';
import {
  TRAIL_LENGTH,
  applyServerMessage,
  createState,
  selectAgent,
  selectSession,
  sessionOpened,
  takeAgentRow,
  takeOrphans,
  takeSessionCount,
  takeSessions,
  type DashboardState,
  type Effect,
} from '../../dashboard/store.js';
import { agentRow, sessionRow as sampleSession } from './dashboard-samples.js';

const at = 1_700_000_000_000;

/** What the daemon stamps on every message, and `hello`'s stream position: filled in unless given. */
type Stamped = 'at' | 't' | 'seq' | 'epoch' | 'replayFrom' | 'oldest';
type MessageOf<T extends ServerMessage['type']> = Omit<Extract<ServerMessage, { type: T }>, Stamped> & { seq?: number; epoch?: string; replayFrom?: number | null; oldest?: number };
let lastSeq = 0;
/** A message of the event stream as the daemon sends it: its clocks, the next seq, and hello's epoch filled in. */
const message = <T extends ServerMessage['type']>(body: MessageOf<T> & { type: T }): ServerMessage =>
  ({ at, t: '1', seq: (lastSeq += 1), ...(body.type === 'hello' ? { epoch: 'epoch-1', replayFrom: null, oldest: 1 } : {}), ...body }) as unknown as ServerMessage;

function permissionRow(id: string, sessionId = 's1'): PermissionRow {
  return {
    id,
    agent: 'alpha',
    sessionId,
    requestedAt: at,
    toolCall: { toolCallId: `call-${id}`, title: 'Write the file', kind: 'edit' },
    options: [
      { optionId: 'allow', name: 'Allow once', kind: 'allow_once' },
      { optionId: 'reject', name: 'Reject once', kind: 'reject_once' },
    ],
  };
}

const sessionRow = (sessionId: string, overrides: Partial<SessionRow> = {}): SessionRow => sampleSession(sessionId, { createdAt: at, updatedAt: at, ...overrides });

/** A state after `hello` with agents alpha and beta, alpha selected (as the page does it). */
function helloState(): DashboardState {
  const state = createState();
  const effects = applyServerMessage(state, message({ type: 'hello', version: '1.2.3', agents: [agentRow('alpha'), agentRow('beta')], permissions: [], elicitations: [], topics: [] }));
  for (const effect of effects) if (effect.type === 'select-agent') selectAgent(state, effect.agent, { text: '', session: '' });
  return state;
}

const renders = (effects: Effect[]) => effects.flatMap((effect) => (effect.type === 'render' ? [effect.part] : []));

describe('hello', () => {
  it('takes the agents and pending permissions, lists the orphans, and selects the first agent', () => {
    const state = createState();
    const effects = applyServerMessage(state, message({ type: 'hello', version: '1.2.3', agents: [agentRow('alpha'), agentRow('beta')], permissions: [permissionRow('p1')], elicitations: [], topics: [] }));
    expect(state.version).toBe('1.2.3');
    expect([...state.agents.keys()]).toEqual(['alpha', 'beta']);
    expect([...state.permissions.keys()]).toEqual(['p1']);
    expect(state.trails.get('alpha')).toEqual(['idle']);
    expect(effects).toContainEqual({ type: 'refresh-orphans' });
    expect(renders(effects)).toEqual(expect.arrayContaining(['version', 'permissions', 'agents']));
    expect(effects.at(-1)).toEqual({ type: 'select-agent', agent: 'alpha' });
  });

  it('with no agent, selects none', () => {
    const effects = applyServerMessage(createState(), message({ type: 'hello', version: '1', agents: [], permissions: [], elicitations: [], topics: [] }));
    expect(effects.at(-1)).toEqual({ type: 'select-agent', agent: null });
  });

  it('after a reconnection keeps the selected agent, starts every feed over and reloads what is shown', () => {
    const state = helloState();
    applyServerMessage(state, message({ type: 'log', agent: 'alpha', line: 'old line' }));
    const logs = state.logs.get('alpha')!;
    logs.loaded = true;
    const generation = logs.generation;

    const effects = applyServerMessage(state, message({ type: 'hello', version: '1.2.3', agents: [agentRow('beta'), agentRow('alpha')], permissions: [], elicitations: [], topics: [] }));
    expect(state.selectedAgent).toBe('alpha');
    expect({ items: logs.items, loaded: logs.loaded, generation: logs.generation }).toEqual({ items: [], loaded: false, generation: generation + 1 });
    expect(effects).toContainEqual({ type: 'reload-selected' });
    expect(effects.some((effect) => effect.type === 'select-agent')).toBe(false);
  });

  it('after a reconnection to a daemon without the selected agent, selects its first', () => {
    const state = helloState();
    const effects = applyServerMessage(state, message({ type: 'hello', version: '1', agents: [agentRow('gamma')], permissions: [], elicitations: [], topics: [] }));
    expect(state.selectedAgent).toBeNull();
    expect(effects.at(-1)).toEqual({ type: 'select-agent', agent: 'gamma' });
  });
});

describe('agents', () => {
  it('agent:status takes the new row but keeps the buttons of a call under way waiting', () => {
    const state = helloState();
    state.agents.get('alpha')!.busy = true;
    const effects = applyServerMessage(state, message({ type: 'agent:status', agent: 'alpha', status: 'starting', previous: 'idle', row: agentRow('alpha', { status: 'starting', state: 'starting', pid: 42 }) }));
    expect(state.agents.get('alpha')).toMatchObject({ status: 'starting', pid: 42, busy: true });
    // alpha is shown: its chart is drawn again, and its row.
    expect(renders(effects)).toEqual(['chart', 'agents']);
  });

  it('agent:state moves the state and status, and the trail keeps each state once in a row, at most TRAIL_LENGTH', () => {
    const state = helloState();
    const states = Array.from({ length: TRAIL_LENGTH + 3 }, (_, index) => `connected.step${index}`);
    for (const dotted of [...states, states.at(-1)!]) applyServerMessage(state, message({ type: 'agent:state', agent: 'beta', state: dotted, status: 'connected' }));
    expect(state.agents.get('beta')).toMatchObject({ state: states.at(-1), status: 'connected' });
    expect(state.trails.get('beta')).toEqual(states.slice(-TRAIL_LENGTH));
  });

  it("draws the chart again only for the selected agent's moves; an unknown agent changes nothing", () => {
    const state = helloState();
    expect(renders(applyServerMessage(state, message({ type: 'agent:state', agent: 'beta', state: 'starting', status: 'starting' })))).toEqual(['agents']);
    expect(renders(applyServerMessage(state, message({ type: 'agent:state', agent: 'alpha', state: 'starting', status: 'starting' })))).toEqual(['chart', 'agents']);
    expect(applyServerMessage(state, message({ type: 'agent:state', agent: 'nobody', state: 'starting', status: 'starting' }))).toEqual([]);
    expect(state.agents.has('nobody')).toBe(false);
  });

  it('agent:error becomes the last error the row shows', () => {
    const state = helloState();
    applyServerMessage(state, message({ type: 'agent:error', agent: 'alpha', kind: 'process_exited', message: 'it died', class: 'crash', retryAt: null }));
    expect(state.agents.get('alpha')!.lastError).toEqual({ kind: 'process_exited', message: 'it died', class: 'crash' });
    expect(applyServerMessage(state, message({ type: 'agent:error', agent: 'nobody', kind: 'x', message: 'y' }))).toEqual([]);
  });

  it('a row from the API and a session count are taken like the stream\'s', () => {
    const state = helloState();
    takeAgentRow(state, agentRow('beta', { state: 'connected.stable', status: 'connected' }));
    takeSessionCount(state, 'beta', 3);
    takeSessionCount(state, 'nobody', 1);
    expect(state.agents.get('beta')).toMatchObject({ state: 'connected.stable', sessions: 3 });
    expect(state.trails.get('beta')).toEqual(['idle', 'connected.stable']);
  });
});

describe('transcripts and logs', () => {
  it("an update of the shown session, its history loaded, shows at once; another session's is kept for later", () => {
    const state = helloState();
    state.selectedSession = 's1';
    sessionOpened(state, 's1');
    const update = { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'hi' } };
    expect(applyServerMessage(state, message({ type: 'session:update', agent: 'alpha', sessionId: 's1', update }))).toEqual([{ type: 'show-transcript-item', item: { kind: 'update', data: update } }]);
    expect(applyServerMessage(state, message({ type: 'session:update', agent: 'alpha', sessionId: 's2', update }))).toEqual([]);
    expect(state.transcripts.get('s2')!.items).toEqual([{ kind: 'update', data: update }]);
  });

  it('an update of the shown session before its history is loaded waits in its feed', () => {
    const state = helloState();
    state.selectedSession = 's1';
    expect(applyServerMessage(state, message({ type: 'session:update', agent: 'alpha', sessionId: 's1', update: {} }))).toEqual([]);
    expect(state.transcripts.get('s1')!.items).toHaveLength(1);
  });

  it("session:turn gives the transcript's own shapes: the prompt, then how the turn ended", () => {
    const state = helloState();
    applyServerMessage(state, message({ type: 'session:turn', agent: 'alpha', sessionId: 's1', turn: { prompt: [{ type: 'text', text: 'hello' }] } }));
    applyServerMessage(state, message({ type: 'session:turn', agent: 'alpha', sessionId: 's1', turn: { stopReason: 'end_turn' } }));
    expect(state.transcripts.get('s1')!.items).toEqual([
      { kind: 'prompt', data: { prompt: [{ type: 'text', text: 'hello' }] } },
      { kind: 'prompt_result', data: { stopReason: 'end_turn' } },
    ]);
  });

  it("a log line of the shown agent shows once its tail is loaded; another agent's is kept", () => {
    const state = helloState();
    expect(applyServerMessage(state, message({ type: 'log', agent: 'alpha', line: 'first' }))).toEqual([]);
    state.logs.get('alpha')!.loaded = true;
    expect(applyServerMessage(state, message({ type: 'log', agent: 'alpha', line: 'second' }))).toEqual([{ type: 'show-log', entry: { at, line: 'second' } }]);
    expect(applyServerMessage(state, message({ type: 'log', agent: 'beta', line: 'other' }))).toEqual([]);
    expect(state.logs.get('alpha')!.items.map((entry) => entry.line)).toEqual(['first', 'second']);
  });

  it('session:status reloads the sessions list of the selected agent only, and the agent\'s session count', () => {
    const state = helloState();
    expect(applyServerMessage(state, message({ type: 'session:status', agent: 'alpha', sessionId: 's1', status: 'ready' }))).toEqual([{ type: 'refresh-sessions' }, { type: 'refresh-session-count', agent: 'alpha' }]);
    expect(applyServerMessage(state, message({ type: 'session:status', agent: 'beta', sessionId: 's9', status: 'ready' }))).toEqual([{ type: 'refresh-session-count', agent: 'beta' }]);
  });

  it('orphans:swept lists the orphans again; messages the page does not show change nothing', () => {
    const state = helloState();
    expect(applyServerMessage(state, message({ type: 'orphans:swept', result: { dryRun: false, orphans: [], killed: [], skipped: [] } }))).toEqual([{ type: 'refresh-orphans' }]);
    expect(applyServerMessage(state, message({ type: 'pty:activity', agent: 'alpha', state: 'running' }))).toEqual([]);
  });

  it("agent:auth_prompt keeps the login's URLs for the agent's row until it is no longer parked", () => {
    const state = helloState();
    applyServerMessage(state, message({ type: 'agent:status', agent: 'alpha', status: 'needsAuth', previous: 'connected', row: agentRow('alpha', { status: 'needsAuth' }) }));
    const effects = applyServerMessage(state, message({ type: 'agent:auth_prompt', agent: 'alpha', methodId: 'oauth', urls: ['https://example.test/device'] }));
    expect(renders(effects)).toEqual(['agents']);
    expect(effects).toContainEqual({ type: 'notice', message: 'alpha asks you to open https://example.test/device to log in (the link is in its row).', kind: 'info' });
    expect(state.authPrompts.get('alpha')).toEqual(['https://example.test/device']);
    applyServerMessage(state, message({ type: 'agent:status', agent: 'alpha', status: 'needsAuth', previous: 'needsAuth', row: agentRow('alpha', { status: 'needsAuth', state: 'needsAuth.authenticating' }) }));
    expect(state.authPrompts.has('alpha')).toBe(true);
    applyServerMessage(state, message({ type: 'agent:status', agent: 'alpha', status: 'connected', previous: 'needsAuth', row: agentRow('alpha', { status: 'connected' }) }));
    expect(state.authPrompts.has('alpha')).toBe(false);
  });

  it('session:state changes the listed row of the session: its bar is drawn again, the list too for a title', () => {
    const state = helloState();
    state.sessions = [sessionRow('s1'), sessionRow('s2')];
    state.selectedSession = 's1';
    const plan = [{ content: 'Apply', priority: 'high' as const, status: 'in_progress' as const }];
    expect(renders(applyServerMessage(state, message({ type: 'session:state', agent: 'alpha', sessionId: 's1', field: 'plan', value: plan })))).toEqual(['session']);
    expect(state.sessions[0]!.plan).toEqual(plan);
    expect(renders(applyServerMessage(state, message({ type: 'session:state', agent: 'alpha', sessionId: 's2', field: 'title', value: 'Other' })))).toEqual(['sessions']);
    expect(state.sessions[1]!.title).toBe('Other');
    expect(applyServerMessage(state, message({ type: 'session:state', agent: 'beta', sessionId: 'elsewhere', field: 'usage', value: { used: 1, size: 2 } }))).toEqual([]);
  });
});

describe('the stream position: seq, resuming, resync', () => {
  it('each message moves the position; one at or before it was applied already and changes nothing', () => {
    const state = helloState();
    const log = message({ type: 'log', agent: 'alpha', line: 'once' });
    applyServerMessage(state, log);
    expect(state.stream).toEqual({ epoch: 'epoch-1', lastSeq: (log as { seq: number }).seq });
    expect(applyServerMessage(state, log)).toEqual([]);
    expect(applyServerMessage(state, { ...log, seq: (log as { seq: number }).seq - 1 } as ServerMessage)).toEqual([]);
    expect(state.logs.get('alpha')!.items.map((item) => item.line)).toEqual(['once']);
  });

  it('a hello that resumes (replayFrom, the same epoch) keeps everything the page has: the missed messages follow', () => {
    const state = helloState();
    applyServerMessage(state, message({ type: 'session:update', agent: 'alpha', sessionId: 's1', update: { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'before' } } }));
    const transcript = state.transcripts.get('s1')!;
    transcript.loaded = true;
    const position = state.stream.lastSeq!;
    const effects = applyServerMessage(state, message({ type: 'hello', seq: position + 3, replayFrom: position + 1, version: '1.2.3', agents: [agentRow('alpha')], permissions: [], elicitations: [], topics: [] }));
    expect(effects).toEqual([{ type: 'render', part: 'version' }, { type: 'notice', message: 'Reconnected: 3 missed messages replayed.', kind: 'info' }]);
    expect(state.stream.lastSeq).toBe(position);
    expect({ loaded: transcript.loaded, items: transcript.items.length }).toEqual({ loaded: true, items: 1 });
    // The replayed messages are applied as they come.
    const replayed = applyServerMessage(state, message({ type: 'session:update', seq: position + 1, agent: 'alpha', sessionId: 's1', update: { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'missed' } } }));
    expect(replayed).toEqual([]); // s1 is not the selected session: kept in its feed
    expect(transcript.items).toHaveLength(2);
    expect(state.stream.lastSeq).toBe(position + 1);
  });

  it('a hello that does not resume (no replayFrom, or another epoch) starts over from its own state', () => {
    const state = helloState();
    applyServerMessage(state, message({ type: 'log', agent: 'alpha', line: 'old' }));
    const effects = applyServerMessage(state, message({ type: 'hello', seq: 500, epoch: 'epoch-2', replayFrom: 3, version: '2', agents: [agentRow('alpha')], permissions: [], elicitations: [], topics: [] }));
    expect(state.stream).toEqual({ epoch: 'epoch-2', lastSeq: 500 });
    expect(state.logs.get('alpha')!.items).toEqual([]);
    expect(effects).toEqual(expect.arrayContaining([{ type: 'reload-selected' }, { type: 'refresh-elicitations' }]));
  });

  it('resync: a notice, every feed starts over, and everything shown is read again over REST', () => {
    const state = helloState();
    applyServerMessage(state, message({ type: 'session:update', agent: 'alpha', sessionId: 's1', update: {} }));
    const effects = applyServerMessage(state, message({ type: 'resync', seq: 900, reason: 'expired', oldest: 400, lastDelivered: 12 }));
    expect(effects).toEqual([
      { type: 'notice', message: 'The daemon no longer holds what this page missed (the page was away too long): everything shown is read again.', kind: 'info' },
      { type: 'refresh-agents' },
      { type: 'refresh-permissions' },
      { type: 'refresh-elicitations' },
      { type: 'refresh-orphans' },
      { type: 'reload-selected' },
    ]);
    expect(state.transcripts.get('s1')!.items).toEqual([]);
    expect(state.stream.lastSeq).toBe(900);
  });
});

describe('elicitations', () => {
  const elicitation = (id: string, sessionId: string | null = 's1') => ({
    id,
    agent: 'alpha',
    sessionId,
    toolCallId: null,
    mode: 'form' as const,
    message: 'Your name?',
    requestedSchema: { type: 'object' as const, properties: { name: { type: 'string' as const } } },
    url: null,
    elicitationId: null,
    requestedAt: at,
  });

  it('a request waits (and joins its session transcript); its resolution closes it and adds the answer; it is not asked again', () => {
    const state = helloState();
    expect(renders(applyServerMessage(state, message({ type: 'elicitation:request', elicitation: elicitation('e1') })))).toEqual(['elicitations']);
    expect([...state.elicitations.keys()]).toEqual(['e1']);
    expect(renders(applyServerMessage(state, message({ type: 'elicitation:resolved', id: 'e1', agent: 'alpha', sessionId: 's1', action: 'accept' })))).toEqual(['elicitations']);
    expect(state.elicitations.size).toBe(0);
    expect(state.transcripts.get('s1')!.items).toEqual([
      { kind: 'elicitation', data: { mode: 'form', message: 'Your name?', url: null, toolCallId: null } },
      { kind: 'elicitation_outcome', data: { action: 'accept' } },
    ]);
    applyServerMessage(state, message({ type: 'elicitation:request', elicitation: elicitation('e1') }));
    expect(state.elicitations.size).toBe(0);
  });

  it('one of no session (a login) waits too, and joins no transcript', () => {
    const state = helloState();
    applyServerMessage(state, message({ type: 'elicitation:request', elicitation: elicitation('e2', null) }));
    expect(state.elicitations.has('e2')).toBe(true);
    expect(state.transcripts.size).toBe(0);
  });
});

describe('permissions', () => {
  it('a request is pending and joins its transcript; its resolution removes it and adds the answer once', () => {
    const state = helloState();
    const row = permissionRow('p1');
    const asked = applyServerMessage(state, message({ type: 'permission:request', permission: row }));
    expect(renders(asked)).toEqual(['permissions']);
    expect(state.transcripts.get('s1')!.items).toEqual([{ kind: 'permission', data: { toolCall: row.toolCall, options: row.options } }]);

    const outcome = { outcome: 'selected', optionId: 'allow' } as const;
    expect(renders(applyServerMessage(state, message({ type: 'permission:resolved', id: 'p1', agent: 'alpha', sessionId: 's1', outcome })))).toEqual(['permissions']);
    expect(state.permissions.size).toBe(0);
    // Heard again (a second resolution, or the request replayed by a prompt's stream): nothing more.
    applyServerMessage(state, message({ type: 'permission:resolved', id: 'p1', agent: 'alpha', sessionId: 's1', outcome }));
    applyServerMessage(state, message({ type: 'permission:request', permission: row }));
    expect(state.permissions.size).toBe(0);
    expect(state.transcripts.get('s1')!.items.map((item) => item.kind)).toEqual(['permission', 'permission_outcome', 'permission']);
  });

  it('a resolution of a request this page never saw changes nothing', () => {
    const state = helloState();
    expect(applyServerMessage(state, message({ type: 'permission:resolved', id: 'nope', agent: 'alpha', sessionId: 's1', outcome: { outcome: 'cancelled' } }))).toEqual([]);
    expect(state.transcripts.size).toBe(0);
  });
});

describe('selection', () => {
  it('keeps a prompt draft per agent', () => {
    const state = helloState();
    expect(selectAgent(state, 'beta', { text: 'for alpha', session: 'work' })).toEqual({ text: '', session: '' });
    expect(selectAgent(state, 'alpha', { text: 'for beta', session: '' })).toEqual({ text: 'for alpha', session: 'work' });
    expect(selectAgent(state, 'beta', { text: 'for alpha, more', session: 'work' })).toEqual({ text: 'for beta', session: '' });
  });

  it('selecting the selected agent changes nothing; another clears the session and its list', () => {
    const state = helloState();
    state.sessions = [sessionRow('s1')];
    state.selectedSession = 's1';
    expect(selectAgent(state, 'alpha', { text: 'x', session: '' })).toBeNull();
    expect(state.selectedSession).toBe('s1');
    selectAgent(state, 'beta', { text: '', session: '' });
    expect({ agent: state.selectedAgent, session: state.selectedSession, sessions: state.sessions }).toEqual({ agent: 'beta', session: null, sessions: [] });
  });

  it('a session selected fills the session field with its name, or leaves it empty for an unnamed one', () => {
    const state = helloState();
    state.sessions = [sessionRow('s1', { name: 'work' }), sessionRow('s2')];
    expect(selectSession(state, 's1')).toBe('work');
    expect(selectSession(state, 's2')).toBe('');
    expect(state.selectedSession).toBe('s2');
  });

  it("takes a sessions list for the selected agent only, and selects its newest when none is", () => {
    const state = helloState();
    expect(takeSessions(state, 'beta', [sessionRow('s9')])).toBeNull();
    expect(state.sessions).toEqual([]);
    expect(takeSessions(state, 'alpha', [sessionRow('s2'), sessionRow('s1')])).toEqual({ select: 's2' });
    state.selectedSession = 's1';
    expect(takeSessions(state, 'alpha', [sessionRow('s3'), sessionRow('s2'), sessionRow('s1')])).toEqual({ select: null });
    expect(takeSessions(state, 'alpha', [])).toEqual({ select: null });
  });
});

describe('orphans', () => {
  it('takes the listing and the start-up policy', () => {
    const state = createState();
    const orphan = { agent: 'one', pid: 4242, startedAt: null, command: 'sleep', running: true, containment: null, owner: 17, recordedAt: at };
    takeOrphans(state, { dryRun: true, orphans: [orphan], killed: [], skipped: [], startup: { policy: 'report', at, result: null } });
    expect(state.orphans).toMatchObject({ rows: [orphan], policy: 'report' });
  });
});
