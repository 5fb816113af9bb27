/**
 * `agentvisor describe <agent>`: everything about one agent in one view, as `pm2 describe`
 * does: its status and machine state, process, containment, restarts, last error, uptime,
 * CPU and memory, its spec (env names, never values), workspaces and sessions.
 */
import type { Command } from 'commander';
import type { AgentDescribeBody } from '../../daemon/api-types.js';
import { formatBytes, formatDuration, formatPercent, oneLine, printJson, styleFor, type Style } from '../output.js';
import { renderTable } from '../table.js';
import { agentPath, connect } from './agents.js';
import { formatOption, type FormatOptions } from './options.js';
import { sessionColumns } from './sessions.js';

/** Adds `describe` to the program. */
export function registerDescribe(program: Command): void {
  program
    .command('describe')
    .alias('show')
    .description('everything about one agent: status, process, usage, last error, spec, workspaces, sessions')
    .argument('<agent>', 'the agent')
    .addOption(formatOption())
    .action(async (agent: string, options: FormatOptions, command: Command) => {
      const body = await (await connect(command)).request<AgentDescribeBody>('GET', agentPath(agent, '/describe'));
      if (options.format === 'json') return printJson(body);
      if (options.format === 'quiet') return void process.stdout.write(`${body.agent.status}\n`);
      process.stdout.write(describeText(body, Date.now(), styleFor(process.stdout), process.stdout.isTTY ? process.stdout.columns : undefined));
    });
}

/** A description as text: sections of `key  value` lines, then the sessions' table. */
export function describeText(body: AgentDescribeBody, now: number, style: Style, width?: number): string {
  const { agent, spec } = body;
  const error = agent.lastError;
  const usage = agent.usage;
  const agentInfo = agent.agentInfo ? `${agent.agentInfo.title ?? agent.agentInfo.name} ${agent.agentInfo.version}` : '-';
  const errorClass = error?.class === undefined ? '' : ` (class ${error.class}${error.retryable ? ', retried' : ''}${error.retryAt ? `, retry at ${new Date(error.retryAt).toISOString()}` : ''})`;
  const timeouts = (['handshakeTimeoutMs', 'shutdownTimeoutMs', 'killTimeoutMs'] as const).filter((key) => spec[key] !== null).map((key) => `${key.replace('TimeoutMs', '')} ${spec[key]} ms`);
  const sections: Array<[string, Array<[string, string]>]> = [
    [
      `${agent.name}${agent.displayName !== agent.name ? ` (${agent.displayName})` : ''}`,
      [
        ['status', agent.since === null ? agent.status : `${agent.status} for ${formatDuration(Math.max(0, now - agent.since))}`],
        ['state', agent.state],
        ['restart policy', agent.restart],
        ['last exit', agent.lastExit ? `${agent.lastExit.signal ? `killed by ${agent.lastExit.signal}` : `code ${agent.lastExit.code ?? '?'}`} at ${new Date(agent.lastExit.at).toISOString()}` : '-'],
        ...(agent.credential === null ? [] : [['credentials', agent.credential] as [string, string]]),
        ['pid', agent.pid === null ? '-' : String(agent.pid)],
        ['containment', agent.containment ?? (agent.pid === null ? '-' : 'process group')],
        ['uptime', agent.connectedAt === null ? '-' : `${formatDuration(now - agent.connectedAt)} (since ${new Date(agent.connectedAt).toISOString()})`],
        ['restarts', String(agent.restarts)],
        ['attempt', String(agent.attempt)],
        ['cpu', usage ? formatPercent(usage.cpuPercent) : '-'],
        ['memory', usage ? `${formatBytes(usage.memoryBytes)} (${usage.processes} process${usage.processes === 1 ? '' : 'es'})` : '-'],
        ['last error', error ? `${error.kind}: ${error.message}${errorClass}` : '-'],
        ...(error?.stderr.length ? [['stderr', error.stderr.slice(-5).join(' | ')] as [string, string]] : []),
        ['agent', agentInfo],
        ['auth methods', agent.authMethods === null ? '-' : agent.authMethods.map((method) => method.id).join(', ') || 'none'],
      ],
    ],
    [
      'spec',
      [
        ['command', spec.command],
        ['args', spec.args.length === 0 ? '-' : spec.args.map(quoted).join(' ')],
        ['cwd', spec.cwd ?? '-'],
        ['protocol', spec.protocol],
        ['runtime', spec.runtime],
        ['env', spec.envNames.length === 0 ? '-' : `${spec.envNames.join(', ')} (values hidden)`],
        ['workspace', spec.workspace ? spec.workspace.kind : '-'],
        ['timeouts', timeouts.length === 0 ? "the supervisor's" : timeouts.join(', ')],
      ],
    ],
    ...body.workspaces.map((info): [string, Array<[string, string]>] => [
      `workspace ${info.path}`,
      [
        ['owner', info.owners.map((owner) => (owner.sessionId === undefined ? 'the agent' : `session ${owner.sessionId}`)).join(', ')],
        ['kind', info.kind],
        ['branch', info.branch ?? '-'],
        ['changes', info.clean === null ? 'unknown' : info.clean ? 'clean' : `${info.changedCount} changed file${info.changedCount === 1 ? '' : 's'}`],
        ['ahead/behind', info.ahead === null || info.behind === null ? '-' : `${info.ahead}/${info.behind} (${info.base ?? '-'})`],
        ['cleanup', info.cleanup],
      ],
    ]),
  ];
  const keyWidth = Math.max(...sections.flatMap(([, fields]) => fields.map(([key]) => key.length))) + 2;
  const text = sections.map(([title, fields]) => `${style.bold(title)}\n${fields.map(([key, value]) => `  ${style.dim(key.padEnd(keyWidth))}${oneLine(value)}\n`).join('')}`);
  const open = body.sessions.filter((row) => row.live).length;
  const heading = style.bold(`sessions (${open} open, ${body.sessionsTotal} in all${body.sessions.length < body.sessionsTotal ? `, the newest ${body.sessions.length} shown` : ''})`);
  const table = body.sessions.length === 0 ? '  none\n' : renderTable(body.sessions, sessionColumns(now), { width, style });
  return `${text.join('\n')}\n${heading}\n${table}`;
}

/** An argument as a shell would need it: quoted when it holds anything but plain characters. */
function quoted(arg: string): string {
  return /^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, "'\\''")}'`;
}

