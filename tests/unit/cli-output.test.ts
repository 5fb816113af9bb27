/** The CLI's output: when it colours (TTY, NO_COLOR, FORCE_COLOR, TERM=dumb), its styles, its durations and its tables. */
import { describe, expect, it } from 'vitest';
import { colorEnabled, formatDuration, stripAnsi, styleOf } from '../../cli/output.js';
import { agentColumns, renderTable, type Column } from '../../cli/table.js';
import type { AgentRow } from '../../daemon/api-types.js';

const tty = { isTTY: true };
const pipe = { isTTY: false };

describe('colour', () => {
  it('is on for a terminal and off for a pipe', () => {
    expect(colorEnabled(tty, {})).toBe(true);
    expect(colorEnabled(pipe, {})).toBe(false);
    expect(colorEnabled({}, {})).toBe(false);
  });

  it('is off whenever NO_COLOR is set to anything but the empty string', () => {
    for (const value of ['1', '0', 'false', 'yes']) expect(colorEnabled(tty, { NO_COLOR: value }), `NO_COLOR=${value}`).toBe(false);
    expect(colorEnabled(tty, { NO_COLOR: '' })).toBe(true);
    expect(colorEnabled(tty, { NO_COLOR: '1', FORCE_COLOR: '1' })).toBe(false);
  });

  it('FORCE_COLOR turns it on for a pipe, and 0 or false off for a terminal', () => {
    expect(colorEnabled(pipe, { FORCE_COLOR: '1' })).toBe(true);
    expect(colorEnabled(pipe, { FORCE_COLOR: '' })).toBe(true);
    expect(colorEnabled(tty, { FORCE_COLOR: '0' })).toBe(false);
    expect(colorEnabled(tty, { FORCE_COLOR: 'false' })).toBe(false);
  });

  it('is off for TERM=dumb unless forced', () => {
    expect(colorEnabled(tty, { TERM: 'dumb' })).toBe(false);
    expect(colorEnabled(tty, { TERM: 'dumb', FORCE_COLOR: '1' })).toBe(true);
    expect(colorEnabled(tty, { TERM: 'xterm-256color' })).toBe(true);
  });

  it('styles wrap text in SGR codes only when on', () => {
    expect(styleOf(false).red('x')).toBe('x');
    expect(styleOf(true).red('x')).toBe('\u001b[31mx\u001b[39m');
    expect(styleOf(true).dim('x')).toBe('\u001b[2mx\u001b[22m');
    expect(stripAnsi(styleOf(true).bold(styleOf(true).green('ok')))).toBe('ok');
  });
});

describe('durations', () => {
  it('are one short unit', () => {
    expect([0, 999, 45_000, 60_000, 12 * 60_000 + 5, 3 * 3_600_000, 2 * 86_400_000 + 1, -5].map(formatDuration)).toEqual(['0s', '0s', '45s', '1m', '12m', '3h', '2d', '0s']);
  });
});

describe('tables', () => {
  type Row = { name: string; count: number; note: string };
  const columns: Array<Column<Row>> = [
    { header: 'name', value: (row) => row.name },
    { header: 'count', value: (row) => String(row.count), align: 'right' },
    { header: 'note', value: (row) => row.note, flexible: true },
  ];
  const rows: Row[] = [
    { name: 'codex', count: 1, note: 'fine' },
    { name: 'claude-code', count: 12, note: 'a long note that goes on\nover two lines' },
  ];

  it('fits each column to its widest cell, numbers right-aligned, one line per row', () => {
    expect(renderTable(rows, columns, { style: styleOf(false) }).split('\n')).toEqual([
      'name         count  note',
      'codex            1  fine',
      'claude-code     12  a long note that goes on over two lines',
      '',
    ]);
  });

  it('cuts the flexible columns to the terminal width', () => {
    const lines = renderTable(rows, columns, { width: 30, style: styleOf(false) }).trimEnd().split('\n');
    expect(lines.every((line) => line.length <= 30)).toBe(true);
    expect(lines[2]).toBe('claude-code     12  a long no…');
  });

  it('never counts colour codes towards a width', () => {
    const coloured = renderTable(rows, [...columns.slice(0, 2), { ...columns[2]!, paint: (cell, _row, style) => style.red(cell) }], { style: styleOf(true) });
    expect(coloured).toContain('\u001b[31m');
    expect(stripAnsi(coloured)).toBe(renderTable(rows, columns, { style: styleOf(false) }));
  });

  it("of agents: pm2's columns, with - where there is nothing", () => {
    const now = 1_000_000;
    const base = { displayName: 'X', attempt: 0, containment: null, since: null, lastExit: null, restart: 'always' as const, credential: null, agentInfo: null, agentCapabilities: null, authMethods: null, restarts: 0, sessions: 0 };
    const agents: AgentRow[] = [
      { ...base, name: 'echo', status: 'connected', state: 'connected.stable', pid: 4242, connectedAt: now - 90_000, restarts: 2, sessions: 1, lastError: null, usage: { cpuPercent: 12.34, memoryBytes: 43_200_000, processes: 3, windowMs: 250 } },
      { ...base, name: 'codex', status: 'idle', state: 'idle', pid: null, connectedAt: null, lastError: { kind: 'not_installed', message: "Could not start Codex. Check that it's installed.", stderr: [] }, usage: null },
    ];
    expect(renderTable(agents, agentColumns(now), { style: styleOf(false) }).split('\n')).toEqual([
      'name   status     state              pid  uptime  restarts    cpu       mem  sessions  last error',
      'echo   connected  connected.stable  4242      1m         2  12.3%  41.2 MiB         1  -',
      "codex  idle       idle                 -       -         0      -         -         0  not_installed: Could not start Codex. Check that it's installed.",
      '',
    ]);
  });

  it('never cuts a name in an 80-column terminal: the state and the last error give way', () => {
    const now = Date.now();
    const base = { displayName: 'X', attempt: 0, containment: null, since: null, lastExit: null, restart: 'always' as const, credential: null, agentInfo: null, agentCapabilities: null, authMethods: null, restarts: 0, sessions: 0 };
    const name = 'reviewer-for-the-payments-service-backend';
    const agents: AgentRow[] = [
      { ...base, name, status: 'disconnected', state: 'disconnected.gaveUp', pid: null, connectedAt: null, restarts: 12, sessions: 3, lastError: { kind: 'agent_exited', message: 'The agent exited with code 1 after the handshake', stderr: [] } },
      { ...base, name: 'a', status: 'connected', state: 'connected.stable', pid: 123456, connectedAt: now, lastError: null, usage: { cpuPercent: 187.25, memoryBytes: 1_610_612_736, processes: 9, windowMs: 250 } },
    ];
    const lines = renderTable(agents, agentColumns(now), { width: 80, style: styleOf(false) }).trimEnd().split('\n');
    expect(lines[1]!.startsWith(`${name}  disconnected`)).toBe(true);
    expect(lines[1]).toMatch(/…$/); // the last error is what was cut
    expect(lines[2]).toMatch(/ 187\.3% +1\.50 GiB /); // the usage columns are not cut either
  });
});
