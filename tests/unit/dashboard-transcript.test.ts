/**
 * How transcript items become the transcript's entries, without a browser
 * (dashboard/transcript-model.js): chunks joined into one message, a tool call updated in
 * place, permission answers that name the option, turn ends, plans, and what is not known.
 */
import { describe, expect, it } from 'vitest';
import type { TranscriptItem } from '../../dashboard/feed.js';
import { TranscriptModel, toolContentView, type TranscriptOp } from '../../dashboard/transcript-model.js';

const update = (data: Record<string, unknown>): TranscriptItem => ({ kind: 'update', data });
const chunk = (sessionUpdate: string, text: string) => update({ sessionUpdate, content: { type: 'text', text } });

/** Every operation the items give, in order. */
function opsOf(...items: TranscriptItem[]): TranscriptOp[] {
  const model = new TranscriptModel();
  return items.flatMap((item) => model.apply(item));
}

describe('messages', () => {
  it("joins consecutive chunks of one kind into one message; another kind begins another", () => {
    expect(opsOf(chunk('agent_message_chunk', 'Hel'), chunk('agent_message_chunk', 'lo'), chunk('agent_thought_chunk', 'hmm'), chunk('agent_message_chunk', '!'))).toEqual([
      { op: 'message', kind: 'agent', label: 'agent', text: 'Hel' },
      { op: 'extend', text: 'lo' },
      { op: 'message', kind: 'thought', label: 'thinking', text: 'hmm' },
      { op: 'message', kind: 'agent', label: 'agent', text: '!' },
    ]);
  });

  it("any other entry ends the message: the next chunk begins a new one", () => {
    const ops = opsOf(chunk('agent_message_chunk', 'one'), { kind: 'prompt_result', data: { stopReason: 'end_turn' } }, chunk('agent_message_chunk', 'two'));
    expect(ops.map((op) => op.op)).toEqual(['message', 'entry', 'message']);
  });

  it("a prompt is the person's entry; the user's own chunks after it are a message of their own", () => {
    expect(opsOf({ kind: 'prompt', data: { prompt: [{ type: 'text', text: 'hi' }] } }, chunk('user_message_chunk', 'replayed'))).toEqual([
      { op: 'entry', kind: 'user', label: 'you', text: 'hi', emphasis: true, note: null },
      { op: 'message', kind: 'user', label: 'you', text: 'replayed' },
    ]);
  });

  it('a chunk that is not text says its type; one without content is empty', () => {
    expect(opsOf(update({ sessionUpdate: 'agent_message_chunk', content: { type: 'image', data: '', mimeType: 'image/png' } }), update({ sessionUpdate: 'agent_message_chunk' }))).toEqual([
      { op: 'message', kind: 'agent', label: 'agent', text: '[image]' },
      { op: 'extend', text: '' },
    ]);
  });
});

describe('tool calls', () => {
  it('the first update makes its entry, the others update it in place: title with its kind, status, its content as it is', () => {
    expect(
      opsOf(
        update({ sessionUpdate: 'tool_call', toolCallId: 't1', title: 'Read file', kind: 'read', status: 'pending' }),
        chunk('agent_message_chunk', 'meanwhile'),
        update({
          sessionUpdate: 'tool_call_update',
          toolCallId: 't1',
          status: 'completed',
          content: [
            { type: 'content', content: { type: 'text', text: 'line one' } },
            { type: 'diff', path: '/work/a.ts', oldText: 'a\nkeep\n', newText: 'b\nkeep\n' },
            { type: 'terminal', terminalId: 'term-1' },
          ],
        }),
        chunk('agent_message_chunk', 'after'),
      ),
    ).toEqual([
      { op: 'tool', toolCallId: 't1', created: true, title: 'Read file (read)', status: 'pending', content: null },
      { op: 'message', kind: 'agent', label: 'agent', text: 'meanwhile' },
      {
        op: 'tool',
        toolCallId: 't1',
        created: false,
        title: null,
        status: 'completed',
        content: [
          { type: 'text', text: 'line one' },
          {
            type: 'diff',
            path: '/work/a.ts',
            created: false,
            added: 1,
            removed: 1,
            hunks: [
              {
                type: 'lines',
                lines: [
                  { op: 'del', text: 'a', oldLine: 1, newLine: null },
                  { op: 'add', text: 'b', oldLine: null, newLine: 1 },
                  { op: 'same', text: 'keep', oldLine: 2, newLine: 2 },
                ],
              },
            ],
          },
          { type: 'terminal', terminalId: 'term-1' },
        ],
      },
      // The tool's update ended the message: the next chunk begins another.
      { op: 'message', kind: 'agent', label: 'agent', text: 'after' },
    ]);
  });

  it('an update heard before its tool_call makes the entry', () => {
    expect(opsOf(update({ sessionUpdate: 'tool_call_update', toolCallId: 't9', title: 'Run' }))).toEqual([{ op: 'tool', toolCallId: 't9', created: true, title: 'Run', status: null, content: null }]);
  });

  it('content replaces what was shown (ACP sends the whole of it); an empty list empties it', () => {
    const ops = opsOf(
      update({ sessionUpdate: 'tool_call', toolCallId: 't2', content: [{ type: 'content', content: { type: 'text', text: 'first' } }] }),
      update({ sessionUpdate: 'tool_call_update', toolCallId: 't2', content: [{ type: 'content', content: { type: 'image', data: '', mimeType: 'image/png' } }] }),
      update({ sessionUpdate: 'tool_call_update', toolCallId: 't2', content: [] }),
    );
    expect(ops.map((op) => op.op === 'tool' && op.content)).toEqual([[{ type: 'text', text: 'first' }], [{ type: 'text', text: '[image]' }], []]);
  });

  it('a diff of a new file (no old text) adds every line; a diff that changes nothing says so with no hunk', () => {
    const [created, same] = [
      toolContentView({ type: 'diff', path: '/w/new.txt', oldText: null, newText: 'one\ntwo\n' }),
      toolContentView({ type: 'diff', path: '/w/same.txt', oldText: 'x\n', newText: 'x\n' }),
    ];
    expect(created).toMatchObject({ type: 'diff', created: true, added: 2, removed: 0 });
    expect(same).toEqual({ type: 'diff', path: '/w/same.txt', created: false, added: 0, removed: 0, hunks: [] });
  });
});

describe('permissions and turns', () => {
  const permission: TranscriptItem = {
    kind: 'permission',
    data: {
      toolCall: { toolCallId: 'c1', title: 'Write <the> file' },
      options: [
        { optionId: 'allow', name: 'Allow once', kind: 'allow_once' },
        { optionId: 'reject', name: 'Reject once', kind: 'reject_once' },
      ],
    },
  };

  it('a request lists its options; its answer names the option chosen', () => {
    expect(opsOf(permission, { kind: 'permission_outcome', data: { outcome: { outcome: 'selected', optionId: 'allow' } } })).toEqual([
      { op: 'entry', kind: 'permission', label: 'permission', text: 'Write <the> file', emphasis: true, note: ' — Allow once / Reject once' },
      { op: 'entry', kind: 'permission-outcome', label: '', text: 'answered: Allow once', emphasis: false, note: null },
    ]);
  });

  it('an answer to an option not seen says its id; a cancelled request says so', () => {
    expect(opsOf({ kind: 'permission_outcome', data: { outcome: { outcome: 'selected', optionId: 'mystery' } } }, { kind: 'permission_outcome', data: { outcome: { outcome: 'cancelled' } } }).map((op) => op.op === 'entry' && op.text)).toEqual([
      'answered: mystery',
      'cancelled',
    ]);
  });

  it('a request without a title says its tool call, or that it is one', () => {
    expect(opsOf({ kind: 'permission', data: { toolCall: { toolCallId: 'c2' } } }, { kind: 'permission', data: {} }).map((op) => op.op === 'entry' && op.text)).toEqual(['c2', 'a tool call']);
  });

  it('a turn ends with its stop reason, or fails with its error', () => {
    expect(opsOf({ kind: 'prompt_result', data: { stopReason: 'end_turn' } }, { kind: 'prompt_result', data: { error: { kind: 'aborted', message: 'The agent stopped' } } }, { kind: 'prompt_result', data: { error: { kind: 'aborted' } } })).toEqual([
      { op: 'entry', kind: 'result', label: '', text: 'turn ended: end_turn', emphasis: false, note: null },
      { op: 'entry', kind: 'error', label: '', text: 'turn failed: The agent stopped', emphasis: false, note: null },
      { op: 'entry', kind: 'error', label: '', text: 'turn failed: aborted', emphasis: false, note: null },
    ]);
  });
});

describe('other updates', () => {
  it("a plan lists its steps with their status; a mode change and a title are facts", () => {
    expect(
      opsOf(
        update({ sessionUpdate: 'plan', entries: [{ content: 'Read', priority: 'high', status: 'completed' }, { content: 'Write', priority: 'low', status: 'pending' }] }),
        update({ sessionUpdate: 'current_mode_update', currentModeId: 'plan' }),
        update({ sessionUpdate: 'session_info_update', title: 'Fixture session' }),
        update({ sessionUpdate: 'session_info_update' }),
      ),
    ).toEqual([
      { op: 'plan', steps: [{ status: 'completed', priority: 'high', text: 'Read (completed, high)' }, { status: 'pending', priority: 'low', text: 'Write (pending, low)' }] },
      { op: 'entry', kind: 'info', label: '', text: 'mode: plan', emphasis: false, note: null },
      { op: 'entry', kind: 'info', label: '', text: 'title: Fixture session', emphasis: false, note: null },
      { op: 'entry', kind: 'info', label: '', text: 'title: —', emphasis: false, note: null },
    ]);
  });

  it("state updates are the session bar's (no entry); options changed are a fact; an update the page does not draw says its kind; an unknown item shows its content", () => {
    expect(
      opsOf(
        update({ sessionUpdate: 'usage_update', used: 10, size: 100 }),
        update({ sessionUpdate: 'available_commands_update', availableCommands: [] }),
        update({ sessionUpdate: 'config_option_update', configOptions: [{ id: 'fast', name: 'Fast', type: 'boolean', currentValue: true }] }),
        update({}),
        { kind: 'mystery' as TranscriptItem['kind'], data: { message: 'Which?' } },
      ),
    ).toEqual([
      { op: 'entry', kind: 'info', label: '', text: 'options: Fast true', emphasis: false, note: null },
      { op: 'entry', kind: 'info', label: '', text: 'update', emphasis: false, note: null },
      { op: 'entry', kind: 'other', label: 'mystery', text: '{"message":"Which?"}', emphasis: false, note: null },
    ]);
  });

  it('an elicitation is a question (a URL one with its link); its answer says how it was answered', () => {
    expect(
      opsOf(
        { kind: 'elicitation', data: { mode: 'form', message: 'Which?', requestId: 3 } },
        { kind: 'elicitation_outcome', data: { action: 'accept', fields: ['name'] } },
        { kind: 'elicitation', data: { mode: 'url', message: 'Log in', url: 'https://example.test/login' } },
        { kind: 'elicitation_outcome', data: { action: 'decline' } },
        { kind: 'elicitation_outcome', data: { action: 'cancel' } },
      ),
    ).toEqual([
      { op: 'entry', kind: 'elicitation', label: 'question', text: 'Which?', emphasis: true, note: null },
      { op: 'entry', kind: 'elicitation-outcome', label: '', text: 'answered', emphasis: false, note: null },
      { op: 'entry', kind: 'elicitation', label: 'question', text: 'Log in', emphasis: true, note: ' — https://example.test/login' },
      { op: 'entry', kind: 'elicitation-outcome', label: '', text: 'declined', emphasis: false, note: null },
      { op: 'entry', kind: 'elicitation-outcome', label: '', text: 'cancelled', emphasis: false, note: null },
    ]);
  });

  it('reset forgets the open message, the tool calls and the options', () => {
    const model = new TranscriptModel();
    model.apply(chunk('agent_message_chunk', 'a'));
    model.apply(update({ sessionUpdate: 'tool_call', toolCallId: 't1', title: 'x' }));
    model.apply({ kind: 'permission', data: { options: [{ optionId: 'allow', name: 'Allow once' }] } });
    model.reset();
    expect(model.apply(update({ sessionUpdate: 'tool_call_update', toolCallId: 't1' }))).toMatchObject([{ created: true }]);
    model.reset();
    expect(model.apply(chunk('agent_message_chunk', 'b'))).toEqual([{ op: 'message', kind: 'agent', label: 'agent', text: 'b' }]);
    expect(model.apply({ kind: 'permission_outcome', data: { outcome: { outcome: 'selected', optionId: 'allow' } } })).toMatchObject([{ text: 'answered: allow' }]);
  });
});
