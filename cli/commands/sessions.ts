/**
 * `agentvisor sessions`: the daemon's sessions (`list`, the default), one of them (`show`: its
 * state, mode, model, usage, config options, commands, plan), a session's transcript
 * (`history`); a named session opened (`new`) or closed (`close`); a session the agent (or the
 * store) keeps opened again (`resume`) or deleted (`delete`); and the agent's own sessions
 * (`list --from-agent`, ACP session/list).
 */
import type { Command } from 'commander';
import type { AgentSessionDeleteBody, AgentSessionsBody, HistoryBody, SessionRow, SessionsBody } from '../../daemon/api-types.js';
import type { DaemonClient } from '../daemon-client.js';
import type { SessionInfo, TranscriptEntry } from '../../index.js';
import { CliError } from '../cli-error.js';
import { ExitCode } from '../exit-codes.js';
import { formatDuration, oneLine, printJson, startSpinner, styleFor, type Style } from '../output.js';
import { currentMode, currentModel, currentValue, offeredModels, offeredModes, optionValues, planLines, usageText, valueList, type SessionDetail } from '../session-view.js';
import { renderTable, type Column } from '../table.js';
import { agentPath, connect } from './agents.js';
import { collect, formatOption, integerOption, permissionsPolicy, withPermissionOptions, sessionCwd, type FormatOptions, type PermissionFlags } from './options.js';
import { namedSession } from './prompt.js';

const sessionPath = (id: string, rest = '') => `/v1/sessions/${encodeURIComponent(id)}${rest}`;

/** Adds `sessions` (`list`, `show`, `history`, `new`, `close`, `resume`, `delete`) to the program. */
export function registerSessions(program: Command): void {
  const sessions = program.command('sessions').description("the daemon's sessions (list, show, history, new, close, resume, delete), and an agent's own (list --from-agent)");
  sessions
    .command('list', { isDefault: true })
    .description("the sessions the daemon keeps, newest first; with --from-agent, the agent's own (ACP session/list)")
    .option('--agent <agent>', 'only those of this agent')
    .option('--cwd <dir>', 'only those that work in this directory')
    .option('--open', 'only those open in the daemon now')
    .option('--from-agent', "the sessions the agent itself keeps (session/list; needs --agent), marked with whether the daemon has them")
    .option('--cursor <cursor>', 'with --from-agent: start at this page (a cursor an earlier listing printed)')
    .option('--limit <n>', 'with --from-agent: at most this many (the pages are read until then)', integerOption('--limit', 1), 100)
    .addOption(formatOption())
    .action(async (options: ListOptions, command: Command) => {
      if (options.fromAgent) return agentSessions(options, command);
      if (options.cursor !== undefined) throw new CliError('--cursor pages the agent\'s own sessions: give --from-agent too', ExitCode.usage);
      const query = new URLSearchParams();
      if (options.agent) query.set('agent', options.agent);
      if (options.cwd !== undefined) query.set('cwd', await sessionCwd(options.cwd));
      const body = await (await connect(command)).request<{ sessions: SessionDetail[] }>('GET', `/v1/sessions${query.size > 0 ? `?${query}` : ''}`);
      const rows = options.open ? body.sessions.filter((row) => row.live) : body.sessions;
      if (options.format === 'json') return printJson({ sessions: rows });
      if (options.format === 'quiet') return void process.stdout.write(rows.map((row) => `${row.sessionId}\n`).join(''));
      if (rows.length === 0) return void process.stdout.write('no sessions\n');
      process.stdout.write(renderTable(rows, sessionColumns(Date.now()), { width: process.stdout.isTTY ? process.stdout.columns : undefined, style: styleFor(process.stdout) }));
    });
  sessions
    .command('show')
    .description('one session: its state, mode, model, context usage, config options, commands and plan')
    .argument('<id>', 'the session id')
    .addOption(formatOption())
    .action(async (id: string, options: FormatOptions, command: Command) => {
      const row = await (await connect(command)).request<SessionDetail>('GET', sessionPath(id));
      if (options.format === 'json') return printJson(row);
      if (options.format === 'quiet') return void process.stdout.write(`${row.state}\n`);
      process.stdout.write(sessionText(row, styleFor(process.stdout)));
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
  const open = sessions
    .command('new')
    .description('open a named session of an agent in the daemon (where `prompt -s NAME` then goes); one open under the name is kept')
    .argument('<agent>', 'the agent')
    .option('-s, --session <name>', 'its name (default: "default", as for prompt)')
    .option('--cwd <dir>', 'where it works (default: the current directory)')
    .option('--add-dir <dir>', 'another directory it may work in (repeat for more; ACP additionalDirectories)', collect, []);
  withPermissionOptions(open)
    .addOption(formatOption())
    .action(async (agent: string, options: NewOptions, command: Command) => {
      const cwd = await sessionCwd(options.cwd);
      const additionalDirectories = await Promise.all(options.addDir.map((dir) => sessionCwd(dir, 'Option --add-dir')));
      const permissions = permissionsPolicy(options);
      const client = await connect(command);
      const name = options.session ?? 'default';
      const body = { agent, name, cwd, ...(additionalDirectories.length > 0 ? { additionalDirectories } : {}), ...(permissions ? { permissions } : {}) };
      const spinner = startSpinner(`Opening session ${name} of ${agent}…`);
      let answer: { status: number; body: SessionDetail };
      try {
        answer = await client.exchange<SessionDetail>('POST', '/v1/sessions', { body });
      } finally {
        spinner.stop();
      }
      const row = answer.body;
      if (options.format === 'json') return printJson(row);
      if (options.format === 'quiet') return void process.stdout.write(`${row.sessionId}\n`);
      const how = answer.status === 201 ? 'opened' : 'already open:';
      process.stdout.write(`${agent}/${name}: ${how} session ${row.sessionId} in ${row.cwd}\n`);
    });
  sessions
    .command('close')
    .description('close a session in the daemon (its running turn cancelled, its queue dropped): by id, or an agent\'s named one with -s')
    .argument('<id-or-agent>', 'the session id; with -s, the agent')
    .option('-s, --session <name>', 'the named session of the agent given')
    .addOption(formatOption())
    .action(async (target: string, options: FormatOptions & { session?: string }, command: Command) => {
      const client = await connect(command);
      const before = options.session === undefined ? await client.request<SessionDetail>('GET', sessionPath(target)) : await namedSession(client, target, options.session, { open: true });
      // Closing what is not open changes nothing: said, not refused (as `stop` of an idle agent).
      const row = before.live ? await client.request<SessionDetail>('POST', sessionPath(before.sessionId, '/close')) : before;
      if (options.format === 'json') return printJson(row);
      const which = `${row.sessionId} (${row.agent}${row.name ? `/${row.name}` : ''})`;
      if (options.format === 'text') process.stdout.write(before.live ? `closed session ${which}\n` : `session ${which} is not open: nothing to close\n`);
    });
  sessions
    .command('resume')
    .description("open an agent's session in the daemon again: one the agent keeps (see sessions list --from-agent) or one the daemon stored")
    .argument('<agent>', 'the agent')
    .argument('<session-id>', 'the session id')
    .option('-s, --session <name>', 'hold it under this name, for prompt -s NAME (default: unnamed)')
    .option('--cwd <dir>', 'where it works (default: where the agent or the store says it worked)')
    .addOption(formatOption())
    .action(async (agent: string, sessionId: string, options: FormatOptions & { session?: string; cwd?: string }, command: Command) => {
      const given = options.cwd === undefined ? undefined : await sessionCwd(options.cwd);
      const client = await connect(command);
      const spinner = startSpinner(`Resuming session ${sessionId} of ${agent}…`);
      let answer: { status: number; body: SessionDetail };
      try {
        const cwd = given ?? (await agentSessionCwd(client, agent, sessionId));
        const body = { ...(cwd === undefined ? {} : { cwd }), ...(options.session === undefined ? {} : { name: options.session }) };
        answer = await client.exchange<SessionDetail>('POST', agentPath(agent, `/sessions/${encodeURIComponent(sessionId)}/resume`), { body });
      } finally {
        spinner.stop();
      }
      const row = answer.body;
      if (options.format === 'json') return printJson(row);
      if (options.format === 'quiet') return void process.stdout.write(`${row.sessionId}\n`);
      process.stdout.write(`${agent}${row.name ? `/${row.name}` : ''}: ${answer.status === 201 ? 'resumed' : 'already open:'} session ${row.sessionId} in ${row.cwd}\n`);
    });
  sessions
    .command('delete')
    .description("delete a session the agent keeps (ACP session/delete; closed here first when it is open)")
    .argument('<agent>', 'the agent')
    .argument('<session-id>', 'the session id')
    .addOption(formatOption())
    .action(async (agent: string, sessionId: string, options: FormatOptions, command: Command) => {
      const client = await connect(command);
      const body = await client.request<AgentSessionDeleteBody>('POST', agentPath(agent, `/sessions/${encodeURIComponent(sessionId)}/delete`));
      if (options.format === 'json') return printJson(body);
      if (options.format === 'text') process.stdout.write(`deleted session ${sessionId} of ${agent}\n`);
    });
}

interface ListOptions extends FormatOptions {
  agent?: string;
  cwd?: string;
  open?: boolean;
  fromAgent?: boolean;
  cursor?: string;
  limit: number;
}

interface NewOptions extends FormatOptions, PermissionFlags {
  session?: string;
  cwd?: string;
  addDir: string[];
}

/** One of the agent's own sessions, marked with what the daemon has of it. */
interface AgentSessionRow extends SessionInfo {
  /** `open` in the daemon now, `stored` in its store, null: only the agent has it. */
  daemon: 'open' | 'stored' | null;
}

/** `sessions list --from-agent`: the agent's session/list, page after page up to --limit. */
async function agentSessions(options: ListOptions, command: Command): Promise<void> {
  if (!options.agent) throw new CliError('--from-agent lists one agent\'s own sessions: say which with --agent', ExitCode.usage);
  if (options.open) throw new CliError('--open is about the daemon\'s sessions, --from-agent about the agent\'s own: give one of them', ExitCode.usage);
  const cwd = options.cwd === undefined ? undefined : await sessionCwd(options.cwd);
  const client = await connect(command);
  const listed: SessionInfo[] = [];
  let cursor: string | null = options.cursor ?? null;
  do {
    const query = new URLSearchParams();
    if (cwd !== undefined) query.set('cwd', cwd);
    if (cursor !== null) query.set('cursor', cursor);
    const page = await client.request<AgentSessionsBody>('GET', agentPath(options.agent, `/sessions${query.size > 0 ? `?${query}` : ''}`));
    listed.push(...page.sessions);
    // An empty page that still has a cursor would page forever: an agent's bug, stopped here.
    cursor = page.sessions.length === 0 ? null : (page.nextCursor ?? null);
  } while (cursor !== null && listed.length < options.limit);
  const kept = new Map((await client.request<SessionsBody>('GET', `/v1/sessions?agent=${encodeURIComponent(options.agent)}`)).sessions.map((row) => [row.sessionId, row]));
  const rows: AgentSessionRow[] = listed.slice(0, options.limit).map((info) => {
    const row = kept.get(info.sessionId);
    return { ...info, daemon: row ? (row.live ? 'open' : 'stored') : null };
  });
  // The agent's cursors go by pages: when --limit cut one, none resumes after the last row shown
  // (`nextCursor` null, `more` true: a larger --limit shows them).
  const more = listed.length > options.limit || cursor !== null;
  if (options.format === 'json') return printJson({ sessions: rows, nextCursor: listed.length > options.limit ? null : cursor, more });
  if (options.format === 'quiet') return void process.stdout.write(rows.map((row) => `${row.sessionId}\n`).join(''));
  if (rows.length === 0) process.stdout.write(`${options.agent} keeps no sessions${cwd ? ` in ${cwd}` : ''}\n`);
  else process.stdout.write(renderTable(rows, agentSessionColumns(), { width: process.stdout.isTTY ? process.stdout.columns : undefined, style: styleFor(process.stdout) }));
  if (more) {
    const next = listed.length <= options.limit && cursor !== null ? `; the next page: --cursor ${cursor}` : '';
    process.stderr.write(styleFor(process.stderr).dim(`more sessions than --limit ${options.limit}${next}\n`));
  }
}

/** How many pages of an agent's session/list `resume` reads to find a session's directory (then --cwd says it). */
const maxPagesSearched = 100;

/**
 * Where a session to resume works, when no --cwd says: nothing to send for one the daemon's
 * store keeps (it knows); for one only the agent keeps, the directory its session/list shows
 * (the agent needs it to reopen the session). `session_not_found` (exit 2) when neither has it.
 */
async function agentSessionCwd(client: DaemonClient, agent: string, sessionId: string): Promise<string | undefined> {
  const { sessions } = await client.request<SessionsBody>('GET', `/v1/sessions?agent=${encodeURIComponent(agent)}`);
  if (sessions.some((row) => row.sessionId === sessionId)) return undefined;
  let cursor: string | null = null;
  for (let pages = 0; pages < maxPagesSearched; pages++) {
    const page: AgentSessionsBody = await client.request<AgentSessionsBody>('GET', agentPath(agent, `/sessions${cursor === null ? '' : `?cursor=${encodeURIComponent(cursor)}`}`));
    const listed = page.sessions.find((info) => info.sessionId === sessionId);
    if (listed) return listed.cwd;
    cursor = page.sessions.length === 0 ? null : (page.nextCursor ?? null);
    if (cursor === null) break;
  }
  throw new CliError(
    `Neither the daemon nor ${agent} keeps a session ${sessionId}`,
    ExitCode.usage,
    `the agent's own: \`agentvisor sessions --agent ${agent} --from-agent\`; the daemon's: \`agentvisor sessions --agent ${agent}\`; or give its --cwd`,
    'session_not_found',
  );
}

/** The columns of `sessions list --from-agent`. */
function agentSessionColumns(): Array<Column<AgentSessionRow>> {
  return [
    { header: 'session', value: (row) => row.sessionId },
    { header: 'updated', value: (row) => row.updatedAt ?? '-' },
    { header: 'title', value: (row) => row.title ?? '-', flexible: true },
    { header: 'daemon', value: (row) => row.daemon ?? '-', paint: (cell, row, style) => (row.daemon === 'open' ? style.green(cell) : style.dim(cell)) },
    { header: 'cwd', value: (row) => row.cwd, flexible: true, paint: (cell, _row, style) => style.dim(cell) },
  ];
}

/** `sessions show` as text: `key: value` lines, then the config options, commands and plan. */
export function sessionText(row: SessionDetail, style: Style): string {
  const mode = currentMode(row);
  const model = currentModel(row);
  const modes = offeredModes(row);
  const models = offeredModels(row);
  const fields: Array<[string, string]> = [
    ['session', row.sessionId],
    ['agent', row.agent],
    ['name', row.name ?? '-'],
    ['title', row.title ?? '-'],
    ['cwd', row.cwd],
    ['state', `${row.state}${row.live ? ' (live)' : ''}${row.busy ? ', busy' : ''}${row.queued > 0 ? `, ${row.queued} queued` : ''}`],
    ['mode', mode === null ? '-' : `${mode}${modes.length > 0 ? style.dim(`  (of ${valueList(modes)})`) : ''}`],
    ['model', model === null ? '-' : `${model}${models.length > 0 ? style.dim(`  (of ${valueList(models)})`) : ''}`],
    ['usage', usageText(row.usage)],
    ['last stop', row.stopReason ?? '-'],
    ['created', new Date(row.createdAt).toISOString()],
    ['updated', new Date(row.updatedAt).toISOString()],
  ];
  const lines = fields.map(([key, value]) => `${`${key}:`.padEnd(11)}${value}`);
  const options = row.configOptions ?? [];
  if (options.length > 0) {
    lines.push('config options:');
    const idWidth = Math.max(...options.map((option) => option.id.length));
    const valueWidth = Math.max(...options.map((option) => currentValue(option).length));
    for (const option of options) {
      const offers = option.type === 'boolean' ? 'true or false' : `one of ${valueList(optionValues(option))}`;
      lines.push(`  ${option.id.padEnd(idWidth)}  ${currentValue(option).padEnd(valueWidth)}  ${style.dim(`${option.name}${option.category ? ` [${option.category}]` : ''}: ${offers}`)}`);
    }
  }
  const commands = row.commands ?? [];
  if (commands.length > 0) {
    lines.push('commands:');
    const width = Math.max(...commands.map((each) => each.name.length)) + 1;
    for (const each of commands) lines.push(`  ${`/${each.name}`.padEnd(width)}  ${style.dim(oneLine(each.description))}`);
  }
  if (row.plan && row.plan.length > 0) lines.push('plan:', ...planLines(row.plan).map((line) => `  ${line}`));
  return `${lines.join('\n')}\n`;
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
