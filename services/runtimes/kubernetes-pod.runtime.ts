/**
 * The `kubernetes` runtime with a `template` (docs/runtimes-kubernetes.md): a pod per agent,
 * made through the Kubernetes API (no kubectl), and the agent started in it by an exec over
 * the API's WebSocket, whose streams the process actor drives as it drives a spawned process
 * (runtime.ts `RuntimeConnector`). No XState here.
 *
 * The pod's lifetime is the agent's, not one process's: its container only keeps the pod
 * alive (a shell waiting for SIGTERM), and every start of the agent is a new exec into it. A
 * dropped exec stream is the agent lost — the restart execs into the same pod; a pod that is
 * gone (deleted, failed, its node lost) is replaced by a new one at the next start. The pod
 * is deleted when its agent stops for good (`release`: idle, or exited), and each pod is
 * recorded (agent-records.service.ts) from before its creation until its deletion is
 * accepted, so a supervisor that crashed leaves nothing a later one does not sweep.
 */
import { createHash, randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { PassThrough } from 'node:stream';
import type { V1Pod } from '@kubernetes/client-node';
import type { AgentSpec } from '../../core/agent-spec.js';
import { realClock, type Clock } from '../../core/clock.js';
import type { PodTemplate, RuntimeSpec } from '../../core/runtime-spec.js';
import { isSameProcess, pidDomain } from '../containment/proc-table.js';
import { bounded } from '../../util/grace.js';
import type { AgentRecords, RecordFile } from '../agent-records.service.js';
import { defaultKillTimeoutMs, defaultShutdownTimeoutMs, podAgentArgv, removeTimeoutMs, signalScript, signalTimeoutMs, wrapperFailure } from './container.runtime.js';
import { apiFailure, messageOf, openCluster, RuntimeFailureError, statusOf, watchObjects, type Cluster } from './kube-api.js';
import { openExec, type ExecEnd, type ExecStream } from './kube-exec.js';
import { envPreamble, remotePidMarker, type PodLeftover, type RuntimeConnector, type RuntimeFailure, type RuntimeTransport } from './runtime.js';

type KubernetesRuntime = Extract<RuntimeSpec, { kind: 'kubernetes' }>;
/** A kubernetes runtime with a template: what this file runs. */
export type PodTemplateRuntime = KubernetesRuntime & { template: PodTemplate };

/** The labels on every pod agentvisor makes: what it is selected by (never a name alone, which a later pod may take). */
export const podLabels = {
  managedBy: 'app.kubernetes.io/managed-by',
  /** This host (a label value: its name, or a digest of a name too long for one). */
  host: 'agentvisor.io/host',
  /** The supervisor process on that host: `<pid>-<start time>`, as its process records name their owner. */
  supervisor: 'agentvisor.io/supervisor',
  /** The agent's name as a label value (the whole name is in the annotation of the same key). */
  agent: 'agentvisor.io/agent',
  /** The pod's own token. */
  pod: 'agentvisor.io/pod',
} as const;

/** The name of the agent's container in the pod (`container` of the runtime spec overrides it). */
export const defaultContainerName = 'agent';
/** How long a pod may stay Pending by default. */
export const defaultPendingTimeoutMs = 120_000;
/** A ping on the exec stream this often; none answered by the next one is a dropped stream (a node gone quietly). */
export const execKeepAliveMs = 15_000;

/**
 * The container's own command when the template gives none: a shell that waits, and exits at
 * once on SIGTERM (as PID 1 it would otherwise ignore it, and every deletion would wait out
 * its grace period).
 */
export const keepaliveCommand = ['/bin/sh', '-c', 'trap "exit 0" TERM INT; while :; do sleep 3600 & wait $!; done'];

/** A string as a label value: at most 63 of [A-Za-z0-9-_.], starting and ending alphanumeric; a digest where that would lose too much. */
export function labelValue(text: string): string {
  const plain = text.replace(/[^A-Za-z0-9_.-]/g, '-').replace(/^[^A-Za-z0-9]+/, '').replace(/[^A-Za-z0-9]+$/, '');
  if (plain.length > 0 && plain.length <= 63 && plain === text) return plain;
  return withDigest(plain, text);
}

/** `<head>-<10 hex of source's digest>` as a label value (the head cut to fit 63), or the digest alone when there is no head. */
function withDigest(head: string, source: string): string {
  const digest = createHash('sha256').update(source).digest('hex').slice(0, 10);
  const cut = head.slice(0, 52).replace(/[^A-Za-z0-9]+$/, '');
  return cut ? `${cut}-${digest}` : digest;
}

/**
 * This host as its pods' `agentvisor.io/host` label: its name and a digest of its
 * {@link pidDomain} (`<hostname>-<10 hex>`, a digest where the name is too long). The sweep
 * selects pods by this label and counts a pod's supervisor dead when its pid and start time
 * are not on this host: with the name alone, two machines (or containers) of the same name
 * would each take the other's live pods for orphans.
 */
export function hostLabel(host: string = hostname(), domain: string | null = pidDomain()): string {
  return domain === null ? labelValue(host) : withDigest(labelValue(host), domain);
}

/** The grace the ladder gives an agent, in whole seconds: the pod's termination grace and its deletion's. */
export function graceSeconds(spec: Pick<AgentSpec, 'shutdownTimeoutMs' | 'killTimeoutMs'>): number {
  return Math.ceil(((spec.shutdownTimeoutMs ?? defaultShutdownTimeoutMs) + (spec.killTimeoutMs ?? defaultKillTimeoutMs)) / 1000);
}

/** Who makes a pod: the agent's name, and the supervisor process (`<pid>-<start time>`) with its full instance id. */
export interface PodOwner {
  agent: string;
  /** `<pid>-<start time>` of the supervisor process. */
  supervisorProcess: string;
  /** `<hostname>/<pid>-<start time>` (agent-records.service.ts `supervisorInstance`). */
  supervisorInstance: string;
  host: string;
}

/**
 * The pod made for an agent from its template: agentvisor's labels (after the template's own,
 * so none of them can be replaced), the keepalive (or the template's command), no restart by
 * the kubelet (the supervisor restarts the agent, and a failed pod is replaced), the ladder's
 * grace as the termination grace, env from Secrets by reference only.
 */
export function podManifest(spec: AgentSpec, runtime: PodTemplateRuntime, owner: PodOwner, pod: { name: string; token: string }): V1Pod {
  const template = runtime.template;
  const labels = {
    ...template.labels,
    [podLabels.managedBy]: 'agentvisor',
    [podLabels.host]: owner.host,
    [podLabels.supervisor]: owner.supervisorProcess,
    [podLabels.agent]: labelValue(owner.agent),
    [podLabels.pod]: pod.token,
  };
  const annotations = { ...template.annotations, [podLabels.agent]: owner.agent, [podLabels.supervisor]: owner.supervisorInstance };
  const volumes = template.volumes ?? [];
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: pod.name, namespace: runtime.namespace ?? 'default', labels, annotations },
    spec: {
      restartPolicy: 'Never',
      terminationGracePeriodSeconds: graceSeconds(spec),
      ...(template.serviceAccountName !== undefined ? { serviceAccountName: template.serviceAccountName } : {}),
      ...(template.nodeSelector !== undefined ? { nodeSelector: { ...template.nodeSelector } } : {}),
      ...(template.tolerations !== undefined ? { tolerations: template.tolerations.map((toleration) => ({ ...toleration })) } : {}),
      ...(volumes.length > 0
        ? {
            volumes: volumes.map(({ name, emptyDir, secret, configMap, persistentVolumeClaim }) => ({
              name,
              ...(emptyDir ? { emptyDir: { ...emptyDir } } : {}),
              ...(secret ? { secret: { ...secret } } : {}),
              ...(configMap ? { configMap: { ...configMap } } : {}),
              ...(persistentVolumeClaim ? { persistentVolumeClaim: { ...persistentVolumeClaim } } : {}),
            })),
          }
        : {}),
      containers: [
        {
          name: runtime.container ?? defaultContainerName,
          image: template.image,
          ...(template.imagePullPolicy !== undefined ? { imagePullPolicy: template.imagePullPolicy } : {}),
          command: [...(template.command ?? keepaliveCommand)],
          ...(template.args !== undefined ? { args: [...template.args] } : {}),
          ...(template.env !== undefined ? { env: template.env.map(({ name, secretKeyRef }) => ({ name, valueFrom: { secretKeyRef: { ...secretKeyRef } } })) } : {}),
          ...(template.envFrom !== undefined ? { envFrom: template.envFrom.map(({ secretRef, prefix }) => ({ secretRef: { ...secretRef }, ...(prefix !== undefined ? { prefix } : {}) })) } : {}),
          ...(template.resources !== undefined
            ? { resources: { ...(template.resources.requests ? { requests: { ...template.resources.requests } } : {}), ...(template.resources.limits ? { limits: { ...template.resources.limits } } : {}) } }
            : {}),
          ...(volumes.length > 0 ? { volumeMounts: volumes.map(({ name, mountPath, readOnly }) => ({ name, mountPath, ...(readOnly !== undefined ? { readOnly } : {}) })) } : {}),
          ...(spec.cwd !== undefined ? { workingDir: spec.cwd } : {}),
        },
      ],
    },
  };
}

/** A new pod's name and token: `agentvisor-<agent>-<hex>`, at most 63 characters (it is also the pod's hostname). */
export function newPodName(agent: string): { name: string; token: string } {
  const token = randomBytes(5).toString('hex');
  const part = agent.toLowerCase().replace(/[^a-z0-9-]/g, '-').replace(/-+/g, '-').replace(/^-|-$/g, '').slice(0, 40).replace(/-$/, '');
  return { name: `agentvisor-${part ? `${part}-` : ''}${token}`, token };
}

/**
 * Why a Pending pod is not running yet, as the API says it: the PodScheduled condition's
 * reason and message (`Unschedulable: 0/3 nodes are available: …`), or a container's waiting
 * reason (`ErrImagePull`, `ImagePullBackOff`, `CreateContainerConfigError`: a Secret that is
 * missing) and message. Null: no reason given (yet).
 */
export function pendingReason(pod: V1Pod): string | null {
  const waiting = [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])].map((status) => status.state?.waiting).find((state) => state?.reason && state.reason !== 'ContainerCreating' && state.reason !== 'PodInitializing');
  if (waiting?.reason) return `${waiting.reason}${waiting.message ? `: ${waiting.message}` : ''}`;
  const scheduled = pod.status?.conditions?.find((condition) => condition.type === 'PodScheduled' && condition.status === 'False');
  if (scheduled) return `${scheduled.reason ?? 'Unschedulable'}${scheduled.message ? `: ${scheduled.message}` : ''}`;
  if (pod.status?.reason) return `${pod.status.reason}${pod.status.message ? `: ${pod.status.message}` : ''}`;
  return null;
}

/** Where a pod stands for its agent: running, still to come, or gone for good (deleted, failed, done, its node lost). */
export function podStanding(pod: V1Pod | null): 'running' | 'pending' | 'gone' {
  if (!pod || pod.metadata?.deletionTimestamp) return 'gone';
  const phase = pod.status?.phase;
  if (phase === 'Failed' || phase === 'Succeeded' || phase === 'Unknown' || pod.status?.reason === 'NodeLost') return 'gone';
  const ready = pod.status?.conditions?.find((condition) => condition.type === 'Ready');
  if (phase === 'Running' && ready?.status === 'Unknown') return 'gone'; // its node stopped reporting
  return phase === 'Running' ? 'running' : 'pending';
}

/** One agent's pod, while the agent may run in it. */
interface AgentPod {
  cluster: Cluster;
  namespace: string;
  name: string;
  token: string;
  container: string;
  grace: number;
  record: RecordFile | null;
}

export interface KubernetesPodsOptions {
  /** Where pods are recorded for a sweep after a crash; null: not recorded. */
  records: AgentRecords | null;
  /** The supervisor process's ids (agent-records.service.ts `supervisorInstance`). */
  owner: Omit<PodOwner, 'agent'>;
  /** The exec subprotocols offered (tests narrow them to v4). */
  execProtocols?: readonly string[];
  /** The exec stream's keep-alive ping interval (default {@link execKeepAliveMs}). */
  keepAliveMs?: number;
  /** The supervisor's handshake timeout (an agent's own overrides it): a pod's wait to run ends before it. */
  handshakeTimeoutMs?: number;
  /** The clock of the wait for a pod to run (the supervisor's, as the handshake timeout's; real time by default). */
  clock?: Clock;
}

/** How long one call of the API (create, read) may take before the start fails `runtime_unreachable`. */
export const apiCallTimeoutMs = 30_000;

/**
 * A stopped agent's pod whose deletion failed (the API unreachable, a 5xx) is deleted again
 * after these delays (ms), on the supervisor's clock, while the supervisor lives; after the
 * last, or at shutdown, its record stays for the next supervisor's sweep.
 */
export const deletionRetryDelaysMs = [1_000, 2_000, 4_000, 8_000, 15_000, 30_000, 30_000, 30_000, 30_000, 30_000] as const;

/**
 * How long a start waits for its pod to run: `pendingTimeoutMs` (default
 * {@link defaultPendingTimeoutMs}), but at most 80 % of the agent's handshake timeout, which
 * covers the whole start — so a pod that will not run is reported with the API's reason
 * (and deleted) before the handshake timeout would end the start without one.
 */
export function pendingWaitMs(spec: AgentSpec, template: { pendingTimeoutMs?: number | undefined }, supervisorHandshakeTimeoutMs: number | undefined): number {
  const handshake = spec.handshakeTimeoutMs ?? supervisorHandshakeTimeoutMs;
  const pending = template.pendingTimeoutMs ?? defaultPendingTimeoutMs;
  return handshake === undefined ? pending : Math.min(pending, Math.max(100, Math.floor(handshake * 0.8)));
}

/** The supervisor's pods, one per agent that runs from a template: the runtime's connector. */
export class KubernetesPods implements RuntimeConnector {
  private readonly pods = new Map<string, AgentPod>();
  private readonly opening = new Map<string, Promise<unknown>>();
  private readonly deleting = new Map<string, Promise<void>>();
  /** Pods whose deletion failed, tried again later: each one's timer. */
  private readonly retries = new Set<{ timer: unknown }>();
  private closed = false;
  /** Bumped by each release: an attempt made before it deletes the pod it makes (its agent stopped meanwhile). */
  private readonly generations = new Map<string, number>();

  /** The supervisor's clock: the wait for a pod to run, the retries of a failed deletion. */
  private readonly clock: Clock;

  constructor(private readonly options: KubernetesPodsOptions) {
    this.clock = options.clock ?? realClock;
  }

  handles(spec: AgentSpec): boolean {
    return spec.runtime?.kind === 'kubernetes' && spec.runtime.template !== undefined;
  }

  async open(agent: string, spec: AgentSpec, signal: AbortSignal): Promise<RuntimeTransport> {
    // One attempt of an agent at a time (a restart during a slow create must not make a second
    // pod), and a stop's deletion first: never two pods of one agent made by this supervisor.
    const previous = this.opening.get(agent);
    const attempt = (async () => {
      await previous;
      await this.deleting.get(agent);
      return this.openIn(agent, spec, signal, this.generationOf(agent));
    })();
    const settled = attempt.catch(() => {});
    this.opening.set(agent, settled);
    try {
      return await attempt;
    } finally {
      if (this.opening.get(agent) === settled) this.opening.delete(agent);
    }
  }

  private generationOf(agent: string): number {
    return this.generations.get(agent) ?? 0;
  }

  /**
   * The agent stopped for good: its pod is deleted (grace: the ladder's), and its record
   * removed once the API accepted the deletion. Tracked until done ({@link settled}).
   */
  release(agent: string): void {
    this.generations.set(agent, this.generationOf(agent) + 1);
    const pod = this.pods.get(agent);
    const opening = this.opening.get(agent);
    if (!pod && !opening) return;
    this.pods.delete(agent);
    const deletion: Promise<void> = (async () => {
      if (pod && !(await deletePod(pod, pod.grace))) this.retryDeletion(pod, 0);
      // An attempt in flight deletes the pod it makes itself (it sees the new generation); its end is
      // waited for, bounded — an API server that never answers must not hold up shutdown().
      if (opening) await boundedCall(opening, apiCallTimeoutMs + removeTimeoutMs, 'the start in flight').catch(() => {});
    })()
      .catch(() => {})
      .finally(() => {
        if (this.deleting.get(agent) === deletion) this.deleting.delete(agent);
      });
    this.deleting.set(agent, deletion);
  }

  /** Every deletion under way, done (shutdown waits for it; a deletion tried again later is not waited for). */
  async settled(): Promise<void> {
    await Promise.all([...this.deleting.values()]);
  }

  /** No more retries of failed deletions (shutdown): their records stay for the next supervisor's sweep. */
  close(): void {
    this.closed = true;
    for (const retry of this.retries) this.clock.clearTimeout(retry.timer);
    this.retries.clear();
  }

  /** Deletes `pod` again after the `attempt`-th delay; gives up after the last (the sweep's, then). */
  private retryDeletion(pod: AgentPod, attempt: number): void {
    const delay = deletionRetryDelaysMs[attempt];
    if (this.closed || delay === undefined) return;
    const retry: { timer: unknown } = { timer: null };
    retry.timer = this.clock.setTimeout(() => {
      this.retries.delete(retry);
      void deletePod(pod, 0).then((deleted) => {
        if (!deleted) this.retryDeletion(pod, attempt + 1);
      });
    }, delay);
    // A real timer does not keep the process alive for a retry: a program that ends without shutdown() leaves it to the sweep.
    (retry.timer as { unref?: () => void } | null)?.unref?.();
    this.retries.add(retry);
  }

  private async openIn(agent: string, spec: AgentSpec, signal: AbortSignal, generation: number): Promise<RuntimeTransport> {
    if (!this.handles(spec)) throw new RuntimeFailureError('runtime_missing', 'not a kubernetes runtime with a template');
    const runtime = spec.runtime as PodTemplateRuntime;
    signal.throwIfAborted();
    let pod = this.pods.get(agent);
    if (pod) {
      const standing = podStanding(await readPod(pod));
      if (standing === 'gone') {
        // Deleted, failed, or on a lost node: a new pod (the sessions are resumed by the restart as for any agent).
        this.pods.delete(agent);
        await deletePod(pod, 0);
        pod = undefined;
      }
    }
    signal.throwIfAborted();
    if (!pod) {
      const cluster = await openCluster({ kubeconfig: runtime.kubeconfig, context: runtime.context });
      signal.throwIfAborted();
      pod = await this.createPod(agent, spec, runtime, cluster, generation);
    }
    signal.throwIfAborted();
    await waitUntilRunning(pod, pendingWaitMs(spec, runtime.template, this.options.handshakeTimeoutMs), signal, this.clock).catch(async (error: unknown) => {
      if (error instanceof RuntimeFailureError && error.kind === 'runtime_missing' && this.pods.get(agent) === pod) {
        // It will not run (stuck Pending, ended, deleted): not kept for a next start.
        this.pods.delete(agent);
        await deletePod(pod!, 0);
      }
      throw error;
    });
    signal.throwIfAborted();
    return startAgent(pod, spec, signal, { protocols: this.options.execProtocols, keepAliveMs: this.options.keepAliveMs ?? execKeepAliveMs });
  }

  private async createPod(agent: string, spec: AgentSpec, runtime: PodTemplateRuntime, cluster: Cluster, generation: number): Promise<AgentPod> {
    const { name, token } = newPodName(agent);
    const namespace = runtime.namespace ?? 'default';
    const leftover: PodLeftover = { kind: 'kubernetes-pod', namespace, name, token, kubeconfig: runtime.kubeconfig ?? '', context: runtime.context ?? '' };
    // Recorded before it exists: a crash between the two leaves a record, never a pod nobody knows of.
    const record = this.options.records?.createRemote(agent, leftover) ?? null;
    const pod: AgentPod = { cluster, namespace, name, token, container: runtime.container ?? defaultContainerName, grace: graceSeconds(spec), record };
    try {
      await boundedCall(cluster.core.createNamespacedPod({ namespace, body: podManifest(spec, runtime, { ...this.options.owner, agent }, { name, token }) }), apiCallTimeoutMs, `creating pod ${namespace}/${name}`);
    } catch (error) {
      // A refusal made nothing; a timeout or a lost answer may have made the pod: deleted by name
      // (the record goes once the API says it is gone, or stays for the sweep).
      const status = statusOf(error);
      if (status !== null && status < 500) await record?.remove();
      else await deletePod(pod, 0);
      throw apiFailure(error, `creating pod ${namespace}/${name}`);
    }
    if (this.generationOf(agent) !== generation) {
      // The agent was stopped while its pod was being made: nobody will ask for it.
      await deletePod(pod, 0);
      throw new RuntimeFailureError('runtime_missing', `pod ${namespace}/${name} was made after its agent stopped, and is deleted`);
    }
    this.pods.set(agent, pod);
    return pod;
  }
}

/** The pod as the API has it now; null: it is not there. */
async function readPod(pod: AgentPod): Promise<V1Pod | null> {
  try {
    return await boundedCall(pod.cluster.core.readNamespacedPod({ name: pod.name, namespace: pod.namespace }), apiCallTimeoutMs, `reading pod ${pod.namespace}/${pod.name}`);
  } catch (error) {
    if (statusOf(error) === 404) return null;
    throw apiFailure(error, `reading pod ${pod.namespace}/${pod.name}`);
  }
}

/** `promise`, but at most `ms` of real time: past it, rejects saying what took too long (and a late result goes to `disposeLate`). */
function boundedCall<T>(promise: Promise<T>, ms: number, what: string, disposeLate?: (late: T) => void): Promise<T> {
  return bounded(promise, ms, () => new Error(`${what} took more than ${ms} ms`), realClock, disposeLate);
}

/**
 * Deletes a pod (bounded, never rejecting). Its record goes once the API accepted the
 * deletion (or the pod was not there); a deletion that failed keeps it for the sweep.
 */
async function deletePod(pod: AgentPod, gracePeriodSeconds: number): Promise<boolean> {
  try {
    await boundedCall(pod.cluster.core.deleteNamespacedPod({ name: pod.name, namespace: pod.namespace, gracePeriodSeconds }), removeTimeoutMs, `deleting pod ${pod.namespace}/${pod.name}`);
  } catch (error) {
    if (statusOf(error) !== 404) return false;
  }
  await pod.record?.remove();
  return true;
}

/**
 * Waits for the pod to run, watching it (the API's watch: the pod's state now, then each
 * change). Rejects `runtime_missing` naming the API's last reason when it stays Pending past
 * `timeoutMs`, ends, or is deleted meanwhile; 401/403 and an unreachable server as such.
 */
async function waitUntilRunning(pod: AgentPod, timeoutMs: number, signal: AbortSignal, clock: Clock): Promise<void> {
  const where = `pod ${pod.namespace}/${pod.name}`;
  signal.throwIfAborted();
  await new Promise<void>((resolve, reject) => {
    let finished = false;
    let reason: string | null = null;
    /** Ends the watch in flight at any point (before its answer's headers too). */
    const watching = new AbortController();
    const finish = (error?: unknown) => {
      if (finished) return;
      finished = true;
      clock.clearTimeout(timer);
      signal.removeEventListener('abort', aborted);
      watching.abort();
      if (error === undefined) resolve();
      else reject(error);
    };
    const aborted = () => finish(signal.reason);
    const timer = clock.setTimeout(
      () => finish(new RuntimeFailureError('runtime_missing', `${where} stayed Pending for ${Math.round(timeoutMs / 100) / 10} s: ${reason ?? 'the API gave no reason'}`)),
      timeoutMs,
    );
    signal.addEventListener('abort', aborted, { once: true });
    const onEvent = (type: string, object: V1Pod) => {
      if (finished) return;
      if (type === 'DELETED') return finish(new RuntimeFailureError('runtime_missing', `${where} was deleted before it ran`));
      if (type !== 'ADDED' && type !== 'MODIFIED') return;
      const phase = object.status?.phase;
      if (phase === 'Running') return finish();
      if (phase === 'Failed' || phase === 'Succeeded') {
        return finish(new RuntimeFailureError('runtime_missing', `${where} ended (${phase}) before it ran${pendingReason(object) ? `: ${pendingReason(object)}` : ''}`));
      }
      reason = pendingReason(object) ?? reason;
    };
    const watch = () => {
      if (finished) return;
      watchObjects<V1Pod>(pod.cluster, `/api/v1/namespaces/${encodeURIComponent(pod.namespace)}/pods`, { fieldSelector: `metadata.name=${pod.name}` }, onEvent, watching.signal).then(
        // The server ends a watch now and then: watch again (it starts with the pod's state).
        () => void setImmediate(watch),
        (error: unknown) => {
          if (!finished) finish(apiFailure(error, `watching ${where}`));
        },
      );
    };
    watch();
  });
}

/**
 * Starts the agent in its pod: an exec of the wrapper (container.runtime.ts) with the agent's
 * env as the first line of its stdin, and waits for the wrapper's marker (the agent's process
 * group in the pod). Rejects with the runtime's failure when the exec cannot start it.
 */
async function startAgent(pod: AgentPod, spec: AgentSpec, signal: AbortSignal, options: { protocols?: readonly string[] | undefined; keepAliveMs: number }): Promise<RuntimeTransport> {
  const target = { namespace: pod.namespace, pod: pod.name, container: pod.container };
  const where = `pod ${pod.namespace}/${pod.name}`;
  const exec = await openExec(pod.cluster, target, podAgentArgv(spec), { stdin: true, keepAliveMs: options.keepAliveMs, ...(options.protocols ? { protocols: options.protocols } : {}) });
  exec.stdin.write(envPreamble(spec.env ?? {}));
  const stderr = new PassThrough();
  let pgid: number;
  try {
    pgid = await markerOf(exec, stderr, signal, where);
  } catch (error) {
    exec.close();
    throw error;
  }
  let end: ExecEnd | null = null;
  let ended = false;
  const exited = exec.ended.then(async (result) => {
    // A dropped stream does not end the agent in the pod (its stdin may never see EOF): it is
    // killed there before the loss is reported, so the restart's agent never runs beside it.
    if (result.dropped) await killInPod('SIGKILL');
    end = result;
    ended = true;
    return { exitCode: result.dropped ? null : result.exitCode, signal: null };
  });
  const signalInside = async (name: 'SIGTERM' | 'SIGKILL') => {
    if (ended) return;
    await killInPod(name);
  };
  /** A second exec that signals the agent's process group in the pod; bounded, never rejecting. */
  const killInPod = async (name: 'SIGTERM' | 'SIGKILL') => {
    const command = ['/bin/sh', '-c', signalScript, 'agentvisor-signal', name === 'SIGTERM' ? 'TERM' : 'KILL', String(pgid)];
    try {
      // An exec that opens only after the bound is closed as it comes.
      const opening = openExec(pod.cluster, target, command, { stdin: false, connectTimeoutMs: signalTimeoutMs, ...(options.protocols ? { protocols: options.protocols } : {}) });
      const kill = await boundedCall(opening, signalTimeoutMs, 'the in-pod kill', (late) => late.close());
      await boundedCall(kill.ended, signalTimeoutMs, 'the in-pod kill').catch(() => kill.close());
      kill.close();
    } catch {
      // The stream is gone or the server does not answer: the ladder's next rung, or the pod's deletion, ends it.
    }
  };
  return {
    pid: pgid,
    stdin: exec.stdin,
    stdout: exec.stdout,
    stderr,
    exited,
    closeInput() {
      // v5 carries stdin's EOF alone; over v4 ending stdin would close the whole stream: SIGTERM inside instead.
      if (exec.canCloseStdin) exec.stdin.end();
      else void signalInside('SIGTERM');
    },
    signalInside,
    close: () => exec.close(),
    failureOf(exit, lines): RuntimeFailure | null {
      const result = end as ExecEnd | null;
      if (result?.dropped) return { kind: 'runtime_unreachable', detail: `the exec stream into ${where} dropped before the agent answered: ${result.message}` };
      return wrapperFailure(exit, lines, where);
    },
  };
}

/**
 * Reads the exec's stderr until the wrapper's marker line and returns the pid in it; what
 * follows goes on to `agentStderr` (lines before it too: they are the agent's, or the shell's).
 * Rejects when the exec ends first, with the wrapper's failure or what the stream said.
 */
function markerOf(exec: ExecStream, agentStderr: PassThrough, signal: AbortSignal, where: string): Promise<number> {
  const marker = new RegExp(`^${remotePidMarker} ([0-9]+)$`);
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<number>((resolve, reject) => {
    let pending = '';
    const before: string[] = [];
    const done = () => {
      exec.stderr.off('data', onData);
      signal.removeEventListener('abort', aborted);
    };
    const onData = (chunk: Buffer) => {
      pending += chunk.toString('utf8');
      let newline: number;
      while ((newline = pending.indexOf('\n')) >= 0) {
        const line = pending.slice(0, newline);
        pending = pending.slice(newline + 1);
        const found = marker.exec(line.trim());
        if (!found) {
          before.push(line);
          continue;
        }
        done();
        for (const earlier of before) agentStderr.write(`${earlier}\n`);
        if (pending) agentStderr.write(pending);
        exec.stderr.pipe(agentStderr);
        return resolve(Number(found[1]));
      }
    };
    const aborted = () => {
      done();
      reject(signal.reason);
    };
    exec.stderr.on('data', onData);
    signal.addEventListener('abort', aborted, { once: true });
    void exec.ended.then((end) => {
      if (!exec.stderr.listeners('data').includes(onData)) return;
      done();
      const lines = [...before, ...(pending ? [pending] : [])];
      if (end.dropped) return reject(new RuntimeFailureError('runtime_unreachable', `the exec stream into ${where} dropped before the agent started: ${end.message}`));
      const failure = wrapperFailure({ exitCode: end.exitCode }, lines, where);
      reject(new RuntimeFailureError(failure?.kind ?? 'runtime_missing', failure?.detail ?? `the agent did not start in ${where} (exit ${end.exitCode ?? 'unknown'}${lines.length ? `: ${lines.join(' ')}` : ''}${end.message ? `; ${end.message}` : ''})`));
    });
  });
}

/** What a sweep did with one recorded pod's namespace: the pods of dead supervisors of this host it deleted (or would). */
export interface PodSweep {
  outcome: 'removed' | 'absent' | 'failed';
  /** `namespace/name` of each pod deleted. */
  deleted: string[];
  detail?: string;
}

/**
 * The orphan sweep of a recorded pod's namespace: lists the pods this host's supervisors made
 * there (by label) and deletes each whose supervisor process is gone — the recorded one, and
 * any other a crash left without a record. A live supervisor's pods are never touched.
 */
export async function sweepPods(leftover: PodLeftover): Promise<PodSweep> {
  try {
    const cluster = await openCluster({ kubeconfig: leftover.kubeconfig || undefined, context: leftover.context || undefined });
    const listed = await boundedCall(
      cluster.core.listNamespacedPod({ namespace: leftover.namespace, labelSelector: `${podLabels.managedBy}=agentvisor,${podLabels.host}=${hostLabel()}` }),
      removeTimeoutMs,
      'listing pods',
    );
    const deleted: string[] = [];
    for (const pod of listed.items) {
      const name = pod.metadata?.name;
      if (!name || pod.metadata?.deletionTimestamp) continue;
      const owner = /^([0-9]+)-([0-9]+)$/.exec(pod.metadata?.labels?.[podLabels.supervisor] ?? '');
      if (owner && isSameProcess({ pid: Number(owner[1]), startTime: Number(owner[2]) })) continue; // a live supervisor's
      try {
        await boundedCall(cluster.core.deleteNamespacedPod({ name, namespace: leftover.namespace }), removeTimeoutMs, `deleting pod ${name}`);
        deleted.push(`${leftover.namespace}/${name}`);
      } catch (error) {
        if (statusOf(error) !== 404) return { outcome: 'failed', deleted, detail: apiFailure(error, `deleting pod ${leftover.namespace}/${name}`).detail };
      }
    }
    return { outcome: deleted.length > 0 ? 'removed' : 'absent', deleted };
  } catch (error) {
    return { outcome: 'failed', deleted: [], detail: apiFailure(error, `listing pods in ${leftover.namespace}`).detail || messageOf(error) };
  }
}
