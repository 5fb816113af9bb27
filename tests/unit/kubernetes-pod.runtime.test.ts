/**
 * The `kubernetes` runtime's pod template at the edges that need no server: the spec's
 * validation (exactly one of pod and template, the template's own fields) and the pod
 * manifest built from it, and how a pod's status is read (why it is Pending, whether it is gone).
 */
import { hostname } from 'node:os';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { pidDomain } from '../../services/containment/proc-table.js';
import { validateAgentSpec, type AgentSpec } from '../../core/agent-spec.js';
import { apiFailure, openCluster } from '../../services/runtimes/kube-api.js';
import { defaultPendingTimeoutMs, graceSeconds, hostLabel, keepaliveCommand, labelValue, newPodName, pendingReason, pendingWaitMs, podLabels, podManifest, podStanding, type PodTemplateRuntime } from '../../services/runtimes/kubernetes-pod.runtime.js';

const owner = { agent: 'coder', supervisorProcess: '4242-123456', supervisorInstance: 'build-1/4242-123456', host: 'build-1' };

function spec(runtime: Record<string, unknown>, extra: Record<string, unknown> = {}): unknown {
  return { command: 'codex-acp', runtime: { kind: 'kubernetes', ...runtime }, ...extra };
}

describe('kubernetes runtime spec', () => {
  it('takes a pod or a template, exactly one of them: invalid_options otherwise', () => {
    expect(() => validateAgentSpec('a', spec({ pod: 'agents-0' }))).not.toThrow();
    expect(() => validateAgentSpec('a', spec({ template: { image: 'agents:1' } }))).not.toThrow();
    for (const runtime of [{}, { pod: 'agents-0', template: { image: 'agents:1' } }]) {
      expect(() => validateAgentSpec('a', spec(runtime))).toThrow(expect.objectContaining({ kind: 'invalid_options', message: expect.stringContaining('exactly one of pod') }));
    }
  });

  it('checks the template: an image, Secret references only, quantities, label values, one source per volume, ACP only', () => {
    const invalid = (template: Record<string, unknown>, extra: Record<string, unknown> = {}) => () => validateAgentSpec('a', spec({ template: { image: 'agents:1', ...template } }, extra));
    expect(invalid({ image: '' })).toThrow(expect.objectContaining({ kind: 'invalid_options' }));
    // A plain value in the pod would be readable by anyone who reads pods: only references.
    expect(invalid({ env: [{ name: 'API_KEY', value: 'x' }] })).toThrow(expect.objectContaining({ kind: 'invalid_options' }));
    expect(invalid({ env: [{ name: 'API_KEY', secretKeyRef: { name: 'Keys!', key: 'k' } }] })).toThrow(expect.objectContaining({ message: expect.stringContaining('DNS-1123') }));
    expect(invalid({ resources: { limits: { cpu: 'lots' } } })).toThrow(expect.objectContaining({ message: expect.stringContaining('quantity') }));
    expect(invalid({ nodeSelector: { pool: 'x'.repeat(64) } })).toThrow(expect.objectContaining({ kind: 'invalid_options' }));
    expect(invalid({ volumes: [{ name: 'work', mountPath: '/work' }] })).toThrow(expect.objectContaining({ message: expect.stringContaining('exactly one source') }));
    expect(invalid({ volumes: [{ name: 'work', mountPath: 'work', emptyDir: {} }] })).toThrow(expect.objectContaining({ message: expect.stringContaining('absolute') }));
    expect(invalid({ pendingTimeoutMs: 10 })).toThrow(expect.objectContaining({ kind: 'invalid_options' }));
    expect(invalid({ unknownField: 1 })).toThrow(expect.objectContaining({ kind: 'invalid_options' }));
    expect(invalid({}, { protocol: 'stream-json' })).toThrow(expect.objectContaining({ message: expect.stringContaining('must be acp') }));
    expect(invalid({
      env: [{ name: 'API_KEY', secretKeyRef: { name: 'agent-keys', key: 'api-key' } }],
      envFrom: [{ secretRef: { name: 'more' }, prefix: 'X_' }],
      resources: { requests: { cpu: '500m', memory: '1Gi' }, limits: { memory: '2Gi' } },
      serviceAccountName: 'agentvisor',
      nodeSelector: { 'kubernetes.io/arch': 'amd64' },
      tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'agents', effect: 'NoSchedule' }],
      volumes: [{ name: 'work', mountPath: '/work', persistentVolumeClaim: { claimName: 'work' } }],
    })).not.toThrow();
  });
});

describe('the pod manifest', () => {
  const template = {
    image: 'ghcr.io/acme/agents:1',
    env: [{ name: 'API_KEY', secretKeyRef: { name: 'agent-keys', key: 'api-key' } }],
    envFrom: [{ secretRef: { name: 'more' }, prefix: 'X_' }],
    resources: { requests: { cpu: '500m' }, limits: { memory: '2Gi' } },
    serviceAccountName: 'agentvisor',
    nodeSelector: { pool: 'agents' },
    tolerations: [{ key: 'dedicated', operator: 'Equal' as const, value: 'agents', effect: 'NoSchedule' as const }],
    volumes: [{ name: 'work', mountPath: '/work', readOnly: false, emptyDir: { sizeLimit: '1Gi' } }],
    labels: { team: 'ai', [podLabels.pod]: 'forged' },
  };
  const runtime: PodTemplateRuntime = { kind: 'kubernetes', namespace: 'ai', template };
  const agentSpec: AgentSpec = { command: 'codex-acp', env: { OPENAI_API_KEY: 'sk-never-in-the-pod' }, cwd: '/work', shutdownTimeoutMs: 4_000, killTimeoutMs: 1_500 };
  const manifest = podManifest(agentSpec, runtime, owner, { name: 'agentvisor-coder-abc', token: 'abc' });

  it("labels it with the supervisor's id, the agent's name and its token; the template's labels cannot replace them", () => {
    expect(manifest.metadata).toEqual({
      name: 'agentvisor-coder-abc',
      namespace: 'ai',
      labels: { team: 'ai', [podLabels.managedBy]: 'agentvisor', [podLabels.host]: 'build-1', [podLabels.supervisor]: '4242-123456', [podLabels.agent]: 'coder', [podLabels.pod]: 'abc' },
      annotations: { [podLabels.agent]: 'coder', [podLabels.supervisor]: 'build-1/4242-123456' },
    });
  });

  it('places and limits it as the template says, runs the keepalive, lets the supervisor restart the agent, takes env from Secrets by reference', () => {
    expect(manifest.spec).toEqual({
      restartPolicy: 'Never',
      terminationGracePeriodSeconds: 6,
      serviceAccountName: 'agentvisor',
      nodeSelector: { pool: 'agents' },
      tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'agents', effect: 'NoSchedule' }],
      volumes: [{ name: 'work', emptyDir: { sizeLimit: '1Gi' } }],
      containers: [
        {
          name: 'agent',
          image: 'ghcr.io/acme/agents:1',
          command: keepaliveCommand,
          env: [{ name: 'API_KEY', valueFrom: { secretKeyRef: { name: 'agent-keys', key: 'api-key' } } }],
          envFrom: [{ secretRef: { name: 'more' }, prefix: 'X_' }],
          resources: { requests: { cpu: '500m' }, limits: { memory: '2Gi' } },
          volumeMounts: [{ name: 'work', mountPath: '/work', readOnly: false }],
          workingDir: '/work',
        },
      ],
    });
    // The spec's own env travels on the exec's stdin, never in the pod.
    expect(JSON.stringify(manifest)).not.toContain('sk-never-in-the-pod');
  });

  it('grace from the ladder, names within the limits', () => {
    expect(graceSeconds({})).toBe(7); // the supervisor's defaults: 5 s + 2 s
    expect(graceSeconds({ shutdownTimeoutMs: 100, killTimeoutMs: 100 })).toBe(1);
    const { name, token } = newPodName(`Coder_${'x'.repeat(100)}`);
    expect(name).toMatch(/^agentvisor-coder-x+-[0-9a-f]{10}$/);
    expect(name.length).toBeLessThanOrEqual(63);
    expect(name.endsWith(token)).toBe(true);
    expect(labelValue('coder')).toBe('coder');
    expect(labelValue('my agent/1')).toMatch(/^my-agent-1-[0-9a-f]{10}$/);
    expect(labelValue('x'.repeat(80)).length).toBeLessThanOrEqual(63);
  });

  it("the host label tells apart hosts (or containers) of the same name: it carries the boot and PID namespace's digest", () => {
    const here = hostLabel('build', 'boot-a/pid:[4026531836]');
    expect(here).toMatch(/^build-[0-9a-f]{10}$/);
    expect(hostLabel('build', 'boot-a/pid:[4026531836]')).toBe(here); // the same host, every time
    expect(hostLabel('build', 'boot-b/pid:[4026531836]')).not.toBe(here); // another machine of that name
    expect(hostLabel('build', 'boot-a/pid:[4026532001]')).not.toBe(here); // another container of that kernel
    expect(hostLabel('build', null)).toBe('build'); // nowhere to read the domain from: the name alone
    for (const host of ['x'.repeat(80), 'my host.local', '---']) {
      const label = hostLabel(host, 'boot-a/pid:[1]');
      expect(label.length).toBeLessThanOrEqual(63);
      expect(label).toMatch(/^[A-Za-z0-9]([A-Za-z0-9_.-]*[A-Za-z0-9])?$/);
    }
    expect(pidDomain()).toMatch(/^[0-9a-f-]{36}\/pid:\[\d+\]$/); // this Linux host's
    expect(hostLabel()).toBe(hostLabel(hostname(), pidDomain()));
  });
});

describe("a pod's status", () => {
  it('says why it is Pending: a container waiting reason first, then the scheduling condition', () => {
    expect(pendingReason({ status: { phase: 'Pending', conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message: '0/3 nodes are available' }] } })).toBe('Unschedulable: 0/3 nodes are available');
    expect(pendingReason({ status: { phase: 'Pending', containerStatuses: [{ name: 'agent', image: 'x', imageID: '', ready: false, restartCount: 0, state: { waiting: { reason: 'ErrImagePull', message: 'not found' } } }] } })).toBe('ErrImagePull: not found');
    expect(pendingReason({ status: { phase: 'Pending', containerStatuses: [{ name: 'agent', image: 'x', imageID: '', ready: false, restartCount: 0, state: { waiting: { reason: 'ContainerCreating' } } }] } })).toBeNull();
    expect(pendingReason({ status: { phase: 'Pending' } })).toBeNull();
  });

  it('a deleted, failed, ended or node-lost pod is gone (a new one is made); Running runs; the rest is still to come', () => {
    expect(podStanding(null)).toBe('gone');
    expect(podStanding({ metadata: { deletionTimestamp: new Date() }, status: { phase: 'Running' } })).toBe('gone');
    for (const phase of ['Failed', 'Succeeded', 'Unknown']) expect(podStanding({ status: { phase } })).toBe('gone');
    expect(podStanding({ status: { phase: 'Running', reason: 'NodeLost' } })).toBe('gone');
    expect(podStanding({ status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'Unknown' }] } })).toBe('gone');
    expect(podStanding({ status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] } })).toBe('running');
    expect(podStanding({ status: { phase: 'Pending' } })).toBe('pending');
  });
});

describe('how long a start waits, and the API\'s answers', () => {
  it('waits for a pod to run at most 80 % of the handshake timeout (the agent\'s, else the supervisor\'s), so a stuck pod is reported before the handshake ends', () => {
    const agent = { command: 'codex-acp' } as AgentSpec;
    expect(pendingWaitMs(agent, {}, 30_000)).toBe(24_000);
    expect(pendingWaitMs(agent, {}, 600_000)).toBe(defaultPendingTimeoutMs);
    expect(pendingWaitMs(agent, { pendingTimeoutMs: 5_000 }, 30_000)).toBe(5_000);
    expect(pendingWaitMs({ ...agent, handshakeTimeoutMs: 300_000 }, { pendingTimeoutMs: 200_000 }, 30_000)).toBe(200_000);
    expect(pendingWaitMs(agent, {}, undefined)).toBe(defaultPendingTimeoutMs);
  });

  it('maps the API\'s refusals: 401/403 auth, 5xx, 408 and 429 unreachable (retried), other 4xx missing', () => {
    const answered = (code: number) => apiFailure(Object.assign(new Error('HTTP error'), { code }), 'creating pod ai/x').kind;
    expect([401, 403].map(answered)).toEqual(['runtime_auth_failed', 'runtime_auth_failed']);
    expect([500, 503, 408, 429].map(answered)).toEqual(['runtime_unreachable', 'runtime_unreachable', 'runtime_unreachable', 'runtime_unreachable']);
    expect([400, 404, 409, 422].map(answered)).toEqual(['runtime_missing', 'runtime_missing', 'runtime_missing', 'runtime_missing']);
  });
});

describe('finding the cluster', () => {
  it('no kubeconfig anywhere is runtime_missing at once, not localhost:8080 retried as unreachable; a kubeconfig that names it is taken', async () => {
    const home = mkdtempSync(join(tmpdir(), 'agentvisor-kube-home-'));
    try {
      vi.stubEnv('KUBECONFIG', '');
      vi.stubEnv('HOME', home);
      await expect(openCluster({})).rejects.toMatchObject({ kind: 'runtime_missing', detail: expect.stringContaining('no kubeconfig was found') });
      const file = join(home, 'local.yaml');
      writeFileSync(
        file,
        ['apiVersion: v1', 'kind: Config', 'clusters: [{ name: local, cluster: { server: "http://localhost:8080", insecure-skip-tls-verify: true } }]', 'users: [{ name: me, user: {} }]', 'contexts: [{ name: local, context: { cluster: local, user: me } }]', 'current-context: local', ''].join('\n'),
      );
      const cluster = await openCluster({ kubeconfig: file });
      expect(cluster.config.getCurrentCluster()?.server).toBe('http://localhost:8080');

      // A kubeconfig that cannot work is the kubeconfig's failure (not retried), never "unreachable" (retried forever).
      const kubeconfig = (server: string, user: string) => {
        const path = join(home, `config-${Math.random().toString(36).slice(2)}.yaml`);
        writeFileSync(path, ['apiVersion: v1', 'kind: Config', `clusters: [{ name: c, cluster: { server: ${JSON.stringify(server)} } }]`, `users: [{ name: u, user: ${user} }]`, 'contexts: [{ name: c, context: { cluster: c, user: u } }]', 'current-context: c', ''].join('\n'));
        return path;
      };
      const plugin = (command: string, args: string[]) => `{ exec: { apiVersion: client.authentication.k8s.io/v1beta1, command: ${JSON.stringify(command)}, args: ${JSON.stringify(args)}, interactiveMode: Never } }`;
      await expect(openCluster({ kubeconfig: kubeconfig('https://127.0.0.1:1', plugin('/bin/sh', ['-c', 'echo please log in first >&2; exit 1'])) })).rejects.toMatchObject({
        kind: 'runtime_auth_failed',
        detail: "the kubeconfig's credentials cannot be used: please log in first",
      });
      await expect(openCluster({ kubeconfig: kubeconfig('https://127.0.0.1:1', plugin('/nonexistent/login-plugin', [])) })).rejects.toMatchObject({ kind: 'runtime_auth_failed', detail: expect.stringContaining('ENOENT') });
      await expect(openCluster({ kubeconfig: kubeconfig('htps//cluster.example', '{}') })).rejects.toMatchObject({ kind: 'runtime_missing', detail: expect.stringContaining('no http(s) server address') });
      await expect(openCluster({ kubeconfig: kubeconfig('http://127.0.0.1:1', '{}') })).rejects.toMatchObject({ kind: 'runtime_missing', detail: expect.stringContaining('only with insecure-skip-tls-verify: true') });
    } finally {
      vi.unstubAllEnvs();
      rmSync(home, { recursive: true, force: true });
    }
  });
});

