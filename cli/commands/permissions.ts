/**
 * `agentvisor permissions`: the permission requests waiting in the daemon (`list`, the
 * default) and `answer <id> <optionId|allow|deny|cancel>`.
 */
import type { Command } from 'commander';
import type { PermissionAnswerBody, PermissionRow, PermissionsBody } from '../../daemon/api-types.js';
import { CliError } from '../cli-error.js';
import { ExitCode } from '../exit-codes.js';
import { formatDuration, printJson, styleFor } from '../output.js';
import { allowOption, describeToolCall, rejectOption } from '../permission-prompt.js';
import { renderTable, type Column } from '../table.js';
import { connect } from './agents.js';
import { formatOption, type FormatOptions } from './options.js';

/** Adds `permissions` (`list`, `answer`) to the program. */
export function registerPermissions(program: Command): void {
  const permissions = program.command('permissions').description('permission requests waiting for an answer in the daemon (list, answer)');
  permissions
    .command('list', { isDefault: true })
    .description('the requests waiting for an answer')
    .addOption(formatOption())
    .action(async (options: FormatOptions, command: Command) => {
      const body = await (await connect(command)).request<PermissionsBody>('GET', '/v1/permissions');
      if (options.format === 'json') return printJson(body);
      if (options.format === 'quiet') return void process.stdout.write(body.permissions.map((row) => `${row.id}\n`).join(''));
      if (body.permissions.length === 0) return void process.stdout.write('no permission requests waiting\n');
      process.stdout.write(renderTable(body.permissions, permissionColumns(Date.now()), { width: process.stdout.isTTY ? process.stdout.columns : undefined, style: styleFor(process.stdout) }));
    });
  permissions
    .command('answer')
    .description('answer a request: an option id, allow (allow once, else always), deny (reject once, else always) or cancel')
    .argument('<id>', 'the request id (see `agentvisor permissions`)')
    .argument('<choice>', 'an option id, allow, deny or cancel')
    .addOption(formatOption())
    .action(async (id: string, choice: string, options: FormatOptions, command: Command) => {
      const client = await connect(command);
      let body: { optionId: string } | { cancel: true };
      if (choice === 'cancel') body = { cancel: true };
      else if (choice === 'allow' || choice === 'deny') {
        const { permissions } = await client.request<PermissionsBody>('GET', '/v1/permissions');
        const request = permissions.find((row) => row.id === id);
        if (!request) throw new CliError(`No permission request ${id} is waiting`, ExitCode.usage, 'see `agentvisor permissions`');
        const optionId = choice === 'allow' ? allowOption(request.options) : rejectOption(request.options);
        if (optionId === undefined) throw new CliError(`Request ${id} has no option to ${choice}`, ExitCode.usage, `its options: ${optionList(request)}`);
        body = { optionId };
      } else body = { optionId: choice };
      const answer = await client.request<PermissionAnswerBody>('POST', `/v1/permissions/${encodeURIComponent(id)}`, { body });
      if (options.format === 'json') return printJson(answer);
      if (options.format === 'text') process.stdout.write(`${answer.id}: ${answer.outcome.outcome === 'selected' ? `answered ${answer.outcome.optionId}` : 'cancelled'}\n`);
    });
}

function optionList(row: PermissionRow): string {
  return row.options.map((option) => `${option.optionId} (${option.kind})`).join(', ');
}

/** The columns of `permissions list`. */
function permissionColumns(now: number): Array<Column<PermissionRow>> {
  return [
    { header: 'id', value: (row) => row.id },
    { header: 'agent', value: (row) => row.agent, flexible: true },
    { header: 'session', value: (row) => row.sessionId, flexible: true },
    { header: 'waiting', value: (row) => formatDuration(now - row.requestedAt), align: 'right' },
    { header: 'tool call', value: (row) => describeToolCall(row.toolCall), flexible: true },
    { header: 'options', value: optionList, flexible: true, paint: (cell, _row, style) => style.dim(cell) },
  ];
}
