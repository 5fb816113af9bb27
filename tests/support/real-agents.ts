/**
 * Helpers for integration tests on real processes: specs for the compiled fixture agent,
 * liveness checks that do not mistake zombies for live processes, and waits with a
 * real-time safety net (a hung test fails with a message instead of timing out blindly).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach } from 'vitest';
import type { SimulatedClock } from 'xstate';
import type { AgentSpec, AgentStatus, Supervisor } from '../../index.js';

export const fixtureAgentScript = fileURLToPath(new URL('../../build/test-fixtures/tests/fixtures/fixture-agent.js', import.meta.url));

if (!existsSync(fixtureAgentScript)) {
  throw new Error(`${fixtureAgentScript} is missing: run npm run build:fixtures (npm test does it first)`);
}

/** A spec that runs the fixture agent with `flags`. */
export function fixtureSpec(flags: string[] = [], extra: Partial<AgentSpec> = {}): AgentSpec {
  return { command: process.execPath, args: [fixtureAgentScript, ...flags], displayName: 'Fixture', ...extra };
}

/** A scratch directory for pid and control files, removed by `cleanup()`. */
export function scratch() {
  const dir = mkdtempSync(join(tmpdir(), 'agentvisor-test-'));
  return {
    dir,
    path: (name: string) => join(dir, name),
    /** Writes the fixture control file read by the *next* spawn. */
    control(settings: Record<string, unknown>, name = 'control.json') {
      writeFileSync(join(dir, name), JSON.stringify(settings));
      return join(dir, name);
    },
    /** Lines of a pid file: one per start, `agentPid [grandchildPid]`. */
    pidLines(name = 'pids.txt'): number[][] {
      if (!existsSync(join(dir, name))) return [];
      return readFileSync(join(dir, name), 'utf8').trim().split('\n').filter(Boolean).map((line) => line.split(' ').map(Number));
    },
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** True while `pid` runs; a zombie counts as dead. */
export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}

/** Resolves once `predicate` holds, polling; rejects with `what` after `ms` of real time. */
export async function eventually(predicate: () => boolean, what: string, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Resolves when `agent` reaches `status` (now or later). */
export function waitForStatus(supervisor: Supervisor, agent: string, status: AgentStatus, ms = 10_000): Promise<void> {
  return eventually(() => supervisor.getStatus(agent) === status, `${agent} to be ${status} (is ${supervisor.getStatus(agent)})`, ms);
}

/** The agent machine's state as a dotted path (`'stopping.closing'`), read from the real actor. */
export function agentState(supervisor: Supervisor, agent: string): string {
  const value = supervisor.actor.getSnapshot().children[agent]?.getSnapshot().value as unknown;
  const path = (node: unknown): string[] => (typeof node === 'string' ? [node] : node && typeof node === 'object' ? Object.entries(node).flatMap(([key, child]) => [key, ...path(child)]) : []);
  return path(value).join('.');
}

/** The snapshot of a session's machine (a child of its agent's actor), while it runs. */
export function sessionSnapshot(supervisor: Supervisor, session: { agent: string; id: string }) {
  const agent = supervisor.actor.getSnapshot().children[session.agent];
  // A session's actor is `session:<id>#<n>` (one per opening); the latest opening of that id.
  const children = Object.entries(agent?.getSnapshot().children ?? {}).filter(([id]) => id.startsWith(`session:${session.id}#`));
  const child = children.at(-1)?.[1] as { getSnapshot(): { context: { pendingPermissions: string[] }; matches(state: string): boolean } } | undefined;
  return child?.getSnapshot();
}

/** Resolves when the agent machine is in `state` (a dotted path), now or later. */
export function waitForAgentState(supervisor: Supervisor, agent: string, state: string, ms = 10_000): Promise<void> {
  return eventually(() => agentState(supervisor, agent) === state, `${agent} to be in ${state} (is ${agentState(supervisor, agent)})`, ms);
}

/**
 * Timers still pending on a SimulatedClock. Every machine delay runs on it, so 0 means no
 * backoff, timeout or ladder rung is left to fire, however far the clock is advanced.
 */
export function pendingTimers(clock: SimulatedClock): number {
  return (clock as unknown as { timeouts: Map<unknown, unknown> }).timeouts.size;
}

/** How far ahead each timer pending on a SimulatedClock is due, in ms (its private fields, as above). */
export function pendingDelays(clock: SimulatedClock): number[] {
  const view = clock as unknown as { timeouts: Map<unknown, { start: number; timeout: number }>; _now: number };
  return [...view.timeouts.values()].map((timer) => timer.start + timer.timeout - view._now).sort((a, b) => a - b);
}

/** Records every status and error event of a supervisor, in order. */
export function recordEvents(supervisor: Supervisor) {
  const statuses: string[] = [];
  const errors: Array<{ agent: string; kind: string; message: string; stderr: string[] }> = [];
  const offStatus = supervisor.on('agent:status', ({ agent, status, previous }) => statuses.push(`${agent}:${previous}→${status}`));
  const offError = supervisor.on('error', (event) => errors.push(event));
  return { statuses, errors, off: () => (offStatus(), offError()) };
}

/** The text of every `agent_message_chunk` a session receives, in order. */
export function collectChunks(session: { on(type: 'update', listener: (update: import('../../index.js').SessionUpdate) => void): () => void }) {
  const chunks: string[] = [];
  const off = session.on('update', (update) => {
    if (update.sessionUpdate === 'agent_message_chunk' && update.content.type === 'text') chunks.push(update.content.text);
  });
  return { chunks, text: () => chunks.join(''), off };
}

/** A fixture prompt command (see tests/fixtures/README.md). */
export const command = (op: Record<string, unknown>) => JSON.stringify(op);

/**
 * The per-test environment of an integration test file: fresh scratch files before each
 * test, and after it the supervisor the test stored in `env.supervisor` is shut down and
 * the files removed. Call once at the top level of the file.
 */
export function useRealAgentEnvironment() {
  const env = { files: undefined as unknown as ReturnType<typeof scratch>, supervisor: undefined as Supervisor | undefined };
  beforeEach(() => {
    env.files = scratch();
  });
  afterEach(async () => {
    await env.supervisor?.shutdown();
    env.supervisor = undefined;
    env.files.cleanup();
  });
  return env;
}
