/**
 * `agentvisor elicitations`: what agents asked the user and wait for in the daemon (`list`, the
 * default) — a form to fill in, or a URL to open — and `answer <id> accept [--field k=v ...] |
 * decline | cancel`, as `permissions` does for permission requests.
 */
import type { Command } from 'commander';
import { CliError } from '../cli-error.js';
import type { DaemonClient } from '../daemon-client.js';
import type { ElicitationAnswerBody, ElicitationRow, ElicitationsBody } from '../../daemon/api-types.js';
import { contentFromFields, fieldHint, formFields } from '../elicitation-form.js';
import type { ElicitationAnswer } from '../../index.js';
import { ExitCode } from '../exit-codes.js';
import { formatDuration, oneLine, printJson, styleFor } from '../output.js';
import { renderTable, type Column } from '../table.js';
import { connect } from './agents.js';
import { collect, formatOption, type FormatOptions } from './options.js';

/** `POST /v1/elicitations/:id`'s path. */
export const elicitationPath = (id: string) => `/v1/elicitations/${encodeURIComponent(id)}`;

/** Adds `elicitations` (`list`, `answer`) to the program. */
export function registerElicitations(program: Command): void {
  const elicitations = program.command('elicitations').description('what agents asked the user and wait for in the daemon: a form to fill in, a URL to open (list, answer)');
  elicitations
    .command('list', { isDefault: true })
    .description('the elicitations waiting for an answer')
    .addOption(formatOption())
    .action(async (options: FormatOptions, command: Command) => {
      const body = await (await connect(command)).request<ElicitationsBody>('GET', '/v1/elicitations');
      if (options.format === 'json') return printJson(body);
      if (options.format === 'quiet') return void process.stdout.write(body.elicitations.map((row) => `${row.id}\n`).join(''));
      if (body.elicitations.length === 0) return void process.stdout.write('no elicitations waiting\n');
      process.stdout.write(renderTable(body.elicitations, elicitationColumns(Date.now()), { width: process.stdout.isTTY ? process.stdout.columns : undefined, style: styleFor(process.stdout) }));
    });
  elicitations
    .command('answer')
    .description('answer one: accept (a form with its fields: --field name=value, repeated), decline or cancel')
    .argument('<id>', 'the elicitation id (see `agentvisor elicitations`)')
    .argument('<action>', 'accept, decline or cancel')
    .option('--field <name=value>', 'a field of the form (repeat for each; again for each choice of a multi-select)', collect, [])
    .addOption(formatOption())
    .action(async (id: string, action: string, options: FormatOptions & { field: string[] }, command: Command) => {
      if (action !== 'accept' && action !== 'decline' && action !== 'cancel') throw new CliError(`The action is accept, decline or cancel, not "${action}"`, ExitCode.usage);
      if (action !== 'accept' && options.field.length > 0) throw new CliError(`--field goes with accept, not with ${action}`, ExitCode.usage);
      const client = await connect(command);
      const row = await waitingElicitation(client, id);
      let answer: ElicitationAnswer;
      if (action !== 'accept') answer = { action };
      else if (row.mode === 'url') {
        if (options.field.length > 0) throw new CliError(`Elicitation ${id} asks to open a URL: it is accepted without fields`, ExitCode.usage);
        answer = { action: 'accept' };
      } else answer = { action: 'accept', content: contentFromFields(row, options.field) };
      const result = await client.request<ElicitationAnswerBody>('POST', elicitationPath(id), { body: answer });
      if (options.format === 'json') return printJson(result);
      if (options.format === 'text') process.stdout.write(`${result.id}: ${pastTense[result.action]}\n`);
    });
}

const pastTense = { accept: 'accepted', decline: 'declined', cancel: 'cancelled' } as const;

/** The elicitation waiting under `id`; a usage error (`elicitation_not_found`) when none is. */
async function waitingElicitation(client: DaemonClient, id: string): Promise<ElicitationRow> {
  const { elicitations } = await client.request<ElicitationsBody>('GET', '/v1/elicitations');
  const row = elicitations.find((each) => each.id === id);
  if (!row) throw new CliError(`No elicitation ${id} is waiting`, ExitCode.usage, 'see `agentvisor elicitations`', 'elicitation_not_found');
  return row;
}

/** What an elicitation asks for, in one cell: the URL, or the form's fields. */
export function askedFor(row: ElicitationRow): string {
  if (row.mode === 'url') return `open ${row.url ?? '?'}`;
  return formFields(row.requestedSchema).map((field) => `${field.name}${field.required ? '*' : ''}: ${fieldHint(field.property)}`).join('; ') || 'an empty form';
}

/** The columns of `elicitations list`. */
function elicitationColumns(now: number): Array<Column<ElicitationRow>> {
  return [
    { header: 'id', value: (row) => row.id },
    { header: 'agent', value: (row) => row.agent, flexible: true },
    { header: 'session', value: (row) => row.sessionId ?? '-', flexible: true },
    { header: 'waiting', value: (row) => formatDuration(now - row.requestedAt), align: 'right' },
    { header: 'message', value: (row) => oneLine(row.message), flexible: true },
    { header: 'asks for', value: askedFor, flexible: true, paint: (cell, _row, style) => style.dim(cell) },
  ];
}
