/**
 * `agentvisor status [agent]`: the whole picture in one view, as `pm2 status` gives it — the
 * daemon (pid, uptime, version, address, state directory, what its start restored), each
 * running agent (status, pid, uptime, restarts, CPU and memory, sessions, last error) and each
 * open session (agent, name, mode, model, context usage, busy or queued). With an agent: that
 * one, whatever its status, and its open sessions. It never starts a daemon: with none it
 * says so and exits 6 (a script's "is it up?").
 */
import type { Command } from 'commander';
import type { AgentRow, HealthBody } from '../../daemon/api-types.js';
import type { RestoreReport } from '../../daemon/daemon-types.js';
import type { DaemonClient } from '../daemon-client.js';
import { formatDuration, printJson, styleFor, type Style } from '../output.js';
import { currentMode, currentModel, usageText, type SessionDetail } from '../session-view.js';
import { agentColumns, renderTable, type Column } from '../table.js';
import { agentPath, agentsWithSessions, connect } from './agents.js';
import { formatOption, type FormatOptions } from './options.js';

/** What `status --format json` prints. */
export interface StatusReport {
  daemon: { pid: number; url: string; version: string; startedAt: number; uptimeMs: number; stateDir: string; restore: RestoreReport };
  agents: AgentRow[];
  sessions: SessionDetail[];
}

/** Adds `status` to the program. */
export function registerStatus(program: Command): void {
  program
    .command('status')
    .description('the daemon (pid, uptime, version, address, restore), its running agents and their open sessions (mode, model, usage, busy/queued); never starts a daemon')
    .argument('[agent]', 'only this agent (whatever its status) and its sessions')
    .addOption(formatOption())
    .action(async (agent: string | undefined, options: FormatOptions, command: Command) => {
      const client = await connect(command, { autostart: false });
      const report = await statusReport(client, agent);
      if (options.format === 'json') return printJson(report);
      // quiet: the names of the agents that run (or the one asked for, whatever its status).
      if (options.format === 'quiet') return void process.stdout.write(report.agents.filter((row) => agent !== undefined || row.status !== 'idle').map((row) => `${row.name}\n`).join(''));
      process.stdout.write(statusText(report, agent, Date.now(), styleFor(process.stdout), process.stdout.isTTY ? process.stdout.columns : undefined));
    });
}

/** Everything `status` shows: without an agent, the agents that are not idle; with one, that agent. */
async function statusReport(client: DaemonClient, agent: string | undefined): Promise<StatusReport> {
  // An unknown agent is the daemon's unknown_agent (exit 2), before anything else is read.
  if (agent !== undefined) await client.request<AgentRow>('GET', agentPath(agent));
  const [health, { agents, sessions }] = await Promise.all([client.request<HealthBody>('GET', '/v1/health'), agentsWithSessions(client)]);
  const open = sessions.filter((row) => row.live && (agent === undefined || row.agent === agent));
  return {
    daemon: { pid: health.pid, url: client.info.url, version: health.version, startedAt: health.startedAt, uptimeMs: Date.now() - health.startedAt, stateDir: client.stateDir, restore: health.restore },
    // Every agent (the text lists the idle ones by name only), or the one asked for.
    agents: agent === undefined ? agents : agents.filter((row) => row.name === agent),
    sessions: open,
  };
}

/** The report as text: the daemon's lines, the agents' table, the sessions' table. */
export function statusText(report: StatusReport, agent: string | undefined, now: number, style: Style, width?: number): string {
  const { daemon } = report;
  const lines = [
    `${style.bold('daemon')}  ${style.green('running')}  pid ${daemon.pid}  uptime ${formatDuration(daemon.uptimeMs)}  version ${daemon.version}  ${daemon.url}`,
    `  ${style.dim('state dir')}  ${daemon.stateDir}`,
    `  ${style.dim('restore')}    ${restoreText(daemon.restore)}`,
    '',
  ];
  const running = agent === undefined ? report.agents.filter((row) => row.status !== 'idle') : report.agents;
  const idle = agent === undefined ? report.agents.filter((row) => row.status === 'idle').map((row) => row.name) : [];
  const idleNote = idle.length > 0 ? style.dim(` (idle: ${idle.join(', ')})`) : '';
  if (agent === undefined) lines.push(`${style.bold(`agents: ${running.length} of ${report.agents.length} running`)}${idleNote}`);
  const agentTable = running.length > 0 ? renderTable(running, agentColumns(now), { width, style }) : '';
  const sessionHeading = style.bold(`sessions: ${report.sessions.length} open`);
  const sessionTable = report.sessions.length > 0 ? renderTable(report.sessions, openSessionColumns(now), { width, style }) : '';
  return `${lines.join('\n')}${agent === undefined ? '\n' : ''}${agentTable}\n${sessionHeading}\n${sessionTable}`;
}

/** What the start restored, in one line: `done: 1 agent, 2 sessions restored; 1 failed (fx/work: not_supported)`. */
export function restoreText(restore: RestoreReport): string {
  if (restore.state === 'off') return 'off (--no-restore, or the config\'s "restore": false)';
  const all = [...restore.agents.map((entry) => ({ ...entry, what: entry.agent })), ...restore.sessions.map((entry) => ({ ...entry, what: `${entry.agent}/${entry.name}` }))];
  if (all.length === 0) return `${restore.state}: nothing to restore`;
  const count = (outcome: string) => all.filter((entry) => entry.outcome === outcome);
  const restored = `${count('restored').length} of ${all.length} restored`;
  const pending = count('pending').length > 0 ? `, ${count('pending').length} pending` : '';
  const troubles = [...count('failed'), ...count('skipped')].map((entry) => `${entry.what} ${entry.outcome}${entry.error ? ` (${entry.error.kind})` : ''}`);
  return `${restore.state}: ${restored}${pending}${troubles.length > 0 ? `; ${troubles.join(', ')}` : ''}`;
}

/** The columns of the open sessions. */
function openSessionColumns(now: number): Array<Column<SessionDetail>> {
  return [
    { header: 'agent', value: (row) => row.agent },
    { header: 'name', value: (row) => row.name ?? '-' },
    { header: 'session', value: (row) => row.sessionId, flexible: true },
    { header: 'mode', value: (row) => currentMode(row) ?? '-', flexible: true },
    { header: 'model', value: (row) => currentModel(row) ?? '-', flexible: true },
    { header: 'usage', value: (row) => usageText(row.usage), align: 'right' },
    { header: 'state', value: (row) => (row.busy ? 'busy' : row.state), paint: (cell, row, style) => (row.busy ? style.yellow(cell) : style.green(cell)) },
    { header: 'queued', value: (row) => String(row.queued), align: 'right' },
    { header: 'updated', value: (row) => `${formatDuration(now - row.updatedAt)} ago`, align: 'right' },
    { header: 'cwd', value: (row) => row.cwd, flexible: true, paint: (cell, _row, style) => style.dim(cell) },
  ];
}
