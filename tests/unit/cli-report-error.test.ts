/**
 * One reporter for every command (cli/report-error.ts, docs/cli.md "Errors"): the library's
 * AgentError in the CLI's process and the same error relayed in the daemon's error body are
 * told alike — message, kind, exit code — and every report ends with its kind line.
 */
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { AgentError } from '../../index.js';
import { CliError } from '../../cli/cli-error.js';
import { ApiError } from '../../cli/daemon-client.js';
import { ExitCode } from '../../cli/exit-codes.js';
import { errorReport, reportError } from '../../cli/report-error.js';

/** What reportError printed, with no colour. */
function printed(error: unknown): { text: string; code: number } {
  const stream = new PassThrough() as unknown as NodeJS.WriteStream;
  let text = '';
  (stream as unknown as PassThrough).on('data', (chunk: Buffer) => (text += chunk.toString()));
  const saved = process.env.NO_COLOR;
  process.env.NO_COLOR = '1';
  try {
    const code = reportError(error, stream);
    return { text, code };
  } finally {
    process.env.NO_COLOR = saved;
  }
}

describe('reportError', () => {
  it.each([
    ['unknown_agent', 'No agent named "x" is registered', 404, {}],
    ['not_installed', 'Could not start Codex', 500, { command: 'codex-acp', installHint: 'npm install -g @zed-industries/codex-acp' }],
    ['auth_required', 'Codex needs a login', 401, { authMethods: [{ id: 'openai-api-key', name: 'OpenAI API key' }] as Array<{ id: string; name: string }> }],
    ['handshake_timeout', 'The agent did not answer initialize in 30 s', 502, { class: 'transient' as const }],
  ] as const)('%s: the library error and the daemon body of it print the same', (kind, message, status, extra) => {
    const library = new AgentError(kind, message, { agent: 'x', ...extra });
    const relayed = new ApiError(status, { kind, message, agent: 'x', ...extra });
    const here = printed(library);
    const there = printed(relayed);
    expect(here.code).toBe(there.code);
    expect(here.text.split('\n')[0]).toBe(`agentvisor: ${message}`);
    expect(there.text.split('\n')[0]).toBe(`agentvisor: ${message}`);
    expect(here.text.trimEnd().split('\n').at(-1)).toBe(`kind: ${kind} (exit ${here.code})`);
    expect(there.text.trimEnd().split('\n').at(-1)).toBe(`kind: ${kind} (exit ${there.code})`);
    // Hints alike, but for where the agent's stderr is (not relayed by the daemon).
    const withoutStderr = (text: string) => text.split('\n').filter((line) => !line.startsWith('what the agent wrote'));
    expect(withoutStderr(here.text)).toEqual(withoutStderr(there.text));
  });

  it("the CLI's own errors carry the CLI's kind for their exit code, or the kind they were given", () => {
    expect(errorReport(new CliError('no daemon running for state dir /s', ExitCode.noDaemon))).toMatchObject({ kind: 'no_daemon', exitCode: 6 });
    expect(errorReport(new CliError('bad', ExitCode.usage))).toMatchObject({ kind: 'usage', exitCode: 2 });
    expect(errorReport(new CliError('No agent named "x" is registered', ExitCode.usage, 'known agents: echo', 'unknown_agent'))).toMatchObject({ kind: 'unknown_agent', exitCode: 2 });
    expect(printed(new Error('boom'))).toEqual({ text: 'agentvisor: internal error: boom\nkind: internal (exit 1)\n', code: 1 });
  });
});
