/**
 * `agentvisor logs <agent>`: the last lines an agent wrote to stderr, as the daemon's store
 * keeps them; with `-f`, then each new line as it comes, until Ctrl-C.
 */
import type { Command } from 'commander';
import type { LogsBody } from '../../daemon/api-types.js';
import type { LogEntry } from '../../index.js';
import type { DaemonClient } from '../daemon-client.js';
import { interrupted, onInterrupt, type StopSignal } from '../interrupt.js';
import { printJson } from '../output.js';
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
    .description("an agent's stderr lines, as the daemon keeps them")
    .argument('<agent>', 'the agent')
    .option('-f, --follow', 'then each new line as it comes, until Ctrl-C')
    .option('-n, --lines <n>', 'how many of the last lines to show first', integerOption('--lines'), 50)
    .addOption(formatOption())
    .action((agent: string, options: LogsOptions, command: Command) => logs(agent, options, command));
}

async function logs(agent: string, options: LogsOptions, command: Command): Promise<void> {
  const client = connect(command);
  const { tail, cursor } = await lastLines(client, agent, options.lines);
  for (const entry of tail) print(entry, options);
  if (!options.follow) return;
  const controller = new AbortController();
  let signal: StopSignal | undefined;
  const offInterrupt = onInterrupt({
    first: (received) => {
      signal = received;
      controller.abort();
    },
  });
  try {
    for await (const entry of client.stream<LogEntry>('GET', agentPath(agent, `/logs?follow=1&after=${cursor}`), { signal: controller.signal })) {
      if (entry.seq > cursor) print(entry, options); // a line already shown is not shown twice
    }
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

function print(entry: LogEntry, options: FormatOptions): void {
  if (options.format === 'json') printJson(entry);
  else process.stdout.write(`${entry.line}\n`);
}
