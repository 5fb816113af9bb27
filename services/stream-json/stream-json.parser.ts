/**
 * Claude Code's headless NDJSON (`claude -p --input-format stream-json --output-format
 * stream-json --verbose`) read as ACP: one stdout line becomes one {@link StreamJsonEvent},
 * whose session updates are ACP `SessionUpdate`s, so one consumer serves both protocols.
 * Pure and synchronous, no I/O; it never throws. The hot path is one `JSON.parse` per line
 * plus a walk over the line's content blocks; shapes are checked by hand (no schema).
 *
 * Where the shapes come from (shapes only; no code was taken from these):
 * - Output messages: `SDKMessage` and its members in @anthropic-ai/claude-agent-sdk sdk.d.ts
 *   (0.1.27 as tracked by github.com/Cometix-Org/Claude-Code-Agent-SDK-Typescript-Tracker;
 *   later versions add `SDKResultError.errors`, `stop_reason`, `terminal_reason`, the
 *   subtypes `error_max_budget_usd` / `error_max_structured_output_retries`, and
 *   `SDKAssistantMessage.error`). The SDK reads exactly this stream from the CLI.
 * - Content blocks (`text`, `thinking`, `tool_use`, `tool_result`) and the partial-message
 *   events inside `stream_event` (`message_start`, `content_block_start`,
 *   `content_block_delta` with `text_delta` / `thinking_delta` / `input_json_delta` /
 *   `signature_delta`, `content_block_stop`, `message_delta`, `message_stop`): the
 *   Anthropic Messages API (docs.anthropic.com, "Streaming Messages"), which Claude Code
 *   forwards as they are.
 * - Result subtype → stop reason, and "with partial messages the final assistant message
 *   repeats the streamed text": how Zed's ACP adapter reads the same messages
 *   (github.com/zed-industries/claude-code-acp, src/acp-agent.ts).
 * - Real lines: tests/fixtures/stream-json-samples.jsonl, each with its source.
 * - The input line: docs.anthropic.com/en/docs/claude-code/sdk ("Streaming JSON input"),
 *   now docs.claude.com/en/docs/claude-code/headless.
 */
import type { ContentBlock, SessionUpdate, StopReason } from '../../core/acp-types.js';

type ToolCallStart = Extract<SessionUpdate, { sessionUpdate: 'tool_call' }>;
type ToolCallProgress = Extract<SessionUpdate, { sessionUpdate: 'tool_call_update' }>;
type PlanUpdate = Extract<SessionUpdate, { sessionUpdate: 'plan' }>;
/** ACP's tool kinds (`ToolKind`). */
export type StreamJsonToolKind = NonNullable<ToolCallStart['kind']>;
type ToolCallContent = NonNullable<ToolCallStart['content']>[number];
type PlanEntry = PlanUpdate['entries'][number];

/** Token counts of a result, as Claude Code reports them (the API's `usage`, passed through). */
export interface StreamJsonUsage {
  input_tokens?: number;
  output_tokens?: number;
  cache_creation_input_tokens?: number;
  cache_read_input_tokens?: number;
  [key: string]: unknown;
}

/** `system` / `init`: the session is ready. The first line of a run; accept it again later (a consumer should not assume it comes once). */
export interface StreamJsonInit {
  type: 'init';
  sessionId: string;
  model: string | undefined;
  cwd: string | undefined;
  tools: string[] | undefined;
  permissionMode: string | undefined;
  claudeCodeVersion: string | undefined;
}

/** A line that carries session updates (maybe none: a partial-message event with no text). */
export interface StreamJsonUpdates {
  type: 'updates';
  updates: SessionUpdate[];
  sessionId: string | undefined;
  /** Set when a subagent (the Task tool call with this id) produced the message. */
  parentToolUseId: string | undefined;
  /** A user message echoed back by `--replay-user-messages`. */
  isReplay: boolean;
}

/** `result`: the turn is over. */
export interface StreamJsonResult {
  type: 'result';
  /** `success`, `error_max_turns`, `error_during_execution`, `error_max_budget_usd`, … as sent. */
  subtype: string;
  stopReason: StopReason;
  /** `is_error` when sent, else whether the subtype is an error subtype. */
  isError: boolean;
  /** The final text (`result`; on the success subtype only). */
  resultText: string | undefined;
  /** `errors` (error subtypes, newer versions). */
  errors: string[] | undefined;
  /**
   * `total_cost_usd` (or the older `cost_usd`). With `--input-format stream-json` one process
   * serves every turn and this is the running total of the process, not the turn's cost
   * (github.com/anthropics/claude-code/issues/83239): subtract the previous result's value.
   */
  costUsd: number | undefined;
  usage: StreamJsonUsage | undefined;
  durationMs: number | undefined;
  durationApiMs: number | undefined;
  numTurns: number | undefined;
  sessionId: string | undefined;
  /** The API's `stop_reason` of the last message (`end_turn`, `max_tokens`, `refusal`, …), when sent. */
  apiStopReason: string | undefined;
  /** `terminal_reason` (`completed`, `max_turns`, `aborted_streaming`, …), when sent. */
  terminalReason: string | undefined;
}

/** An error line: a top-level `error` message, or the synthetic assistant message Claude Code prints for an API error. */
export interface StreamJsonError {
  type: 'error';
  message: string;
  /** The error kind when sent (`authentication_failed`, `rate_limit`, …). */
  code: string | undefined;
  sessionId: string | undefined;
}

/** A known Claude Code message that maps to no session update (hooks, retries, rate limits, compaction, control messages…). */
export interface StreamJsonOther {
  type: 'other';
  /** The message type, with the subtype for `system` and control messages: `system:hook_response`, `rate_limit_event`, … */
  kind: string;
  raw: Record<string, unknown>;
}

/** Valid JSON, but not a message this parser knows. */
export interface StreamJsonUnknown {
  type: 'unknown';
  raw: unknown;
  reason: string;
}

/** Not JSON at all (a stray log line, a cut-off write). */
export interface StreamJsonMalformed {
  type: 'malformed';
  line: string;
  reason: string;
}

export type StreamJsonEvent =
  | StreamJsonInit
  | StreamJsonUpdates
  | StreamJsonResult
  | StreamJsonError
  | StreamJsonOther
  | StreamJsonUnknown
  | StreamJsonMalformed;

/**
 * One stdout line → one event. Stateless: an assistant message's text is always mapped, and
 * so are partial-message text deltas, so with `--include-partial-messages` the text comes
 * twice; {@link StreamJsonDecoder} picks one of the two. Never throws.
 */
export function parseStreamJsonLine(line: string): StreamJsonEvent {
  return decode(line, undefined);
}

/**
 * The stdin line for a prompt: a user message with one text block, the shape of the docs'
 * "Streaming JSON input" example. Ends with `\n` (ready to write); the text's own newlines
 * are escaped by JSON, so the line is one line whatever the text.
 */
export function userMessageLine(text: string): string {
  return `${JSON.stringify({ type: 'user', message: { role: 'user', content: [{ type: 'text', text }] } })}\n`;
}

export interface StreamJsonDecoderOptions {
  /**
   * Whether the CLI runs with `--include-partial-messages`. Then Claude Code streams each
   * message's text as `stream_event` deltas and afterwards prints the whole `assistant`
   * message, which repeats that text. `true`: the deltas become the chunks, and an assistant
   * message's text / thinking blocks are dropped when deltas of that kind were seen for its
   * message id. `false` (default): the whole messages become the chunks and `stream_event`
   * lines map to no update. Either way each piece of text reaches the consumer once.
   */
  partialMessages?: boolean;
}

/** How many streamed message ids the decoder remembers (they are forgotten at each `result`). */
const rememberedIds = 256;

/** The message a stream (the main agent's, or one subagent's) is streaming. */
interface Streaming {
  /** `message_start`'s message id ('' when it has none). */
  id: string;
  /** Whether text / thinking deltas were seen for it. */
  text: boolean;
  thinking: boolean;
}

/** What a decoder remembers between lines. */
class DecoderState {
  /**
   * The message being streamed, by `parent_tool_use_id` ('' for the main agent), so that
   * subagents running side by side, should their events interleave, are told apart.
   */
  readonly streaming = new Map<string, Streaming>();
  /** Message ids whose text / thinking arrived as deltas. */
  readonly textStreamed = new Set<string>();
  readonly thinkingStreamed = new Set<string>();

  constructor(readonly partialMessages: boolean) {}

  reset(): void {
    this.streaming.clear();
    this.textStreamed.clear();
    this.thinkingStreamed.clear();
  }
}

/**
 * A stateful {@link parseStreamJsonLine} that does not repeat text: see
 * {@link StreamJsonDecoderOptions.partialMessages}. One decoder per process stdout.
 */
export class StreamJsonDecoder {
  readonly partialMessages: boolean;
  private readonly state: DecoderState;

  constructor(options: StreamJsonDecoderOptions = {}) {
    this.partialMessages = options.partialMessages === true;
    this.state = new DecoderState(this.partialMessages);
  }

  /** One stdout line → one event. Never throws. */
  decode(line: string): StreamJsonEvent {
    return decode(line, this.state);
  }

  /** Forgets what was streamed (a new process, or a new session on the same decoder). A `result` line does this too. */
  reset(): void {
    this.state.reset();
  }
}

/** The ACP tool kind for a Claude Code tool name (unknown and MCP tools: `other`). */
export function toolKindFor(name: string): StreamJsonToolKind {
  return toolKinds.get(name) ?? 'other';
}

const toolKinds: ReadonlyMap<string, StreamJsonToolKind> = new Map<string, StreamJsonToolKind>([
  ['Read', 'read'],
  ['NotebookRead', 'read'],
  ['Edit', 'edit'],
  ['MultiEdit', 'edit'],
  ['Write', 'edit'],
  ['NotebookEdit', 'edit'],
  ['Bash', 'execute'],
  ['Grep', 'search'],
  ['Glob', 'search'],
  ['LS', 'search'],
  ['WebFetch', 'fetch'],
  ['WebSearch', 'fetch'],
  ['Task', 'think'],
  ['TodoWrite', 'think'],
]);

/** Top-level message types of the SDK's `SDKMessage` that carry no session update. */
const otherTypes: ReadonlySet<unknown> = new Set([
  'rate_limit_event',
  'tool_progress',
  'tool_use_summary',
  'auth_status',
  'control_request',
  'control_response',
  'control_cancel_request',
  'keep_alive',
  'prompt_suggestion',
]);

/** Result subtypes that end a turn on a limit (ACP has one stop reason for them). */
const limitSubtypes: ReadonlySet<unknown> = new Set(['error_max_turns', 'error_max_budget_usd', 'error_max_structured_output_retries']);
const limitTerminalReasons: ReadonlySet<unknown> = new Set(['max_turns', 'budget_exhausted', 'structured_output_retry_exhausted']);
const abortTerminalReasons: ReadonlySet<unknown> = new Set(['aborted_streaming', 'aborted_tools']);
const planStatuses: ReadonlySet<unknown> = new Set(['pending', 'in_progress', 'completed']);

/** The fields of a message line this parser reads. */
interface Line {
  type?: unknown;
  subtype?: unknown;
  message?: unknown;
  event?: unknown;
  session_id?: unknown;
  parent_tool_use_id?: unknown;
  isReplay?: unknown;
  error?: unknown;
  [key: string]: unknown;
}

/** The fields of a message (`message`) and of a content block this parser reads. */
interface Message {
  id?: unknown;
  model?: unknown;
  content?: unknown;
}

interface Block {
  type?: unknown;
  text?: unknown;
  thinking?: unknown;
  id?: unknown;
  name?: unknown;
  input?: unknown;
  tool_use_id?: unknown;
  content?: unknown;
  is_error?: unknown;
  source?: unknown;
}

function decode(line: string, decoder: DecoderState | undefined): StreamJsonEvent {
  if (typeof line !== 'string') return { type: 'malformed', line: safeString(line), reason: `not a string but ${typeof line}` };
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch (error) {
    return { type: 'malformed', line, reason: line.trim() === '' ? 'empty line' : `not JSON: ${errorMessage(error)}` };
  }
  try {
    return mapValue(value, decoder);
  } catch (error) {
    // Not expected (every access is checked); the promise is that nothing escapes.
    return { type: 'unknown', raw: value, reason: `could not be read: ${errorMessage(error)}` };
  }
}

function mapValue(value: unknown, decoder: DecoderState | undefined): StreamJsonEvent {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return unknown(value, 'not a JSON object');
  const line = value as Line;
  switch (line.type) {
    case 'assistant':
      return assistant(line, decoder);
    case 'stream_event':
      return streamEvent(line, decoder);
    case 'user':
      return user(line);
    case 'result':
      return result(line, decoder);
    case 'system':
      return system(line);
    case 'error':
      return errorLine(line);
    default:
      if (otherTypes.has(line.type)) return other(line);
      return unknown(value, typeof line.type === 'string' ? `unknown message type "${line.type}"` : 'no "type" field');
  }
}

function assistant(line: Line, decoder: DecoderState | undefined): StreamJsonEvent {
  const message = line.message as Message | null | undefined;
  if (message === null || typeof message !== 'object') return unknown(line, 'assistant line without a "message" object');
  const content = message.content;
  // An API failure (auth, rate limit, overload): Claude Code prints it as a synthetic
  // assistant message whose text is the error, with the error kind beside it.
  if (typeof line.error === 'string' && message.model === '<synthetic>') {
    return { type: 'error', message: joinedText(content) || line.error, code: line.error, sessionId: str(line.session_id) };
  }
  if (typeof content === 'string') return updates(line, content === '' ? [] : [chunk('agent_message_chunk', content)]);
  if (!Array.isArray(content)) return unknown(line, 'assistant message without a "content" array');
  let dropText = false;
  let dropThinking = false;
  if (decoder !== undefined && decoder.partialMessages) {
    const id = typeof message.id === 'string' ? message.id : '';
    dropText = decoder.textStreamed.has(id);
    dropThinking = decoder.thinkingStreamed.has(id);
  }
  // The common line: one text block (Claude Code prints one block per assistant line).
  if (content.length === 1 && !dropText) {
    const only = content[0] as Block | null;
    if (only !== null && typeof only === 'object' && only.type === 'text' && typeof only.text === 'string' && only.text !== '') {
      return updates(line, [chunk('agent_message_chunk', only.text)]);
    }
  }
  const out: SessionUpdate[] = [];
  for (let i = 0; i < content.length; i++) {
    const block = content[i] as Block | null;
    if (block === null || typeof block !== 'object') continue;
    const type = block.type;
    if (type === 'text') {
      if (!dropText && typeof block.text === 'string' && block.text !== '') out.push(chunk('agent_message_chunk', block.text));
    } else if (type === 'thinking') {
      if (!dropThinking && typeof block.thinking === 'string' && block.thinking !== '') out.push(chunk('agent_thought_chunk', block.thinking));
    } else if (type === 'tool_use' || type === 'server_tool_use' || type === 'mcp_tool_use') {
      toolUse(block, out);
    } else if (typeof type === 'string' && type.endsWith('tool_result')) {
      // Server tools (web search, …) answer inside the assistant message itself.
      toolResult(block, out);
    }
  }
  return updates(line, out);
}

function user(line: Line): StreamJsonEvent {
  const message = line.message as Message | null | undefined;
  if (message === null || typeof message !== 'object') return unknown(line, 'user line without a "message" object');
  const content = message.content;
  if (typeof content === 'string') return updates(line, content === '' ? [] : [chunk('user_message_chunk', content)]);
  if (!Array.isArray(content)) return unknown(line, 'user message without a "content" array');
  const out: SessionUpdate[] = [];
  for (let i = 0; i < content.length; i++) {
    const block = content[i] as Block | null;
    if (block === null || typeof block !== 'object') continue;
    if (block.type === 'tool_result') toolResult(block, out);
    else if (block.type === 'text') {
      if (typeof block.text === 'string' && block.text !== '') out.push(chunk('user_message_chunk', block.text));
    } else if (block.type === 'image') {
      const image = imageContent(block);
      if (image) out.push({ sessionUpdate: 'user_message_chunk', content: image });
    }
  }
  return updates(line, out);
}

function streamEvent(line: Line, decoder: DecoderState | undefined): StreamJsonEvent {
  const event = line.event as { type?: unknown; delta?: unknown; content_block?: unknown; message?: unknown } | null | undefined;
  if (event === null || typeof event !== 'object') return unknown(line, 'stream_event line without an "event" object');
  if (decoder !== undefined && !decoder.partialMessages) return updates(line, []);
  let text: unknown;
  let kind: 'agent_message_chunk' | 'agent_thought_chunk' | undefined;
  switch (event.type) {
    case 'content_block_delta': {
      const delta = event.delta as Block | null | undefined;
      if (delta === null || typeof delta !== 'object') break;
      if (delta.type === 'text_delta') {
        kind = 'agent_message_chunk';
        text = delta.text;
      } else if (delta.type === 'thinking_delta') {
        kind = 'agent_thought_chunk';
        text = delta.thinking;
      }
      break;
    }
    case 'content_block_start': {
      // The API starts a text block empty; should one ever carry text, it is not lost.
      const block = event.content_block as Block | null | undefined;
      if (block === null || typeof block !== 'object') break;
      if (block.type === 'text') {
        kind = 'agent_message_chunk';
        text = block.text;
      } else if (block.type === 'thinking') {
        kind = 'agent_thought_chunk';
        text = block.thinking;
      }
      break;
    }
    case 'message_start':
      if (decoder !== undefined) {
        const message = event.message as Message | null | undefined;
        const id = message !== null && typeof message === 'object' && typeof message.id === 'string' ? message.id : '';
        decoder.streaming.set(streamKey(line), { id, text: false, thinking: false });
      }
      break;
  }
  if (kind === undefined || typeof text !== 'string' || text === '') return updates(line, []);
  if (decoder !== undefined) {
    const key = streamKey(line);
    let streaming = decoder.streaming.get(key);
    if (streaming === undefined) {
      // Deltas without a message_start: remembered under the id-less message.
      streaming = { id: '', text: false, thinking: false };
      decoder.streaming.set(key, streaming);
    }
    if (kind === 'agent_message_chunk' && !streaming.text) {
      streaming.text = true;
      remember(decoder.textStreamed, streaming.id);
    } else if (kind === 'agent_thought_chunk' && !streaming.thinking) {
      streaming.thinking = true;
      remember(decoder.thinkingStreamed, streaming.id);
    }
  }
  return updates(line, [chunk(kind, text)]);
}

function result(line: Line, decoder: DecoderState | undefined): StreamJsonResult {
  if (decoder !== undefined) decoder.reset();
  const subtype = typeof line.subtype === 'string' ? line.subtype : '';
  const apiStopReason = str(line.stop_reason);
  const terminalReason = str(line.terminal_reason);
  let stopReason: StopReason = 'end_turn';
  if (abortTerminalReasons.has(terminalReason)) stopReason = 'cancelled';
  else if (limitSubtypes.has(subtype) || limitTerminalReasons.has(terminalReason)) stopReason = 'max_turn_requests';
  else if (apiStopReason === 'refusal') stopReason = 'refusal';
  else if (apiStopReason === 'max_tokens') stopReason = 'max_tokens';
  const usage = line.usage;
  return {
    type: 'result',
    subtype,
    stopReason,
    isError: typeof line.is_error === 'boolean' ? line.is_error : subtype.startsWith('error'),
    resultText: str(line.result),
    errors: Array.isArray(line.errors) ? line.errors.filter((error): error is string => typeof error === 'string') : undefined,
    costUsd: num(line.total_cost_usd) ?? num(line.cost_usd),
    usage: usage !== null && typeof usage === 'object' && !Array.isArray(usage) ? (usage as StreamJsonUsage) : undefined,
    durationMs: num(line.duration_ms),
    durationApiMs: num(line.duration_api_ms),
    numTurns: num(line.num_turns),
    sessionId: str(line.session_id),
    apiStopReason,
    terminalReason,
  };
}

function system(line: Line): StreamJsonEvent {
  if (line.subtype !== 'init') return other(line);
  const sessionId = line.session_id;
  if (typeof sessionId !== 'string') return unknown(line, 'system init without a "session_id" string');
  const tools = line.tools;
  return {
    type: 'init',
    sessionId,
    model: str(line.model),
    cwd: str(line.cwd),
    tools: Array.isArray(tools) ? tools.filter((tool): tool is string => typeof tool === 'string') : undefined,
    permissionMode: str(line.permissionMode),
    claudeCodeVersion: str(line.claude_code_version),
  };
}

function errorLine(line: Line): StreamJsonError {
  const error = line.error as { message?: unknown; type?: unknown } | string | null | undefined;
  const nested = error !== null && typeof error === 'object' ? error : undefined;
  const message = str(nested?.message) ?? str(line.message) ?? (typeof error === 'string' ? error : undefined) ?? 'error';
  return { type: 'error', message, code: str(nested?.type) ?? str(line.subtype), sessionId: str(line.session_id) };
}

function other(line: Line): StreamJsonOther {
  const kind = typeof line.subtype === 'string' ? `${String(line.type)}:${line.subtype}` : String(line.type);
  return { type: 'other', kind, raw: line };
}

function toolUse(block: Block, out: SessionUpdate[]): void {
  const id = block.id;
  if (typeof id !== 'string') return;
  const name = typeof block.name === 'string' ? block.name : 'tool';
  const input = block.input;
  const update: ToolCallStart = {
    sessionUpdate: 'tool_call',
    toolCallId: id,
    title: toolTitle(name, input),
    kind: toolKindFor(name),
    status: 'in_progress',
    rawInput: input,
  };
  out.push(update);
  // The todo list Claude Code keeps with TodoWrite is what ACP calls a plan.
  if (name === 'TodoWrite' && input !== null && typeof input === 'object') {
    const todos = (input as { todos?: unknown }).todos;
    if (Array.isArray(todos)) out.push({ sessionUpdate: 'plan', entries: planEntries(todos) });
  }
}

function toolResult(block: Block, out: SessionUpdate[]): void {
  const id = block.tool_use_id;
  if (typeof id !== 'string') return;
  const update: ToolCallProgress = {
    sessionUpdate: 'tool_call_update',
    toolCallId: id,
    status: block.is_error === true ? 'failed' : 'completed',
    content: toolResultContent(block.content),
    rawOutput: block.content,
  };
  out.push(update);
}

/** A tool result's `content` (a string, or text / image blocks) as ACP tool call content. */
function toolResultContent(content: unknown): ToolCallContent[] {
  if (typeof content === 'string') return content === '' ? [] : [{ type: 'content', content: { type: 'text', text: content } }];
  if (!Array.isArray(content)) return [];
  const out: ToolCallContent[] = [];
  for (let i = 0; i < content.length; i++) {
    const block = content[i] as Block | null;
    if (block === null || typeof block !== 'object') continue;
    if (block.type === 'text' && typeof block.text === 'string') out.push({ type: 'content', content: { type: 'text', text: block.text } });
    else if (block.type === 'image') {
      const image = imageContent(block);
      if (image) out.push({ type: 'content', content: image });
    }
  }
  return out;
}

/** An API image block with base64 data as an ACP image; other sources are left out. */
function imageContent(block: Block): ContentBlock | undefined {
  const source = block.source as { type?: unknown; data?: unknown; media_type?: unknown } | null | undefined;
  if (source === null || typeof source !== 'object' || source.type !== 'base64') return undefined;
  if (typeof source.data !== 'string' || typeof source.media_type !== 'string') return undefined;
  return { type: 'image', data: source.data, mimeType: source.media_type };
}

function planEntries(todos: unknown[]): PlanEntry[] {
  const entries: PlanEntry[] = [];
  for (const todo of todos) {
    if (todo === null || typeof todo !== 'object') continue;
    const { content, status } = todo as { content?: unknown; status?: unknown };
    if (typeof content !== 'string') continue;
    entries.push({ content, priority: 'medium', status: planStatuses.has(status) ? (status as PlanEntry['status']) : 'pending' });
  }
  return entries;
}

/** The input fields that say what a call is about, most telling first. */
const summaryFields = ['file_path', 'notebook_path', 'command', 'pattern', 'url', 'query', 'description', 'path'] as const;
const maxSummary = 80;

/** The tool's name, and when the input makes it obvious, what it works on: `Read: /src/a.ts`, `Bash: npm test`. */
function toolTitle(name: string, input: unknown): string {
  if (input === null || typeof input !== 'object') return name;
  const fields = input as Record<string, unknown>;
  for (const field of summaryFields) {
    const value = fields[field];
    if (typeof value !== 'string' || value.trim() === '') continue;
    let summary = value.trim();
    const newline = summary.indexOf('\n');
    if (newline >= 0) summary = `${summary.slice(0, newline)} …`;
    if (summary.length > maxSummary) summary = `${summary.slice(0, maxSummary - 1)}…`;
    return `${name}: ${summary}`;
  }
  return name;
}

function chunk(kind: 'agent_message_chunk' | 'agent_thought_chunk' | 'user_message_chunk', text: string): SessionUpdate {
  return { sessionUpdate: kind, content: { type: 'text', text } };
}

function updates(line: Line, list: SessionUpdate[]): StreamJsonUpdates {
  return {
    type: 'updates',
    updates: list,
    sessionId: str(line.session_id),
    parentToolUseId: str(line.parent_tool_use_id),
    isReplay: line.isReplay === true,
  };
}

function unknown(raw: unknown, reason: string): StreamJsonUnknown {
  return { type: 'unknown', raw, reason };
}

function joinedText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  let text = '';
  for (const block of content as Array<Block | null>) {
    if (block === null || typeof block !== 'object' || block.type !== 'text' || typeof block.text !== 'string') continue;
    text += text === '' ? block.text : `\n${block.text}`;
  }
  return text;
}

function streamKey(line: Line): string {
  return typeof line.parent_tool_use_id === 'string' ? line.parent_tool_use_id : '';
}

function remember(ids: Set<string>, id: string): void {
  if (ids.size >= rememberedIds) ids.delete(ids.values().next().value as string);
  ids.add(id);
}

function str(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

function num(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : safeString(error);
}

function safeString(value: unknown): string {
  try {
    return String(value);
  } catch {
    return Object.prototype.toString.call(value);
  }
}
