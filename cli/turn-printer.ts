/**
 * Prints a prompt turn as it streams, for `run` and `prompt`: in `text` the agent's message
 * goes to stdout as it comes and tool calls and thoughts are dim one-liners on stderr; in
 * `json` every event is one JSON line on stdout; in `quiet` only the answer, at the end.
 */
import type { OutputFormat, Style } from './output.js';
import { oneLine, styleFor } from './output.js';

/** The few fields of a session update the printer reads (ACP's `SessionUpdate`, loosely). */
interface UpdateView {
  sessionUpdate?: string;
  content?: { type?: string; text?: string };
  toolCallId?: string;
  title?: string | null;
  kind?: string | null;
  status?: string | null;
  entries?: unknown[];
}

/** Writes one turn in one of the output formats. */
export class TurnPrinter {
  private answer = '';
  private thought = '';
  /** Whether the last thing written to stdout ended its line. */
  private atLineStart = true;
  private readonly toolTitles = new Map<string, string>();
  private readonly err: Style;

  constructor(
    private readonly format: OutputFormat,
    private readonly out: NodeJS.WriteStream = process.stdout,
    private readonly errStream: NodeJS.WriteStream = process.stderr,
  ) {
    this.err = styleFor(errStream);
  }

  /** The agent's message text so far. */
  get text(): string {
    return this.answer;
  }

  /** A JSON line in `json` format (the session, the turn starting, ...); nothing otherwise. */
  event(line: Record<string, unknown>): void {
    if (this.format === 'json') this.json(line);
  }

  /** One session update. */
  update(sessionId: string, raw: unknown): void {
    const update = (raw ?? {}) as UpdateView;
    const message = update.sessionUpdate === 'agent_message_chunk' && update.content?.type === 'text';
    if (message) this.answer += update.content?.text ?? '';
    if (this.format === 'json') return this.json({ type: 'update', sessionId, update: raw });
    if (message) {
      const text = update.content?.text ?? '';
      if (this.format === 'text' && text !== '') {
        this.flushThought();
        this.out.write(text);
        this.atLineStart = text.endsWith('\n');
      }
      return;
    }
    if (this.format !== 'text') return;
    if (update.sessionUpdate === 'agent_thought_chunk' && update.content?.type === 'text') {
      this.thought += update.content.text ?? '';
      return;
    }
    this.flushThought();
    if (update.sessionUpdate === 'tool_call') {
      const title = update.title || update.toolCallId || 'tool';
      if (update.toolCallId) this.toolTitles.set(update.toolCallId, title);
      this.note(`tool: ${title}${update.kind ? ` [${update.kind}]` : ''}${update.status ? ` ${update.status}` : ''}`);
    } else if (update.sessionUpdate === 'tool_call_update' && update.status) {
      const title = update.title || this.toolTitles.get(update.toolCallId ?? '') || update.toolCallId || 'tool';
      this.note(`tool: ${title} ${update.status}`);
    } else if (update.sessionUpdate === 'plan' && Array.isArray(update.entries)) {
      this.note(`plan: ${update.entries.length} step${update.entries.length === 1 ? '' : 's'}`);
    }
  }

  /** A dim one-liner on stderr (text format only), on a line of its own. */
  note(text: string): void {
    if (this.format !== 'text') return;
    this.status(this.err.dim(`· ${oneLine(text.replace(/\s+/g, ' ').trim(), 200)}`));
  }

  /** A line on stderr in every format but json's stdout: a notice the user should see. */
  status(line: string): void {
    const breakLine = !this.atLineStart && this.errStream.isTTY === true && this.out.isTTY === true;
    this.errStream.write(`${breakLine ? '\n' : ''}${line}\n`);
    if (breakLine) this.atLineStart = true;
  }

  /** The turn ended: the `done` line, the final newline, or the whole answer (quiet); `text` is the answer when the caller knows it whole. */
  done(sessionId: string, stopReason: string, text?: string): void {
    this.flushThought();
    if (text !== undefined && this.format !== 'text') this.answer = text;
    if (this.format === 'json') return this.json({ type: 'done', sessionId, stopReason, text: this.answer });
    if (this.format === 'quiet') {
      this.out.write(this.answer.endsWith('\n') || this.answer === '' ? this.answer : `${this.answer}\n`);
      return;
    }
    if (!this.atLineStart) this.out.write('\n');
    this.atLineStart = true;
    if (stopReason !== 'end_turn') this.status(this.err.dim(`· turn ended: ${stopReason}`));
  }

  /** The turn failed: in json an `error` line on stdout (the message goes to stderr as for every format). */
  failed(error: { kind: string; message: string; class?: string | undefined }): void {
    this.flushThought();
    if (this.format === 'json') this.json({ type: 'error', error: { kind: error.kind, message: error.message, ...(error.class ? { class: error.class } : {}) } });
    else if (!this.atLineStart && this.format === 'text') {
      this.out.write('\n');
      this.atLineStart = true;
    }
  }

  private json(value: unknown): void {
    this.out.write(`${JSON.stringify(value)}\n`);
  }

  private flushThought(): void {
    if (this.thought.trim() === '') return;
    const thought = this.thought;
    this.thought = '';
    this.note(`thinking: ${thought}`);
  }
}

/** One line, at most 200 characters. */
