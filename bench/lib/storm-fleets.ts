/**
 * The restart storm's fleets and bookkeeping: a fleet of connected agents that can be
 * SIGKILLed at once and reports when each death was noticed, when each restart fell due,
 * when it was spawned and when it connected again. One fleet on the raw SDK with a
 * hand-written restart, one on agentvisor. Used by bench/restart-storm.bench.ts.
 */
import { watchAgentStates } from './agent-states.js';
import { agentvisor, fixtureAgentScript, type AgentSpec, type Supervisor, type SupervisorOptions } from './agentvisor.js';
import { killProcess, startRawAgent, stopRawAgent, type RawAgent } from './raw-agent.js';
import { median, now, quantile, round, sleep } from './stats.js';

/** What a fleet is made with. */
export interface FleetOptions {
  agents: number;
  initialDelayMs: number;
  bucketMs: number;
  /** agentvisor's restart.stableAfterMs: short, so every storm starts at the first backoff step. */
  stableAfterMs: number;
}

const stormTimeoutMs = 120_000;

/** One storm's record: spawn and reconnect times relative to the kill. */
export interface StormRecord {
  /** Agents connected again (all of them, or the storm throws). */
  reconnected: number;
  recoveryMs: number;
  /** When each restart fell due: the moment its backoff timer was set plus its delay. */
  duesAt: number[];
  /** The backoff delay of each restart, ms. */
  delays: number[];
  maxDuePerBucket: number;
  /** The biggest burst of deaths noticed in one bucket (what the restarts start from). */
  maxExitPerBucket: number;
  /** When the parent learned of each death (raw: the child's `exit` event; agentvisor: status disconnected). */
  exitsAt: number[];
  spawnsAt: number[];
  maxPerBucket: number;
  spawnSpanMs: number;
}

/** A fleet of connected agents that storms on demand. */
export interface Fleet {
  label: string;
  storm(): Promise<StormRecord>;
  close(): Promise<void>;
}

/** `{ "<bucket start ms>": count }` for the non-empty buckets. */
export function sparse(counts: readonly number[], bucketMs: number): Record<string, number> {
  return Object.fromEntries(counts.flatMap((count, i) => (count > 0 ? [[String(i * bucketMs), count]] : [])));
}

/** min / p25 / median / p75 / max of times since the kill. */
export function quartiles(values: readonly number[]): Record<string, number> {
  if (values.length === 0) return {};
  return { min: round(Math.min(...values), 1), p25: round(quantile(values, 0.25), 1), median: round(median(values), 1), p75: round(quantile(values, 0.75), 1), max: round(Math.max(...values), 1) };
}

/** Counts per bucket from the kill (only buckets up to the last spawn). */
export function histogram(spawnsAt: readonly number[], bucketMs: number): number[] {
  const counts: number[] = [];
  for (const at of spawnsAt) {
    const bucket = Math.max(0, Math.floor(at / bucketMs));
    while (counts.length <= bucket) counts.push(0);
    counts[bucket]!++;
  }
  return counts;
}

/** What a fleet logs during one storm (performance.now() ms), as it happens. */
class StormLog {
  exits: number[] = [];
  dues: number[] = [];
  delays: number[] = [];
  spawns: number[] = [];
  connects: number[] = [];
  failures: string[] = [];

  /** A restart's backoff timer was set for `delayMs`. */
  due(delayMs: number): void {
    this.dues.push(now() + delayMs);
    this.delays.push(delayMs);
  }

  reset(): void {
    this.exits = [];
    this.dues = [];
    this.delays = [];
    this.spawns = [];
    this.connects = [];
    this.failures = [];
  }

  record(killedAt: number, bucketMs: number): StormRecord {
    const spawnsAt = this.spawns.map((t) => t - killedAt).sort((a, b) => a - b);
    const duesAt = this.dues.map((t) => t - killedAt).sort((a, b) => a - b);
    return {
      reconnected: this.connects.length,
      recoveryMs: Math.max(...this.connects) - killedAt,
      duesAt,
      delays: [...this.delays],
      maxDuePerBucket: Math.max(0, ...histogram(duesAt, bucketMs)),
      maxExitPerBucket: Math.max(0, ...histogram(this.exits.map((t) => t - killedAt), bucketMs)),
      exitsAt: this.exits.map((t) => round(t - killedAt, 1)).sort((a, b) => a - b),
      spawnsAt,
      maxPerBucket: Math.max(0, ...histogram(spawnsAt, bucketMs)),
      spawnSpanMs: spawnsAt.length > 0 ? spawnsAt[spawnsAt.length - 1]! - spawnsAt[0]! : 0,
    };
  }
}

/**
 * One storm, the same on both sides: SIGKILL every victim at once (the agent's own pid, as a
 * crash would; a contained agent is not its group's leader), then wait (polling)
 * until the fleet's restarts have connected all `size.agents` again; throws on a failed
 * restart or after stormTimeoutMs.
 */
async function storm(label: string, victims: readonly number[], log: StormLog, size: FleetOptions): Promise<StormRecord> {
  log.reset();
  const killedAt = now();
  for (const pid of victims) killProcess(pid, 'SIGKILL');
  const deadline = killedAt + stormTimeoutMs;
  while (log.connects.length < size.agents && log.failures.length === 0) {
    if (now() > deadline) throw new Error(`restart storm: timed out waiting for ${label}: ${log.connects.length}/${size.agents} reconnected`);
    await sleep(5);
  }
  if (log.failures.length > 0) throw new Error(`restart storm: ${label} restarts failed: ${log.failures.slice(0, 3).join(', ')}`);
  return log.record(killedAt, size.bucketMs);
}

export async function rawFleet(size: FleetOptions, pidFile: string): Promise<Fleet> {
  const agents: Array<RawAgent | undefined> = new Array(size.agents).fill(undefined);
  const log = new StormLog();
  let closing = false;

  const start = async (slot: number): Promise<void> => {
    const agent = await startRawAgent(fixtureAgentScript, ['--pid-file', pidFile]);
    agents[slot] = agent;
    void agent.exited.then(() => {
      if (closing) return;
      log.exits.push(now());
      log.due(size.initialDelayMs);
      agents[slot] = undefined;
      // The hand-written restart: a fixed delay, then spawn + initialize again.
      setTimeout(() => {
        if (closing) return;
        log.spawns.push(now());
        start(slot).then(
          () => log.connects.push(now()),
          (error: unknown) => log.failures.push(`slot ${slot}: ${error instanceof Error ? error.message : String(error)}`),
        );
      }, size.initialDelayMs);
    });
  };
  const started = await Promise.allSettled(agents.map((_, slot) => start(slot)));
  const failed = started.find((outcome): outcome is PromiseRejectedResult => outcome.status === 'rejected');
  if (failed) {
    closing = true;
    await Promise.all(agents.map((agent) => (agent ? stopRawAgent(agent) : undefined)));
    throw failed.reason;
  }

  return {
    label: 'raw',
    storm: () => storm('raw', agents.map((agent) => agent!.pid), log, size),
    async close() {
      closing = true;
      await Promise.all(agents.map((agent) => (agent ? stopRawAgent(agent) : undefined)));
    },
  };
}

export async function agentvisorFleet(size: FleetOptions, jitter: number, pidFile: string): Promise<Fleet> {
  const spec: AgentSpec = { command: process.execPath, args: [fixtureAgentScript, '--pid-file', pidFile], displayName: 'Fixture' };
  const names = Array.from({ length: size.agents }, (_, i) => `fixture-${i}`);
  const log = new StormLog();
  // The real-time clock, plus a note of when each backoff timer falls due. Backoff delays are
  // the only ones ≤ initialDelayMs (stableAfterMs is longer; the other timeouts far longer).
  const clock: SupervisorOptions['clock'] = {
    setTimeout: (fn: (...args: unknown[]) => void, ms: number) => {
      if (ms <= size.initialDelayMs) log.due(ms);
      return setTimeout(fn, ms);
    },
    clearTimeout: (id: unknown) => clearTimeout(id as NodeJS.Timeout),
  };
  const supervisor: Supervisor = agentvisor.createSupervisor({
    agents: Object.fromEntries(names.map((name) => [name, spec])),
    maxAgents: size.agents,
    restart: { initialDelayMs: size.initialDelayMs, jitter, maxAttempts: 5, stableAfterMs: size.stableAfterMs },
    // The storm measures how fast restarts run, not when to stop them: every agent killed in
    // every storm is one restart, past the supervisor-wide default (50 a minute) that escalates: off here.
    overload: { intensity: Number.MAX_SAFE_INTEGER },
    clock,
  });
  const offError = supervisor.on('error', ({ agent, kind }) => {
    if (kind !== 'agent_exited') log.failures.push(`${agent}: ${kind}`);
  });
  const offStatus = supervisor.on('agent:status', ({ status, previous }) => {
    if (status === 'connected' && previous === 'reconnecting') log.connects.push(now());
    else if (status === 'disconnected' && previous === 'connected') log.exits.push(now());
  });
  await Promise.all(names.map((name) => supervisor.ensureAgent(name))).catch(async (error: unknown) => {
    await supervisor.shutdown();
    throw error;
  });
  // The spawn moment: an agent actor entering reconnecting.spawning (spawnProcess runs on entry).
  const wasSpawning = names.map(() => false);
  const unwatch = watchAgentStates(supervisor, names, (i, state) => {
    const spawning = state === 'reconnecting.spawning';
    if (spawning && !wasSpawning[i]) log.spawns.push(now());
    wasSpawning[i] = spawning;
  });

  const label = `agentvisor-jitter${jitter}`;
  return {
    label,
    storm: () => storm(label, supervisor.list().map((agent) => agent.pid!), log, size),
    async close() {
      unwatch();
      offStatus();
      offError();
      await supervisor.shutdown();
    },
  };
}
