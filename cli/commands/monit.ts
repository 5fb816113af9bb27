/**
 * `agentvisor monit` (alias `top`): a live view of the daemon's agents, as pm2's `monit` —
 * every agent's status, state, pid, uptime, restarts, CPU and memory of its whole process
 * tree, sessions and last error, with a summary line, redrawn every `--interval` ms until
 * Ctrl-C. On a terminal each frame replaces the last (the screen is cleared), and a status
 * change, a state move or an error is shown at once: monit follows the daemon's event stream
 * (reconnecting with `since` after a drop, re-reading the agents when the daemon says it
 * cannot replay what was missed); piped, frames follow one another at the interval.
 * `--count N` stops after N frames (scripts, tests).
 */
import type { Command } from 'commander';
import type { AgentRow } from '../../daemon/api-types.js';
import { readDaemonFiles } from '../../daemon/daemon-files.js';
import type { StreamEvent } from '../event-stream.js';
import { interrupted, onInterrupt, type StopSignal } from '../interrupt.js';
import { printJson, stripAnsi, styleFor } from '../output.js';
import { agentColumns, renderTable } from '../table.js';
import { agentsWithSessions, connect, sessionSummary } from './agents.js';
import { formatOption, integerOption, type FormatOptions } from './options.js';

interface MonitOptions extends FormatOptions {
  interval: number;
  count?: number;
}

/** An event redraws a terminal's frame at most this often. */
const EVENT_REDRAW_MS = 100;

/** Adds `monit` (alias `top`) to the program. */
export function registerMonit(program: Command): void {
  program
    .command('monit')
    .alias('top')
    .description("a live view of the daemon's agents: status, restarts, CPU and memory, sessions (Ctrl-C leaves)")
    .option('--interval <ms>', 'how often it is redrawn', integerOption('--interval', 100), 1000)
    .option('--count <n>', 'stop after this many frames', integerOption('--count', 1))
    .addOption(formatOption())
    .action((options: MonitOptions, command: Command) => monit(options, command));
}

async function monit(options: MonitOptions, command: Command): Promise<void> {
  const client = await connect(command);
  const out = process.stdout;
  const style = styleFor(out);
  let signal: StopSignal | undefined;
  let wake: (() => void) | undefined;
  /** The rows as last polled, kept current by the event stream between polls. */
  let rows: AgentRow[] = [];
  /** The session each agent's mode, model and usage columns show, as last polled. */
  let focus: Awaited<ReturnType<typeof agentsWithSessions>>['focus'] = () => undefined;
  let stream = 'connecting';
  /** A poll is due before the next frame: the stream said it missed something. */
  let stale = true;
  let eventRedraw: NodeJS.Timeout | undefined;
  const redrawSoon = () => {
    // Only a terminal's frame is redrawn on an event; piped output keeps its interval.
    if (!out.isTTY || eventRedraw) return;
    eventRedraw = setTimeout(() => {
      eventRedraw = undefined;
      wake?.();
    }, EVENT_REDRAW_MS);
  };
  // Loaded here, not at the top: `ws` costs every other command ~50 ms of start-up.
  const { EventFollower } = await import('../event-stream.js');
  const follower = new EventFollower({
    address: () => {
      const files = readDaemonFiles(client.stateDir);
      return files && { url: files.info.url, token: files.token };
    },
    topics: ['status', 'state', 'errors'],
    onEvent: (event) => {
      rows = applyEvent(rows, event);
      redrawSoon();
    },
    onResync: () => {
      stale = true;
      redrawSoon();
    },
    onConnection: (state, reason) => {
      stream = state === 'live' ? 'live' : `reconnecting: ${reason ?? ''}`;
    },
  });
  const offInterrupt = onInterrupt({ first: (received) => ((signal = received), wake?.()) });
  try {
    let polledAt = 0;
    for (let frame = 1; signal === undefined; frame++) {
      const now = Date.now();
      // CPU and memory come from the poll (the stream's rows carry none): every interval, or at once after a resync.
      if (stale || now - polledAt >= options.interval) {
        stale = false;
        polledAt = now;
        ({ agents: rows, focus } = await agentsWithSessions(client));
      }
      if (options.format === 'json') printJson({ at: now, url: client.info.url, agents: rows.map((row) => ({ ...row, session: sessionSummary(focus(row.name)) })) });
      else out.write(render(frame, rows, client.info.url, stream, now, out.isTTY ? out.columns : undefined, style));
      if (options.count !== undefined && frame >= options.count) return;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.max(0, polledAt + options.interval - Date.now()));
        wake = () => (clearTimeout(timer), resolve());
      });
      wake = undefined;
    }
    throw interrupted(signal);
  } finally {
    clearTimeout(eventRedraw);
    follower.close();
    offInterrupt();
  }

  function render(frame: number, agents: AgentRow[], url: string, streamState: string, now: number, width: number | undefined, paint: ReturnType<typeof styleFor>): string {
    const live = agents.filter((row) => row.status !== 'idle').length;
    const cpu = agents.reduce((sum, row) => sum + (row.usage?.cpuPercent ?? 0), 0);
    const memory = agents.reduce((sum, row) => sum + (row.usage?.memoryBytes ?? 0), 0);
    const header =
      `${paint.bold('agentvisor monit')}  ${url}  ${new Date(now).toLocaleTimeString()}  ` +
      `${live}/${agents.length} agents live · ${agents.reduce((sum, row) => sum + row.sessions, 0)} sessions · ` +
      `${agents.reduce((sum, row) => sum + row.restarts, 0)} restarts · CPU ${cpu.toFixed(1)}% · ${(memory / 1024 / 1024).toFixed(1)} MiB`;
    // quiet: the summary line only.
    if (options.format === 'quiet') return `${stripAnsi(header)}\n`;
    const table = agents.length ? renderTable(agents, agentColumns(now, focus), { width, style: paint }) : 'no agents\n';
    const footer = out.isTTY ? paint.dim(`\nevents: ${streamState} · Ctrl-C leaves`) + '\n' : '';
    // On a terminal: home, clear, draw (one write: no flicker). Piped: one frame after another.
    return `${out.isTTY ? '\x1b[H\x1b[2J' : frame > 1 ? '\n' : ''}${header}\n\n${table}${footer}`;
  }
}

/** The rows with an event of the stream applied: a status change brings the agent's row (its last polled usage kept). */
export function applyEvent(rows: AgentRow[], event: StreamEvent): AgentRow[] {
  switch (event.type) {
    case 'agent:status': {
      const known = rows.find((row) => row.name === event.agent);
      const updated: AgentRow = { ...event.row, ...(known?.usage !== undefined ? { usage: known.usage } : {}) };
      return known ? rows.map((row) => (row === known ? updated : row)) : [...rows, updated];
    }
    case 'agent:state':
      return rows.map((row) => (row.name === event.agent ? { ...row, state: event.state, status: event.status as AgentRow['status'] } : row));
    case 'agent:error':
      return rows.map((row) => (row.name === event.agent ? { ...row, lastError: { ...(row.lastError ?? {}), kind: event.kind, message: event.message, ...(event.class ? { class: event.class } : {}) } as AgentRow['lastError'] } : row));
    default:
      return rows;
  }
}
