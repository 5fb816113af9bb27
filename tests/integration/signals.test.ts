/**
 * Host signals on real processes: SIGINT/SIGTERM to a host stop its agents and the host
 * then dies of the signal as it would have; a second signal skips the ladder to SIGKILL;
 * several supervisors in one host stop together; `handleSignals: false` leaves signals to
 * the app; no listener is left after shutdown.
 */
import { execa } from 'execa';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createSupervisor } from '../../index.js';
import { eventually, fixtureAgentScript, fixtureSpec, isRunning, useRealAgentEnvironment } from '../support/real-agents.js';

const env = useRealAgentEnvironment();
const root = fileURLToPath(new URL('../..', import.meta.url));

/** A host with `count` supervisors (one agent each), importing the built package as a consumer does. */
const hostScript = `
  import { createSupervisor } from 'agentvisor';
  const { count, args, shutdownTimeoutMs, stateDir } = JSON.parse(process.env.HOST_SETTINGS);
  const supervisors = Array.from({ length: count }, () =>
    createSupervisor({ stateDir, shutdownTimeoutMs, killTimeoutMs: 60_000, agents: { fixture: { command: process.execPath, args } } }));
  const pids = [];
  for (const supervisor of supervisors) pids.push((await supervisor.ensureAgent('fixture')).pid);
  for (const supervisor of supervisors) supervisor.on('agent:status', ({ status }) => console.log(JSON.stringify({ status })));
  console.log(JSON.stringify({ pids }));
  setInterval(() => {}, 1 << 30);
`;

async function startHost(settings: { count: number; flags: string[]; shutdownTimeoutMs: number }) {
  const host = execa(process.execPath, ['--input-type=module', '-e', hostScript], {
    cwd: root,
    env: { HOST_SETTINGS: JSON.stringify({ ...settings, args: [fixtureAgentScript, ...settings.flags], stateDir: env.files.path('state') }) },
    reject: false,
    buffer: false,
  });
  const lines: Array<{ pids?: number[]; status?: string }> = [];
  let partial = '';
  host.stdout!.on('data', (chunk: Buffer) => {
    const text = partial + chunk.toString();
    const complete = text.split('\n');
    partial = complete.pop() ?? '';
    for (const line of complete) if (line.trim()) lines.push(JSON.parse(line) as { pids?: number[]; status?: string });
  });
  let exited = false;
  void host.then(() => (exited = true));
  await eventually(() => exited || lines.some((line) => line.pids), 'the host to start its agents');
  const pids = lines.find((line) => line.pids)?.pids;
  if (!pids) throw new Error('the host exited before its agents started');
  return { host, pids, statuses: () => lines.flatMap((line) => (line.status ? [line.status] : [])) };
}

describe('host signals', () => {
  it.each(['SIGINT', 'SIGTERM'] as const)('%s stops the agents, then the host dies of it', async (signal) => {
    const { host, pids } = await startHost({ count: 1, flags: [], shutdownTimeoutMs: 5_000 });
    host.kill(signal);
    const result = await host;
    expect(result.signal).toBe(signal);
    await eventually(() => pids.every((pid) => !isRunning(pid)), 'the agents to be gone');
  });

  it('a second signal skips the ladder to SIGKILL at once', async () => {
    // The agent ignores stdin EOF and SIGTERM; the ladder's first rung alone would wait 60 s.
    const { host, pids, statuses } = await startHost({ count: 1, flags: ['--ignore-sigterm'], shutdownTimeoutMs: 60_000 });
    host.kill('SIGTERM');
    await eventually(() => statuses().includes('stopping'), 'the host to start the stop ladder');
    expect(isRunning(pids[0]!), 'the first rung (stdin closed) does not end it').toBe(true);
    const started = Date.now();
    host.kill('SIGTERM');
    const result = await host;
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(result.signal).toBe('SIGTERM');
    await eventually(() => pids.every((pid) => !isRunning(pid)), 'the agent to be gone');
  });

  it('several supervisors in one host stop together', async () => {
    const { host, pids } = await startHost({ count: 3, flags: [], shutdownTimeoutMs: 5_000 });
    expect(pids).toHaveLength(3);
    host.kill('SIGINT');
    expect((await host).signal).toBe('SIGINT');
    await eventually(() => pids.every((pid) => !isRunning(pid)), 'every agent to be gone');
  });

  it('handleSignals: false installs nothing; true installs one set, removed after shutdown', async () => {
    const signals = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
    const baseline = process.listenerCount('SIGINT');
    const baselines = signals.map((signal) => process.listenerCount(signal));
    const quiet = createSupervisor({ handleSignals: false, agents: { fixture: fixtureSpec() } });
    expect(process.listenerCount('SIGINT')).toBe(baseline);
    await quiet.shutdown();
    const one = createSupervisor({ agents: { fixture: fixtureSpec() } });
    env.supervisor = createSupervisor({ agents: { fixture: fixtureSpec() } });
    expect(process.listenerCount('SIGINT'), 'two supervisors share one listener').toBe(baseline + 1);
    await one.shutdown();
    expect(process.listenerCount('SIGINT')).toBe(baseline + 1);
    await env.supervisor.shutdown();
    expect(signals.map((signal) => process.listenerCount(signal)), 'no listener left after shutdown').toEqual(baselines);
    expect(() => createSupervisor({ handleSignals: 'yes' as never })).toThrow(expect.objectContaining({ kind: 'invalid_options' }));
  });
});
