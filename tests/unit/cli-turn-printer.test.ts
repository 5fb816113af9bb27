/** How `run` and `prompt` print a turn in each format: what goes to stdout, what to stderr. */
import { describe, expect, it } from 'vitest';
import { TurnPrinter } from '../../cli/turn-printer.js';
import { TranscriptRenderer } from '../../cli/commands/sessions.js';
import { styleOf } from '../../cli/output.js';

/** A stream that keeps what is written to it. */
function sink(isTTY = false) {
  const chunks: string[] = [];
  const stream = { isTTY, write: (chunk: string) => chunks.push(chunk) > 0, text: () => chunks.join('') };
  return stream as typeof stream & NodeJS.WriteStream;
}

const chunk = (text: string) => ({ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text } });
const turn = [
  { sessionUpdate: 'agent_thought_chunk', content: { type: 'text', text: 'let me ' } },
  { sessionUpdate: 'agent_thought_chunk', content: { type: 'text', text: 'think' } },
  chunk('Hello '),
  { sessionUpdate: 'tool_call', toolCallId: 't1', title: 'Read file', kind: 'read', status: 'pending' },
  { sessionUpdate: 'tool_call_update', toolCallId: 't1', status: 'completed' },
  chunk('world'),
  { sessionUpdate: 'plan', entries: [{}, {}] },
];

function play(format: 'text' | 'json' | 'quiet', stopReason = 'end_turn') {
  const out = sink();
  const err = sink();
  const printer = new TurnPrinter(format, out, err);
  printer.event({ type: 'session', sessionId: 's1' });
  for (const update of turn) printer.update('s1', update);
  printer.done('s1', stopReason);
  return { out: out.text(), err: err.text(), printer };
}

describe('TurnPrinter', () => {
  it('text: the answer on stdout as it comes, thoughts and tool calls as one-liners on stderr', () => {
    const { out, err } = play('text');
    expect(out).toBe('Hello world\n');
    expect(err.split('\n')).toEqual(['· thinking: let me think', '· tool: Read file [read] pending', '· tool: Read file completed', '· plan: 2 steps', '']);
  });

  it('text: a turn that did not end normally says how it ended', () => {
    expect(play('text', 'cancelled').err).toContain('· turn ended: cancelled');
  });

  it('json: one object per line for every event, ending with done and the whole answer', () => {
    const { out, err } = play('json');
    const lines = out.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines[0]).toEqual({ type: 'session', sessionId: 's1' });
    expect(lines.slice(1, -1)).toEqual(turn.map((update) => ({ type: 'update', sessionId: 's1', update })));
    expect(lines.at(-1)).toEqual({ type: 'done', sessionId: 's1', stopReason: 'end_turn', text: 'Hello world' });
    expect(err).toBe('');
  });

  it('quiet: only the final answer', () => {
    expect(play('quiet')).toMatchObject({ out: 'Hello world\n', err: '' });
  });

  it('quiet: the answer the daemon sends whole wins over the chunks', () => {
    const out = sink();
    const printer = new TurnPrinter('quiet', out, sink());
    printer.done('s1', 'end_turn', 'the whole answer');
    expect(out.text()).toBe('the whole answer\n');
  });

  it('a note after a half-written line starts a new line when both go to one terminal', () => {
    const out = sink(true);
    const err = sink(true);
    const printer = new TurnPrinter('text', out, err);
    printer.update('s1', chunk('half'));
    printer.update('s1', { sessionUpdate: 'tool_call', toolCallId: 't', title: 'x' });
    expect(err.text()).toMatch(/^\n/);
  });

  it('json: a failure is an error line', () => {
    const out = sink();
    new TurnPrinter('json', out, sink()).failed({ kind: 'agent_exited', message: 'Echo exited unexpectedly', class: 'crash' });
    expect(JSON.parse(out.text())).toEqual({ type: 'error', error: { kind: 'agent_exited', message: 'Echo exited unexpectedly', class: 'crash' } });
  });
});

describe('TranscriptRenderer', () => {
  it('joins the agent message and puts prompts, tool calls, permissions and outcomes on lines of their own', () => {
    const render = new TranscriptRenderer(styleOf(false));
    const entry = (kind: string, data: unknown) => ({ seq: 0, at: 0, agent: 'a', sessionId: 's', kind: kind as 'update', data });
    const text = [
      entry('prompt', { prompt: [{ type: 'text', text: 'hi there' }] }),
      entry('update', chunk('hi ')),
      entry('update', chunk('there')),
      entry('update', { sessionUpdate: 'tool_call', toolCallId: 't', title: 'Edit', status: 'pending' }),
      entry('permission', { requestId: 'p1', toolCall: { toolCallId: 't', title: 'Edit' }, options: [] }),
      entry('permission_outcome', { requestId: 'p1', outcome: { outcome: 'selected', optionId: 'allow' } }),
      entry('prompt_result', { stopReason: 'end_turn' }),
      entry('prompt_result', { error: { kind: 'agent_exited', message: 'gone' } }),
    ]
      .map((each) => render.entry(each))
      .join('');
    expect(text + render.end()).toBe(['> hi there', 'hi there', '· tool: Edit pending', '? permission: Edit', '· answered: allow', '· end_turn', '· failed: agent_exited: gone', ''].join('\n'));
  });
});
