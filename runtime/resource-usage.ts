/**
 * The CPU and memory of each agent's processes (services/containment/proc-usage.ts), for
 * `supervisor.resourceUsage()`. CPU is a rate, so it needs two samples: the sampler keeps each
 * agent's last one, and measures since it when it is recent enough (a `watch agentvisor ls`
 * costs nothing extra); otherwise it samples, waits {@link freshWindowMs} and samples again.
 * Asked again within {@link minWindowMs}, it answers what it last measured, reading nothing.
 */
import { clockNow, realClock, type Clock } from '../core/clock.js';
import { readProcTable, type ProcTable } from '../services/containment/proc-table.js';
import { clockTicksPerSecond, processTreeOf, readProcessCost, readUptimeSeconds } from '../services/containment/proc-usage.js';

/** What an agent's processes on this host cost now. */
export interface ResourceUsage {
  /**
   * CPU time of all its processes over the last `windowMs`, in % of one core (above 100 when
   * they keep more than one core busy).
   */
  cpuPercent: number;
  /** The resident memory (RSS) of all its processes, summed, in bytes. */
  memoryBytes: number;
  /** How many processes that is: the agent, its containment's wrapper, everything they started. */
  processes: number;
  /** The window the CPU share was measured over, ms. */
  windowMs: number;
}

/** The window of a fresh measurement. */
export const freshWindowMs = 250;
/** A previous sample is measured against when it is at least this old... */
const minWindowMs = 100;
/** ...and at most this old (an older one would average a burst away). */
const maxWindowMs = 10_000;

interface Sample {
  at: number;
  /** Seconds since boot at `at`: which processes started after it. */
  uptime: number;
  /** `pid:startTime` → CPU ticks. */
  ticks: Map<string, number>;
  memoryBytes: number;
  processes: number;
}

/** Keeps each agent's last sample; one per supervisor. */
export class ResourceSampler {
  /** Each agent's last sample, and what it answered with it (none yet while a fresh window runs). */
  private readonly last = new Map<string, { pid: number; sample: Sample; usage?: ResourceUsage }>();

  /** `clock`: the supervisor's (a SimulatedClock in tests), for the time and the fresh window's wait. */
  constructor(private readonly clock: Clock = realClock) {}

  /**
   * The usage of each agent that has a process (`pid`) on this host; null for the others, and
   * for all when /proc cannot be read (not Linux).
   */
  async sample(agents: ReadonlyArray<{ name: string; pid: number | null }>): Promise<Map<string, ResourceUsage | null>> {
    const result = new Map<string, ResourceUsage | null>(agents.map(({ name }) => [name, null]));
    const now = clockNow(this.clock);
    const live: Array<{ name: string; pid: number }> = [];
    for (const { name, pid } of agents) {
      const previous = this.last.get(name);
      if (pid === null) this.last.delete(name);
      // Asked again within the shortest window (a dashboard and a CLI at once): the last answer.
      else if (previous?.pid === pid && previous.usage && now - previous.sample.at < minWindowMs) result.set(name, previous.usage);
      else live.push({ name, pid });
    }
    if (live.length === 0) return result;
    let first = this.snapshot(live);
    if (first === null) return result;
    const again = live.filter(({ name, pid }) => {
      const previous = this.last.get(name);
      const age = first!.at - (previous?.sample.at ?? 0);
      return !(previous && previous.pid === pid && age >= minWindowMs && age <= maxWindowMs);
    });
    if (again.length > 0) {
      for (const { name, pid } of again) {
        const sample = first.samples.get(name);
        if (sample) this.last.set(name, { pid, sample });
      }
      await new Promise<void>((resolve) => this.clock.setTimeout(resolve, freshWindowMs));
      first = this.snapshot(live) ?? first;
    }
    for (const { name, pid } of live) {
      const sample = first.samples.get(name);
      const previous = this.last.get(name);
      if (!sample) {
        this.last.delete(name); // its process is gone
        continue;
      }
      const usage = previous ? usageBetween(previous.sample, sample) : { cpuPercent: 0, memoryBytes: sample.memoryBytes, processes: sample.processes, windowMs: 0 };
      result.set(name, usage);
      this.last.set(name, { pid, sample, usage });
    }
    return result;
  }

  /** Every live agent's sample now; null when /proc cannot be read. */
  private snapshot(agents: ReadonlyArray<{ name: string; pid: number }>): { at: number; samples: Map<string, Sample> } | null {
    let table: ProcTable;
    try {
      table = readProcTable();
    } catch {
      return null;
    }
    const at = clockNow(this.clock);
    const uptime = readUptimeSeconds() ?? 0;
    const samples = new Map<string, Sample>();
    for (const { name, pid } of agents) {
      const members = processTreeOf(pid, table);
      if (members.length === 0) continue;
      const sample: Sample = { at, uptime, ticks: new Map(), memoryBytes: 0, processes: 0 };
      for (const member of members) {
        const cost = readProcessCost(member);
        if (!cost) continue;
        sample.ticks.set(`${cost.pid}:${cost.startTime}`, cost.cpuTicks);
        sample.memoryBytes += cost.rssBytes;
        sample.processes += 1;
      }
      if (sample.processes > 0) samples.set(name, sample);
    }
    return { at, samples };
  }
}

/**
 * The usage from `before` to `after`: the CPU ticks each process spent in between (all of
 * them for one that started in between), over the time between; the memory of `after`.
 */
function usageBetween(before: Sample, after: Sample): ResourceUsage {
  const windowMs = Math.max(1, after.at - before.at);
  let ticks = 0;
  for (const [key, now] of after.ticks) {
    const then = before.ticks.get(key);
    if (then !== undefined) ticks += Math.max(0, now - then);
    else if (Number(key.split(':')[1]) / clockTicksPerSecond >= before.uptime) ticks += now; // started in the window
  }
  const cpuPercent = Math.round(((ticks / clockTicksPerSecond) * 1_000_000) / windowMs) / 10; // %, one decimal
  return { cpuPercent, memoryBytes: after.memoryBytes, processes: after.processes, windowMs };
}
