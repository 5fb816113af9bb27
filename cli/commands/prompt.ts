/**
 * `agentvisor prompt`: a prompt to a named session in the daemon, streamed back as `run`
 * streams it; and `agentvisor cancel`: the running turn of a named session cancelled (and
 * its queued prompts dropped).
 */
import type { Command } from 'commander';
import type { CancelBody, PromptStreamLine, SessionRow, SessionsBody } from '../../daemon/api-types.js';
import { CliError } from '../cli-error.js';
import { promptText } from '../prompt-text.js';
import { ApiError } from '../daemon-client.js';
import { ExitCode } from '../exit-codes.js';
import { interrupted, onInterrupt, type StopSignal } from '../interrupt.js';
import { printJson, styleFor } from '../output.js';
import { describeToolCall } from '../permission-prompt.js';
import { TurnPrinter } from '../turn-printer.js';
import { connect } from './agents.js';
import { formatOption, sessionCwd, type FormatOptions } from './options.js';

interface PromptOptions extends FormatOptions {
  session?: string;
  new?: boolean;
  cwd?: string;
}

/** Adds `prompt` and `cancel` to the program. */
export function registerPrompt(program: Command): void {
  program
    .command('prompt')
    .description("send a prompt to an agent's named session in the daemon and stream the answer")
    .argument('<agent>', 'the agent')
    .argument('[text...]', 'the prompt (read from stdin when omitted, or when it is -, and stdin is not a terminal)')
    .option('-s, --session <name>', 'the named session (default: "default"); opened when it does not exist')
    .option('--new', 'open a fresh session under the name')
    .option('--cwd <dir>', "the session's working directory (default: the current one); a named session open in another is refused")
    .addOption(formatOption())
    .action(async (agent: string, words: string[], options: PromptOptions, command: Command) => prompt(agent, await promptText(words, 'agentvisor prompt <agent> "<text>"'), options, command));

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

async function prompt(agent: string, text: string, options: PromptOptions, command: Command): Promise<void> {
  // A --cwd that is no directory is refused here, before a daemon is asked (or started).
  const cwd = await sessionCwd(options.cwd);
  const client = await connect(command);
  const printer = new TurnPrinter(options.format);
  const style = styleFor(process.stderr);
  const controller = new AbortController();
  // Always where the caller is (or --cwd, against it): the daemon resolves nothing against its own directory.
  const body = { agent, text, ...(options.session ? { session: options.session } : {}), cwd, ...(options.new ? { new: true } : {}) };
  let sessionId: string | undefined;
  let started = false;
  let queued = false;
  let signal: StopSignal | undefined;
  const offInterrupt = onInterrupt({
    // Ctrl-C cancels our turn once it runs; before that, the client just leaves (see docs/cli.md).
    first: (received) => {
      signal = received;
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
    offInterrupt();
  }
}

/** The open session of that name (else the newest stored one); a usage error when there is none. */
export async function namedSession(client: Awaited<ReturnType<typeof connect>>, agent: string, name: string): Promise<SessionRow> {
  const { sessions } = await client.request<SessionsBody>('GET', `/v1/sessions?agent=${encodeURIComponent(agent)}`);
  const named = sessions.filter((row) => row.agent === agent && row.name === name);
  const session = named.find((row) => row.live) ?? named[0];
  if (!session) throw new CliError(`Agent "${agent}" has no session named "${name}" in the daemon`, ExitCode.usage);
  return session;
}
