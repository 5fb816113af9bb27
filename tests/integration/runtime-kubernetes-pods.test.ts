/**
 * Agents in pods the supervisor makes through the Kubernetes API (docs/runtimes-kubernetes.md),
 * against the stand-in API server of tests/support/kube-apiserver.ts (NOT a cluster: a "pod"
 * is a directory here, and its exec runs the real fixture agent on this host, over the real
 * WebSocket channel protocol). The whole path: the pod made from the template, the agent
 * started by exec, ACP over the stream, the stop ladder, the pod deleted — and the faults:
 * 401, 403, a refused connection, a dropped stream, a deleted pod, a v4-only server, a pod
 * stuck Pending, and a crashed supervisor's pods.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createSupervisor, type AgentSpec } from '../../index.js';
import { podLabels } from '../../services/runtimes/kubernetes-pod.runtime.js';
import { KubeApiStandIn } from '../support/kube-apiserver.js';
import { eventually, fixtureSpec, recordEvents, useRealAgentEnvironment, waitForStatus } from '../support/real-agents.js';

const env = useRealAgentEnvironment();
let api: KubeApiStandIn;

beforeEach(async () => {
  api = await KubeApiStandIn.start();
});
afterEach(async () => {
  // Hooks run last-registered first: the supervisor's shutdown here, before the stand-in's checks.
  await env.supervisor?.shutdown();
  // What the test left running in a pod is a failure of the test, found here.
  const left = api.processes();
  const pods = api.list().map((pod) => pod.metadata.name);
  await api.close();
  expect(left, 'no process of any pod is left').toEqual([]);
  expect(pods, 'no pod is left').toEqual([]);
});

/** The fixture agent in a pod of the stand-in, from a template. */
function podSpec(flags: string[] = [], extra: Partial<AgentSpec> & { template?: Record<string, unknown> } = {}): AgentSpec {
  const { template, ...rest } = extra;
  return fixtureSpec(flags, {
    shutdownTimeoutMs: 2_000,
    killTimeoutMs: 1_000,
    runtime: { kind: 'kubernetes', namespace: 'ai', kubeconfig: api.kubeconfig(env.files.dir), template: { image: 'agents:1', pendingTimeoutMs: 5_000, ...template } },
    ...rest,
  });
}

/** The pids of the agents running in the stand-in's pods whose argv holds `needle`. */
function argvsHolding(needle: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const argv = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      if (argv.includes(needle)) found.push(`${entry}: ${argv.replace(/\0/g, ' ')}`);
    } catch {
      // gone
    }
  }
  return found;
}

describe('kubernetes pods made through the API (stand-in server, no cluster)', () => {
  it('a template makes a labelled pod; the agent speaks ACP over the exec stream; stop ends it (stdin EOF over v5) and deletes the pod', async () => {
    env.supervisor = createSupervisor({ stateDir: false, agents: { coder: podSpec() } });
    const handle = await env.supervisor.ensureAgent('coder');
    const [pod] = api.list('ai');
    expect(pod).toBeDefined();
    expect(pod!.metadata.labels).toMatchObject({ [podLabels.managedBy]: 'agentvisor', [podLabels.agent]: 'coder', [podLabels.supervisor]: expect.stringMatching(/^\d+-\d+$/) });
    expect(pod!.spec.containers[0]).toMatchObject({ name: 'agent', image: 'agents:1' });
    expect(pod!.spec).toMatchObject({ restartPolicy: 'Never', terminationGracePeriodSeconds: 3 });
    // The agent runs by exec, under the wrapper; no kubectl anywhere.
    expect(api.execCommands[0]!.slice(0, 2)).toEqual(['/bin/sh', '-c']);
    expect(api.execCommands[0]).toContain(fixtureSpec().args![0]);
    expect(api.processes().length).toBeGreaterThan(0);
    expect(handle.pid).toBeGreaterThan(0);

    const session = await env.supervisor.newSession('coder', { cwd: '/' });
    const chunks: string[] = [];
    session.on('update', (update) => {
      if (update.sessionUpdate === 'agent_message_chunk' && update.content.type === 'text') chunks.push(update.content.text);
    });
    expect(await session.prompt('hello from the pod')).toBe('end_turn');
    expect(chunks.join('')).toBe('hello from the pod');

    const stopping = Date.now();
    await env.supervisor.stop('coder');
    // Stdin EOF reached the agent (v5 close frame): it exited well before the SIGTERM rung (2 s).
    expect(Date.now() - stopping).toBeLessThan(1_900);
    await eventually(() => api.list().length === 0, 'the pod to be deleted');
    expect(api.deletions).toEqual([{ namespace: 'ai', name: pod!.metadata.name, gracePeriodSeconds: 3 }]);
    await eventually(() => api.processes().length === 0, 'the pod\'s processes to be gone');
  });

  it('a Pending pod is waited for until the test makes it run', async () => {
    api.onCreate = 'pending';
    env.supervisor = createSupervisor({ stateDir: false, agents: { coder: podSpec() } });
    const started = env.supervisor.ensureAgent('coder');
    await eventually(() => api.list('ai').length === 1, 'the pod to be made');
    await eventually(() => api.requests.some((request) => request.query.get('watch') === 'true'), 'the pod to be watched');
    expect(api.execCommands).toEqual([]);
    api.setRunning('ai', api.list('ai')[0]!.metadata.name);
    await started;
    expect(env.supervisor.getStatus('coder')).toBe('connected');
  });
});
