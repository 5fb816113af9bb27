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
import { SimulatedClock } from 'xstate';
import { createSupervisor, type AgentSpec } from '../../index.js';
import { request } from 'node:http';
import { hostname } from 'node:os';
import { startTimeOf } from '../../services/containment/proc-table.js';
import { hostLabel, podLabels, podManifest, type PodTemplateRuntime } from '../../services/runtimes/kubernetes-pod.runtime.js';
import { KubeApiStandIn } from '../support/kube-apiserver.js';
import { writeDeadOwnerRecord } from '../support/orphan-records.js';
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
  const connections = api.connections();
  await api.close();
  expect(left, 'no process of any pod is left').toEqual([]);
  expect(pods, 'no pod is left').toEqual([]);
  expect(connections, 'no connection to the API server is left (no watch, no exec stream, no idle socket)').toBe(0);
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

/** Lets loopback I/O already under way arrive (a few turns of the event loop; no clock's delay stands for it). */
const ioSettled = () => new Promise((resolve) => setTimeout(resolve, 25));

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
    // That pid is the agent's group in the pod: nothing of it runs on this host to be measured.
    expect(await env.supervisor.resourceUsage('coder')).toBeNull();
    expect((await env.supervisor.resourceUsages())['coder']).toBeNull();

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

  // A stop while the start waits for its Pending pod: with the watch answering (the pod's state
  // so far), and with a watch the API server never answers (not even its headers).
  it.each([
    { watch: 'answered', silentWatches: false },
    { watch: 'never answered', silentWatches: true },
  ])('a stop while the pod is still Pending (its watch $watch) answers the start, deletes the pod and leaves no watch nor connection', async ({ silentWatches }) => {
    api.onCreate = 'pending';
    api.silentWatches = silentWatches;
    env.supervisor = createSupervisor({ stateDir: false, agents: { coder: podSpec() } });
    const outcome = env.supervisor.ensureAgent('coder').then(
      () => 'connected',
      (error: { kind?: string }) => error.kind,
    );
    await eventually(() => api.requests.some((request) => request.query.get('watch') === 'true'), 'the pending pod to be watched');
    await env.supervisor.stop('coder');
    expect(await outcome).toBe('stopped');
    await eventually(() => api.list('ai').length === 0, 'the pending pod to be deleted');
    expect(api.execCommands).toEqual([]);
    expect(env.supervisor.getStatus('coder')).toBe('idle');
    await env.supervisor.shutdown();
    await eventually(() => api.connections() === 0, 'the watch\'s connection to be closed');
  });

  it('a stop while the pod is being created (a slow create): the pod the API makes after it is deleted, and no agent is started in it', async () => {
    let letCreate!: () => void;
    api.holdCreates = new Promise((resolve) => (letCreate = resolve));
    env.supervisor = createSupervisor({ stateDir: false, agents: { coder: podSpec() } });
    const outcome = env.supervisor.ensureAgent('coder').then(
      () => 'connected',
      (error: { kind?: string }) => error.kind,
    );
    await eventually(() => api.requests.some((request) => request.method === 'POST'), 'the create to be sent');
    const stopped = env.supervisor.stop('coder');
    expect(await outcome).toBe('stopped');
    letCreate();
    await stopped;
    await eventually(() => api.deletions.length === 1 && api.list('ai').length === 0, 'the late pod to be deleted');
    expect(api.execCommands).toEqual([]);
  });

  it('the ladder reaches the agent in its pod: an agent that ignores EOF gets SIGTERM by a second exec', async () => {
    env.supervisor = createSupervisor({ stateDir: false, agents: { coder: podSpec(['--linger'], { shutdownTimeoutMs: 300 }) } });
    await env.supervisor.ensureAgent('coder');
    await env.supervisor.stop('coder');
    expect(api.execCommands.some((argv) => argv.includes('agentvisor-signal') && argv.includes('TERM'))).toBe(true);
    await eventually(() => api.list().length === 0 && api.processes().length === 0, 'the pod and its processes to be gone');
  });

  it('a server that speaks only v4: the stop goes to the in-pod kill at once (no stdin EOF to send)', async () => {
    api.protocols = ['v4.channel.k8s.io'];
    env.supervisor = createSupervisor({ stateDir: false, agents: { coder: podSpec() } });
    await env.supervisor.ensureAgent('coder');
    const session = await env.supervisor.newSession('coder', { cwd: '/' });
    expect(await session.prompt('over v4')).toBe('end_turn');
    const stopping = Date.now();
    await env.supervisor.stop('coder');
    // Not the SIGTERM rung after shutdownTimeoutMs (2 s): the first rung was the in-pod SIGTERM.
    expect(Date.now() - stopping).toBeLessThan(1_900);
    expect(api.execCommands.filter((argv) => argv.includes('agentvisor-signal'))[0]).toContain('TERM');
    await eventually(() => api.list().length === 0 && api.processes().length === 0, 'the pod and its processes to be gone');
  });

  it('401 (a token the server does not take) is runtime_auth_failed, class config: nothing made, never retried', async () => {
    const spec = podSpec();
    const runtime = spec.runtime as Extract<AgentSpec['runtime'], { kind: 'kubernetes' }>;
    env.supervisor = createSupervisor({ stateDir: false, agents: { coder: { ...spec, runtime: { ...runtime, kubeconfig: api.kubeconfig(env.files.dir, { token: 'wrong', name: 'wrong.yaml' }) } } } });
    await expect(env.supervisor.ensureAgent('coder')).rejects.toMatchObject({ kind: 'runtime_auth_failed', class: 'config', retryable: false, message: expect.stringContaining('401') });
    expect(api.list()).toEqual([]);
  });

  it('403 (RBAC refuses pods) is runtime_auth_failed naming what was forbidden', async () => {
    api.refuse = 403;
    env.supervisor = createSupervisor({ stateDir: false, agents: { coder: podSpec() } });
    await expect(env.supervisor.ensureAgent('coder')).rejects.toMatchObject({ kind: 'runtime_auth_failed', class: 'config', message: expect.stringContaining('pods is forbidden') });
    expect(api.list()).toEqual([]);
  });

  it('an API server that refuses connections is runtime_unreachable, class crash (retried with the backoff)', async () => {
    const gone = await KubeApiStandIn.start();
    const server = gone.url;
    await gone.close();
    const spec = podSpec();
    const runtime = spec.runtime as Extract<AgentSpec['runtime'], { kind: 'kubernetes' }>;
    env.supervisor = createSupervisor({ stateDir: false, agents: { coder: { ...spec, runtime: { ...runtime, kubeconfig: api.kubeconfig(env.files.dir, { server, name: 'gone.yaml' }) } } } });
    await expect(env.supervisor.ensureAgent('coder')).rejects.toMatchObject({ kind: 'runtime_unreachable', class: 'crash', retryable: true });
  });

  it('a pod stuck Pending fails the start within its pending timeout, naming the reason the API gives; the pod is deleted', async () => {
    api.onCreate = { unschedulable: '0/3 nodes are available: 3 Insufficient cpu.' };
    // The wait runs on the supervisor's clock, as the handshake timeout does: no real 5 minutes.
    const clock = new SimulatedClock();
    env.supervisor = createSupervisor({ stateDir: false, clock, agents: { coder: podSpec([], { handshakeTimeoutMs: 600_000, template: { pendingTimeoutMs: 300_000 } }) } });
    const refused = expect(env.supervisor.ensureAgent('coder')).rejects.toMatchObject({ kind: 'runtime_missing', class: 'config', message: expect.stringContaining('Unschedulable: 0/3 nodes are available: 3 Insufficient cpu.') });
    await eventually(() => api.requests.some((request) => request.query.get('watch') === 'true'), 'the pending pod to be watched');
    await eventually(() => api.list('ai')[0]?.status?.conditions?.some((condition) => condition.reason === 'Unschedulable') === true, 'the reason to be there');
    await ioSettled(); // the watch's first event (the pod with its reason) crosses the socket: I/O, not a delay the clock stands for
    clock.increment(299_000);
    await new Promise((resolve) => setImmediate(resolve));
    expect(api.list('ai')).toHaveLength(1); // still waiting, a second before its timeout
    clock.increment(1_000);
    await refused;
    await eventually(() => api.list().length === 0, 'the pending pod to be deleted');

    api.onCreate = { waiting: 'ImagePullBackOff', message: 'Back-off pulling image "agents:1"' };
    const pulling = expect(env.supervisor.ensureAgent('coder')).rejects.toMatchObject({ kind: 'runtime_missing', message: expect.stringContaining('ImagePullBackOff: Back-off pulling image') });
    await eventually(() => api.list('ai').length === 1 && api.requests.filter((request) => request.query.get('watch') === 'true').length >= 2, 'the second pod to be watched');
    await ioSettled();
    clock.increment(300_000);
    await pulling;
    await eventually(() => api.list().length === 0, 'the pending pod to be deleted');
  });

  it('a deletion the API fails is tried again on the supervisor\'s clock until it is done; shutdown ends the retries', async () => {
    const clock = new SimulatedClock();
    env.supervisor = createSupervisor({ stateDir: false, clock, agents: { coder: podSpec(), helper: podSpec() } });
    await env.supervisor.ensureAgent('coder');
    api.failDeletes = 2; // the stop's deletion and the first retry are answered 503
    await env.supervisor.stop('coder');
    await eventually(() => api.deletions.length === 0 && api.requests.filter((request) => request.method === 'DELETE').length === 1, 'the failed deletion');
    expect(api.list('ai')).toHaveLength(1);
    clock.increment(999);
    await ioSettled();
    expect(api.requests.filter((request) => request.method === 'DELETE')).toHaveLength(1); // not before its delay
    clock.increment(1); // 1 s: the first retry, refused again
    await eventually(() => api.requests.filter((request) => request.method === 'DELETE').length === 2, 'the first retry');
    expect(api.list('ai')).toHaveLength(1);
    clock.increment(2_000); // 2 s more: the second retry deletes it
    await eventually(() => api.list('ai').length === 0, 'the pod to be deleted by a retry');

    // A retry still waiting at shutdown is dropped (the record is the next supervisor's to sweep).
    await env.supervisor.ensureAgent('helper');
    api.failDeletes = 1;
    await env.supervisor.stop('helper');
    await eventually(() => api.requests.filter((request) => request.method === 'DELETE').length === 4, 'the helper\'s failed deletion');
    await env.supervisor.shutdown();
    clock.increment(60_000);
    await ioSettled();
    expect(api.requests.filter((request) => request.method === 'DELETE')).toHaveLength(4);
    const [left] = api.list('ai');
    expect(left?.metadata.labels?.[podLabels.agent]).toBe('helper');
    api.deletePod('ai', left!.metadata.name); // what the next supervisor's sweep would do
  });

  it('a dropped exec stream is the agent lost: it restarts in the SAME pod, and its session is resumed there', async () => {
    const stateFile = env.files.path('sessions.json');
    env.supervisor = createSupervisor({ stateDir: false, restart: { initialDelayMs: 50, maxDelayMs: 100 }, agents: { coder: podSpec(['--load-session', '--state-file', stateFile]) } });
    await env.supervisor.ensureAgent('coder');
    const session = await env.supervisor.newSession('coder', { cwd: '/' });
    expect(await session.prompt('before the drop')).toBe('end_turn');
    const events = recordEvents(env.supervisor);
    const [pod] = api.list('ai');
    expect(api.dropExecs(pod!.metadata.name)).toBe(1);
    await eventually(() => events.statuses.includes('coder:reconnecting→connected') || events.statuses.includes('coder:disconnected→connected'), 'the agent to come back', 15_000);
    await waitForStatus(env.supervisor, 'coder', 'connected');
    expect(api.list('ai').map((each) => each.metadata.name)).toEqual([pod!.metadata.name]); // the same pod, no other
    expect(api.execCommands.filter((argv) => !argv.includes('agentvisor-signal'))).toHaveLength(2);
    // As after any lost agent: the session failed its turn, and resume() loads it on the new connection.
    expect(session.status).toBe('failed');
    await session.resume();
    expect(await session.prompt('after the drop')).toBe('end_turn');
    events.off();
  });

  // A pod that goes away: deleted without the supervisor (a person's kubectl delete, an
  // eviction), or on a lost node (the pod stops reporting, the streams to it drop). Either way
  // a new pod, the old one deleted through the API if it is still there, and the session resumed in the new one.
  it.each([
    { gone: 'a deleted pod', end: (name: string) => api.deletePod('ai', name) },
    { gone: 'a lost node', end: (name: string) => api.loseNode('ai', name) },
  ])('$gone means a new pod, and the session is resumed in it', async ({ end }) => {
    const stateFile = env.files.path('sessions.json');
    env.supervisor = createSupervisor({ stateDir: false, restart: { initialDelayMs: 50, maxDelayMs: 100 }, agents: { coder: podSpec(['--load-session', '--state-file', stateFile]) } });
    await env.supervisor.ensureAgent('coder');
    const session = await env.supervisor.newSession('coder', { cwd: '/' });
    expect(await session.prompt('in the first pod')).toBe('end_turn');
    const [first] = api.list('ai');
    end(first!.metadata.name);
    await eventually(() => api.list('ai').length === 1 && api.list('ai')[0]!.metadata.name !== first!.metadata.name, 'a new pod, and the first one gone', 15_000);
    await waitForStatus(env.supervisor, 'coder', 'connected', 15_000);
    // As after any lost agent: the session failed its turn, and resume() loads it on the new connection.
    expect(session.status).toBe('failed');
    await session.resume();
    expect(await session.prompt('in the second pod')).toBe('end_turn');
  });

  it('Secrets stay secrets: env from a Secret reaches the agent by reference, in no argv, no record file, no store row, not in the pod spec', async () => {
    const secret = `s3cr3t-${process.pid}-value`;
    const secretToo = `an0ther-${process.pid}-value`;
    api.addSecret('ai', 'agent-keys', { API_KEY: secret });
    api.addSecret('ai', 'more-keys', { TOKEN: secretToo });
    const stateDir = env.files.path('state');
    const spec = podSpec([], { template: { env: [{ name: 'AGENT_API_KEY', secretKeyRef: { name: 'agent-keys', key: 'API_KEY' } }], envFrom: [{ secretRef: { name: 'more-keys' }, prefix: 'FROM_' }] } });
    env.supervisor = createSupervisor({ stateDir, agents: { coder: spec } });
    await env.supervisor.ensureAgent('coder');
    const session = await env.supervisor.newSession('coder', { cwd: '/' });
    expect(await session.prompt('with a key')).toBe('end_turn');
    // The agent has them (the stand-in's "kubelet" resolved the references) ...
    const environs = api.processes().map((pid) => readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0'));
    expect(environs.some((variables) => variables.includes(`AGENT_API_KEY=${secret}`) && variables.includes(`FROM_TOKEN=${secretToo}`))).toBe(true);
    // ... and nothing else does: no argv here or "in the pod", not the pod spec the API holds.
    expect(argvsHolding(secret)).toEqual([]);
    expect(argvsHolding(secretToo)).toEqual([]);
    expect(JSON.stringify(api.list())).not.toContain(secret);
    expect(api.list()[0]!.spec.containers[0]!.env).toEqual([{ name: 'AGENT_API_KEY', valueFrom: { secretKeyRef: { name: 'agent-keys', key: 'API_KEY' } } }]);
    const recordsWhileRunning = readdirSync(join(stateDir, 'processes')).map((name) => readFileSync(join(stateDir, 'processes', name), 'utf8'));
    expect(recordsWhileRunning).toHaveLength(1); // the pod's record
    expect(recordsWhileRunning.join('')).not.toContain(secret);
    await env.supervisor.shutdown();
    // No file of the state directory (the store, its journal, records) holds either value.
    const files = execFileSync('find', [stateDir, '-type', 'f'], { encoding: 'utf8' }).trim().split('\n').filter(Boolean);
    expect(files.length).toBeGreaterThan(0);
    for (const file of files) {
      const bytes = readFileSync(file);
      expect(bytes.includes(secret), file).toBe(false);
      expect(bytes.includes(secretToo), file).toBe(false);
    }
  });

  it("a crashed supervisor's pods are swept at the next start: look-first lists and touches nothing; the sweep deletes them, never a live supervisor's", async () => {
    const stateDir = env.files.path('state');
    const kubeconfig = api.kubeconfig(env.files.dir);
    const startTime = startTimeOf(process.pid)!;
    const dead = `${process.pid}-${startTime + 1}`; // this pid with a start time it never had: a supervisor that is gone
    const live = `${process.pid}-${startTime}`;
    const runtime = podSpec().runtime as PodTemplateRuntime;
    const make = async (token: string, supervisor: string) => {
      const name = `agentvisor-coder-${token}`;
      const body = podManifest(fixtureSpec(), runtime, { agent: 'coder', supervisorProcess: supervisor, supervisorInstance: `${hostname()}/${supervisor}`, host: hostLabel() }, { name, token });
      // One connection per request (no keep-alive pool of this test's own left open).
      const status = await new Promise<number>((resolve, reject) => {
        const sent = request(`${api.url}/api/v1/namespaces/ai/pods`, { method: 'POST', agent: false, headers: { authorization: `Bearer ${api.token}`, 'content-type': 'application/json' } }, (response) => {
          response.resume();
          response.on('end', () => resolve(response.statusCode ?? 0));
        });
        sent.on('error', reject);
        sent.end(JSON.stringify(body));
      });
      expect(status).toBe(201);
      return name;
    };
    const recorded = await make('aaaa', dead);
    const unrecorded = await make('bbbb', dead); // made, then the crash came before its record was written
    const others = await make('cccc', live);
    writeDeadOwnerRecord(stateDir, 'coder', {
      agent: 'coder',
      command: 'kubernetes pod',
      wrapper: { pid: 0, startTime: 0 },
      agentProcess: null,
      pgid: 0,
      sid: 0,
      remote: { kind: 'kubernetes-pod', namespace: 'ai', name: recorded, token: 'aaaa', kubeconfig, context: '' },
    });
    env.supervisor = createSupervisor({ stateDir, sweepOnStart: false, agents: {} });
    const requestsBefore = api.requests.length;
    const look = await env.supervisor.sweepOrphans({ dryRun: true });
    expect(look.orphans).toEqual([expect.objectContaining({ agent: 'coder', pid: 0, pod: `ai/${recorded}`, running: false })]);
    expect(look.killed).toEqual([]);
    expect(api.requests.length).toBe(requestsBefore); // not even a list
    expect(api.list('ai')).toHaveLength(3);

    const swept = await env.supervisor.sweepOrphans();
    expect(swept.killed.map((killed) => killed.pod).sort()).toEqual([`ai/${recorded}`, `ai/${unrecorded}`]);
    expect(api.requests.find((request) => request.method === 'GET' && request.query.get('labelSelector'))?.query.get('labelSelector')).toBe(`app.kubernetes.io/managed-by=agentvisor,agentvisor.io/host=${hostLabel()}`);
    expect(api.list('ai').map((pod) => pod.metadata.name)).toEqual([others]);
    expect(readdirSync(join(stateDir, 'processes')).filter((name) => name.endsWith('.json'))).toEqual([]);
    api.deletePod('ai', others);
  });
});
