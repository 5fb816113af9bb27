/** Turning interleaved samples into a result line, and the end-of-benchmark leak check. */
import { leftoverAgents, waitUntilGone } from './processes.js';
import { appendResult, type BenchContext, type BenchResult } from './results.js';
import { median, medianExtras, round, spread, type Interleaved } from './stats.js';
import { agentScripts } from './agentvisor.js';

export interface Headline {
  baseline: number;
  agentvisor: number;
  ratio: number;
}

/** Medians of both sides and their ratio (agentvisor / baseline). */
export function headline(samples: Interleaved): Headline {
  const baseline = median(samples.baseline.map((s) => s.value));
  const agentvisor = median(samples.agentvisor.map((s) => s.value));
  return { baseline: round(baseline, 3), agentvisor: round(agentvisor, 3), ratio: round(agentvisor / baseline, 4) };
}

/** Spreads and per-phase medians of both sides, for `details`. */
export function sampleDetails(samples: Interleaved): Record<string, unknown> {
  return {
    spread: { baseline: spread(samples.baseline.map((s) => s.value)), agentvisor: spread(samples.agentvisor.map((s) => s.value)) },
    phases: { baseline: medianExtras(samples.baseline), agentvisor: medianExtras(samples.agentvisor) },
    // Per-round ratio, pairing the two sides of the same round: a second, noise-robust view.
    pairedRatio: spread(samples.baseline.map((s, i) => samples.agentvisor[i]!.value / s.value)),
  };
}

/**
 * After a benchmark: waits briefly for every pid it spawned to be gone, then scans for any
 * agent process of ours still alive. Returns the leftovers (empty = clean) after killing them,
 * so one leaky benchmark cannot poison the next.
 */
export async function leakCheck(spawnedPids: Iterable<number>): Promise<{ leftover: number[]; checked: number }> {
  const pids = [...new Set(spawnedPids)];
  const stillRunning = await waitUntilGone(pids, 1000);
  const strays = leftoverAgents(agentScripts, pids);
  const leftover = [...new Set([...stillRunning, ...strays])];
  for (const pid of leftover) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone meanwhile
      }
    }
  }
  return { leftover, checked: pids.length };
}

/** Writes the result line and returns the result. */
export function finish(ctx: BenchContext, result: BenchResult): BenchResult {
  appendResult(ctx.resultsFile, result);
  return result;
}
