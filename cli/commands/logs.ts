/**
 * `agentvisor logs [agent]`: the last lines an agent wrote to stderr, as the daemon's store
 * keeps them; with `-f`, then each new line as it comes, until Ctrl-C. Without a name, every
 * agent's, as `pm2 logs` does: the last lines of each, merged in time order, then all of them
 * followed at once, each line prefixed with its agent's name.
 */
import type { Command } from 'commander';
import type { AgentsBody, LogsBody } from '../../daemon/api-types.js';
import type { LogEntry } from '../../index.js';
import { CliError } from '../cli-error.js';
import type { DaemonClient } from '../daemon-client.js';
import { ExitCode } from '../exit-codes.js';
import { interrupted, onInterrupt, type StopSignal } from '../interrupt.js';
import { printJson, styleFor } from '../output.js';
import { agentPath, connect } from './agents.js';
import { formatOption, integerOption, type FormatOptions } from './options.js';

interface LogsOptions extends FormatOptions {
  follow?: boolean;
  lines: number;
}

/** Adds `logs` to the program. */
export function registerLogs(program: Command): void {
  program
    .command('logs')
    .description("an agent's stderr lines, as the daemon keeps them; without a name, every agent's, each line prefixed with its name")
    .argument('[agent]', 'the agent (default: every agent)')
    .option('-f, --follow', 'then each new line as it comes, until Ctrl-C')
    .option('-n, --lines <n>', 'how many of the last lines to show first (of each agent, without a name)', integerOption('--lines'), 50)
    .addOption(formatOption())
    .action((agent: string | undefined, options: LogsOptions, command: Command) => (agent === undefined ? allLogs(options, command) : logs(agent, options, command)));
}

async function logs(agent: string, options: LogsOptions, command: Command): Promise<void> {
  const client = await connect(command);
  const { tail, cursor } = await lastLines(client, agent, options.lines);
  for (const entry of tail) print(entry, options);
  if (!options.follow) return;
  await following((signal) => follow(client, agent, cursor, signal, (entry) => print(entry, options)));
}

/** Every agent's logs: the last lines of each, merged by time; then, with `-f`, every agent followed at once. */
async function allLogs(options: LogsOptions, command: Command): Promise<void> {
  const client = await connect(command);
  const names = (await client.request<AgentsBody>('GET', '/v1/agents')).agents.map((row) => row.name);
  const prefix = linePrefix(names, styleFor(process.stdout));
  const show = (entry: LogEntry) => print(entry, options, prefix(entry.agent));
  const lasts = await Promise.all(names.map((name) => lastLines(client, name, options.lines)));
  for (const entry of mergeByTime(lasts.map((last) => last.tail))) show(entry);
  if (!options.follow) return;
  await following(async (signal) => {
    // One stream per agent; the first to fail (the daemon went away) ends them all.
    const streams = new AbortController();
    signal.addEventListener('abort', () => streams.abort(), { once: true });
    await Promise.all(names.map((name, index) => follow(client, name, lasts[index]!.cursor, streams.signal, show).catch((error: unknown) => {
      streams.abort();
      throw error;
    })));
  });
}

/** Each line's prefix: the agent's name, padded to the longest, then `| ` (dim on a terminal). */
export function linePrefix(names: readonly string[], style: { dim(text: string): string }): (agent: string) => string {
  const width = Math.max(0, ...names.map((name) => name.length));
  return (agent) => `${agent.padEnd(width)} ${style.dim('|')} `;
}

/** Entries of several agents in one list, oldest first (by time, then by store order). */
export function mergeByTime(lists: ReadonlyArray<readonly LogEntry[]>): LogEntry[] {
  return lists.flat().sort((a, b) => a.at - b.at || a.seq - b.seq);
}

/**
 * Each line of `agent` after `cursor` as it comes, until `signal`. The daemon keeps the stream
 * open across the agent's restarts and stops; it ends it only when it closes itself: then exit 6,
 * said, rather than a silent exit 0 that looks like "nothing more to show".
 */
async function follow(client: DaemonClient, agent: string, cursor: number, signal: AbortSignal, show: (entry: LogEntry) => void): Promise<void> {
  for await (const entry of client.stream<LogEntry>('GET', agentPath(agent, `/logs?follow=1&after=${cursor}`), { signal })) {
    if (entry.seq > cursor) show(entry); // a line already shown is not shown twice
  }
  if (!signal.aborted) throw new CliError(`The daemon ended the log stream of ${agent}: it stopped (or is stopping)`, ExitCode.noDaemon, 'start it again with `agentvisor serve`, or any command that needs it');
}

/** Runs `work` until it ends or Ctrl-C (then throws `interrupted`, exit 130). */
async function following(work: (signal: AbortSignal) => Promise<void>): Promise<void> {
  const controller = new AbortController();
  let signal: StopSignal | undefined;
  const offInterrupt = onInterrupt({
    first: (received) => {
      signal = received;
      controller.abort();
    },
  });
  try {
    await work(controller.signal);
  } finally {
    offInterrupt();
  }
  if (signal) throw interrupted(signal);
}

/**
 * The last `count` lines and the cursor after the newest: the API pages from the oldest, so
 * every page is read and only the tail kept.
 */
async function lastLines(client: DaemonClient, agent: string, count: number): Promise<{ tail: LogEntry[]; cursor: number }> {
  const tail: LogEntry[] = [];
  let cursor = 0;
  for (;;) {
    const page = await client.request<LogsBody>('GET', agentPath(agent, `/logs?after=${cursor}&limit=1000`));
    for (const entry of page.entries) {
      tail.push(entry);
      if (tail.length > count) tail.shift();
      cursor = Math.max(cursor, entry.seq);
    }
    if (page.next === null || page.entries.length === 0) return { tail, cursor };
    cursor = Math.max(cursor, page.next);
  }
}

/** One line: the entry in json, else its text after `prefix` (the agent's, for every agent's logs). */
function print(entry: LogEntry, options: FormatOptions, prefix = ''): void {
  if (options.format === 'json') printJson(entry);
  else process.stdout.write(`${prefix}${entry.line}\n`);
}
