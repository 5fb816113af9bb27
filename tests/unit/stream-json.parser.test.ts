/**
 * The stream-json parser against real and SDK-shaped Claude Code lines
 * (tests/fixtures/stream-json-samples.jsonl, each with its source), the decoder's choice
 * between partial messages and whole ones, hostile input (fast-check: it never throws),
 * and the stream-json fixture agent read back through the decoder.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  parseStreamJsonLine,
  StreamJsonDecoder,
  toolKindFor,
  userMessageLine,
  type StreamJsonEvent,
  type StreamJsonUpdates,
} from '../../services/stream-json/stream-json.parser.js';
import type { SessionUpdate } from '../../core/acp-types.js';

interface Sample {
  name: string;
  source: string;
  line: string;
}

const samplesFile = fileURLToPath(new URL('../fixtures/stream-json-samples.jsonl', import.meta.url));
const agentScript = fileURLToPath(new URL('../fixtures/stream-json-agent.mjs', import.meta.url));
const samples: Sample[] = readFileSync(samplesFile, 'utf8')
  .split('\n')
  .filter((line) => line !== '')
  .map((line) => JSON.parse(line) as Sample);
const sample = (name: string): string => {
  const found = samples.find((s) => s.name === name);
  if (!found) throw new Error(`no sample ${name}`);
  return found.line;
};
const parse = (name: string) => parseStreamJsonLine(sample(name));

function updatesOf(event: StreamJsonEvent): SessionUpdate[] {
  expect(event.type).toBe('updates');
  return (event as StreamJsonUpdates).updates;
}

const text = (sessionUpdate: string, value: string) => ({ sessionUpdate, content: { type: 'text', text: value } });
/** The text of every chunk of a kind, joined: what a reader of the stream would show. */
const joined = (events: StreamJsonEvent[], kind: string) =>
  events
    .flatMap((event) => (event.type === 'updates' ? event.updates : []))
    .filter((update) => update.sessionUpdate === kind)
    .map((update) => ((update as { content: { text: string } }).content.text))
    .join('');

describe('the samples file', () => {
  it('names a source for every sample, and every name once', () => {
    expect(samples.length).toBeGreaterThan(30);
    for (const s of samples) expect(s.source, s.name).toMatch(/\S{10,}/);
    expect(new Set(samples.map((s) => s.name)).size).toBe(samples.length);
  });

  it('every sample parses to the event type its name promises', () => {
    const expected: Record<string, StreamJsonEvent['type']> = {
      init: 'init',
      'init-sdk-fields': 'init',
      'not-json': 'malformed',
      'unknown-type': 'unknown',
      'system-hook-response': 'other',
      'system-compact-boundary': 'other',
      'rate-limit-event': 'other',
      'assistant-api-error': 'error',
    };
    for (const s of samples) {
      const type = expected[s.name] ?? (s.name.startsWith('result') || s.name === 'stream-result' ? 'result' : 'updates');
      expect(parseStreamJsonLine(s.line).type, s.name).toBe(type);
    }
  });
});

describe('parseStreamJsonLine: system/init', () => {
  it('a captured init line', () => {
    expect(parse('init')).toEqual({
      type: 'init',
      sessionId: 'test-session-id',
      model: 'claude-opus-4-20250514',
      cwd: '/Users/test/project',
      tools: ['Task', 'Bash', 'Read', 'Write'],
      permissionMode: 'default',
      claudeCodeVersion: undefined,
    });
  });

  it('every SDKSystemMessage field: the ones the init event keeps', () => {
    expect(parse('init-sdk-fields')).toMatchObject({
      type: 'init',
      sessionId: '5f0c6e2a-8d1b-4c3e-9a7f-2b1d0c9e8f7a',
      model: 'claude-sonnet-4-5-20250929',
      cwd: '/work/project',
      permissionMode: 'acceptEdits',
      claudeCodeVersion: '2.0.27',
    });
  });

  it('an init without a session id is unknown; other system subtypes are "other"', () => {
    expect(parseStreamJsonLine('{"type":"system","subtype":"init","cwd":"/x"}')).toMatchObject({
      type: 'unknown',
      reason: expect.stringContaining('session_id'),
    });
    expect(parse('system-hook-response')).toMatchObject({ type: 'other', kind: 'system:hook_response', raw: { hook_event: 'SessionStart' } });
    expect(parse('system-compact-boundary')).toMatchObject({ type: 'other', kind: 'system:compact_boundary' });
    expect(parse('rate-limit-event')).toMatchObject({ type: 'other', kind: 'rate_limit_event' });
    expect(parseStreamJsonLine('{"type":"control_request","request_id":"r1","request":{"subtype":"can_use_tool"}}')).toMatchObject({
      type: 'other',
      kind: 'control_request',
    });
  });
});

describe('parseStreamJsonLine: assistant and user messages', () => {
  it('assistant text → agent_message_chunk, with the line’s session and subagent', () => {
    expect(parse('assistant-text')).toEqual({
      type: 'updates',
      updates: [text('agent_message_chunk', "I'll create a hello world function for you.")],
      sessionId: 'test-session-id',
      parentToolUseId: undefined,
      isReplay: false,
    });
    expect(updatesOf(parse('assistant-text-minimal'))).toEqual([text('agent_message_chunk', '\n\n4')]);
    const sub = parseStreamJsonLine('{"type":"assistant","message":{"content":[{"type":"text","text":"from a subagent"}]},"parent_tool_use_id":"toolu_task"}');
    expect(sub).toMatchObject({ type: 'updates', parentToolUseId: 'toolu_task' });
  });

  it('a text chunk has exactly the fields of the store’s fast path', () => {
    const [update] = updatesOf(parse('assistant-text'));
    expect(Object.keys(update!)).toEqual(['sessionUpdate', 'content']);
    expect(Object.keys((update as { content: object }).content)).toEqual(['type', 'text']);
  });

  it('thinking → agent_thought_chunk', () => {
    expect(updatesOf(parse('assistant-thinking'))).toEqual([text('agent_thought_chunk', 'The user wants the tests run first.')]);
  });

  it('tool_use → tool_call in progress, kind from the tool name, title with what it works on', () => {
    expect(updatesOf(parse('assistant-tool-use-write'))).toEqual([
      {
        sessionUpdate: 'tool_call',
        toolCallId: 'toolu_test',
        title: 'Write: hello.js',
        kind: 'edit',
        status: 'in_progress',
        rawInput: { file_path: 'hello.js', content: "function helloWorld() {\n  console.log('Hello, World!');\n}\n\nhelloWorld();" },
      },
    ]);
    expect(updatesOf(parse('assistant-tool-use-bash'))).toEqual([
      expect.objectContaining({ sessionUpdate: 'tool_call', toolCallId: 'toolu_01Bash', title: 'Bash: npm test', kind: 'execute', status: 'in_progress' }),
    ]);
  });

  it('TodoWrite → its tool_call and an ACP plan', () => {
    expect(updatesOf(parse('assistant-todo-write'))).toEqual([
      expect.objectContaining({ sessionUpdate: 'tool_call', toolCallId: 'toolu_01Todo', title: 'TodoWrite', kind: 'think' }),
      {
        sessionUpdate: 'plan',
        entries: [
          { content: 'Run the tests', priority: 'medium', status: 'completed' },
          { content: 'Fix the failures', priority: 'medium', status: 'in_progress' },
        ],
      },
    ]);
  });

  it('tool kinds', () => {
    const names = ['Read', 'Edit', 'Write', 'MultiEdit', 'Bash', 'Grep', 'Glob', 'WebFetch', 'WebSearch', 'Task', 'mcp__github__search', 'Frobnicate'];
    const kinds = Object.fromEntries(names.map((name) => [name, toolKindFor(name)]));
    expect(kinds).toEqual({
      Read: 'read',
      Edit: 'edit',
      Write: 'edit',
      MultiEdit: 'edit',
      Bash: 'execute',
      Grep: 'search',
      Glob: 'search',
      WebFetch: 'fetch',
      WebSearch: 'fetch',
      Task: 'think',
      mcp__github__search: 'other',
      Frobnicate: 'other',
    });
  });

  it('a long or multi-line input is cut short in the title', () => {
    const call = { type: 'tool_use', id: 't', name: 'Bash', input: { command: `${'x'.repeat(200)}\nsecond` } };
    const long = JSON.stringify({ type: 'assistant', message: { content: [call] } });
    const title = (updatesOf(parseStreamJsonLine(long))[0] as { title: string }).title;
    expect(title.length).toBeLessThanOrEqual('Bash: '.length + 80);
    expect(title).not.toContain('\n');
    const noInput = '{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t","name":"Read"}]}}';
    expect(updatesOf(parseStreamJsonLine(noInput))).toEqual([expect.objectContaining({ title: 'Read', kind: 'read', rawInput: undefined })]);
  });

  it('user tool_result → tool_call_update completed / failed, with its text', () => {
    expect(updatesOf(parse('user-tool-result'))).toEqual([
      {
        sessionUpdate: 'tool_call_update',
        toolCallId: 'toolu_test',
        status: 'completed',
        content: [{ type: 'content', content: { type: 'text', text: 'File created successfully at: hello.js' } }],
        rawOutput: 'File created successfully at: hello.js',
      },
    ]);
    expect(updatesOf(parse('user-tool-result-error'))).toEqual([
      {
        sessionUpdate: 'tool_call_update',
        toolCallId: 'toolu_01Bash',
        status: 'failed',
        content: [{ type: 'content', content: { type: 'text', text: 'Error: 2 tests failed' } }],
        rawOutput: [{ type: 'text', text: 'Error: 2 tests failed' }],
      },
    ]);
  });

  it('user text → user_message_chunk; a replayed one says so', () => {
    expect(updatesOf(parse('user-text'))).toEqual([text('user_message_chunk', 'Create a hello world function')]);
    const replay = '{"type":"user","message":{"role":"user","content":"again"},"isReplay":true,"session_id":"s"}';
    expect(parseStreamJsonLine(replay)).toEqual({
      type: 'updates',
      updates: [text('user_message_chunk', 'again')],
      sessionId: 's',
      parentToolUseId: undefined,
      isReplay: true,
    });
  });

  it('an image in a tool result or a user message becomes an ACP image', () => {
    const image = { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } };
    const line = JSON.stringify({ type: 'user', message: { role: 'user', content: [image, { type: 'tool_result', tool_use_id: 't', content: [image] }] } });
    expect(updatesOf(parseStreamJsonLine(line))).toEqual([
      { sessionUpdate: 'user_message_chunk', content: { type: 'image', data: 'iVBORw0KGgo=', mimeType: 'image/png' } },
      expect.objectContaining({ toolCallId: 't', content: [{ type: 'content', content: { type: 'image', data: 'iVBORw0KGgo=', mimeType: 'image/png' } }] }),
    ]);
  });

  it('blocks it cannot use are left out, not the line', () => {
    const line = JSON.stringify({
      type: 'assistant',
      message: {
        content: [null, 7, { type: 'text', text: '' }, { type: 'redacted_thinking', data: 'x' }, { type: 'tool_use', name: 'Read' }, text('x', 'kept').content],
      },
    });
    expect(updatesOf(parseStreamJsonLine(line))).toEqual([text('agent_message_chunk', 'kept')]);
  });

  it('a synthetic assistant message with an error kind is an error event', () => {
    expect(parse('assistant-api-error')).toEqual({
      type: 'error',
      message: expect.stringContaining('Failed to authenticate'),
      code: 'authentication_failed',
      sessionId: '5f0c6e2a-8d1b-4c3e-9a7f-2b1d0c9e8f7a',
    });
    expect(parseStreamJsonLine('{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}')).toEqual({
      type: 'error',
      message: 'Overloaded',
      code: 'overloaded_error',
      sessionId: undefined,
    });
    expect(parseStreamJsonLine('{"type":"error","message":"boom"}')).toMatchObject({ type: 'error', message: 'boom' });
  });
});

describe('parseStreamJsonLine: result', () => {
  it('success (a line pasted in a Claude Code issue)', () => {
    expect(parse('result-success')).toEqual({
      type: 'result',
      subtype: 'success',
      stopReason: 'end_turn',
      isError: false,
      resultText: '',
      errors: undefined,
      costUsd: 0.079,
      usage: { output_tokens: 13 },
      durationMs: 4047,
      durationApiMs: undefined,
      numTurns: 1,
      sessionId: '20dde46c-b21a-4475-ac07-6a190b80c4e3',
      apiStopReason: 'end_turn',
      terminalReason: undefined,
    });
  });

  it('error subtypes: is_error as sent; limits are max_turn_requests; aborts are cancelled', () => {
    expect(parse('result-error-during-execution-not-is-error')).toMatchObject({
      subtype: 'error_during_execution',
      stopReason: 'end_turn',
      isError: false,
      costUsd: 0.6571631500000001,
      durationApiMs: 184154,
      numTurns: 0,
      usage: expect.objectContaining({ cache_read_input_tokens: 1120129 }),
    });
    expect(parse('result-error-during-execution')).toMatchObject({ stopReason: 'end_turn', isError: true, errors: ['API Error: Connection error.'] });
    expect(parse('result-error-max-turns')).toMatchObject({
      subtype: 'error_max_turns',
      stopReason: 'max_turn_requests',
      isError: true,
      resultText: undefined,
      errors: ['Reached maximum number of turns (10)'],
      terminalReason: 'max_turns',
    });
    expect(parse('result-aborted')).toMatchObject({ stopReason: 'cancelled', isError: false });
    expect(parseStreamJsonLine('{"type":"result","subtype":"error_max_budget_usd"}')).toMatchObject({ stopReason: 'max_turn_requests', isError: true });
    expect(parseStreamJsonLine('{"type":"result","subtype":"success","stop_reason":"refusal"}')).toMatchObject({ stopReason: 'refusal', isError: false });
    expect(parseStreamJsonLine('{"type":"result","subtype":"success","stop_reason":"max_tokens"}')).toMatchObject({ stopReason: 'max_tokens' });
  });

  it('odd fields are left out, not trusted', () => {
    const odd = '{"type":"result","is_error":"yes","total_cost_usd":"1","usage":[1],"num_turns":null,"errors":[1,"e"],"duration_ms":1e999}';
    expect(parseStreamJsonLine(odd)).toMatchObject({
      subtype: '',
      isError: false,
      costUsd: undefined,
      usage: undefined,
      numTurns: undefined,
      errors: ['e'],
      durationMs: undefined,
    });
    expect(parseStreamJsonLine('{"type":"result","cost_usd":0.5}')).toMatchObject({ costUsd: 0.5 });
  });
});

describe('partial messages (--include-partial-messages)', () => {
  const streamNames = samples.filter((s) => s.name.startsWith('stream-')).map((s) => s.name);

  it('stateless: text and thinking deltas map, other events are empty updates', () => {
    expect(updatesOf(parse('stream-message-start'))).toEqual([]);
    expect(updatesOf(parse('stream-thinking-start'))).toEqual([]);
    expect(updatesOf(parse('stream-thinking-delta'))).toEqual([text('agent_thought_chunk', 'Short answer.')]);
    expect(updatesOf(parse('stream-signature-delta'))).toEqual([]);
    expect(updatesOf(parse('stream-text-delta-1'))).toEqual([text('agent_message_chunk', 'Hello')]);
    expect(updatesOf(parse('stream-text-stop'))).toEqual([]);
    expect(updatesOf(parse('stream-message-delta'))).toEqual([]);
    expect(updatesOf(parse('stream-message-stop'))).toEqual([]);
    const inputDelta = '{"type":"stream_event","event":{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\\"a"}}}';
    expect(updatesOf(parseStreamJsonLine(inputDelta))).toEqual([]);
    // Without the decoder, the whole message repeats the streamed text.
    const events = streamNames.map(parse);
    expect(joined(events, 'agent_message_chunk')).toBe('Hello, world.Hello, world.');
  });

  it('decoder with partialMessages: the deltas, once; the whole message’s text and thinking are dropped', () => {
    const decoder = new StreamJsonDecoder({ partialMessages: true });
    const events = streamNames.map((name) => decoder.decode(sample(name)));
    expect(joined(events, 'agent_message_chunk')).toBe('Hello, world.');
    expect(joined(events, 'agent_thought_chunk')).toBe('Short answer.');
    expect(events.at(-1)).toMatchObject({ type: 'result', resultText: 'Hello, world.' });
  });

  it('decoder with partialMessages keeps what was not streamed: tool calls, other messages, text after a result', () => {
    const decoder = new StreamJsonDecoder({ partialMessages: true });
    decoder.decode(sample('stream-message-start'));
    decoder.decode(sample('stream-text-delta-1'));
    const withCall = '[{"type":"text","text":"Hello, world."},{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"a.ts"}}]';
    const mixed = sample('stream-assistant-text').replace('[{"type":"text","text":"Hello, world."}]', withCall);
    expect(updatesOf(decoder.decode(mixed))).toEqual([expect.objectContaining({ sessionUpdate: 'tool_call', toolCallId: 't1' })]);
    // Thinking was not streamed for this message: it stays.
    expect(updatesOf(decoder.decode(sample('stream-assistant-thinking')))).toEqual([text('agent_thought_chunk', 'Short answer.')]);
    // A message that never streamed (another id) keeps its text.
    expect(updatesOf(decoder.decode(sample('assistant-text')))).toEqual([text('agent_message_chunk', "I'll create a hello world function for you.")]);
    // A result forgets the turn: the same id in a later turn is new.
    decoder.decode(sample('stream-result'));
    expect(updatesOf(decoder.decode(sample('stream-assistant-text')))).toEqual([text('agent_message_chunk', 'Hello, world.')]);
  });

  it('decoder without partialMessages: the whole messages, once; stream events map to nothing', () => {
    const decoder = new StreamJsonDecoder();
    expect(decoder.partialMessages).toBe(false);
    const events = streamNames.map((name) => decoder.decode(sample(name)));
    expect(joined(events, 'agent_message_chunk')).toBe('Hello, world.');
    expect(joined(events, 'agent_thought_chunk')).toBe('Short answer.');
  });

  it('decoder with partialMessages: interleaved subagent streams are told apart by parent_tool_use_id', () => {
    const decoder = new StreamJsonDecoder({ partialMessages: true });
    const event = (value: object, parent: string) => JSON.stringify({ type: 'stream_event', event: value, parent_tool_use_id: parent });
    const start = (id: string, parent: string) => event({ type: 'message_start', message: { id } }, parent);
    const delta = (value: string, parent: string) => event({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: value } }, parent);
    const whole = (id: string, value: string, parent: string) =>
      JSON.stringify({ type: 'assistant', message: { id, content: [{ type: 'text', text: value }] }, parent_tool_use_id: parent });
    const lines = [start('mA', 'task1'), start('mB', 'task2'), delta('a', 'task1'), delta('b', 'task2'), whole('mA', 'a', 'task1'), whole('mB', 'b', 'task2')];
    const events = lines.map((line) => decoder.decode(line));
    expect(joined(events, 'agent_message_chunk')).toBe('ab');
    expect(events.slice(4).map((event) => updatesOf(event))).toEqual([[], []]);
  });

  it('the decoder remembers a bounded number of streamed messages', () => {
    const decoder = new StreamJsonDecoder({ partialMessages: true });
    const start = (id: string) => `{"type":"stream_event","event":{"type":"message_start","message":{"id":"${id}"}}}`;
    const delta = '{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}}}';
    const whole = (id: string) => `{"type":"assistant","message":{"id":"${id}","content":[{"type":"text","text":"x"}]}}`;
    for (let i = 0; i < 1000; i++) {
      decoder.decode(start(`m${i}`));
      decoder.decode(delta);
    }
    expect(updatesOf(decoder.decode(whole('m999')))).toEqual([]);
    expect(updatesOf(decoder.decode(whole('m0')))).toEqual([text('agent_message_chunk', 'x')]);
    decoder.reset();
    expect(updatesOf(decoder.decode(whole('m999')))).toEqual([text('agent_message_chunk', 'x')]);
  });
});

describe('lines that are not messages', () => {
  it('malformed: not JSON, cut off, empty', () => {
    expect(parse('not-json')).toEqual({ type: 'malformed', line: sample('not-json'), reason: expect.stringMatching(/^not JSON: /) });
    expect(parseStreamJsonLine('{"type":"assistant","message":{"content":[{"type":"te')).toMatchObject({ type: 'malformed' });
    expect(parseStreamJsonLine('')).toEqual({ type: 'malformed', line: '', reason: 'empty line' });
    expect(parseStreamJsonLine(' \r')).toMatchObject({ type: 'malformed', reason: 'empty line' });
    expect(parseStreamJsonLine(undefined as unknown as string)).toMatchObject({ type: 'malformed', reason: 'not a string but undefined' });
  });

  it('a trailing carriage return is fine', () => {
    expect(parseStreamJsonLine(`${sample('assistant-text')}\r`)).toMatchObject({ type: 'updates' });
  });

  it('unknown: JSON that is not a message this parser knows', () => {
    expect(parse('unknown-type')).toEqual({
      type: 'unknown',
      raw: { type: 'mystery_event', payload: { n: 1 } },
      reason: 'unknown message type "mystery_event"',
    });
    for (const [line, reason] of [
      ['42', 'not a JSON object'],
      ['"text"', 'not a JSON object'],
      ['null', 'not a JSON object'],
      ['[{"type":"assistant"}]', 'not a JSON object'],
      ['{"message":{}}', 'no "type" field'],
      ['{"type":7}', 'no "type" field'],
      ['{"type":"assistant"}', 'assistant line without a "message" object'],
      ['{"type":"assistant","message":{"content":{}}}', 'assistant message without a "content" array'],
      ['{"type":"user","message":null}', 'user line without a "message" object'],
      ['{"type":"stream_event"}', 'stream_event line without an "event" object'],
    ] as const) {
      expect(parseStreamJsonLine(line), line).toMatchObject({ type: 'unknown', reason });
    }
  });

  it('__proto__ and friends are plain keys', () => {
    const event = parseStreamJsonLine('{"__proto__":{"type":"assistant"},"constructor":1}');
    expect(event).toMatchObject({ type: 'unknown', reason: 'no "type" field' });
    expect(({} as { type?: unknown }).type).toBeUndefined();
  });
});

describe('never throws (fast-check)', () => {
  const known = ['assistant', 'user', 'result', 'system', 'stream_event', 'error', 'rate_limit_event', 'control_request'];
  const types = new Set(['init', 'updates', 'result', 'error', 'other', 'unknown', 'malformed']);
  const check = (line: string) => {
    const stateless = parseStreamJsonLine(line);
    expect(types.has(stateless.type)).toBe(true);
    for (const partialMessages of [true, false]) expect(types.has(new StreamJsonDecoder({ partialMessages }).decode(line).type)).toBe(true);
  };

  it('on arbitrary strings', () => {
    fc.assert(fc.property(fc.string({ unit: 'binary', maxLength: 300 }), check), { numRuns: 2000 });
  });

  it('on arbitrary JSON values', () => {
    fc.assert(fc.property(fc.jsonValue(), (value) => check(JSON.stringify(value))), { numRuns: 2000 });
  });

  it('on message-shaped JSON with arbitrary fields', () => {
    const blockTypes = ['text', 'thinking', 'tool_use', 'tool_result', 'image', 'server_tool_use', 'web_search_tool_result', 'text_delta', 'thinking_delta'];
    const block = fc.oneof(
      fc.jsonValue(),
      fc.record(
        {
          type: fc.constantFrom(...blockTypes),
          text: fc.jsonValue(),
          thinking: fc.jsonValue(),
          id: fc.oneof(fc.string(), fc.jsonValue()),
          name: fc.oneof(fc.constantFrom('TodoWrite', 'Bash', 'Read'), fc.jsonValue()),
          input: fc.oneof(fc.record({ todos: fc.jsonValue(), command: fc.jsonValue(), file_path: fc.jsonValue() }), fc.jsonValue()),
          tool_use_id: fc.oneof(fc.string(), fc.jsonValue()),
          content: fc.jsonValue(),
          is_error: fc.jsonValue(),
          source: fc.oneof(fc.record({ type: fc.constant('base64'), data: fc.jsonValue(), media_type: fc.jsonValue() }), fc.jsonValue()),
        },
        { requiredKeys: [] },
      ),
    );
    const message = fc.record(
      {
        type: fc.oneof(fc.constantFrom(...known), fc.jsonValue()),
        subtype: fc.oneof(fc.constantFrom('init', 'success', 'error_max_turns', 'hook_response'), fc.jsonValue()),
        session_id: fc.oneof(fc.string(), fc.jsonValue()),
        message: fc.oneof(
          fc.record({ id: fc.jsonValue(), model: fc.jsonValue(), content: fc.oneof(fc.array(block), fc.jsonValue()) }, { requiredKeys: [] }),
          fc.jsonValue(),
        ),
        event: fc.oneof(
          fc.record(
            {
              type: fc.constantFrom('message_start', 'content_block_start', 'content_block_delta', 'message_stop'),
              delta: block,
              content_block: block,
              message: fc.jsonValue(),
            },
            { requiredKeys: [] },
          ),
          fc.jsonValue(),
        ),
        error: fc.jsonValue(),
        usage: fc.jsonValue(),
        errors: fc.jsonValue(),
        tools: fc.jsonValue(),
      },
      { requiredKeys: [] },
    );
    fc.assert(fc.property(message, (value) => check(JSON.stringify(value))), { numRuns: 3000 });
  });

  it('a decoder fed an arbitrary sequence stays sound', () => {
    const lines = fc.array(fc.oneof(fc.constantFrom(...samples.map((s) => s.line)), fc.string({ maxLength: 40 })), { maxLength: 60 });
    fc.assert(
      fc.property(lines, fc.boolean(), (sequence, partialMessages) => {
        const decoder = new StreamJsonDecoder({ partialMessages });
        for (const line of sequence) expect(types.has(decoder.decode(line).type)).toBe(true);
      }),
      { numRuns: 500 },
    );
  });
});

describe('userMessageLine', () => {
  it('the documented input shape, one line ending with a newline, whatever the text', () => {
    expect(userMessageLine('Explain this code')).toBe('{"type":"user","message":{"role":"user","content":[{"type":"text","text":"Explain this code"}]}}\n');
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (prompt) => {
        const line = userMessageLine(prompt);
        expect(line.endsWith('\n')).toBe(true);
        expect(line.slice(0, -1)).not.toMatch(/[\n\r]/);
        expect(JSON.parse(line)).toEqual({ type: 'user', message: { role: 'user', content: [{ type: 'text', text: prompt }] } });
      }),
    );
  });
});

describe('the stream-json fixture agent, read through the decoder', () => {
  /** Runs the agent with `args`, writes the prompts then closes stdin; its exit code and decoded lines. */
  function run(args: string[], prompts: string[], partialMessages = false): Promise<{ code: number | null; events: StreamJsonEvent[] }> {
    return new Promise((resolve, reject) => {
      const child = spawn(process.execPath, [agentScript, '-p', '--input-format', 'stream-json', '--output-format', 'stream-json', '--verbose', ...args], {
        stdio: ['pipe', 'pipe', 'inherit'],
      });
      let out = '';
      child.stdout.setEncoding('utf8').on('data', (data: string) => (out += data));
      child.on('error', reject);
      child.on('close', (code) => {
        const decoder = new StreamJsonDecoder({ partialMessages });
        resolve({ code, events: out.split('\n').filter((line) => line !== '').map((line) => decoder.decode(line)) });
      });
      child.stdin.end(prompts.map(userMessageLine).join(''));
    });
  }

  it('a turn: init, text, tool call and result, the result — and exit 0 on EOF', async () => {
    const { code, events } = await run(['--resume', 'sess-42'], ['hello']);
    expect(code).toBe(0);
    expect(events.map((event) => event.type)).toEqual(['init', 'updates', 'updates', 'updates', 'updates', 'result']);
    expect(events[0]).toMatchObject({ type: 'init', sessionId: 'sess-42' });
    const updates = events.flatMap((event) => (event.type === 'updates' ? event.updates : []));
    expect(updates.map((update) => update.sessionUpdate)).toEqual(['agent_message_chunk', 'tool_call', 'tool_call_update', 'agent_message_chunk']);
    expect(updates[1]).toMatchObject({ kind: 'execute', status: 'in_progress', title: 'Bash: echo hello' });
    expect(updates[2]).toMatchObject({ toolCallId: (updates[1] as { toolCallId: string }).toolCallId, status: 'completed' });
    expect(events[5]).toMatchObject({ type: 'result', stopReason: 'end_turn', isError: false, sessionId: 'sess-42', numTurns: 2, costUsd: expect.any(Number) });
  });

  it('scripted turns: malformed, error, stream N; partial messages once through the decoder', async () => {
    const { code, events } = await run(['--include-partial-messages'], ['malformed', 'error', 'stream 3'], true);
    expect(code).toBe(0);
    expect(events.filter((event) => event.type === 'malformed')).toHaveLength(1);
    expect(events.filter((event) => event.type === 'unknown')).toHaveLength(1);
    const results = events.filter((event) => event.type === 'result');
    expect(results.map((result) => [result.subtype, result.isError])).toEqual([
      ['success', false],
      ['error_during_execution', true],
      ['success', false],
    ]);
    const afterError = events.slice(events.indexOf(results[1]!) + 1);
    expect(joined(afterError, 'agent_message_chunk')).toBe('chunk 1chunk 2chunk 3');
    expect((results[2] as { costUsd: number }).costUsd).toBeGreaterThan((results[0] as { costUsd: number }).costUsd);
  });

  it('crash: exit code 3 mid-turn, no result', async () => {
    const { code, events } = await run([], ['crash', 'never answered']);
    expect(code).toBe(3);
    expect(events.map((event) => event.type)).toEqual(['init', 'updates']);
  });
});
