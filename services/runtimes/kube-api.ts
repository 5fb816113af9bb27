/**
 * The Kubernetes API as the `kubernetes` runtime's pods need it (docs/runtimes-kubernetes.md):
 * `@kubernetes/client-node`, loaded only when a pod is made or swept (importing it costs most
 * of a second, which no other command and no other agent pays), a cluster from a kubeconfig
 * and a context, and the API's failures as the runtime kinds of core/errors.ts.
 */
import { request as httpRequest, STATUS_CODES, type RequestOptions } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { createInterface } from 'node:readline';
import type { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import type { RuntimeFailure } from './runtime.js';

type ClientModule = typeof import('@kubernetes/client-node');

let loading: Promise<ClientModule> | null = null;

/** The client library, imported on first use. */
export function kubeClientModule(): Promise<ClientModule> {
  return (loading ??= import('@kubernetes/client-node'));
}

/** How a cluster is reached: the spec's kubeconfig file and context ('' or absent: the defaults, KUBECONFIG or ~/.kube/config or in-cluster). */
export interface ClusterAddress {
  kubeconfig?: string | undefined;
  context?: string | undefined;
}

/** A reachable cluster: its configuration (credentials included: never recorded) and the core API. */
export interface Cluster {
  config: KubeConfig;
  core: CoreV1Api;
  client: ClientModule;
}

/** The error a runtime failure rejects with: an Error carrying the kind. */
export class RuntimeFailureError extends Error implements RuntimeFailure {
  constructor(
    readonly kind: RuntimeFailure['kind'],
    readonly detail: string,
  ) {
    super(detail);
    this.name = 'RuntimeFailureError';
  }
}

/** Loads the cluster an address names; rejects `runtime_missing` for a kubeconfig or context that is not there. */
export async function openCluster(address: ClusterAddress): Promise<Cluster> {
  const client = await kubeClientModule();
  const config = new client.KubeConfig();
  try {
    if (address.kubeconfig) config.loadFromFile(address.kubeconfig);
    else config.loadFromDefault();
    if (address.context) config.setCurrentContext(address.context);
  } catch (error) {
    throw new RuntimeFailureError('runtime_missing', `the kubeconfig cannot be used: ${messageOf(error)}`);
  }
  if (address.context && config.getContextObject(address.context) === null) {
    throw new RuntimeFailureError('runtime_missing', `context ${address.context} does not exist in the kubeconfig`);
  }
  // With no kubeconfig anywhere (no KUBECONFIG, no ~/.kube/config, not in a pod), the client
  // library makes one up for http://localhost:8080: refused, and retried as unreachable forever.
  if (!address.kubeconfig && isMadeUpConfig(config)) {
    throw new RuntimeFailureError('runtime_missing', 'no kubeconfig was found: give the runtime a kubeconfig, or set KUBECONFIG, or write ~/.kube/config (in a pod: mount its service account token)');
  }
  const cluster = config.getCurrentCluster();
  if (!cluster) throw new RuntimeFailureError('runtime_missing', 'the kubeconfig names no cluster for its current context');
  if (!isHttpUrl(cluster.server)) throw new RuntimeFailureError('runtime_missing', `the kubeconfig's cluster ${cluster.name} has no http(s) server address (${JSON.stringify(cluster.server)})`);
  if (cluster.server.startsWith('http:') && !cluster.skipTLSVerify) {
    throw new RuntimeFailureError('runtime_missing', `the kubeconfig's cluster ${cluster.name} is plain http (${cluster.server}), which the client library takes only with insecure-skip-tls-verify: true`);
  }
  // The credentials now, before any request: a credential plugin that fails (a login needed, a
  // command not installed) or a certificate file that is not there is the kubeconfig's
  // problem, not an API server that cannot be reached (which is retried).
  try {
    await config.applyToHTTPSOptions({});
  } catch (error) {
    throw new RuntimeFailureError('runtime_auth_failed', `the kubeconfig's credentials cannot be used: ${messageOf(error).trim() || 'its credential plugin failed'}`);
  }
  return { config, core: config.makeApiClient(client.CoreV1Api), client };
}

function isHttpUrl(text: string): boolean {
  try {
    const { protocol } = new URL(text);
    return protocol === 'https:' || protocol === 'http:';
  } catch {
    return false;
  }
}

/** The stand-in configuration `loadFromDefault()` makes when it finds none (client-node 1.x). */
function isMadeUpConfig(config: KubeConfig): boolean {
  const cluster = config.getCurrentCluster();
  return config.getCurrentContext() === 'loaded-context' && cluster?.name === 'cluster' && cluster.server === 'http://localhost:8080' && config.getCurrentUser()?.name === 'user';
}

/**
 * The URL of `path` on the cluster's API server (its own path prefix kept), with `query`; a
 * query value that is an array is repeated (`command=a&command=b`). {@link openCluster} made
 * sure the cluster has an http(s) server.
 */
export function apiUrl(cluster: Cluster, path: string, query: Record<string, string | readonly string[]>): URL {
  const url = new URL(cluster.config.getCurrentCluster()!.server);
  url.pathname = `${url.pathname.replace(/\/$/, '')}${path}`;
  for (const [key, value] of Object.entries(query)) {
    if (typeof value === 'string') url.searchParams.set(key, value);
    else for (const each of value) url.searchParams.append(key, each);
  }
  return url;
}

/** Network failures: the API server cannot be reached (as opposed to refusing). */
const unreachableCodes = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH', 'ETIMEDOUT', 'ECONNRESET', 'EAI_AGAIN', 'EPIPE', 'UND_ERR_SOCKET', 'UND_ERR_CONNECT_TIMEOUT']);

/** The HTTP status of an API error, if it carries one (ApiException's `code`, Watch's `statusCode`). */
export function statusOf(error: unknown): number | null {
  if (typeof error !== 'object' || error === null) return null;
  const { code, statusCode } = error as { code?: unknown; statusCode?: unknown };
  if (typeof code === 'number') return code;
  if (typeof statusCode === 'number') return statusCode;
  return null;
}

/**
 * An API call's failure as a runtime failure: 401/403 `runtime_auth_failed` (never retried by
 * itself), a network failure, a 5xx, 408 or 429 `runtime_unreachable` (retried with the backoff), a
 * missing namespace or a refused pod `runtime_missing`. `what` says what was being done.
 */
export function apiFailure(error: unknown, what: string): RuntimeFailureError {
  if (error instanceof RuntimeFailureError) return error;
  const status = statusOf(error);
  const message = apiMessage(error);
  if (status === 401) return new RuntimeFailureError('runtime_auth_failed', `${what}: the API server refused the credentials (401 Unauthorized)${message ? `: ${message}` : ''}`);
  if (status === 403) return new RuntimeFailureError('runtime_auth_failed', `${what}: forbidden (403)${message ? `: ${message}` : ''}`);
  // 5xx, and 408/429 (a timeout, API Priority and Fairness throttling): the server is there but not serving now — retried.
  if (status !== null && (status >= 500 || status === 408 || status === 429)) return new RuntimeFailureError('runtime_unreachable', `${what}: the API server answered ${status}${message ? `: ${message}` : ''}`);
  if (status !== null) return new RuntimeFailureError('runtime_missing', `${what}: the API server answered ${status}${message ? `: ${message}` : ''}`);
  if (networkCode(error) !== null) return new RuntimeFailureError('runtime_unreachable', `${what}: the API server cannot be reached: ${messageOf(error)}`);
  return new RuntimeFailureError('runtime_unreachable', `${what}: ${messageOf(error)}`);
}

/** The network error code somewhere in an error's causes, if any. */
function networkCode(error: unknown): string | null {
  for (let cause = error, depth = 0; cause && typeof cause === 'object' && depth < 5; cause = (cause as { cause?: unknown }).cause, depth++) {
    const code = (cause as { code?: unknown; errno?: unknown }).code;
    if (typeof code === 'string' && unreachableCodes.has(code)) return code;
  }
  const text = messageOf(error);
  return [...unreachableCodes].find((code) => text.includes(code)) ?? null;
}

/** The Status message an API error carries (`pods is forbidden: …`), else ''. */
function apiMessage(error: unknown): string {
  const body = (error as { body?: unknown }).body;
  if (typeof body === 'string') {
    try {
      const parsed = JSON.parse(body) as { message?: unknown };
      return typeof parsed.message === 'string' ? parsed.message : '';
    } catch {
      return '';
    }
  }
  if (body && typeof body === 'object' && typeof (body as { message?: unknown }).message === 'string') return (body as { message: string }).message;
  return '';
}

export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * A watch of `path` (`?watch=true` and `query`): each event to `onEvent` as its line comes;
 * resolves when the server ends the watch, rejects with the API's status (`statusCode`) or a
 * network error. `signal` ends it at any point, before the answer's headers too — the client
 * library's Watch can be aborted only once they came, so an API server that accepts and never
 * answers would hold it (and its socket) for good.
 */
export async function watchObjects<T>(cluster: Cluster, path: string, query: Record<string, string>, onEvent: (type: string, object: T) => void, signal: AbortSignal): Promise<void> {
  const url = apiUrl(cluster, path, { ...query, watch: 'true' });
  const options: RequestOptions = { method: 'GET', headers: {} };
  await cluster.config.applyToHTTPSOptions(options);
  signal.throwIfAborted();
  await new Promise<void>((resolve, reject) => {
    const request = (url.protocol === 'https:' ? httpsRequest : httpRequest)(url, { ...options, signal }, (response) => {
      if (response.statusCode !== 200) {
        response.resume();
        const error = new Error(STATUS_CODES[response.statusCode ?? 500] ?? `HTTP ${response.statusCode}`) as Error & { statusCode?: number };
        error.statusCode = response.statusCode;
        reject(error);
        return;
      }
      const lines = createInterface({ input: response, crlfDelay: Infinity });
      lines.on('line', (line) => {
        let event: { type?: unknown; object?: unknown };
        try {
          event = JSON.parse(line) as { type?: unknown; object?: unknown };
        } catch {
          return; // not an event
        }
        if (typeof event.type === 'string') onEvent(event.type, event.object as T);
      });
      // An aborted or broken watch errors its response (handled here) and readline passes the
      // error on to its interface too: the same error, once is enough.
      response.on('error', reject);
      lines.on('error', () => {});
      lines.on('close', () => (response.errored ? reject(response.errored) : resolve()));
    });
    request.on('error', reject);
    request.end();
  });
}

