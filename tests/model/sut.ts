/**
 * Small pieces both model tests share to drive a real supervisor: a scripted fixture agent
 * (control file + a command symlink that can vanish for ENOENT), waits with a real-time
 * safety net, a concurrency gate, and a recorder of the supervisor's event stream.
 */
import { existsSync, rmSync, symlinkSync } from 'node:fs';
import type { AgentSpec, Supervisor } from '../../index.js';
import { eventually, fixtureSpec, isRunning, scratch } from '../support/real-agents.js';

/** How the *next* spawn of a fixture agent behaves (written before the spawn happens). */
export type SpawnPlan = 'connect' | 'refuse' | 'silent' | 'missing';

/** One fixture agent with its own control file, pid file and command symlink. */
export class ScriptedAgent {
  readonly control: string;
  readonly pidFile: string;
  readonly command: string;

  /**
   * `settings`: control keys every spawn of this agent gets, under each plan's own (the
   * lifecycle model's agent offers a login: `{ requireAuth: true }`).
   */
  constructor(
    readonly files: ReturnType<typeof scratch>,
    readonly name: string,
    readonly settings: Record<string, unknown> = {},
  ) {
    this.control = files.path(`${name}.control.json`);
    this.pidFile = `${name}.pids.txt`;
    this.command = files.path(`${name}-node`);
    symlinkSync(process.execPath, this.command);
    this.plan('connect');
  }

  /** The spec: node (through the symlink) running the fixture with a pid file and the control file. */
  spec(): AgentSpec {
    return fixtureSpec(['--pid-file', this.files.path(this.pidFile)], {
      command: this.command,
      env: { FIXTURE_CONTROL_FILE: this.control },
    });
  }

  /**
   * Scripts the next spawn: answer initialize, refuse it, never answer, or no command at all;
   * `extra` control keys (e.g. `stderr`: what it prints at start) go with it.
   */
  plan(plan: SpawnPlan, extra: Record<string, unknown> = {}): void {
    if (plan === 'missing') {
      rmSync(this.command, { force: true });
      return;
    }
    if (!existsSync(this.command)) symlinkSync(process.execPath, this.command);
    const settings = { connect: {}, refuse: { failInitialize: true }, silent: { neverInitialize: true } }[plan];
    this.files.control({ ...this.settings, ...settings, ...extra }, `${this.name}.control.json`);
  }

  /** Pids of every process this agent started, oldest first (one pid-file line per start). */
  pids(): number[] {
    return this.files.pidLines(this.pidFile).map(([pid]) => pid!);
  }

  /** Pids of this agent's processes that still run. */
  running(): number[] {
    return this.pids().filter((pid) => isRunning(pid));
  }
}

/**
 * Records `agent:status` (as the status) and `error` (as `error:<kind>`) per agent, in order;
 * with `parked`, also `agent:needs_auth` and `agent:rate_limited` (as their event names).
 */
export function recordTrace(supervisor: Supervisor, options: { parked?: boolean } = {}) {
  const traces = new Map<string, string[]>();
  const chainErrors: string[] = [];
  const last = new Map<string, string>();
  const push = (agent: string, entry: string) => traces.set(agent, [...(traces.get(agent) ?? []), entry]);
  const offStatus = supervisor.on('agent:status', ({ agent, status, previous }) => {
    const expected = last.get(agent) ?? 'idle';
    if (previous !== expected) chainErrors.push(`${agent}: ${previous}→${status} after ${expected}`);
    last.set(agent, status);
    push(agent, status);
  });
  const offError = supervisor.on('error', ({ agent, kind }) => push(agent, `error:${kind}`));
  const offParked = options.parked
    ? [
        supervisor.on('agent:needs_auth', ({ agent }) => push(agent, 'agent:needs_auth')),
        supervisor.on('agent:rate_limited', ({ agent }) => push(agent, 'agent:rate_limited')),
      ]
    : [];
  return {
    of: (agent: string) => traces.get(agent) ?? [],
    /** `previous` of each status event that does not match the status before it. */
    chainErrors,
    off: () => {
      offStatus();
      offError();
      for (const off of offParked) off();
    },
  };
}

/** Waits (real time) until `predicate` holds; the message says what was seen last. */
export async function settle(predicate: () => boolean, describe: () => string, ms = 10_000): Promise<void> {
  try {
    await eventually(predicate, 'the supervisor to settle', ms);
  } catch {
    throw new Error(`timed out after ${ms} ms waiting for ${describe()}`);
  }
}

/** `promise`, or a rejection naming `what` after `ms` of real time. */
export async function within<T>(promise: Promise<T>, what: string, ms = 10_000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } catch (error) {
    throw explain(error);
  } finally {
    clearTimeout(timer);
  }
}

/** Adds an AgentError's kind, detail, exit and stderr to its message, so a failing path says why. */
export function explain(error: unknown): unknown {
  if (!(error instanceof Error) || !('kind' in error)) return error;
  const cause = (error.cause ?? {}) as { detail?: string; exitCode?: number | null; signal?: string | null };
  const stderr = (error as { stderr?: string[] }).stderr ?? [];
  error.message += ` [${String(error.kind)}${cause.detail ? `: ${cause.detail}` : ''}${stderr.length ? `; stderr: ${stderr.join(' | ')}` : ''}]`;
  return error;
}

/** Outcome of a start the test did not await (ensureAgent, reconnect): kept, never unhandled. */
export interface Call {
  what: string;
  outcome: { status: 'pending' } | { status: 'resolved'; pid: number } | { status: 'rejected'; kind: string };
  done: Promise<void>;
}

export function track(what: string, promise: Promise<{ pid: number }>): Call {
  const call: Call = { what, outcome: { status: 'pending' }, done: Promise.resolve() };
  call.done = promise.then(
    (handle) => void (call.outcome = { status: 'resolved', pid: handle.pid }),
    (error: unknown) => void (call.outcome = { status: 'rejected', kind: String((error as { kind?: unknown }).kind ?? error) }),
  );
  return call;
}

/** At most `size` paths at once: each one spawns real processes on a small machine. */
export function gate(size: number) {
  let active = 0;
  const waiting: Array<() => void> = [];
  return async function run<T>(task: () => Promise<T>): Promise<T> {
    if (active >= size) await new Promise<void>((resolve) => waiting.push(resolve));
    active++;
    try {
      return await task();
    } finally {
      active--;
      waiting.shift()?.();
    }
  };
}

/** Shuts the supervisor down (advancing the stop ladder if needed) and kills any leftover process. */
export async function dispose(supervisor: Supervisor, clock: { increment(ms: number): void }, agents: ScriptedAgent[]): Promise<number[]> {
  const done = supervisor.shutdown().catch(() => {});
  const deadline = Date.now() + 10_000;
  let finished = false;
  void done.then(() => (finished = true));
  while (!finished && Date.now() < deadline) {
    // Done at once when nothing is left to stop; otherwise move the stop ladder on every 200 ms.
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([done, new Promise((resolve) => (timer = setTimeout(resolve, 200)))]);
    clearTimeout(timer);
    if (!finished) clock.increment(10_000);
  }
  await new Promise((resolve) => setTimeout(resolve, 50));
  const leaked = agents.flatMap((agent) => agent.running());
  for (const pid of leaked) process.kill(pid, 'SIGKILL');
  return leaked;
}
