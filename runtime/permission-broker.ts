/**
 * Answers the agent's `session/request_permission` by policy: ask the application, allow,
 * deny, or a function of the request. A request nobody answers within
 * `permissionTimeoutMs` (on the supervisor's clock) is answered `cancelled`, and so is every
 * pending request of a turn that is cancelled.
 */
import type { RequestPermissionRequest, RequestPermissionResponse } from '../core/acp-types.js';
import type { Clock } from '../core/clock.js';
import { optionFor, type PermissionOutcome, type PermissionPolicy, type PermissionRequest } from '../core/permission-policy.js';

const cancelled: RequestPermissionResponse = { outcome: { outcome: 'cancelled' } };

interface Pending {
  sessionKey: string;
  settle(response: RequestPermissionResponse): void;
}

export interface PermissionBrokerHooks {
  clock: Clock;
  timeoutMs: number;
  /** Delivers an `'ask'` request to the application; false when nobody listens. */
  ask(request: PermissionRequest): boolean;
  /** Tells the session machine a request is pending / settled. */
  pending(agent: string, sessionId: string, requestId: string): void;
  settled(agent: string, sessionId: string, requestId: string): void;
  /** Hears each request as it arrives and each answer as it is given (the store's transcript). */
  journal?: {
    requested(requestId: string, request: Pick<PermissionRequest, 'agent' | 'sessionId' | 'toolCall' | 'options'>): void;
    answered(agent: string, sessionId: string, requestId: string, response: RequestPermissionResponse): void;
  };
}

export class PermissionBroker {
  private readonly pendingRequests = new Map<string, Pending>();
  private nextId = 0;

  constructor(private readonly hooks: PermissionBrokerHooks) {}

  /** Answers one request according to `policy`. Never rejects. */
  request(agent: string, params: RequestPermissionRequest, policy: PermissionPolicy, signal: AbortSignal): Promise<RequestPermissionResponse> {
    const requestId = `permission-${++this.nextId}`;
    const sessionKey = `${agent}\u0000${params.sessionId}`;
    const validIds = new Set(params.options.map((option) => option.optionId));
    let answered!: (response: RequestPermissionResponse) => void;
    const answer = new Promise<RequestPermissionResponse>((resolve) => (answered = resolve));
    const settledOutcome = answer.then(({ outcome }): PermissionOutcome => (outcome.outcome === 'selected' ? { outcome: 'selected', optionId: outcome.optionId } : { outcome: 'cancelled' }));
    return new Promise<RequestPermissionResponse>((resolveRequest) => {
      const resolve = (response: RequestPermissionResponse) => {
        answered(response);
        resolveRequest(response);
      };
      let done = false;
      const timer = this.hooks.clock.setTimeout(() => settle(cancelled), this.hooks.timeoutMs);
      const onAbort = () => settle(cancelled);
      const settle = (response: RequestPermissionResponse) => {
        if (done) return;
        done = true;
        this.hooks.clock.clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        this.pendingRequests.delete(requestId);
        this.hooks.settled(agent, params.sessionId, requestId);
        this.hooks.journal?.answered(agent, params.sessionId, requestId, response);
        resolve(response);
      };
      const choose = (optionId: string | undefined) =>
        settle(optionId !== undefined && validIds.has(optionId) ? { outcome: { outcome: 'selected', optionId } } : cancelled);

      this.pendingRequests.set(requestId, { sessionKey, settle });
      signal.addEventListener('abort', onAbort, { once: true });
      this.hooks.pending(agent, params.sessionId, requestId);
      const view = { agent, sessionId: params.sessionId, toolCall: params.toolCall, options: params.options };
      this.hooks.journal?.requested(requestId, view);

      if (policy === 'allow' || policy === 'deny') return choose(optionFor(policy, params.options));
      if (typeof policy === 'function') {
        Promise.resolve()
          .then(() => policy(view))
          .then(choose, () => settle(cancelled));
        return;
      }
      const heard = this.hooks.ask({ ...view, respond: (optionId) => choose(optionId), cancel: () => settle(cancelled), settled: settledOutcome });
      if (!heard) settle(cancelled); // nobody listens: do not leave the agent waiting for minutes
    });
  }

  /** Answers `cancelled` to every pending request of one session (its turn was cancelled). */
  cancelSession(agent: string, sessionId: string): void {
    const sessionKey = `${agent}\u0000${sessionId}`;
    for (const pending of [...this.pendingRequests.values()]) if (pending.sessionKey === sessionKey) pending.settle(cancelled);
  }

  get size(): number {
    return this.pendingRequests.size;
  }
}
