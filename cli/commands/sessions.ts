/**
 * `agentvisor sessions`: the daemon's sessions (`list`, the default), one of them (`show`),
 * and a session's transcript (`history`), read from the store.
 */
import type { Command } from 'commander';
import type { HistoryBody, SessionRow, SessionsBody } from '../../daemon/api-types.js';
import type { TranscriptEntry } from '../../index.js';
import { formatDuration, printJson, styleFor, type Style } from '../output.js';
import { renderTable, type Column } from '../table.js';
import { connect } from './agents.js';
import { formatOption, type FormatOptions } from './options.js';

const sessionPath = (id: string, rest = '') => `/v1/sessions/${encodeURIComponent(id)}${rest}`;

/** Adds `sessions` (`list`, `show`, `history`) to the program. */
export function registerSessions(program: Command): void {
  const sessions = program.command('sessions').description("the daemon's sessions (list, show, history)");
  sessions
    .command('list', { isDefault: true })
    .description('the sessions the daemon keeps, newest first')
    .option('--agent <agent>', 'only those of this agent')
    .addOption(formatOption())
    .action(async (options: FormatOptions & { agent?: string }, command: Command) => {
      const query = options.agent ? `?agent=${encodeURIComponent(options.agent)}` : '';
      const body = await (await connect(command)).request<SessionsBody>('GET', `/v1/sessions${query}`);
      if (options.format === 'json') return printJson(body);
      if (options.format === 'quiet') return void process.stdout.write(body.sessions.map((row) => `${row.sessionId}\n`).join(''));
      if (body.sessions.length === 0) return void process.stdout.write('no sessions\n');
      process.stdout.write(renderTable(body.sessions, sessionColumns(Date.now()), { width: process.stdout.isTTY ? process.stdout.columns : undefined, style: styleFor(process.stdout) }));
    });
  sessions
    .command('show')
    .description('one session')
    .argument('<id>', 'the session id')
    .addOption(formatOption())
    .action(async (id: string, options: FormatOptions, command: Command) => {
      const row = await (await connect(command)).request<SessionRow>('GET', sessionPath(id));
      if (options.format === 'json') return printJson(row);
      if (options.format === 'quiet') return void process.stdout.write(`${row.state}\n`);
      const fields: Array<[string, string]> = [
        ['session', row.sessionId],
        ['agent', row.agent],
        ['name', row.name ?? '-'],
        ['title', row.title ?? '-'],
        ['cwd', row.cwd],
        ['state', `${row.state}${row.live ? ' (live)' : ''}${row.busy ? ', busy' : ''}${row.queued > 0 ? `, ${row.queued} queued` : ''}`],
        ['last stop', row.stopReason ?? '-'],
        ['created', new Date(row.createdAt).toISOString()],
        ['updated', new Date(row.updatedAt).toISOString()],
      ];
      process.stdout.write(fields.map(([key, value]) => `${`${key}:`.padEnd(11)}${value}\n`).join(''));
    });
  sessions
    .command('history')
    .description("a session's transcript: prompts, the agent's answers, tool calls, permissions")
    .argument('<id>', 'the session id')
    .addOption(formatOption())
    .action(async (id: string, options: FormatOptions, command: Command) => {
      const client = await connect(command);
      const style = styleFor(process.stdout);
      const render = new TranscriptRenderer(style);
      let after = 0;
      for (;;) {
        const page = await client.request<HistoryBody>('GET', sessionPath(id, `/history?after=${after}&limit=1000`));
        for (const entry of page.entries) {
          if (options.format === 'json') printJson(entry);
          else if (options.format === 'text') process.stdout.write(render.entry(entry));
        }
        if (page.next === null || page.entries.length === 0) break;
        after = page.next;
      }
      if (options.format === 'text') process.stdout.write(render.end());
    });
}

/** The columns of `sessions list`. */
export function sessionColumns(now: number): Array<Column<SessionRow>> {
  return [
    { header: 'session', value: (row) => row.sessionId },
    { header: 'agent', value: (row) => row.agent, flexible: true },
    { header: 'name', value: (row) => row.name ?? '-', flexible: true },
    { header: 'state', value: (row) => (row.busy ? 'busy' : row.state), paint: (cell, row, style) => (row.live ? style.green(cell) : style.dim(cell)) },
    { header: 'queued', value: (row) => String(row.queued), align: 'right' },
    { header: 'updated', value: (row) => `${formatDuration(now - row.updatedAt)} ago`, align: 'right' },
    { header: 'title', value: (row) => row.title ?? '-', flexible: true },
    { header: 'cwd', value: (row) => row.cwd, flexible: true, paint: (cell, _row, style) => style.dim(cell) },
  ];
}

/** A transcript as text: the prompts, the agent's message joined, tool calls and permissions one line each. */
export class TranscriptRenderer {
  /** The agent's message is open: what was written last did not end its line. */
  private inMessage = false;

  constructor(private readonly style: Style) {}

  /** The text of one entry (may be empty, or continue the agent's message). */
  entry(entry: TranscriptEntry): string {
    const data = (entry.data ?? {}) as Record<string, unknown>;
    if (entry.kind === 'update') {
      const update = data as { sessionUpdate?: string; content?: { type?: string; text?: string }; title?: string; status?: string; toolCallId?: string };
      if (update.sessionUpdate === 'agent_message_chunk' && update.content?.type === 'text') {
        const text = update.content.text ?? '';
        if (text !== '') this.inMessage = !text.endsWith('\n');
        return text;
      }
      if (update.sessionUpdate === 'tool_call') return this.line(this.style.dim(`· tool: ${update.title ?? update.toolCallId ?? ''}${update.status ? ` ${update.status}` : ''}`));
      return '';
    }
    if (entry.kind === 'prompt') {
      const blocks = Array.isArray(data.prompt) ? (data.prompt as Array<{ type?: string; text?: string }>) : [];
      const text = blocks.map((block) => (block.type === 'text' ? block.text : `[${block.type}]`)).join('');
      return this.line(this.style.bold(`> ${text}`));
    }
    if (entry.kind === 'prompt_result') {
      const error = data.error as { kind?: string; message?: string } | undefined;
      return this.line(this.style.dim(error ? `· failed: ${error.kind}: ${error.message}` : `· ${String(data.stopReason)}`));
    }
    if (entry.kind === 'permission') {
      const toolCall = (data.toolCall ?? {}) as { title?: string; toolCallId?: string };
      return this.line(this.style.yellow(`? permission: ${toolCall.title ?? toolCall.toolCallId ?? ''}`));
    }
    if (entry.kind === 'permission_outcome') {
      const outcome = (data.outcome ?? {}) as { outcome?: string; optionId?: string };
      return this.line(this.style.dim(`· answered: ${outcome.outcome === 'selected' ? outcome.optionId : outcome.outcome}`));
    }
    return '';
  }

  /** What ends the transcript: the newline after a message still open. */
  end(): string {
    return this.inMessage ? '\n' : '';
  }

  /** A line of its own, after the agent's message if one is open. */
  private line(text: string): string {
    const before = this.inMessage ? '\n' : '';
    this.inMessage = false;
    return `${before}${text}\n`;
  }
}
