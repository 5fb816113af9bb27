/** Supervisor-level rules on real processes: concurrency, maxAgents, typed refusals. */
import { describe, expect, it } from 'vitest';
import { AgentError, createSupervisor, installHints, presetFailurePatterns, presets } from '../../index.js';
import { codexShutdownTimeoutMs } from '../../services/presets.js';
import { eventually, fixtureSpec, isRunning, useRealAgentEnvironment } from '../support/real-agents.js';

const env = useRealAgentEnvironment();

describe('concurrency', () => {
  it('concurrent ensureAgent calls spawn exactly one process and share its handle', async () => {
    env.supervisor = createSupervisor({ agents: { fixture: fixtureSpec(['--pid-file', env.files.path('pids.txt')]) } });
    const handles = await Promise.all(Array.from({ length: 8 }, () => env.supervisor!.ensureAgent('fixture')));
    expect(new Set(handles).size).toBe(1);
    expect(env.files.pidLines()).toHaveLength(1);
    expect(await env.supervisor.ensureAgent('fixture')).toBe(handles[0]);
  });

  it('concurrent callers of a failing start all get the same typed error', async () => {
    env.supervisor = createSupervisor({ agents: { fixture: fixtureSpec(['--fail-initialize', '--pid-file', env.files.path('pids.txt')]) } });
    const outcomes = await Promise.allSettled([env.supervisor.ensureAgent('fixture'), env.supervisor.ensureAgent('fixture')]);
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['rejected', 'rejected']);
    for (const outcome of outcomes) expect((outcome as PromiseRejectedResult).reason).toMatchObject({ kind: 'handshake_failed' });
    expect(env.files.pidLines()).toHaveLength(1);
  });

  it('an aborted wait rejects with kind aborted while the start goes on', async () => {
    env.supervisor = createSupervisor({ agents: { fixture: fixtureSpec() } });
    const controller = new AbortController();
    const waiting = env.supervisor.ensureAgent('fixture', { signal: controller.signal });
    controller.abort();
    await expect(waiting).rejects.toMatchObject({ kind: 'aborted' });
    const agent = await env.supervisor.ensureAgent('fixture');
    expect(isRunning(agent.pid)).toBe(true);
    await expect(env.supervisor.ensureAgent('fixture', { signal: AbortSignal.abort() })).rejects.toMatchObject({ kind: 'aborted' });
  });
});

describe('maxAgents', () => {
  it('refuses one more live agent with limit_reached, and admits it once another stops', async () => {
    env.supervisor = createSupervisor({ maxAgents: 2, agents: { a: fixtureSpec(), b: fixtureSpec(), c: fixtureSpec() } });
    await Promise.all([env.supervisor.ensureAgent('a'), env.supervisor.ensureAgent('b')]);
    const refused = await env.supervisor.ensureAgent('c').catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(AgentError);
    expect(refused).toMatchObject({ kind: 'limit_reached', agent: 'c' });
    expect(env.supervisor.getStatus('c')).toBe('idle');
    await env.supervisor.ensureAgent('a'); // an agent already live is not refused
    await env.supervisor.stop('a');
    const c = await env.supervisor.ensureAgent('c');
    expect(isRunning(c.pid)).toBe(true);
  });
});

describe('typed errors', () => {
  it('unknown agent names', async () => {
    env.supervisor = createSupervisor();
    await expect(env.supervisor.ensureAgent('nobody')).rejects.toMatchObject({ kind: 'unknown_agent', agent: 'nobody' });
    await expect(env.supervisor.stop('nobody')).rejects.toMatchObject({ kind: 'unknown_agent' });
    expect(() => env.supervisor!.getStatus('nobody')).toThrow(expect.objectContaining({ kind: 'unknown_agent' }));
  });

  it('malformed options and specs', () => {
    expect(() => createSupervisor({ maxAgents: 0 })).toThrow(expect.objectContaining({ kind: 'invalid_options' }));
    expect(() => createSupervisor({ restart: { jitter: 2 } })).toThrow(expect.objectContaining({ kind: 'invalid_options' }));
    expect(() => createSupervisor({ handshakeTimeoutMs: -1 })).toThrow(expect.objectContaining({ kind: 'invalid_options' }));
    env.supervisor = createSupervisor();
    expect(() => env.supervisor!.register('bad', { command: '' })).toThrow(expect.objectContaining({ kind: 'invalid_options' }));
    expect(() => env.supervisor!.register('bad', { command: 'x', args: 'no' as unknown as string[] })).toThrow(expect.objectContaining({ kind: 'invalid_options' }));
    env.supervisor.register('ok', fixtureSpec());
    expect(() => env.supervisor!.register('ok', fixtureSpec())).toThrow(expect.objectContaining({ kind: 'invalid_options' }));
  });

  it('agents registered at runtime are supervised like the others', async () => {
    env.supervisor = createSupervisor();
    env.supervisor.register('late', fixtureSpec());
    expect(env.supervisor.list()).toMatchObject([{ name: 'late', status: 'idle', pid: null, attempt: 0, lastError: null }]);
    const late = await env.supervisor.ensureAgent('late');
    expect(env.supervisor.list()[0]).toMatchObject({ status: 'connected', pid: late.pid });
  });
});

describe('presets', () => {
  it('the echo preset runs the bundled echo agent', async () => {
    env.supervisor = createSupervisor({ agents: { echo: presets.echo() } });
    const echo = await env.supervisor.ensureAgent('echo');
    expect(echo.agentInfo).toMatchObject({ name: 'echo-agent' });
  });

  it('claudeCode prefers claude-agent-acp and falls back to claude-code-acp; overrides merge', async () => {
    const { mkdirSync, writeFileSync, chmodSync } = await import('node:fs');
    const bin = env.files.path('bin');
    mkdirSync(bin);
    const originalPath = process.env.PATH;
    try {
      process.env.PATH = bin;
      expect(presets.claudeCode().command).toBe('claude-agent-acp');
      writeFileSync(`${bin}/claude-code-acp`, '#!/bin/sh\n');
      chmodSync(`${bin}/claude-code-acp`, 0o755);
      expect(presets.claudeCode().command).toBe('claude-code-acp');
      writeFileSync(`${bin}/claude-agent-acp`, '#!/bin/sh\n');
      chmodSync(`${bin}/claude-agent-acp`, 0o755);
      expect(presets.claudeCode().command).toBe('claude-agent-acp');
    } finally {
      process.env.PATH = originalPath;
    }
    expect(presets.codex({ env: { A: '1' } })).toEqual({
      command: 'codex-acp',
      args: [],
      displayName: 'Codex',
      env: { A: '1' },
      installHint: installHints.codex,
      shutdownTimeoutMs: codexShutdownTimeoutMs,
      failurePatterns: presetFailurePatterns.codex.map((pattern) => ({ class: pattern.class, pattern: new RegExp(pattern.source, pattern.flags ?? '') })),
    });
    expect(presets.gemini({ displayName: 'Gemini' })).toMatchObject({ command: 'gemini', args: ['--acp'], displayName: 'Gemini' });
    // A caller's failure patterns are tried before the preset's.
    const mine = { class: 'auth' as const, pattern: /my token died/ };
    expect(presets.gemini({ failurePatterns: [mine] }).failurePatterns).toEqual([mine, ...presets.gemini().failurePatterns!]);
  });

  it('a missing preset agent fails with not_installed and its display name', async () => {
    env.supervisor = createSupervisor({ agents: { codex: presets.codex({ command: 'codex-acp-not-installed-here' }) } });
    await expect(env.supervisor.ensureAgent('codex')).rejects.toMatchObject({
      kind: 'not_installed',
      message: "Could not start Codex. Check that it's installed.",
      command: 'codex-acp-not-installed-here',
      installHint: installHints.codex,
    });
  });
});

describe('commands sent from inside listeners', () => {
  it('an agent about to reconnect still counts against maxAgents, even mid-step', async () => {
    env.supervisor = createSupervisor({ maxAgents: 1, agents: { a: fixtureSpec(), b: fixtureSpec() } });
    const a = await env.supervisor.ensureAgent('a');
    let attempt: Promise<unknown> | undefined;
    env.supervisor.on('agent:status', ({ agent, status }) => {
      if (agent === 'a' && status === 'disconnected') attempt = env.supervisor!.ensureAgent('b').catch((error: unknown) => error);
    });
    process.kill(a.pid, 'SIGKILL');
    await eventually(() => attempt !== undefined, 'the loss to be reported');
    expect(await attempt).toMatchObject({ kind: 'limit_reached' });
  });

  it('ensureAgent from a status listener waits for its own outcome, not the stale state', async () => {
    env.supervisor = createSupervisor({ agents: { fixture: fixtureSpec() } });
    await env.supervisor.ensureAgent('fixture');
    let restarted: Promise<unknown> | undefined;
    env.supervisor.on('agent:status', ({ status }) => {
      if (status === 'idle' && !restarted) restarted = env.supervisor!.ensureAgent('fixture');
    });
    await env.supervisor.stop('fixture');
    const handle = (await restarted) as { pid: number };
    expect(isRunning(handle.pid)).toBe(true);
  });

  it('registering an agent emits no status event (it is idle, as before)', async () => {
    env.supervisor = createSupervisor();
    const statuses: string[] = [];
    env.supervisor.on('agent:status', ({ agent, status, previous }) => statuses.push(`${agent}:${previous}→${status}`));
    env.supervisor.register('late', fixtureSpec());
    expect(statuses).toEqual([]);
  });
});
