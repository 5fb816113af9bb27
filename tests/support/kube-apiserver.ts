/**
 * A stand-in for the Kubernetes API server, for tests without a cluster (NOT Kubernetes:
 * nothing is scheduled, no image is pulled, a "pod" is a directory on this host). It serves
 * what the `kubernetes` runtime's pods use, as the real API does on the wire: pods
 * create/get/list (label and field selectors)/delete/watch, Secrets read by the "kubelet" for
 * env (secretKeyRef, envFrom), bearer-token auth (401 and 403 injectable), and the exec
 * endpoint over WebSocket (`v5.channel.k8s.io` and `v4.channel.k8s.io`: channel 0 stdin, 1
 * stdout, 2 stderr, 3 the metav1.Status with the exit code; v5's `[255, 0]` closes stdin),
 * which runs the command as a real child process here, in the pod's directory, with the pod's
 * env. The test drives each pod's phase (Pending with a reason, Running) and the faults.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WebSocketServer, type WebSocket } from 'ws';

/** A pod as the stand-in keeps it (the subset of v1.Pod the runtime reads and writes). */
export interface StandInPod {
  apiVersion: 'v1';
  kind: 'Pod';
  metadata: { name: string; namespace: string; uid: string; resourceVersion: string; creationTimestamp: string; labels?: Record<string, string>; annotations?: Record<string, string>; deletionTimestamp?: string };
  spec: {
    containers: Array<{ name: string; image: string; command?: string[]; env?: Array<{ name: string; value?: string; valueFrom?: { secretKeyRef?: { name: string; key: string; optional?: boolean } } }>; envFrom?: Array<{ secretRef?: { name: string }; prefix?: string }>; [key: string]: unknown }>;
    [key: string]: unknown;
  };
  status: { phase: string; reason?: string; message?: string; conditions?: Array<{ type: string; status: string; reason?: string; message?: string }>; containerStatuses?: Array<{ name: string; state: { waiting?: { reason: string; message?: string }; running?: object } }> };
}

/** What a new pod becomes: Running at once, or Pending (with a reason, as the API reports it) until the test moves it. */
export type CreatePolicy = 'run' | 'pending' | { unschedulable: string } | { waiting: 'ErrImagePull' | 'ImagePullBackOff' | 'CreateContainerConfigError'; message: string };

interface Exec {
  pod: string;
  socket: WebSocket;
  child: ChildProcess | null;
  command: string[];
}

interface Watcher {
  namespace: string;
  matches(pod: StandInPod): boolean;
  response: ServerResponse;
}

const v5 = 'v5.channel.k8s.io';
const v4 = 'v4.channel.k8s.io';

export class KubeApiStandIn {
  readonly token = `standin-${randomUUID()}`;
  /** Every request, in order (method, path, query). */
  readonly requests: Array<{ method: string; path: string; query: URLSearchParams }> = [];
  /** Every deletion by the API (not by `deletePod`), with its grace period. */
  readonly deletions: Array<{ namespace: string; name: string; gracePeriodSeconds: number | null }> = [];
  /** Answer every request with this status (401, 403) until set back to null. */
  refuse: 401 | 403 | null = null;
  /** What each new pod becomes. */
  onCreate: CreatePolicy = 'run';
  /** When set, a create is stored and answered only once this resolves (a slow admission webhook). */
  holdCreates: Promise<void> | null = null;
  /** When true, a watch is accepted and never answered (not even its headers): an API server that hangs. */
  silentWatches = false;
  /** The next this many pod deletions are answered 503 (an API server in trouble), deleting nothing. */
  failDeletes = 0;
  /** The exec subprotocols served, most preferred first. */
  protocols: string[] = [v5, v4];
  /** Every exec argv, in order (what a real kubelet would run in the container). */
  readonly execCommands: string[][] = [];

  private readonly pods = new Map<string, StandInPod>();
  private readonly dirs = new Map<string, string>();
  private readonly secrets = new Map<string, Record<string, string>>();
  private readonly execs = new Set<Exec>();
  private readonly watchers = new Set<Watcher>();
  private readonly sockets = new Set<Socket>();
  private readonly sockets2 = new WebSocketServer({ noServer: true, handleProtocols: (offered) => this.protocols.find((protocol) => offered.has(protocol)) ?? false });
  private version = 1;

  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  static async start(): Promise<KubeApiStandIn> {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    if (!address || typeof address === 'string') throw new Error('no port');
    const standIn = new KubeApiStandIn(server, address.port);
    server.on('connection', (socket) => {
      standIn.sockets.add(socket);
      socket.on('close', () => standIn.sockets.delete(socket));
    });
    server.on('request', (request, response) => standIn.handle(request, response));
    server.on('upgrade', (request: IncomingMessage, socket: Socket, head: Buffer) => standIn.upgrade(request, socket, head));
    return standIn;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Writes a kubeconfig for this server (bearer token, context `standin`, its default namespace) into `dir`; returns its path. */
  kubeconfig(dir: string, options: { token?: string; name?: string; server?: string } = {}): string {
    const path = join(dir, options.name ?? 'kubeconfig.yaml');
    const config = {
      apiVersion: 'v1',
      kind: 'Config',
      // client-node speaks plain http only to a cluster marked insecure-skip-tls-verify (there is no TLS to verify).
      clusters: [{ name: 'standin', cluster: { server: options.server ?? this.url, 'insecure-skip-tls-verify': true } }],
      users: [{ name: 'standin', user: { token: options.token ?? this.token } }],
      contexts: [{ name: 'standin', context: { cluster: 'standin', user: 'standin', namespace: 'ai' } }],
      'current-context': 'standin',
    };
    writeFileSync(path, JSON.stringify(config, null, 2), { mode: 0o600 });
    return path;
  }

  addSecret(namespace: string, name: string, data: Record<string, string>): void {
    this.secrets.set(`${namespace}/${name}`, { ...data });
  }

  /** The pods there are now (deleted ones are gone at once: the stand-in has no kubelet to wait for). */
  list(namespace?: string): StandInPod[] {
    return [...this.pods.values()].filter((pod) => namespace === undefined || pod.metadata.namespace === namespace);
  }

  /** The test moves a Pending pod to Running (as a kubelet that started its container would). */
  setRunning(namespace: string, name: string): void {
    const pod = this.pods.get(`${namespace}/${name}`);
    if (!pod) throw new Error(`no pod ${namespace}/${name}`);
    pod.status = { phase: 'Running', conditions: [{ type: 'PodScheduled', status: 'True' }, { type: 'Ready', status: 'True' }], containerStatuses: pod.spec.containers.map((container) => ({ name: container.name, state: { running: {} } })) };
    this.changed(pod, 'MODIFIED');
  }

  /** The pod goes away without the API's DELETE (a person's kubectl delete, an eviction, a lost node's pods): its processes die, its streams close. */
  deletePod(namespace: string, name: string): void {
    const pod = this.pods.get(`${namespace}/${name}`);
    if (pod) this.remove(pod);
  }

  /**
   * The pod's node is lost: the node controller marks the pod's Ready condition Unknown (the
   * object stays in the API), the streams to the node drop without a close frame, and what
   * ran there is out of reach (killed here, so that the test leaves nothing behind).
   */
  loseNode(namespace: string, name: string): void {
    const key = `${namespace}/${name}`;
    const pod = this.pods.get(key);
    if (!pod) throw new Error(`no pod ${key}`);
    pod.status = { ...pod.status, phase: 'Running', conditions: [{ type: 'PodScheduled', status: 'True' }, { type: 'Ready', status: 'Unknown' }] };
    this.changed(pod, 'MODIFIED');
    for (const exec of this.execs) if (exec.pod === key) exec.socket.terminate();
    for (const pid of processesMarked(`${podMark}=${pod.metadata.uid}`)) killProcess(pid);
  }

  /** Drops every exec stream of a pod mid-way (a load balancer, a restarted API server): no status, no close frame. */
  dropExecs(name?: string): number {
    let dropped = 0;
    for (const exec of this.execs) {
      if (name !== undefined && exec.pod.slice(exec.pod.indexOf('/') + 1) !== name) continue;
      exec.socket.terminate();
      dropped++;
    }
    return dropped;
  }

  /** The pids of every process running in any pod of this stand-in (what its execs started, and what those started). */
  processes(): number[] {
    return processesMarked(`${podMark}=`).filter((pid) => pid !== process.pid);
  }

  /** How many client connections are open (HTTP keep-alive, watches, exec streams). */
  connections(): number {
    return this.sockets.size;
  }

  /** How many exec streams are open. */
  openExecs(): number {
    return this.execs.size;
  }

  async close(): Promise<void> {
    for (const pod of [...this.pods.values()]) this.remove(pod);
    for (const watcher of this.watchers) watcher.response.end();
    for (const socket of this.sockets) socket.destroy();
    this.sockets2.close();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private remove(pod: StandInPod): void {
    const key = `${pod.metadata.namespace}/${pod.metadata.name}`;
    this.pods.delete(key);
    // The container is gone: whatever ran in it with it (its "cgroup": every process carrying its uid).
    for (const pid of processesMarked(`${podMark}=${pod.metadata.uid}`)) killProcess(pid);
    for (const exec of this.execs) if (exec.pod === key) exec.socket.terminate();
    const dir = this.dirs.get(key);
    if (dir) rmSync(dir, { recursive: true, force: true });
    this.dirs.delete(key);
    this.changed(pod, 'DELETED');
  }

  private changed(pod: StandInPod, type: 'ADDED' | 'MODIFIED' | 'DELETED'): void {
    pod.metadata.resourceVersion = String(++this.version);
    for (const watcher of this.watchers) {
      if (watcher.namespace === pod.metadata.namespace && watcher.matches(pod)) watcher.response.write(`${JSON.stringify({ type, object: pod })}\n`);
    }
  }

  /** The refusal for a request, if any: auth first (401 without the token, the injected 401/403). */
  private refusal(request: IncomingMessage): { code: number; reason: string; message: string } | null {
    const auth = request.headers.authorization ?? '';
    if (this.refuse === 401 || auth !== `Bearer ${this.token}`) return { code: 401, reason: 'Unauthorized', message: 'Unauthorized' };
    if (this.refuse === 403) return { code: 403, reason: 'Forbidden', message: 'pods is forbidden: User "system:serviceaccount:ai:agentvisor" cannot create resource "pods" in API group "" in the namespace "ai"' };
    return null;
  }

  private handle(request: IncomingMessage, response: ServerResponse): void {
    const url = new URL(request.url ?? '/', this.url);
    this.requests.push({ method: request.method ?? 'GET', path: url.pathname, query: url.searchParams });
    const refused = this.refusal(request);
    if (refused) return status(response, refused.code, refused.reason, refused.message);
    const match = /^\/api\/v1\/namespaces\/([^/]+)\/pods(?:\/([^/]+))?$/.exec(url.pathname);
    if (!match) return status(response, 404, 'NotFound', `the server could not find the requested resource (${url.pathname})`);
    const namespace = decodeURIComponent(match[1]!);
    const name = match[2] === undefined ? undefined : decodeURIComponent(match[2]);
    const method = request.method ?? 'GET';
    if (name === undefined && method === 'POST') return void readBody(request).then(async (body) => {
      await this.holdCreates;
      this.create(namespace, body, response);
    });
    if (name === undefined && method === 'GET') {
      const matches = selector(url.searchParams);
      if (url.searchParams.get('watch') === 'true') return this.watch(namespace, matches, response);
      const items = this.list(namespace).filter(matches);
      return json(response, 200, { kind: 'PodList', apiVersion: 'v1', metadata: { resourceVersion: String(this.version) }, items });
    }
    const pod = name === undefined ? undefined : this.pods.get(`${namespace}/${name}`);
    if (!pod) return status(response, 404, 'NotFound', `pods "${name}" not found`);
    if (method === 'GET') return json(response, 200, pod);
    if (method === 'DELETE') {
      if (this.failDeletes > 0) {
        this.failDeletes--;
        return status(response, 503, 'ServiceUnavailable', 'the server is currently unable to handle the request');
      }
      const grace = url.searchParams.get('gracePeriodSeconds');
      return void readBody(request).then((body) => {
        const fromBody = (body as { gracePeriodSeconds?: number } | null)?.gracePeriodSeconds;
        this.deletions.push({ namespace, name: pod.metadata.name, gracePeriodSeconds: grace !== null ? Number(grace) : (fromBody ?? null) });
        this.remove(pod);
        json(response, 200, { ...pod, metadata: { ...pod.metadata, deletionTimestamp: new Date().toISOString() } });
      });
    }
    status(response, 405, 'MethodNotAllowed', `${method} is not supported here`);
  }

  private create(namespace: string, body: unknown, response: ServerResponse): void {
    const pod = body as StandInPod | null;
    const name = pod?.metadata?.name;
    if (!pod || typeof name !== 'string' || !/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(name) || !Array.isArray(pod.spec?.containers) || pod.spec.containers.length === 0) {
      return status(response, 422, 'Invalid', 'Pod is invalid: metadata.name or spec.containers');
    }
    const key = `${namespace}/${name}`;
    if (this.pods.has(key)) return status(response, 409, 'AlreadyExists', `pods "${name}" already exists`);
    const made: StandInPod = {
      ...pod,
      metadata: { ...pod.metadata, namespace, uid: randomUUID(), resourceVersion: String(++this.version), creationTimestamp: new Date().toISOString() },
      status: { phase: 'Pending' },
    };
    const policy = this.onCreate;
    if (policy === 'run') {
      made.status = { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }], containerStatuses: made.spec.containers.map((container) => ({ name: container.name, state: { running: {} } })) };
    } else if (policy !== 'pending' && 'unschedulable' in policy) {
      made.status = { phase: 'Pending', conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message: policy.unschedulable }] };
    } else if (policy !== 'pending') {
      made.status = { phase: 'Pending', conditions: [{ type: 'PodScheduled', status: 'True' }], containerStatuses: made.spec.containers.map((container) => ({ name: container.name, state: { waiting: { reason: policy.waiting, message: policy.message } } })) };
    }
    this.pods.set(key, made);
    this.dirs.set(key, mkdtempSync(join(tmpdir(), `standin-pod-${name}-`)));
    this.changed(made, 'ADDED');
    json(response, 201, made);
  }

  private watch(namespace: string, matches: (pod: StandInPod) => boolean, response: ServerResponse): void {
    if (this.silentWatches) return; // the request stays open, unanswered, until the client gives up (or close())
    response.writeHead(200, { 'content-type': 'application/json' });
    // As the API does for a watch without a resourceVersion: the current state first.
    for (const pod of this.list(namespace).filter(matches)) response.write(`${JSON.stringify({ type: 'ADDED', object: pod })}\n`);
    const watcher: Watcher = { namespace, matches, response };
    this.watchers.add(watcher);
    response.on('close', () => this.watchers.delete(watcher));
  }

  private upgrade(request: IncomingMessage, socket: Socket, head: Buffer): void {
    const url = new URL(request.url ?? '/', this.url);
    this.requests.push({ method: 'UPGRADE', path: url.pathname, query: url.searchParams });
    const fail = (code: number, reason: string, message: string) => {
      const body = JSON.stringify({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code });
      socket.end(`HTTP/1.1 ${code} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
    };
    const refused = this.refusal(request);
    if (refused) return fail(refused.code, refused.reason, refused.message);
    const match = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)\/exec$/.exec(url.pathname);
    if (!match) return fail(404, 'NotFound', 'no such endpoint');
    const key = `${decodeURIComponent(match[1]!)}/${decodeURIComponent(match[2]!)}`;
    const pod = this.pods.get(key);
    if (!pod) return fail(404, 'NotFound', `pods "${match[2]}" not found`);
    if (pod.status.phase !== 'Running') return fail(400, 'BadRequest', `pod ${match[2]} is not running: ${pod.status.phase}`);
    const command = url.searchParams.getAll('command');
    this.sockets2.handleUpgrade(request, socket, head, (ws) => this.exec(key, pod, command, url.searchParams.get('stdin') === 'true', ws));
  }

  /** Runs an exec'd command here, as a real child, its stdio over the channels. */
  private exec(key: string, pod: StandInPod, command: string[], withStdin: boolean, socket: WebSocket): void {
    this.execCommands.push(command);
    const exec: Exec = { pod: key, socket, child: null, command };
    this.execs.add(exec);
    const send = (channel: number, data: Buffer) => {
      if (socket.readyState === socket.OPEN) socket.send(Buffer.concat([Buffer.from([channel]), data]));
    };
    const finish = (result: { status: string; message?: string; reason?: string; details?: object }) => {
      send(3, Buffer.from(JSON.stringify({ metadata: {}, ...result })));
      socket.close(1000);
    };
    const [file, ...args] = command;
    if (!file) return finish({ status: 'Failure', message: 'no command', reason: 'BadRequest' });
    let child: ChildProcess;
    try {
      child = spawn(file, args, { cwd: this.dirs.get(key), env: this.podEnv(pod), detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
    } catch (error) {
      return finish({ status: 'Failure', message: String(error), reason: 'InternalError' });
    }
    exec.child = child;
    child.stdin!.on('error', () => {});
    if (!withStdin) child.stdin!.end();
    child.stdout!.on('data', (chunk: Buffer) => send(1, chunk));
    child.stderr!.on('data', (chunk: Buffer) => send(2, chunk));
    socket.on('message', (data: Buffer) => {
      if (data[0] === 0) child.stdin!.write(data.subarray(1));
      else if (data[0] === 255 && data[1] === 0 && socket.protocol === v5) child.stdin!.end();
    });
    // The stream torn down: the command reads EOF, and goes on (as a kubelet leaves it).
    socket.on('close', () => {
      child.stdin!.end();
      this.execs.delete(exec);
    });
    child.on('error', (error) => finish({ status: 'Failure', message: `exec failed: ${error.message}`, reason: 'InternalError' }));
    child.on('close', (code, signal) => {
      const exitCode = code ?? 128 + (signal ? signalNumber(signal) : 0);
      if (exitCode === 0) return finish({ status: 'Success' });
      finish({
        status: 'Failure',
        message: `command terminated with non-zero exit code: error executing command [${command.join(' ')}]: exit status ${exitCode}`,
        reason: 'NonZeroExitCode',
        details: { causes: [{ reason: 'ExitCode', message: String(exitCode) }] },
      });
    });
  }

  /** The container's env as a kubelet makes it: PATH and HOME, then the spec's env with Secrets resolved. */
  private podEnv(pod: StandInPod): Record<string, string> {
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: this.dirs.get(`${pod.metadata.namespace}/${pod.metadata.name}`) ?? '/',
      HOSTNAME: pod.metadata.name,
      [podMark]: pod.metadata.uid,
    };
    const container = pod.spec.containers[0]!;
    for (const from of container.envFrom ?? []) {
      const data = from.secretRef ? this.secrets.get(`${pod.metadata.namespace}/${from.secretRef.name}`) : undefined;
      for (const [name, value] of Object.entries(data ?? {})) env[`${from.prefix ?? ''}${name}`] = value;
    }
    for (const variable of container.env ?? []) {
      const ref = variable.valueFrom?.secretKeyRef;
      const value = ref ? this.secrets.get(`${pod.metadata.namespace}/${ref.name}`)?.[ref.key] : variable.value;
      if (value !== undefined) env[variable.name] = value;
    }
    return env;
  }
}

/** Equality label selectors (`a=b,c=d`) and `metadata.name=` field selectors. */
function selector(query: URLSearchParams): (pod: StandInPod) => boolean {
  const labels = (query.get('labelSelector') ?? '').split(',').filter(Boolean).map((part) => part.split('=') as [string, string]);
  const fields = (query.get('fieldSelector') ?? '').split(',').filter(Boolean).map((part) => part.split('=') as [string, string]);
  return (pod) =>
    labels.every(([key, value]) => pod.metadata.labels?.[key] === value) &&
    fields.every(([key, value]) => (key === 'metadata.name' ? pod.metadata.name === value : key === 'metadata.namespace' ? pod.metadata.namespace === value : false));
}

function json(response: ServerResponse, code: number, body: unknown): void {
  const text = JSON.stringify(body);
  response.writeHead(code, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  response.end(text);
}

function status(response: ServerResponse, code: number, reason: string, message: string): void {
  json(response, code, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code });
}

function readBody(request: IncomingMessage): Promise<unknown> {
  return new Promise((resolve) => {
    let text = '';
    request.setEncoding('utf8');
    request.on('data', (chunk: string) => (text += chunk));
    request.on('end', () => {
      try {
        resolve(text ? JSON.parse(text) : null);
      } catch {
        resolve(null);
      }
    });
  });
}

/** The variable every process of a pod carries (its uid): what stands in for the container's cgroup. */
const podMark = 'STANDIN_POD_UID';

/** Live processes whose environment holds `mark`. */
function processesMarked(mark: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const environ = readFileSync(`/proc/${entry}/environ`, 'latin1');
      if (!environ.split('\0').some((variable) => variable.startsWith(mark))) continue;
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const state = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
      if (state !== 'Z' && state !== 'X') pids.push(Number(entry));
    } catch {
      // gone, or not ours to read
    }
  }
  return pids;
}

function killProcess(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // gone
  }
}

function signalNumber(signal: NodeJS.Signals): number {
  const numbers: Partial<Record<NodeJS.Signals, number>> = { SIGHUP: 1, SIGINT: 2, SIGKILL: 9, SIGTERM: 15, SIGPIPE: 13 };
  return numbers[signal] ?? 1;
}
