/**
 * Agents with `runtime: { kind: 'ssh' }` under the supervisor (docs/runtimes.md), on a real
 * sshd in a network namespace this test makes itself (tests/support/ssh-test-host.ts): the
 * lifecycle through the process actor — handshake and a session, a remote crash restarted by
 * the policy, the stop ladder with zero remote survivors, a cut link and its recovery — and
 * the runtime's own failures as typed kinds, never retried when a person must act.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { SimulatedClock } from 'xstate';
import { createSupervisor, type AgentSpec } from '../../index.js';
import type { SshRuntimeSpec } from '../../services/runtimes/ssh.runtime.js';
import { startSshTestHost } from '../support/ssh-test-host.js';
import { eventually, fixtureSpec, useRealAgentEnvironment, waitForStatus } from '../support/real-agents.js';

const env = useRealAgentEnvironment();
const started = await startSshTestHost();
if (started.unavailable !== undefined) console.warn(`ssh agent tests skipped: ${started.unavailable}`);
const host = started.host;
afterAll(() => host?.destroy());

let marks = 0;
/** The fixture over SSH, marked so that its remote processes can be found (`host.remotePids(mark)`). */
function remoteFixture(runtime: Partial<SshRuntimeSpec> = {}, flags: string[] = []): { spec: AgentSpec; mark: string } {
  const mark = `avssh${process.pid}x${++marks}`;
  return { spec: { ...fixtureSpec(flags, { env: { AV_MARK: mark } }), runtime: host!.runtime(runtime) }, mark };
}

describe.skipIf(!host)('ssh agents', () => {
  it('connect over SSH, run a session, restart after a remote crash, and stop with zero remote survivors', async () => {
    const clock = new SimulatedClock();
    const { spec, mark } = remoteFixture({}, ['--spawn-grandchild']);
    env.supervisor = createSupervisor({ clock, stateDir: false, agents: { remote: spec } });
    const handle = await env.supervisor.ensureAgent('remote');
    expect(handle.agentInfo).toMatchObject({ name: 'fixture-agent' });
    const session = await env.supervisor.newSession('remote', { cwd: host!.dir });
    expect(await session.prompt('hello over ssh')).toBe('end_turn');
    expect(host!.remotePids(mark, 'environ')).toHaveLength(2); // the agent and its grandchild, on the remote side

    // The agent dies on the remote host: the agent is lost, and the restart policy brings it back over a new connection.
    const [remoteAgent] = host!.remotePids(mark, 'environ').sort((a, b) => a - b);
    process.kill(remoteAgent!, 'SIGKILL');
    await waitForStatus(env.supervisor, 'remote', 'reconnecting');
    expect(env.supervisor.list()[0]!.lastError).toMatchObject({ kind: 'agent_exited' });
    clock.increment(1_000);
    await waitForStatus(env.supervisor, 'remote', 'connected');

    await env.supervisor.stop('remote');
    await eventually(() => host!.remotePids(mark, 'environ').length === 0, 'no remote survivor');
  });

  it('the link cut: the agent is lost (within aliveTimeoutMs), and reconnects by policy once the link is back', async () => {
    const clock = new SimulatedClock();
    const { spec, mark } = remoteFixture({ aliveTimeoutMs: 3_000 });
    env.supervisor = createSupervisor({ clock, stateDir: false, restart: { maxAttempts: 10 }, agents: { remote: spec } });
    await env.supervisor.ensureAgent('remote');
    host!.linkDown();
    try {
      await waitForStatus(env.supervisor, 'remote', 'reconnecting', 15_000);
      expect(env.supervisor.list()[0]!.lastError).toMatchObject({ kind: 'agent_exited' });
    } finally {
      host!.linkUp();
    }
    clock.increment(1_000);
    await waitForStatus(env.supervisor, 'remote', 'connected', 15_000);
    await env.supervisor.stop('remote');
    await eventually(() => host!.remotePids(mark, 'environ').length === 0, 'no remote survivor', 15_000);
  });

  it('a changed host key, a refused login and an unreachable host are typed failures; only the unreachable one is retried', async () => {
    const clock = new SimulatedClock();
    env.supervisor = createSupervisor({
      clock,
      stateDir: false,
      agents: {
        hostKey: remoteFixture({ knownHostsFile: host!.wrongKnownHosts }).spec,
        unknownKey: remoteFixture({ knownHostsFile: host!.emptyKnownHosts }).spec,
        login: remoteFixture({ identityFile: host!.strangerKey }).spec,
        refused: remoteFixture({ port: 1 }).spec,
      },
    });
    await expect(env.supervisor.ensureAgent('hostKey')).rejects.toMatchObject({ kind: 'runtime_host_key_changed', class: 'config', retryable: false });
    await expect(env.supervisor.ensureAgent('unknownKey')).rejects.toMatchObject({ kind: 'runtime_host_key_changed' });
    await expect(env.supervisor.ensureAgent('login')).rejects.toMatchObject({ kind: 'runtime_auth_failed', class: 'config', retryable: false });
    await expect(env.supervisor.ensureAgent('refused')).rejects.toMatchObject({ kind: 'runtime_unreachable', class: 'crash', retryable: true });
  });
});
