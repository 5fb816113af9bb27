/**
 * A plain table for the terminal (`ls`, `sessions`, `permissions`): columns as wide as their
 * widest cell, two spaces apart; when the rows are wider than the terminal the flexible
 * columns give way first and their cells end in `…`. Colour is added after padding, so the
 * codes never count towards a width.
 */
import { formatBytes, formatDuration, formatPercent, oneLine, type Style } from './output.js';
import type { AgentRow } from '../daemon/api-types.js';
import { currentMode, currentModel, usageText, type SessionDetail } from './session-view.js';

/** One column: its header, how to get a row's cell, and how it may be laid out. */
export interface Column<T> {
  header: string;
  value(row: T): string;
  /** Numbers read better right-aligned. */
  align?: 'left' | 'right';
  /** May be cut to fit the terminal (at most down to its header's width, and never below 8). */
  flexible?: boolean;
  /** Colours a cell (already padded); plain otherwise. */
  paint?(cell: string, row: T, style: Style): string;
}

/** Options of {@link renderTable}. */
export interface TableOptions {
  /** The terminal's width; no limit when absent (a pipe). */
  width?: number | undefined;
  style: Style;
}

const gap = '  ';

/** The rows as a table, with a header line; ends with a newline. */
export function renderTable<T>(rows: readonly T[], columns: ReadonlyArray<Column<T>>, options: TableOptions): string {
  const cells = rows.map((row) => columns.map((column) => oneLine(column.value(row))));
  const widths = columns.map((column, index) => Math.max(column.header.length, ...cells.map((line) => line[index]!.length)));
  fitWidths(widths, columns, options.width);
  const isLast = (index: number) => index === columns.length - 1 && columns[index]!.align !== 'right'; // no trailing blanks
  const lines = [columns.map((column, index) => options.style.bold(isLast(index) ? column.header : pad(column.header, widths[index]!, column.align))).join(gap)];
  rows.forEach((row, rowIndex) => {
    const line = columns.map((column, index) => {
      const text = cut(cells[rowIndex]![index]!, widths[index]!);
      const cell = isLast(index) ? text : pad(text, widths[index]!, column.align);
      return column.paint ? column.paint(cell, row, options.style) : cell;
    });
    lines.push(line.join(gap));
  });
  return `${lines.join('\n')}\n`;
}

/** Shrinks the flexible columns, the widest first, until the line fits `width`. */
function fitWidths<T>(widths: number[], columns: ReadonlyArray<Column<T>>, width: number | undefined): void {
  if (width === undefined) return;
  const total = () => widths.reduce((sum, each) => sum + each, 0) + gap.length * (widths.length - 1);
  const floor = (index: number) => Math.max(8, columns[index]!.header.length);
  while (total() > width) {
    const candidates = widths.map((each, index) => ({ each, index })).filter(({ each, index }) => columns[index]!.flexible && each > floor(index));
    if (candidates.length === 0) return;
    const widest = candidates.reduce((a, b) => (b.each > a.each ? b : a));
    widths[widest.index] = Math.max(floor(widest.index), widest.each - (total() - width));
  }
}

function cut(text: string, width: number): string {
  return text.length <= width ? text : `${text.slice(0, Math.max(0, width - 1))}…`;
}

function pad(text: string, width: number, align: 'left' | 'right' = 'left'): string {
  return align === 'right' ? text.padStart(width) : text.padEnd(width);
}

const statusPaint: Record<string, keyof Omit<Style, 'enabled'>> = {
  connected: 'green',
  starting: 'yellow',
  reconnecting: 'yellow',
  stopping: 'yellow',
  restarting: 'yellow',
  exited: 'dim',
  disconnected: 'red',
  needsAuth: 'red',
  rateLimited: 'red',
  idle: 'dim',
};

/**
 * The columns of `agentvisor ls`, pm2-like; `now` for the uptime; cpu and mem from the row's
 * `usage`. With `focus` (the session `ls` shows of each agent: session-view.ts's
 * `focusSession`), also that session's mode, model and context usage.
 */
export function agentColumns(now: number, focus?: (agent: string) => SessionDetail | undefined): Array<Column<AgentRow>> {
  const sessionColumns: Array<Column<AgentRow>> = focus
    ? [
        { header: 'mode', value: (row) => orDash(focus(row.name), currentMode), flexible: true },
        { header: 'model', value: (row) => orDash(focus(row.name), currentModel), flexible: true },
        { header: 'usage', value: (row) => usageText(focus(row.name)?.usage), align: 'right' },
      ]
    : [];
  return [
    // Never cut: a name is what a user types next (`agentvisor logs NAME`).
    { header: 'name', value: (row) => row.name },
    { header: 'status', value: (row) => row.status, paint: (cell, row, style) => style[statusPaint[row.status] ?? 'dim'](cell) },
    { header: 'state', value: (row) => row.state, flexible: true, paint: (cell, _row, style) => style.dim(cell) },
    { header: 'pid', value: (row) => (row.pid === null ? '-' : String(row.pid)), align: 'right' },
    { header: 'uptime', value: (row) => (row.connectedAt === null ? '-' : formatDuration(now - row.connectedAt)), align: 'right' },
    { header: 'restarts', value: (row) => String(row.restarts), align: 'right' },
    // What the agent's whole containment costs (`-`: no process, or not measured).
    { header: 'cpu', value: (row) => (row.usage ? formatPercent(row.usage.cpuPercent) : '-'), align: 'right' },
    { header: 'mem', value: (row) => (row.usage ? formatBytes(row.usage.memoryBytes) : '-'), align: 'right' },
    { header: 'sessions', value: (row) => String(row.sessions), align: 'right' },
    ...sessionColumns,
    {
      header: 'last error',
      value: (row) => (row.lastError ? `${row.lastError.kind}: ${row.lastError.message}` : '-'),
      flexible: true,
      paint: (cell, row, style) => (row.lastError ? style.red(cell) : style.dim(cell)),
    },
  ];
}

/** A session's value, `-` without a session or a value. */
function orDash(session: SessionDetail | undefined, read: (row: SessionDetail) => string | null): string {
  return (session && read(session)) ?? '-';
}
