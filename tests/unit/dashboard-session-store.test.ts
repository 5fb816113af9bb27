/**
 * What a session holds beyond its transcript, without a browser (dashboard/session-store.js
 * and the lists store.js reads again): a control's answer replacing the session's row, the
 * elicitations waiting (heard twice, read again with what the page was doing kept), a client
 * terminal's output and when it is worth reading again, the pending permissions read again.
 */
import { describe, expect, it } from 'vitest';
import type { ElicitationRow, PermissionRow } from '../../daemon/api-types.js';
import {
  elicitationAsked,
  elicitationResolved,
  selectedSessionRow,
  takeElicitations,
  takeSessionRow,
  takeTerminal,
  terminalKey,
  terminalRunning,
} from '../../dashboard/session-store.js';
import { createState, takePermissions } from '../../dashboard/store.js';
import { sessionRow } from './dashboard-samples.js';

function elicitation(id: string, requestedAt = 0): ElicitationRow {
  return { id, agent: 'alpha', sessionId: 's1', toolCallId: null, mode: 'form', message: 'Name?', requestedSchema: null, url: null, elicitationId: null, requestedAt };
}

describe('session rows', () => {
  it("a control's answer replaces the listed row: the list is drawn again, and the bar when it is the selected one", () => {
    const state = createState();
    state.sessions = [sessionRow('s1'), sessionRow('s2')];
    state.selectedSession = 's2';
    const modes = { currentModeId: 'plan', availableModes: [{ id: 'plan', name: 'Plan' }] };
    expect(takeSessionRow(state, sessionRow('s2', { modes }))).toEqual([
      { type: 'render', part: 'sessions' },
      { type: 'render', part: 'session' },
    ]);
    expect(selectedSessionRow(state)?.modes).toEqual(modes);
    expect(takeSessionRow(state, sessionRow('s1', { live: false }))).toEqual([{ type: 'render', part: 'sessions' }]);
    expect(takeSessionRow(state, sessionRow('unlisted'))).toEqual([]);
    expect(state.sessions.map((row) => row.sessionId)).toEqual(['s1', 's2']);
  });
});

describe('elicitations', () => {
  it('heard twice (the stream and a prompt\'s answer) is listed once; answered, it is not listed again', () => {
    const state = createState();
    expect(elicitationAsked(state, elicitation('e1'))).toEqual([{ type: 'render', part: 'elicitations' }]);
    expect(elicitationAsked(state, elicitation('e1'))).toEqual([]);
    expect(elicitationResolved(state, 'e1')).toEqual([{ type: 'render', part: 'elicitations' }]);
    expect(elicitationResolved(state, 'e1')).toEqual([]);
    expect(elicitationAsked(state, elicitation('e1'))).toEqual([]);
    expect(state.elicitations.size).toBe(0);
  });

  it('read again: the listed ones wait (what this page was doing with them kept), the others are gone', () => {
    const state = createState();
    elicitationAsked(state, elicitation('e1'));
    elicitationAsked(state, elicitation('gone'));
    state.elicitations.get('e1')!.error = 'name: required';
    takeElicitations(state, [elicitation('e1', 5), elicitation('e2')]);
    expect([...state.elicitations.keys()]).toEqual(['e1', 'e2']);
    expect(state.elicitations.get('e1')).toMatchObject({ requestedAt: 5, error: 'name: required' });
  });
});

describe('terminals', () => {
  const output = { sessionId: 's1', terminalId: 't1', output: 'building…\n', truncated: false, exitStatus: null };

  it('keeps what was read; is read again while it runs, not once it ended or cannot be read', () => {
    const state = createState();
    state.selectedSession = 's1';
    expect(terminalRunning(state, 's1', 't1')).toBe(true); // not read yet
    expect(takeTerminal(state, 's1', 't1', output)).toEqual([{ type: 'render', part: 'terminals' }]);
    expect(terminalRunning(state, 's1', 't1')).toBe(true);
    takeTerminal(state, 's1', 't1', { ...output, output: 'built\n', exitStatus: { exitCode: 0, signal: null } });
    expect(terminalRunning(state, 's1', 't1')).toBe(false);
    expect(state.terminals.get(terminalKey('s1', 't1'))?.output).toBe('built\n');
  });

  it('a failed read keeps the output read before, with why; another session\'s terminal draws nothing now', () => {
    const state = createState();
    state.selectedSession = 'other';
    expect(takeTerminal(state, 's1', 't1', output)).toEqual([]);
    takeTerminal(state, 's1', 't1', { error: 'no longer readable' });
    expect(state.terminals.get(terminalKey('s1', 't1'))).toEqual({ ...output, error: 'no longer readable' });
    expect(terminalRunning(state, 's1', 't1')).toBe(false);
    expect(terminalKey('a', 'b')).not.toBe(terminalKey('a\nb', ''));
  });
});

describe('permissions read again', () => {
  const permission = (id: string): PermissionRow => ({ id, agent: 'alpha', sessionId: 's1', requestedAt: 0, toolCall: { toolCallId: `c-${id}` }, options: [] });

  it('the listed ones are pending (an answer under way kept), the others answered', () => {
    const state = createState();
    takePermissions(state, [permission('p1'), permission('p2')]);
    state.permissions.get('p1')!.answering = true;
    expect(takePermissions(state, [permission('p1'), permission('p3')])).toEqual([{ type: 'render', part: 'permissions' }]);
    expect([...state.permissions.keys()]).toEqual(['p1', 'p3']);
    expect(state.permissions.get('p1')!.answering).toBe(true);
  });
});
