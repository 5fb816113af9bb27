/**
 * Containment: nothing an agent starts outlives it. A mechanism wraps the agent's command
 * before it is spawned and, once it runs, answers for every process the agent started — any
 * depth, any process group, any session (setsid), double-forked daemons — so that they all
 * die with the agent. Three mechanisms, strongest first (see docs/containment.md):
 *
 * - `pid-namespace`: the agent runs in a PID namespace of its own (util-linux `unshare`);
 *   when its init exits, the kernel kills everything inside.
 * - `cgroup`: the agent runs in a cgroup of its own (v2 delegated, or v1 as root); every
 *   descendant stays in it, and the cgroup is emptied with SIGKILL.
 * - `proc-tracking`: descendants are found in /proc (parent pids, session and group ids,
 *   with each process's start time so a reused pid is never killed) and killed with it.
 *
 * Framework-free: no XState. The process service uses a mechanism; the runtime picks it.
 */

import type { ContainmentKind } from '../../core/containment-kind.js';

export type { ContainmentKind };

/** What a contained agent process is spawned as. */
export interface ContainedSpawn {
  command: string;
  args: string[];
  /**
   * The wrapper watches fd 3 and kills the agent when it closes: the host passes a pipe
   * there and holds its end for as long as it lives, so even a host killed by SIGKILL
   * takes its agents with it.
   */
  lifeline?: boolean;
}

/** The agent process to contain, as the process service spawns it. */
export interface SpawnRequest {
  command: string;
  args: string[];
  /** The agent's name, for the cgroup's and the records' names. */
  agent: string;
}

/** One contained agent process, once spawned. */
export interface Containment {
  readonly kind: ContainmentKind;
  /**
   * Identifies the container for records and a later sweep: the cgroup path, the pid
   * namespace's init (pid and start time), or the tracked pids.
   */
  handle(): ContainmentHandle;
  /**
   * Calls `listener` whenever `handle()` has changed; returns the unsubscribe. Only a
   * mechanism whose handle changes while the agent runs (/proc tracking: its tracked pids)
   * has it; the others' handles are fixed once `agentPid` resolves.
   */
  onHandleChange?(listener: () => void): () => void;
  /** The agent's own pid on this host (the wrapper's pid may differ), once known. */
  readonly agentPid: Promise<number>;
  /** SIGKILLs every process the agent started that is still alive; resolves when none is. */
  killAll(): Promise<void>;
  /** Frees what the container holds (a cgroup directory, a tracker); after killAll. */
  release(): void;
}

/** A plain-JSON description of a container, as kept in records. */
export type ContainmentHandle =
  | { kind: 'pid-namespace'; initPid: number; initStartTime: number }
  | { kind: 'cgroup'; path: string }
  | { kind: 'proc-tracking'; pids: Array<{ pid: number; startTime: number }> };

/** A mechanism: wraps a spawn, then contains the process it became. */
export interface ContainmentMechanism {
  readonly kind: ContainmentKind;
  /** The command line to spawn instead of the agent's own. */
  wrap(request: SpawnRequest): ContainedSpawn;
  /** Takes charge of the spawned wrapper (pid `spawnedPid`, its own process group). */
  contain(spawnedPid: number, request: SpawnRequest): Containment;
}
