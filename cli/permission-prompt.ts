/**
 * How `agentvisor run` answers an agent's permission requests: `--approve-all`,
 * `--deny-all`, `--approve-reads` (the read-only tool calls allowed, the rest as with no flag),
 * or — none given — by asking on the terminal when stdin is one, and
 * otherwise denying with a word on stderr about `--approve-all`.
 */
import { createInterface, type Interface } from 'node:readline';
import type { PermissionPolicy } from '../index.js';
import { styleFor } from './output.js';

/** What the user chose on the command line: `allow-reads` allows the read-only tool calls and asks for the rest. */
export type PermissionMode = 'allow' | 'deny' | 'ask' | 'allow-reads';

/**
 * The ACP tool kinds that only read (`--approve-reads` allows them): read, search, fetch, think
 * — the kinds of the library's `'allow-reads'` policy, which `prompt --approve-reads` gets in the
 * daemon (a unit test keeps the two lists equal).
 */
export const READ_ONLY_TOOL_KINDS: readonly string[] = ['read', 'search', 'fetch', 'think'];

type RequestView = Parameters<Extract<PermissionPolicy, (...args: never[]) => unknown>>[0];
/** An option as the library or the daemon's API shows it. */
type Option = { optionId: string; kind: string };

/** The option a refusal picks: reject once, else reject always; undefined (cancelled) when there is none. */
export function rejectOption(options: readonly Option[]): string | undefined {
  return (options.find((option) => option.kind === 'reject_once') ?? options.find((option) => option.kind === 'reject_always'))?.optionId;
}

/** The option an approval picks: allow once, else allow always. */
export function allowOption(options: readonly Option[]): string | undefined {
  return (options.find((option) => option.kind === 'allow_once') ?? options.find((option) => option.kind === 'allow_always'))?.optionId;
}

/** A tool call in a few words: its title, else its kind, else its id. */
export function describeToolCall(toolCall: { title?: string | null; kind?: string | null; toolCallId?: string }): string {
  return toolCall.title || toolCall.kind || toolCall.toolCallId || 'a tool call';
}

/** Asks permission questions on the terminal, one at a time; `close()` cancels what is open. */
export class PermissionAsker {
  private queue: Promise<unknown> = Promise.resolve();
  private readonly open = new Set<Interface>();
  private closed = false;

  constructor(
    private readonly input: NodeJS.ReadStream = process.stdin,
    private readonly output: NodeJS.WriteStream = process.stderr,
  ) {}

  /** The policy for `mode`: a fixed answer, or a function that asks (or denies when it cannot). */
  policy(mode: PermissionMode): PermissionPolicy {
    if (mode === 'allow' || mode === 'deny') return mode;
    return (request) => {
      if (mode === 'allow-reads' && READ_ONLY_TOOL_KINDS.includes(request.toolCall.kind ?? '')) {
        const allow = allowOption(request.options);
        if (allow !== undefined) return allow;
      }
      if (!this.input.isTTY) {
        this.output.write(`agentvisor: denied permission for "${describeToolCall(request.toolCall)}" (no terminal to ask on); --approve-all would allow it\n`);
        return rejectOption(request.options);
      }
      const answer = this.queue.then(() => this.ask(request));
      this.queue = answer.catch(() => undefined);
      return answer;
    };
  }

  /** Cancels the question on screen and every one waiting (the CLI is being interrupted). */
  close(): void {
    this.closed = true;
    for (const readline of this.open) readline.close();
  }

  private ask(request: RequestView): Promise<string | undefined> {
    if (this.closed) return Promise.resolve(undefined);
    const style = styleFor(this.output);
    const { toolCall, options } = request;
    const lines = [
      `${style.yellow('?')} ${style.bold(`${request.agent} asks permission`)}: ${describeToolCall(toolCall)}${toolCall.kind ? style.dim(` [${toolCall.kind}]`) : ''}`,
      ...options.map((option, index) => `  ${index + 1}) ${option.name} ${style.dim(`(${option.kind})`)}`),
    ];
    this.output.write(`${lines.join('\n')}\n`);
    const readline = createInterface({ input: this.input, output: this.output, terminal: true });
    this.open.add(readline);
    // Ctrl-C while the terminal is in raw mode reaches readline, not the process: pass it on.
    readline.on('SIGINT', () => process.kill(process.pid, 'SIGINT'));
    return new Promise<string | undefined>((resolve) => {
      readline.on('close', () => resolve(undefined));
      const question = () =>
        readline.question(`Choice [1-${options.length}, Enter to cancel]: `, (reply) => {
          const choice = reply.trim();
          if (choice === '') return readline.close();
          const option = options[Number(choice) - 1] ?? options.find((candidate) => candidate.optionId === choice);
          if (!option) return question();
          resolve(option.optionId);
          readline.close();
        });
      question();
    }).finally(() => this.open.delete(readline));
  }
}
