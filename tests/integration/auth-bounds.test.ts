/**
 * authenticate() is bounded (docs/failures.md): a login that waits for a person ends
 * `auth_timeout` after its timeout on the supervisor's clock, naming the URL the agent asked
 * a person to open (an `agent:auth_prompt` event says it at once); the caller's AbortSignal
 * cancels it; either way the agent hears `$/cancel_request` and stays as it was. On a parked
 * agent (needsAuth) and on a connected one (the login beside its connection).
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { SimulatedClock } from 'xstate';
import { createSupervisor, type Supervisor } from '../../index.js';
import { eventually, fixtureSpec, useRealAgentEnvironment } from '../support/real-agents.js';

const env = useRealAgentEnvironment();
const url = 'https://example.invalid/device?code=WXYZ-1234';

function lockedAgent(clock?: SimulatedClock, flags: string[] = []): { supervisor: Supervisor; hold: string; stderr: () => string } {
  const hold = env.files.path('auth.hold');
  const log = env.files.path('stderr.log');
  writeFileSync(hold, '');
  const supervisor = createSupervisor({
    agents: { fixture: fixtureSpec(['--require-auth', '--auth-hold-file', hold, '--auth-prompt', `Open ${url} to log in`, ...flags]) },
    stateDir: false,
    ...(clock ? { clock } : {}),
  });
  supervisor.on('agent:stderr', ({ line }) => writeFileSync(log, `${line}\n`, { flag: 'a' }));
  env.supervisor = supervisor;
  return { supervisor, hold, stderr: () => (safeRead(log) ?? '') };
}

function safeRead(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

describe('authenticate() is bounded', () => {
  it('a login nobody finishes: auth_prompt at once, auth_timeout on the clock naming the URL; the agent hears the cancel and stays parked', async () => {
    const clock = new SimulatedClock();
    const { supervisor, hold, stderr } = lockedAgent(clock);
    await expect(supervisor.newSession('fixture', { cwd: env.files.dir })).rejects.toMatchObject({ kind: 'auth_required' });
    expect(supervisor.getStatus('fixture')).toBe('needsAuth');
    const prompts: Array<{ methodId: string; urls: string[] }> = [];
    supervisor.on('agent:auth_prompt', ({ methodId, urls }) => prompts.push({ methodId, urls }));
    const login = supervisor.authenticate('fixture', 'fixture-token', { timeoutMs: 60_000 });
    const outcome = login.then(
      () => 'resolved',
      (error: { kind: string; message: string; class?: string }) => error,
    );
    await eventually(() => prompts.length === 1, 'the login URL');
    expect(prompts).toEqual([{ methodId: 'fixture-token', urls: [url] }]);
    let settled = false;
    void outcome.then(() => (settled = true));
    clock.increment(59_999);
    // A timeout fires through promises alone (the request stops waiting at once): one turn of the loop would show it.
    await new Promise((resolve) => setImmediate(resolve));
    expect(settled).toBe(false);
    expect(supervisor.describe('fixture').state).toBe('needsAuth.authenticating');
    clock.increment(1);
    expect(await outcome).toMatchObject({ kind: 'auth_timeout', class: 'auth', message: expect.stringContaining(url) as unknown });
    await eventually(() => stderr().includes('fixture: authenticate cancelled'), 'the agent to hear $/cancel_request');
    expect(supervisor.getStatus('fixture')).toBe('needsAuth');
    expect(supervisor.describe('fixture').lastError).toMatchObject({ kind: 'auth_timeout' });
    // The person logs in after all: the next authenticate() goes through.
    rmSync(hold);
    await supervisor.authenticate('fixture', 'fixture-token');
    expect(supervisor.getStatus('fixture')).toBe('connected');
  });

  it('an agent that ignores the cancel does not hold authenticate(): auth_timeout on time, and the next call is bounded afresh', async () => {
    const clock = new SimulatedClock();
    const { supervisor, hold } = lockedAgent(clock, ['--auth-ignores-cancel']);
    await expect(supervisor.newSession('fixture', { cwd: env.files.dir })).rejects.toMatchObject({ kind: 'auth_required' });
    const first = supervisor.authenticate('fixture', 'fixture-token', { timeoutMs: 1_000 }).catch((error: unknown) => error);
    await eventually(() => supervisor.describe('fixture').state === 'needsAuth.authenticating', 'the login to begin');
    clock.increment(1_000);
    expect(await first).toMatchObject({ kind: 'auth_timeout' });
    expect(supervisor.getStatus('fixture')).toBe('needsAuth');
    const second = supervisor.authenticate('fixture', 'fixture-token', { timeoutMs: 2_000 }).catch((error: unknown) => error);
    await eventually(() => supervisor.describe('fixture').state === 'needsAuth.authenticating', 'the second login to begin');
    clock.increment(2_000);
    expect(await second).toMatchObject({ kind: 'auth_timeout', message: expect.stringContaining('2000 ms') as unknown });
    rmSync(hold);
  });

  it("the caller's signal cancels the login itself: aborted, the agent hears the cancel, still parked", async () => {
    const { supervisor, stderr } = lockedAgent();
    await expect(supervisor.newSession('fixture', { cwd: env.files.dir })).rejects.toMatchObject({ kind: 'auth_required' });
    const controller = new AbortController();
    const login = supervisor.authenticate('fixture', 'fixture-token', { signal: controller.signal });
    await eventually(() => stderr().includes(url), 'the login to begin');
    controller.abort();
    await expect(login).rejects.toMatchObject({ kind: 'aborted' });
    await eventually(() => stderr().includes('fixture: authenticate cancelled'), 'the agent to hear $/cancel_request');
    await eventually(() => supervisor.describe('fixture').lastError?.kind === 'aborted', 'the machine to record it');
    expect(supervisor.getStatus('fixture')).toBe('needsAuth');
  });

  it('on a connected agent the login beside its connection is bounded too: auth_timeout, and the agent stays connected', async () => {
    const clock = new SimulatedClock();
    const { supervisor, stderr } = lockedAgent(clock);
    await supervisor.ensureAgent('fixture');
    const login = supervisor.authenticate('fixture', 'fixture-token', { timeoutMs: 5_000 }).catch((error: unknown) => error);
    await eventually(() => stderr().includes(url), 'the login to begin');
    clock.increment(5_000);
    expect(await login).toMatchObject({ kind: 'auth_timeout' });
    expect(supervisor.getStatus('fixture')).toBe('connected');
    await expect(supervisor.authenticate('fixture', 'fixture-token', { timeoutMs: 0 })).rejects.toMatchObject({ kind: 'invalid_options' });
  });
});
