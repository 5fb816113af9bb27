/**
 * The restart storm's fleets and bookkeeping: a fleet of connected agents that can be
 * SIGKILLed at once and reports when each death was noticed, when each restart fell due,
 * when it was spawned and when it connected again. One fleet on the raw SDK with a
 * hand-written restart, one on agentvisor. Used by bench/restart-storm.bench.ts.
 */
import { agentvisor, fixtureAgentScript, type AgentSpec, type Supervisor, type SupervisorOptions } from './agentvisor.js';
import { killGroup, startRawAgent, stopRawAgent, type RawAgent } from './raw-agent.js';
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
  /** When the parent learned of each death (raw: execa's exit; agentvisor: status disconnected). */
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

function record(killedAt: number, exits: number[], dues: number[], delays: number[], spawns: number[], connects: number[], bucketMs: number): StormRecord {
  const spawnsAt = spawns.map((t) => t - killedAt).sort((a, b) => a - b);
  const duesAt = dues.map((t) => t - killedAt).sort((a, b) => a - b);
  return {
    reconnected: connects.length,
    recoveryMs: Math.max(...connects) - killedAt,
    duesAt,
    delays: [...delays],
    maxDuePerBucket: Math.max(0, ...histogram(duesAt, bucketMs)),
    maxExitPerBucket: Math.max(0, ...histogram(exits.map((t) => t - killedAt), bucketMs)),
    exitsAt: exits.map((t) => round(t - killedAt, 1)).sort((a, b) => a - b),
    spawnsAt,
    maxPerBucket: Math.max(0, ...histogram(spawnsAt, bucketMs)),
    spawnSpanMs: spawnsAt.length > 0 ? spawnsAt[spawnsAt.length - 1]! - spawnsAt[0]! : 0,
  };
}

/** Resolves when `done()` holds, polling; rejects with `what` after stormTimeoutMs. */
async function until(done: () => boolean, what: () => string): Promise<void> {
  const deadline = now() + stormTimeoutMs;
  while (!done()) {
    if (now() > deadline) throw new Error(`restart storm: timed out waiting for ${what()}`);
    await sleep(5);
  }
}

export async function rawFleet(size: FleetOptions, pidFile: string): Promise<Fleet> {
  const agents: Array<RawAgent | undefined> = new Array(size.agents).fill(undefined);
  let closing = false;
  let exits: number[] = [];
  let dues: number[] = [];
  let delays: number[] = [];
  let spawns: number[] = [];
  let connects: number[] = [];
  let failures = 0;

  const start = async (slot: number): Promise<void> => {
    const agent = await startRawAgent(fixtureAgentScript, ['--pid-file', pidFile]);
    agents[slot] = agent;
    void agent.exited.then(() => {
      if (closing) return;
      exits.push(now());
      dues.push(now() + size.initialDelayMs);
      delays.push(size.initialDelayMs);
      agents[slot] = undefined;
      // The hand-written restart: a fixed delay, then spawn + initialize again.
      setTimeout(() => {
        if (closing) return;
        spawns.push(now());
        start(slot).then(
          () => connects.push(now()),
          () => failures++,
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
    async storm() {
      exits = [];
      dues = [];
      delays = [];
      spawns = [];
      connects = [];
      const victims = agents.map((agent) => agent!.pid);
      const killedAt = now();
      for (const pid of victims) killGroup(pid, 'SIGKILL');
      await until(
        () => connects.length === size.agents || failures > 0,
        () => `raw: ${connects.length}/${size.agents} reconnected`,
      );
      if (failures > 0) throw new Error(`restart storm: ${failures} raw restarts failed`);
      return record(killedAt, exits, dues, delays, spawns, connects, size.bucketMs);
    },
    async close() {
      closing = true;
      await Promise.all(agents.map((agent) => (agent ? stopRawAgent(agent) : undefined)));
    },
  };
}

type AgentRef = { subscribe(listener: (snapshot: { value: unknown }) => void): { unsubscribe(): void } };

export async function agentvisorFleet(size: FleetOptions, jitter: number, pidFile: string): Promise<Fleet> {
  const spec: AgentSpec = { command: process.execPath, args: [fixtureAgentScript, '--pid-file', pidFile], displayName: 'Fixture' };
  const names = Array.from({ length: size.agents }, (_, i) => `fixture-${i}`);
  let dues: number[] = [];
  let delays: number[] = [];
  // The real-time clock, plus a note of when each backoff timer falls due. Backoff delays are
  // the only ones ≤ initialDelayMs (stableAfterMs is longer; the other timeouts far longer).
  const clock: SupervisorOptions['clock'] = {
    setTimeout: (fn: (...args: unknown[]) => void, ms: number) => {
      if (ms <= size.initialDelayMs) {
        dues.push(now() + ms);
        delays.push(ms);
      }
      return setTimeout(fn, ms);
    },
    clearTimeout: (id: unknown) => clearTimeout(id as NodeJS.Timeout),
  };
  const supervisor: Supervisor = agentvisor.createSupervisor({
    agents: Object.fromEntries(names.map((name) => [name, spec])),
    maxAgents: size.agents,
    restart: { initialDelayMs: size.initialDelayMs, jitter, maxAttempts: 5, stableAfterMs: size.stableAfterMs },
    clock,
  });
  let exits: number[] = [];
  let spawns: number[] = [];
  let connects: number[] = [];
  let failures: string[] = [];
  const offError = supervisor.on('error', ({ agent, kind }) => {
    if (kind !== 'agent_exited') failures.push(`${agent}: ${kind}`);
  });
  const offStatus = supervisor.on('agent:status', ({ status, previous }) => {
    if (status === 'connected' && previous === 'reconnecting') connects.push(now());
    else if (status === 'disconnected' && previous === 'connected') exits.push(now());
  });
  await Promise.all(names.map((name) => supervisor.ensureAgent(name))).catch(async (error: unknown) => {
    await supervisor.shutdown();
    throw error;
  });
  // The spawn moment: an agent actor entering reconnecting.spawning (spawnProcess runs on entry).
  const subscriptions = names.map((name) => {
    const child = supervisor.actor.getSnapshot().children[name] as unknown as AgentRef;
    let wasSpawning = false;
    return child.subscribe((snapshot) => {
      const value = snapshot.value as Record<string, unknown> | string;
      const spawning = typeof value === 'object' && value['reconnecting'] === 'spawning';
      if (spawning && !wasSpawning) spawns.push(now());
      wasSpawning = spawning;
    });
  });

  return {
    label: `agentvisor-jitter${jitter}`,
    async storm() {
      exits = [];
      dues = [];
      delays = [];
      spawns = [];
      connects = [];
      failures = [];
      const victims = supervisor.list().map((agent) => agent.pid!);
      const killedAt = now();
      for (const pid of victims) killGroup(pid, 'SIGKILL');
      await until(
        () => connects.length === size.agents || failures.length > 0,
        () => `agentvisor (jitter ${jitter}): ${connects.length}/${size.agents} reconnected`,
      );
      if (failures.length > 0) throw new Error(`restart storm: agentvisor restarts failed: ${failures.slice(0, 3).join(', ')}`);
      return record(killedAt, exits, dues, delays, spawns, connects, size.bucketMs);
    },
    async close() {
      for (const subscription of subscriptions) subscription.unsubscribe();
      offStatus();
      offError();
      await supervisor.shutdown();
    },
  };
}
