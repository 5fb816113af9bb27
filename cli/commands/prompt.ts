/**
 * `agentvisor prompt`: a prompt (and files) to a named session in the daemon, streamed back as
 * `run` streams it, an elicitation asked on the terminal when there is one; and `agentvisor
 * cancel`: the running turn of a named session cancelled (and its queued prompts dropped).
 */
import type { Command } from 'commander';
import type { AgentRow, CancelBody, ElicitationRow, PromptStreamLine, SessionRow, SessionsBody } from '../../daemon/api-types.js';
import type { ContentBlock } from '../../index.js';
import { CliError } from '../cli-error.js';
import { promptText } from '../prompt-text.js';
import { ApiError, type DaemonClient } from '../daemon-client.js';
import { answerHint, ElicitationAsker } from '../elicitation-form.js';
import { ExitCode } from '../exit-codes.js';
import { interrupted, onInterrupt, type StopSignal } from '../interrupt.js';
import { oneLine, printJson, startSpinner, styleFor } from '../output.js';
import { describeToolCall } from '../permission-prompt.js';
import { checkBodySize, fileBlock, readPromptFile, type PromptFile } from '../prompt-files.js';
import { TurnPrinter } from '../turn-printer.js';
import { agentPath, connect } from './agents.js';
import { elicitationPath } from './elicitations.js';
import { collect, formatOption, permissionsPolicy, sessionCwd, withPermissionOptions, type FormatOptions, type PermissionFlags } from './options.js';

interface PromptOptions extends FormatOptions, PermissionFlags {
  session?: string;
  new?: boolean;
  cwd?: string;
  file: string[];
  addDir: string[];
}

/** Adds `prompt` and `cancel` to the program. */
export function registerPrompt(program: Command): void {
  const promptCommand = program
    .command('prompt')
    .description("send a prompt (and files) to an agent's named session in the daemon and stream the answer")
    .argument('<agent>', 'the agent')
    .argument('[text...]', 'the prompt (read from stdin when omitted, or when it is -, and stdin is not a terminal)')
    .option('-s, --session <name>', 'the named session (default: "default"); opened when it does not exist')
    .option('--new', 'open a fresh session under the name')
    .option('--cwd <dir>', "the session's working directory (default: the current one); a named session open in another is refused")
    .option('--file <path>', 'send a file with the prompt: an image (PNG, JPEG, GIF, WebP) or a text file (repeat for more)', collect, [])
    .option('--add-dir <dir>', 'another directory a new session may work in (repeat for more; ACP additionalDirectories)', collect, []);
  withPermissionOptions(promptCommand)
    .addOption(formatOption())
    .action(async (agent: string, words: string[], options: PromptOptions, command: Command) =>
      prompt(agent, await promptText(words, 'agentvisor prompt <agent> "<text>"', { optional: options.file.length > 0 }), options, command),
    );

  program
    .command('cancel')
    .description("cancel the running turn of an agent's named session in the daemon, and drop its queued prompts")
    .argument('<agent>', 'the agent')
    .option('-s, --session <name>', 'the named session (default: "default")')
    .addOption(formatOption())
    .action(async (agent: string, options: FormatOptions & { session?: string }, command: Command) => {
      const client = await connect(command);
      const session = await namedSession(client, agent, options.session ?? 'default');
      const body = await client.request<CancelBody>('POST', `/v1/sessions/${encodeURIComponent(session.sessionId)}/cancel`);
      if (options.format === 'json') return printJson(body);
      if (options.format === 'quiet') return;
      const dropped = body.droppedQueued > 0 ? `; dropped ${body.droppedQueued} queued prompt${body.droppedQueued === 1 ? '' : 's'}` : '';
      process.stdout.write(`${body.cancelledRunning ? 'cancelled the running turn' : 'no turn was running'} of session ${session.sessionId}${dropped}\n`);
    });
}

/**
 * What the prompt sends: `{ text }` alone, which every daemon takes; with files, `{ content }`:
 * the text first (when there is one), then a block per file, each checked against the agent's
 * `promptCapabilities` — read from the daemon, the agent started first when it has no
 * connection (the prompt would start it anyway) — and the whole against the daemon's body limit.
 */
async function promptInput(client: DaemonClient, agent: string, text: string, files: readonly PromptFile[]): Promise<{ text: string } | { content: ContentBlock[] }> {
  if (files.length === 0) return { text };
  let row = await client.request<AgentRow>('GET', agentPath(agent));
  if (row.agentCapabilities === null) {
    const spinner = startSpinner(`Starting ${agent} to see what it takes…`);
    try {
      row = await client.request<AgentRow>('POST', agentPath(agent, '/start'));
    } finally {
      spinner.stop();
    }
  }
  const blocks = files.map((file) => fileBlock(file, row.agentCapabilities?.promptCapabilities));
  const content: ContentBlock[] = [...(text === '' ? [] : [{ type: 'text' as const, text }]), ...blocks];
  checkBodySize({ agent, content }, files);
  const linked = files.filter((_file, index) => blocks[index]!.type === 'resource_link');
  if (linked.length > 0) process.stderr.write(styleFor(process.stderr).dim(`· ${agent} takes no embedded files: sent as links for it to read (${linked.map((file) => file.path).join(', ')})\n`));
  return { content };
}

async function prompt(agent: string, text: string, options: PromptOptions, command: Command): Promise<void> {
  // A --cwd that is no directory is refused here, before a daemon is asked (or started).
  const cwd = await sessionCwd(options.cwd);
  const additionalDirectories = await Promise.all(options.addDir.map((dir) => sessionCwd(dir, 'Option --add-dir')));
  const permissions = permissionsPolicy(options);
  // The files too: one that is missing, too large or of no kind a prompt takes is told before the daemon is asked.
  const files = options.file.map(readPromptFile);
  const client = await connect(command);
  const input = await promptInput(client, agent, text, files);
  const printer = new TurnPrinter(options.format);
  const style = styleFor(process.stderr);
  const controller = new AbortController();
  const asker = new ElicitationAsker();
  // Always where the caller is (or --cwd, against it): the daemon resolves nothing against its own directory.
  const body = {
    agent,
    ...input,
    ...(options.session ? { session: options.session } : {}),
    cwd,
    ...(options.new ? { new: true } : {}),
    ...(permissions ? { permissions } : {}),
    ...(additionalDirectories.length > 0 ? { additionalDirectories } : {}),
  };
  let sessionId: string | undefined;
  let started = false;
  let queued = false;
  let signal: StopSignal | undefined;
  const offInterrupt = onInterrupt({
    // Ctrl-C cancels our turn once it runs; before that, the client just leaves (see docs/cli.md).
    first: (received) => {
      signal = received;
      asker.close();
      if (started && sessionId) client.request('POST', `/v1/sessions/${encodeURIComponent(sessionId)}/cancel`).catch(() => controller.abort());
      else controller.abort();
    },
    again: () => controller.abort(),
  });
  try {
    for await (const line of client.stream<PromptStreamLine>('POST', '/v1/prompt', { body, signal: controller.signal })) {
      const json = options.format === 'json';
      if (json) printJson(line); // the daemon's lines as they are
      switch (line.type) {
        case 'queued':
          queued = true;
          sessionId = line.sessionId;
          printer.status(style.dim(`waiting behind ${line.position} prompt${line.position === 1 ? '' : 's'}`));
          break;
        case 'session':
          sessionId = line.sessionId;
          if (line.notice) printer.status(style.yellow(line.notice));
          printer.note(`session ${line.name ?? line.sessionId} (${line.opened})`);
          break;
        case 'started':
          started = true;
          sessionId = line.sessionId;
          break;
        case 'update':
          if (!json) printer.update(line.sessionId, line.update);
          break;
        case 'permission':
          printer.status(
            `${style.yellow('?')} ${line.permission.agent} asks permission: ${describeToolCall(line.permission.toolCall)} — answer with \`agentvisor permissions answer ${line.permission.id} allow|deny\``,
          );
          break;
        case 'elicitation':
          // On a terminal the questions are asked while the stream goes on; elsewhere, how to answer from another one.
          if (asker.interactive) void answerOnTerminal(client, asker, line.elicitation, printer);
          else printer.status(`${style.yellow('?')} ${line.elicitation.agent} asks: ${oneLine(line.elicitation.message, 200)} — ${answerHint(line.elicitation)}`);
          break;
        case 'done':
          if (!json) printer.done(line.sessionId, line.stopReason, line.text);
          if (signal) throw interrupted(signal);
          return;
        case 'error':
          if (!json) printer.failed(line.error);
          throw new ApiError(0, line.error);
      }
    }
    if (signal) {
      if (queued && !started) printer.status(style.dim('the prompt stays queued in the daemon: `agentvisor cancel` drops it'));
      throw interrupted(signal);
    }
    throw new CliError('The daemon closed the stream before the turn ended', ExitCode.noDaemon);
  } finally {
    asker.close(); // a question still on screen when the turn ended (answered elsewhere, or timed out)
    offInterrupt();
  }
}

/**
 * Asks an elicitation on the terminal and answers it in the daemon; a form the daemon refuses
 * (it does not fit the schema: the request stays open) is asked again with the reason.
 */
async function answerOnTerminal(client: DaemonClient, asker: ElicitationAsker, row: ElicitationRow, printer: TurnPrinter): Promise<void> {
  let issue: string | undefined;
  for (;;) {
    const answer = await asker.ask(row, issue);
    if (answer === null) return;
    try {
      await client.request('POST', elicitationPath(row.id), { body: answer });
      printer.note(`elicitation ${row.id}: ${answer.action}`);
      return;
    } catch (error) {
      if (error instanceof ApiError && (error.kind === 'invalid_request' || error.kind === 'invalid_options')) {
        issue = error.issues.length > 0 ? error.issues.map((each) => `${each.path}: ${each.message}`).join('; ') : error.message;
        continue;
      }
      // Answered from elsewhere, or it ended with its turn: nothing left to answer.
      printer.status(styleFor(process.stderr).dim(`elicitation ${row.id} was not answered here: ${(error as Error).message}`));
      return;
    }
  }
}

/**
 * The open session of that name (else, unless `open`, the newest stored one); a usage error
 * (`session_not_found`) when there is none.
 */
export async function namedSession(client: Awaited<ReturnType<typeof connect>>, agent: string, name: string, { open = false } = {}): Promise<SessionRow> {
  const { sessions } = await client.request<SessionsBody>('GET', `/v1/sessions?agent=${encodeURIComponent(agent)}`);
  const named = sessions.filter((row) => row.agent === agent && row.name === name);
  const session = named.find((row) => row.live) ?? (open ? undefined : named[0]);
  if (!session) {
    throw new CliError(`Agent "${agent}" has no ${open ? 'open ' : ''}session named "${name}" in the daemon`, ExitCode.usage, `open one with \`agentvisor sessions new ${agent} -s ${name}\` or a prompt; the sessions: \`agentvisor sessions --agent ${agent}\``, 'session_not_found');
  }
  return session;
}
