/**
 * Agents with `runtime` sandbox, docker and kubernetes under the supervisor (docs/runtimes.md),
 * on real processes, through the process actor: the lifecycle, a session, the stop ladder and
 * the runtime's own failures. The sandbox is real bubblewrap; docker and kubectl are the
 * recording shim tests/fixtures/runtime-shim.mjs (NOT an engine: the "container" is this host).
 * The policies themselves (what a sandboxed agent can read, write and reach) are tested at the
 * service edge in tests/integration/runtimes.test.ts; the ssh runtime in ssh-agents.test.ts.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, readlinkSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { SimulatedClock } from 'xstate';
import { createSupervisor } from '../../index.js';
import { agentState, eventually, fixtureSpec, isRunning, useRealAgentEnvironment, waitForAgentState } from '../support/real-agents.js';
import { useRuntimeShim } from '../support/runtime-shim.js';

const env = useRealAgentEnvironment();
/** The checkout: the fixture agent's script and its node_modules, which a sandboxed agent must be able to read. */
const checkout = fileURLToPath(new URL('../..', import.meta.url));

/** Why bubblewrap cannot run here, or null. */
function sandboxUnavailable(): string | null {
  const probe = spawnSync('bwrap', ['--unshare-pid', '--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', 'true'], { encoding: 'utf8' });
  if (probe.error) return `bubblewrap is not installed (${probe.error.message}): apt-get install bubblewrap`;
  if (probe.status !== 0) return `bubblewrap cannot make its namespaces here: ${probe.stderr.trim()}`;
  return null;
}
const noSandbox = sandboxUnavailable();
if (noSandbox) console.warn(`sandbox agent tests skipped: ${noSandbox}`);

/** Host pids of processes whose environment holds `mark` (a sandbox's pid file would show namespace pids). */
function pidsMarked(mark: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/environ`, 'latin1').includes(mark)) pids.push(Number(entry));
    } catch {
      // gone, or not ours to read
    }
  }
  return pids.filter(isRunning);
}

describe.skipIf(noSandbox !== null)('sandbox agents (bubblewrap)', () => {
  it('run in their own PID namespace: connect, a session, and a stop that takes their escapees', async () => {
    const mark = `avsandbox${process.pid}`;
    env.supervisor = createSupervisor({
      stateDir: false,
      agents: { fenced: fixtureSpec(['--spawn-grandchild', '--grandchild-escapes'], { env: { AV_MARK: mark }, cwd: env.files.dir, runtime: { kind: 'sandbox', readOnly: [checkout] } }) },
    });
    const handle = await env.supervisor.ensureAgent('fenced');
    expect(env.supervisor.list()[0]!.containment).toBeNull(); // the sandbox is the container: no second one around it
    const session = await env.supervisor.newSession('fenced', { cwd: env.files.dir });
    expect(await session.prompt('hello from the sandbox')).toBe('end_turn');
    // The agent and its escapee run in a PID namespace of their own, not this one (bwrap itself, here, carries the env too).
    const inside = pidsMarked(mark).filter((pid) => readlinkSync(`/proc/${pid}/ns/pid`) !== readlinkSync('/proc/self/ns/pid'));
    expect(inside.length).toBeGreaterThanOrEqual(2);
    expect(isRunning(handle.pid)).toBe(true);
    await env.supervisor.stop('fenced');
    await eventually(() => pidsMarked(mark).length === 0, 'the agent and its escapee to be gone');
  });

  it('a bind source that does not exist is runtime_missing, never retried', async () => {
    env.supervisor = createSupervisor({ stateDir: false, agents: { fenced: fixtureSpec([], { cwd: env.files.dir, runtime: { kind: 'sandbox', readOnly: [join(env.files.dir, 'no-such-dir')] } }) } });
    await expect(env.supervisor.ensureAgent('fenced')).rejects.toMatchObject({ kind: 'runtime_missing', class: 'config', retryable: false });
  });
});

describe('container agents, through the recording shim (NOT a real engine)', () => {
  const shim = useRuntimeShim();
  const calls = () => shim.calls();

  it('docker exec and kubectl exec: connect, a session, the stop ladder inside; the commands are what the runtime produced', async () => {
    const fixture = fixtureSpec();
    env.supervisor = createSupervisor({
      stateDir: false,
      agents: {
        docker: { ...fixture, runtime: { kind: 'docker', container: 'dev' } },
        pod: { ...fixture, runtime: { kind: 'kubernetes', pod: 'agent-0', namespace: 'ai' } },
      },
    });
    for (const agent of ['docker', 'pod']) {
      await env.supervisor.ensureAgent(agent);
      const session = await env.supervisor.newSession(agent, { cwd: shim.work });
      expect(await session.prompt(`hello from ${agent}`)).toBe('end_turn');
      await env.supervisor.stop(agent);
    }
    const tools = calls().map((call) => `${call.tool} ${call.argv.slice(0, 2).join(' ')}`);
    expect(tools).toEqual(expect.arrayContaining(['docker exec -i', expect.stringMatching(/^kubectl exec -i|^kubectl --/)]));
    expect(calls().find((call) => call.tool === 'docker')!.argv).toContain('dev');
    expect(calls().find((call) => call.tool === 'kubectl')!.argv).toEqual(expect.arrayContaining(['agent-0', '-n', 'ai']));
  });

  it('secrets are on no command line: while agents of every runtime run with a secret env, no /proc/*/cmdline on this host holds it', async () => {
    const secret = `sk-secret-${process.pid}-${Date.now()}`;
    const fixture = fixtureSpec([], { env: { AV_API_KEY: secret, AV_OTHER: `x ${secret} y` } });
    env.supervisor = createSupervisor({
      stateDir: false,
      agents: {
        local: fixture,
        docker: { ...fixture, runtime: { kind: 'docker', container: 'dev' } },
        dockerRun: { ...fixture, runtime: { kind: 'docker', image: 'agent-image' } },
        pod: { ...fixture, runtime: { kind: 'kubernetes', pod: 'agent-0', namespace: 'ai' } },
        ...(noSandbox === null ? { sandboxed: { ...fixture, cwd: shim.work, runtime: { kind: 'sandbox' as const, readOnly: [checkout] } } } : {}),
      },
    });
    const names = env.supervisor.list().map((row) => row.name);
    for (const agent of names) {
      const session = await env.supervisor.newSession(agent, { cwd: shim.work });
      expect(await session.prompt(`hello from ${agent}`)).toBe('end_turn');
    }
    const holding: string[] = [];
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'latin1');
        if (cmdline.includes(secret)) holding.push(`${entry}: ${cmdline.replaceAll('\0', ' ')}`);
      } catch {
        // gone
      }
    }
    expect(holding).toEqual([]);
    // The secret did reach every agent, in its environment.
    expect(pidsMarked(secret).length).toBeGreaterThanOrEqual(names.length);
  });

  it('an agent that ignores stdin EOF is ended by the ladder\'s SIGTERM delivered inside the container', async () => {
    const clock = new SimulatedClock();
    // The shim's "container" is this host: with no pid namespace around the local client (the
    // default containment would make one), the pgid the wrapper reports is the one that
    // `docker exec … kill` reaches. The wrapper's own fallback, a TERM shutdownTimeoutMs + 1 s
    // of real time after its stdin closed, is 31 s away: only the ladder's SIGTERM can end
    // the agent before the deadline below.
    env.supervisor = createSupervisor({
      clock,
      stateDir: false,
      containment: 'none',
      agents: { docker: { ...fixtureSpec(['--linger']), shutdownTimeoutMs: 30_000, runtime: { kind: 'docker', container: 'dev' } } },
    });
    await env.supervisor.ensureAgent('docker');
    const stopped = env.supervisor.stop('docker');
    await waitForAgentState(env.supervisor, 'docker', 'stopping.closing');
    expect(calls().some((call) => call.argv.includes('agentvisor-signal'))).toBe(false); // stdin closed; it lingers
    clock.increment(30_000); // shutdownTimeoutMs: the SIGTERM rung
    expect(agentState(env.supervisor, 'docker')).toBe('stopping.terminating');
    let deadline: NodeJS.Timeout | undefined;
    const late = new Promise((_, reject) => (deadline = setTimeout(() => reject(new Error('the ladder\'s SIGTERM did not end the agent within 10 s')), 10_000)));
    await Promise.race([stopped, late]).finally(() => clearTimeout(deadline));
    // The ladder's SIGTERM went into the container: `docker exec dev /bin/sh -c 'kill -s "$1" -- "-$2"' agentvisor-signal TERM <pgid>`.
    expect(calls().some((call) => call.tool === 'docker' && call.argv.includes('agentvisor-signal') && call.argv.includes('TERM'))).toBe(true);
  });

  it('a missing container, image or pod is runtime_missing, never retried', async () => {
    const fixture = fixtureSpec();
    env.supervisor = createSupervisor({
      stateDir: false,
      agents: {
        container: { ...fixture, runtime: { kind: 'docker', container: 'nope' } },
        image: { ...fixture, runtime: { kind: 'docker', image: 'nope:latest' } },
        pod: { ...fixture, runtime: { kind: 'kubernetes', pod: 'nope' } },
      },
    });
    for (const agent of ['container', 'image', 'pod']) {
      await expect(env.supervisor.ensureAgent(agent)).rejects.toMatchObject({ kind: 'runtime_missing', class: 'config', retryable: false });
    }
  });

  it('specs that cannot work are refused up front: a pty agent remote, a workspace remote, a docker spec with neither container nor image', () => {
    expect(() => createSupervisor({ stateDir: false, agents: { a: { command: 'x', protocol: 'pty', runtime: { kind: 'docker', container: 'dev' } } } })).toThrow(
      expect.objectContaining({ kind: 'invalid_options' }) as Error,
    );
    expect(() =>
      createSupervisor({ stateDir: false, agents: { a: { command: 'x', workspace: { kind: 'directory', path: '/tmp/x' }, runtime: { kind: 'ssh', host: 'h', knownHostsFile: '/k' } } } }),
    ).toThrow(expect.objectContaining({ kind: 'invalid_options' }) as Error);
    expect(() => createSupervisor({ stateDir: false, agents: { a: { command: 'x', runtime: { kind: 'docker' } } } })).toThrow(expect.objectContaining({ kind: 'invalid_options' }) as Error);
    // runArgs that would break it: --rm (the exit status lost on Podman; agentvisor removes the container itself), -d (no attached stdio).
    for (const runArgs of [['--rm'], ['--rm=true'], ['-d'], ['-dit'], ['--detach']]) {
      expect(() => createSupervisor({ stateDir: false, agents: { a: { command: 'x', runtime: { kind: 'docker', image: 'i', runArgs } } } })).toThrow(
        expect.objectContaining({ kind: 'invalid_options', message: expect.stringMatching(/--rm|--detach/) }) as Error,
      );
    }
    expect(() => createSupervisor({ stateDir: false, agents: { a: { command: 'x', runtime: { kind: 'docker', image: 'i', runArgs: ['--dns', '1.1.1.1', '-it', '-e', 'X'] } } } })).not.toThrow();
  });
});
