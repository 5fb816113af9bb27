/**
 * `agentvisor doctor`: what this host offers. With a daemon running, its own report
 * (`GET /v1/doctor`: presets, containment, store); without one, the same checks made here
 * (a supervisor with no agents: the containment this host gives, the store in the state
 * directory when there is one — none is made), the config file, and that no daemon runs.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import type { DoctorBody, DoctorPreset } from '../../daemon/api-types.js';
import { doctorReport } from '../../daemon/doctor.js';
import { agentSpecs, type Config } from '../config.js';
import { loadLibrary } from '../library.js';
import { daemonContext } from '../daemon-discovery.js';
import { askRunningDaemon } from '../daemon-client.js';
import { printJson, styleFor } from '../output.js';
import { packageVersion } from '../version.js';
import { formatOption, type FormatOptions } from './options.js';

/** What `doctor` reports: the daemon's body, or the local checks in its shape, plus where the CLI looked. */
interface DoctorReport extends Partial<Pick<DoctorBody, 'containment' | 'store'>> {
  version: string;
  node: string;
  stateDir: string | null;
  presets: DoctorPreset[];
  config: string | null;
  daemon: { url: string; pid: number } | null;
}

/** Adds `doctor` to the program. */
export function registerDoctor(program: Command): void {
  program
    .command('doctor')
    .description('check this host: agents installed, state dir, daemon, containment, store')
    .addOption(formatOption())
    .action(async (options: FormatOptions, command: Command) => {
      const { config, stateDir } = daemonContext(command);
      const report = (await fromDaemon(stateDir, config)) ?? (await localReport(stateDir, config));
      if (options.format === 'json') return printJson(report);
      if (options.format === 'text') process.stdout.write(render(report));
    });
}

/** The daemon's report, or null when no daemon answers for `stateDir`. */
function fromDaemon(stateDir: string, config: Config): Promise<DoctorReport | null> {
  return askRunningDaemon(stateDir, async (client) => {
    const body = await client.request<DoctorBody>('GET', '/v1/doctor');
    return { ...body, config: config.path, daemon: { url: client.info.url, pid: client.info.pid } };
  });
}

/** The checks the CLI makes by itself: the agents on PATH, and the containment and store a supervisor here would get. */
async function localReport(stateDir: string, config: Config): Promise<DoctorReport> {
  const { createSupervisor, storeFileName } = await loadLibrary();
  const agents = await agentSpecs(config);
  // A store is opened only where one exists: doctor makes no state directory of its own.
  const storeExists = existsSync(join(stateDir, storeFileName));
  const base = { agents: {}, handleSignals: false, sweepOnStart: false } as const;
  let supervisor;
  let storeError: string | null = null;
  try {
    supervisor = createSupervisor(storeExists ? { ...base, stateDir } : { ...base, stateDir: false, store: 'memory' });
  } catch (error) {
    storeError = (error as Error).message; // owned by a running `run`, say
    supervisor = createSupervisor({ ...base, stateDir: false, store: 'memory' });
  }
  try {
    const body = await doctorReport(supervisor, { agents, stateDir, storeKind: 'sqlite' }, packageVersion());
    const store: DoctorBody['store'] = storeError !== null ? { kind: 'sqlite', ok: false, stats: null, error: storeError } : storeExists ? body.store : { kind: 'sqlite', ok: true, stats: null, error: null };
    return { ...body, store, config: config.path, daemon: null };
  } finally {
    await supervisor.shutdown();
  }
}


function render(report: DoctorReport): string {
  const style = styleFor(process.stdout);
  const ok = style.green('✓');
  const bad = style.red('✗');
  const lines = [`agentvisor ${report.version} on Node ${report.node}`];
  lines.push(`config:     ${report.config ?? style.dim('none (presets only)')}`);
  const stateDir = report.stateDir;
  lines.push(`state dir:  ${stateDir ?? style.dim('none')}${stateDir && !existsSync(stateDir) ? style.dim(' (made on first use)') : ''}`);
  lines.push(`daemon:     ${report.daemon ? `running at ${report.daemon.url} (pid ${report.daemon.pid})` : style.dim('not running (start one with `agentvisor serve`)')}`);
  lines.push('agents:');
  const width = Math.max(...report.presets.map((preset) => preset.agent.length));
  const commandWidth = Math.max(...report.presets.map((preset) => preset.command.length));
  for (const preset of report.presets) {
    const where = preset.path ? (preset.path === preset.command ? '' : style.dim(preset.path)) : `not installed${preset.installHint ? `: ${preset.installHint}` : ''}`;
    lines.push(`  ${preset.path ? ok : bad} ${preset.agent.padEnd(width)}  ${style.dim(preset.command.padEnd(commandWidth))}  ${where}`.trimEnd());
  }
  if (report.containment) {
    const refused = report.containment.refused.map((each) => `${each.kind}: ${each.reason}`);
    lines.push(`containment: ${report.containment.kind ?? 'process groups only'}${refused.length > 0 ? style.dim(` (refused ${refused.join('; ')})`) : ''}`);
  }
  if (report.store) {
    const { kind, ok: healthy, stats, error } = report.store;
    const detail = stats ? `${stats.sessions} sessions, ${stats.transcript.count} transcript entries, ${stats.stderr.count} log lines` : healthy ? 'none yet: made on first use' : '';
    lines.push(`store:      ${healthy ? ok : bad} ${kind}${detail ? style.dim(` (${detail})`) : ''}${error ? ` ${style.red(error)}` : ''}`);
  }
  return `${lines.join('\n')}\n`;
}
