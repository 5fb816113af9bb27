/**
 * Answers the agent's `session/request_permission` by policy: ask the application, allow,
 * deny, allow the read-only tool calls and ask for the rest, or a function of the request. A request nobody answers within
 * `permissionTimeoutMs` is answered `cancelled` (the session machine times it, or this broker
 * on the supervisor's clock when no session machine holds it), and so is every pending
 * request of a turn that is cancelled.
 */
import type { RequestPermissionRequest, RequestPermissionResponse } from '../core/acp-types.js';
import type { Clock } from '../core/clock.js';
import { PendingAsks, sessionGroup } from './pending-asks.js';
import { isReadOnlyToolCall, optionFor, type PermissionOutcome, type PermissionPolicy, type PermissionRequest } from '../core/permission-policy.js';

const cancelled: RequestPermissionResponse = { outcome: { outcome: 'cancelled' } };

export interface PermissionBrokerHooks {
  clock: Clock;
  timeoutMs: number;
  /** Delivers an `'ask'` request to the application; false when nobody listens. */
  ask(request: PermissionRequest): boolean;
  /**
   * Tells the session machine a request is pending, to expire after `timeoutMs`; false when no
   * session machine takes it (then the broker times it).
   */
  pending(agent: string, sessionId: string, requestId: string, timeoutMs: number): boolean;
  settled(agent: string, sessionId: string, requestId: string): void;
  /** Hears each request as it arrives and each answer as it is given (the store's transcript). */
  journal?: {
    requested(requestId: string, request: Pick<PermissionRequest, 'agent' | 'sessionId' | 'toolCall' | 'options'>): void;
    answered(agent: string, sessionId: string, requestId: string, response: RequestPermissionResponse): void;
  };
}

export class PermissionBroker {
  private readonly asks: PendingAsks<RequestPermissionResponse>;

  constructor(private readonly hooks: PermissionBrokerHooks) {
    this.asks = new PendingAsks({ prefix: 'permission', clock: hooks.clock, timeoutMs: hooks.timeoutMs, cancelled });
  }

  /** Answers one request according to `policy`. Never rejects. */
  request(agent: string, params: RequestPermissionRequest, policy: PermissionPolicy, signal: AbortSignal): Promise<RequestPermissionResponse> {
    const validIds = new Set(params.options.map((option) => option.optionId));
    const ask = this.asks.ask(sessionGroup(agent, params.sessionId), signal, (requestId, response) => {
      this.hooks.settled(agent, params.sessionId, requestId);
      this.hooks.journal?.answered(agent, params.sessionId, requestId, response);
    });
    const settledOutcome = ask.answer.then(({ outcome }): PermissionOutcome => (outcome.outcome === 'selected' ? { outcome: 'selected', optionId: outcome.optionId } : { outcome: 'cancelled' }));
    const choose = (optionId: string | undefined) =>
      ask.settle(optionId !== undefined && validIds.has(optionId) ? { outcome: { outcome: 'selected', optionId } } : cancelled);

    if (!this.hooks.pending(agent, params.sessionId, ask.id, this.hooks.timeoutMs)) ask.bound();
    const view = { agent, sessionId: params.sessionId, toolCall: params.toolCall, options: params.options };
    this.hooks.journal?.requested(ask.id, view);

    if (policy === 'allow' || policy === 'deny') choose(optionFor(policy, params.options));
    // A read-only tool call offering an allow option is allowed; anything else is asked below.
    else if (policy === 'allow-reads' && isReadOnlyToolCall(params.toolCall) && optionFor('allow', params.options) !== undefined) choose(optionFor('allow', params.options));
    else if (typeof policy === 'function') {
      Promise.resolve()
        .then(() => policy(view))
        .then(choose, () => ask.settle(cancelled));
    } else {
      const heard = this.hooks.ask({ ...view, respond: (optionId) => choose(optionId), cancel: () => ask.settle(cancelled), settled: settledOutcome });
      if (!heard) ask.settle(cancelled); // nobody listens: do not leave the agent waiting for minutes
    }
    return ask.answer;
  }

  /** Answers `cancelled` to the request `requestId` if it is still pending (its session machine's timeout elapsed). */
  expire(requestId: string): void {
    this.asks.expire(requestId);
  }

  /** Answers `cancelled` to every pending request of one session (its turn was cancelled). */
  cancelSession(agent: string, sessionId: string): void {
    this.asks.cancelGroup(sessionGroup(agent, sessionId));
  }

  get size(): number {
    return this.asks.size;
  }
}
