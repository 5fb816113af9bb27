/**
 * The prompt box's decisions without a browser (dashboard/prompt-model.js): where a prompt
 * goes (by name, or an unnamed session by its id), and what the line under the box says as
 * the prompt's NDJSON answer streams.
 */
import { describe, expect, it } from 'vitest';
import type { PromptStreamLine, SessionRow } from '../../daemon/api-types.js';
import { DEFAULT_SESSION, promptStatusText, promptTarget } from '../../dashboard/prompt-model.js';
import { createState } from '../../dashboard/store.js';

function stateWith(selectedSession: string | null, sessions: Array<Pick<SessionRow, 'sessionId' | 'name'>> = []) {
  const state = createState();
  state.selectedAgent = 'claude';
  state.selectedSession = selectedSession;
  state.sessions = sessions.map((session) => ({ agent: 'claude', cwd: '/w', title: null, state: 'ready', stopReason: null, createdAt: 0, updatedAt: 0, live: true, busy: false, queued: 0, modes: null, configOptions: [], commands: [], plan: null, usage: null, models: null, ...session }));
  return state;
}

describe('promptTarget', () => {
  it('sends content blocks (files attached) as { content }, by name or by id alike', () => {
    const content = [{ type: 'text' as const, text: 'see' }, { type: 'image' as const, data: 'AA==', mimeType: 'image/png' }];
    expect(promptTarget(stateWith(null), 'claude', content, 'work')).toEqual({ path: '/v1/prompt', body: { agent: 'claude', content, session: 'work' } });
    expect(promptTarget(stateWith('s1', [{ sessionId: 's1', name: null }]), 'claude', content, '')).toEqual({ path: '/v1/sessions/s1/prompt', body: { content } });
  });

  it("an empty session field with nothing selected goes to the agent's default session, by name", () => {
    expect(promptTarget(stateWith(null), 'claude', 'hi', '')).toEqual({ path: '/v1/prompt', body: { agent: 'claude', text: 'hi', session: DEFAULT_SESSION } });
    expect(DEFAULT_SESSION).toBe('default');
  });

  it('a session field that names a session goes there by name, whichever is selected', () => {
    expect(promptTarget(stateWith('s1'), 'claude', 'hi', 'work')).toEqual({ path: '/v1/prompt', body: { agent: 'claude', text: 'hi', session: 'work' } });
  });

  it('an empty field with a session selected (an unnamed one) goes to that session by its id', () => {
    expect(promptTarget(stateWith('abc/1', [{ sessionId: 'abc/1', name: null }]), 'claude', 'hi', '')).toEqual({ path: '/v1/sessions/abc%2F1/prompt', body: { text: 'hi' } });
  });
});

describe('promptStatusText', () => {
  const says = (line: PromptStreamLine, updates = 0) => promptStatusText(line, updates);

  it('follows the prompt through its queue, its run, a permission it waits for, and its end', () => {
    expect(says({ type: 'queued', sessionId: 's', position: 2 })).toBe('queued behind 2');
    expect(says({ type: 'started', sessionId: 's' })).toBe('running…');
    expect(says({ type: 'update', sessionId: 's', update: {} }, 1)).toBe('running… 1 update');
    expect(says({ type: 'update', sessionId: 's', update: {} }, 3)).toBe('running… 3 updates');
    expect(says({ type: 'permission', permission: { id: 'p', agent: 'a', sessionId: 's', requestedAt: 0, toolCall: { toolCallId: 't' }, options: [] } })).toBe('waiting for a permission answer');
    expect(says({ type: 'elicitation', elicitation: { id: 'e', agent: 'a', sessionId: 's', toolCallId: null, mode: 'form', message: 'Name?', requestedSchema: null, url: null, elicitationId: null, requestedAt: 0 } })).toBe(
      'waiting for an answer to its question',
    );
    expect(says({ type: 'done', sessionId: 's', stopReason: 'end_turn', text: '' })).toBe('done: end_turn');
  });

  it('says a failure by its message, else its kind', () => {
    expect(says({ type: 'error', error: { kind: 'session_busy', message: 'The session is busy' } })).toBe('error: The session is busy');
    // A daemon's error without a message (the contract requires one; the page does not rely on it).
    expect(says({ type: 'error', error: { kind: 'session_busy' } } as unknown as PromptStreamLine)).toBe('error: session_busy');
  });

  it('leaves the line as it is when the session is said', () => {
    expect(says({ type: 'session', sessionId: 's', name: 'default', opened: 'new' })).toBeNull();
  });
});
