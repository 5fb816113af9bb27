/**
 * Benchmark results: the JSON line each benchmark appends (to bench/results/latest.jsonl
 * unless told otherwise), and the table printed at the end of a run.
 */
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

/** One benchmark's outcome: the JSON line of bench/results/latest.jsonl. */
export interface BenchResult {
  benchmark: string;
  /** Median of the raw baseline (execa + SDK, no agentvisor). */
  baseline: number;
  /** Median of agentvisor, measured in the same run, interleaved with the baseline. */
  agentvisor: number;
  unit: string;
  /** agentvisor / baseline. */
  ratio: number;
  /** The goal, in words (all of its conditions must hold for `met`). */
  goal: string;
  met: boolean;
  /** Sizes, spreads, phase breakdowns and the individual checks behind `met`. */
  details: Record<string, unknown>;
}

/** Where results go: $BENCH_RESULTS, else bench/results/latest.jsonl. */
export const defaultResultsFile = process.env['BENCH_RESULTS'] ?? fileURLToPath(new URL('../results/latest.jsonl', import.meta.url));

export function truncateResults(file: string): void {
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, '');
}

export function appendResult(file: string, result: BenchResult): void {
  mkdirSync(dirname(file), { recursive: true });
  appendFileSync(file, `${JSON.stringify(result)}\n`);
}

/** What every benchmark is run with. */
export interface BenchContext {
  /** The JSONL file the result line is appended to. */
  resultsFile: string;
  /** Progress output (rounds, phases); results are printed by the runner. */
  log: (line: string) => void;
}

export function defaultContext(overrides: Partial<BenchContext> = {}): BenchContext {
  return { resultsFile: defaultResultsFile, log: (line) => process.stderr.write(`${line}\n`), ...overrides };
}

/** A fixed-width table of results. */
export function formatTable(results: readonly BenchResult[]): string {
  const rows = [
    ['benchmark', 'baseline', 'agentvisor', 'unit', 'ratio', 'goal', 'met'],
    ...results.map((r) => [r.benchmark, fmt(r.baseline), fmt(r.agentvisor), r.unit, r.ratio.toFixed(3), r.goal, r.met ? 'yes' : 'NO']),
  ];
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  const line = (row: string[]) => row.map((cell, column) => (column >= 1 && column <= 4 ? cell.padStart(widths[column]!) : cell.padEnd(widths[column]!))).join('  ').trimEnd();
  return [line(rows[0]!), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.slice(1).map(line)].join('\n');
}

function fmt(value: number): string {
  if (!Number.isFinite(value)) return String(value);
  if (Math.abs(value) >= 1000) return Math.round(value).toLocaleString('en-US');
  return value.toFixed(value >= 100 ? 1 : 2);
}
