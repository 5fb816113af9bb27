/**
 * A prompt's text as `run` and `prompt` take it: the words given, or — none given, or the one
 * word `-` — everything on stdin when stdin is not a terminal (`git diff | agentvisor prompt
 * codex`). A usage error names the command's form when there is neither, or the text is empty.
 */
import { CliError } from './cli-error.js';
import { ExitCode } from './exit-codes.js';

/**
 * The prompt's text. `optional` (a prompt that has files): no words is no text, and stdin is read
 * only for `-`.
 */
export async function promptText(words: readonly string[], usage: string, { optional = false } = {}): Promise<string> {
  if (words.length > 0 && !(words.length === 1 && words[0] === '-')) return words.join(' ');
  if (optional && words.length === 0) return '';
  if (process.stdin.isTTY) throw new CliError(`Give a prompt: ${usage}, or pipe one on stdin`, ExitCode.usage);
  let text = '';
  process.stdin.setEncoding('utf8');
  for await (const chunk of process.stdin) text += chunk as string;
  if (text.trim() === '') throw new CliError('The prompt is empty: give one as an argument or on stdin', ExitCode.usage);
  return text.replace(/\n$/, '');
}
