/**
 * Failures in the store (docs/store.md, "What it keeps"): every failure of an agent is kept in
 * the event log whole — kind, message, detail, exit, its class, whether and when it is retried,
 * and the last lines the agent wrote to stderr (its own bounded tail) — and reads back the same
 * through `eventLog()` from a fresh supervisor on the same state directory. Real fixture agents
 * fail for real (a rate limit on stderr, a crash, a missing login, a command that is not there
 * or is a directory); no env value ever reaches the file.
 */
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SimulatedClock } from 'xstate';
import { createSupervisor, type AgentError, type EventEntry, type Supervisor } from '../../index.js';
import type { StoredFailure } from '../../core/store.js';
import { command, fixtureSpec, useRealAgentEnvironment, waitForStatus } from '../support/real-agents.js';

const env = useRealAgentEnvironment();
const secret = 'hunter2-never-in-the-store';

async function collect<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const entries: T[] = [];
  for await (const entry of iterable) entries.push(entry);
  return entries;
}

/** The `error` entries of `agent`'s event log, as a supervisor reads them back. */
async function storedFailures(supervisor: Supervisor, agent: string): Promise<StoredFailure[]> {
  const entries: EventEntry[] = await collect(supervisor.eventLog({ agent }));
  return entries.filter((entry) => entry.event === 'error').map((entry) => entry.data as StoredFailure);
}

async function rejection(promise: Promise<unknown>): Promise<AgentError> {
  return (await promise.then(
    () => {
      throw new Error('it succeeded');
    },
    (error: unknown) => error,
  )) as AgentError;
}

/** What the error a caller got says, as the store should keep it. */
const asStored = (error: AgentError) => ({ kind: error.kind, message: error.message, class: error.class, retryable: error.retryable, retryAt: error.retryAt });

describe('failures in the store', () => {
  it('keep their class, retryable, retryAt and stderr tail, read back by a fresh supervisor on the same stateDir; never an env value', async () => {
    const stateDir = env.files.path('state');
    const directory = env.files.path('agent-dir');
    mkdirSync(directory);
    const rateLimit = 'API Error: 429 Too Many Requests, retry after 30s';
    const clock = new SimulatedClock();
    const secretEnv = { env: { SECRET_TOKEN: secret } };
    env.supervisor = createSupervisor({
      stateDir,
      clock,
      stderrLines: 5,
      agents: {
        // A handshake that fails with a rate limit on stderr: parked, retried at the reset time.
        limited: fixtureSpec(['--stderr', `starting\\n${rateLimit}`, '--exit-on-initialize'], secretEnv),
        // A crash before initialize with a long stderr: the tail is the last stderrLines lines.
        crashing: fixtureSpec(['--stderr-lines', '30', '--exit-on-initialize', '--exit-code', '3'], secretEnv),
        // A connected agent refusing session/new for want of a login: parked in needsAuth.
        locked: fixtureSpec(['--require-auth'], secretEnv),
        missing: { command: 'agentvisor-no-such-agent', installHint: 'npm install -g agentvisor-no-such-agent', ...secretEnv },
        folder: { command: directory, ...secretEnv },
      },
    });

    const limited = await rejection(env.supervisor.ensureAgent('limited'));
    expect(limited).toMatchObject({ kind: 'handshake_failed', class: 'rate_limited', retryable: true, retryAt: clock.now() + 30_000 });
    const crashing = await rejection(env.supervisor.ensureAgent('crashing'));
    expect(crashing).toMatchObject({ kind: 'handshake_failed', class: 'crash', retryable: true, retryAt: null });
    const locked = await rejection(env.supervisor.newSession('locked', { cwd: env.files.dir }));
    expect(locked).toMatchObject({ kind: 'auth_required', class: 'auth', retryable: false });
    await waitForStatus(env.supervisor, 'locked', 'needsAuth');
    const missing = await rejection(env.supervisor.ensureAgent('missing'));
    const folder = await rejection(env.supervisor.ensureAgent('folder'));
    expect(folder).toMatchObject({ kind: 'spawn_failed', class: 'config', message: `Could not start folder: ${directory} is a directory` });

    const expected: Record<string, Array<Partial<StoredFailure>>> = {
      limited: [{ ...asStored(limited), class: 'rate_limited', retryAt: limited.retryAt!, exitCode: 1, signal: null, stderr: ['starting', rateLimit] }],
      crashing: [{ ...asStored(crashing), class: 'crash', retryAt: null, exitCode: 3, stderr: ['stderr line 26', 'stderr line 27', 'stderr line 28', 'stderr line 29', 'stderr line 30'] }],
      locked: [{ kind: 'auth_required', class: 'auth', retryable: false, retryAt: null, stderr: [] }],
      missing: [{ ...asStored(missing), class: 'config', retryable: false, retryAt: null, stderr: [], command: 'agentvisor-no-such-agent', installHint: 'npm install -g agentvisor-no-such-agent' }],
      folder: [{ ...asStored(folder), class: 'config', retryable: false, retryAt: null, detail: `${directory} is a directory`, stderr: [] }],
    };
    for (const [agent, failures] of Object.entries(expected)) {
      expect(await storedFailures(env.supervisor, agent), agent).toMatchObject(failures);
      // What list() showed as its last error is what the store kept.
      const { lastError } = env.supervisor.list().find((entry) => entry.name === agent)!;
      expect(lastError, agent).toMatchObject({ class: failures[0]!.class, retryAt: failures[0]!.retryAt });
    }
    await env.supervisor.shutdown();

    // The same state directory, a new supervisor (and none of those agents registered): the same records.
    env.supervisor = createSupervisor({ stateDir, agents: {} });
    for (const [agent, failures] of Object.entries(expected)) {
      const stored = await storedFailures(env.supervisor, agent);
      expect(stored, agent).toMatchObject(failures);
      expect(Object.keys(stored[0]!).sort(), agent).toEqual(
        ['kind', 'message', 'detail', 'exitCode', 'signal', 'class', 'retryable', 'retryAt', 'stderr', ...(agent === 'missing' ? ['command', 'installHint'] : [])].sort(),
      );
    }
    // The parked agents' events carry the same failure.
    const parked = (await collect(env.supervisor.eventLog({ agent: 'limited' }))).find((entry) => entry.event === 'agent:rate_limited');
    expect(parked?.data).toMatchObject({ retryAt: limited.retryAt, failure: { class: 'rate_limited', stderr: ['starting', rateLimit] } });
    await env.supervisor.shutdown();

    for (const name of readdirSync(stateDir).filter((file) => file.startsWith('agentvisor.db'))) {
      expect(readFileSync(join(stateDir, name)).includes(secret), name).toBe(false);
    }
  });

  it('a connected agent that dies keeps its stderr tail and class in the store, in memory as in SQLite', async () => {
    for (const store of ['memory', 'sqlite'] as const) {
      const clock = new SimulatedClock();
      env.supervisor = createSupervisor({ store, stateDir: env.files.path(`state-${store}`), clock, agents: { fixture: fixtureSpec(['--stderr', 'boot line']) } });
      const session = await env.supervisor.newSession('fixture', { cwd: env.files.dir });
      const turn = await rejection(session.prompt(command({ op: 'die', code: 9 })));
      expect(turn).toMatchObject({ kind: 'agent_exited' });
      await waitForStatus(env.supervisor, 'fixture', 'reconnecting');
      expect(await storedFailures(env.supervisor, 'fixture'), store).toMatchObject([
        { kind: 'agent_exited', exitCode: 9, signal: null, class: 'crash', retryable: true, retryAt: null, stderr: ['boot line'] },
      ]);
      await env.supervisor.shutdown();
      env.supervisor = undefined;
    }
  });
});
