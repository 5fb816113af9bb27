/**
 * Answers the agent's `elicitation/create` by policy — decline, ask the application, or a
 * function of the request — supervised like permission requests: a request nobody answers
 * within `elicitationTimeoutMs` (the supervisor's clock) is answered `cancel`, and so is
 * every pending one of a turn that is cancelled or a connection that closes. Answers are
 * checked against the schema the agent requested before they are sent.
 */
import type { CreateElicitationRequest } from '../core/acp-types.js';
import type { Clock } from '../core/clock.js';
import {
  elicitationAnswerIssue,
  elicitationView,
  type ElicitationAnswer,
  type ElicitationPolicy,
  type ElicitationRequest,
  type ElicitationRequestView,
  type ElicitationValue,
} from '../core/elicitation.js';
import { invalidOptions } from '../core/errors.js';
import { PendingAsks, sessionGroup } from './pending-asks.js';

const cancelled: ElicitationAnswer = { action: 'cancel' };
const declined: ElicitationAnswer = { action: 'decline' };
const knownModes: ReadonlySet<unknown> = new Set(['form', 'url']);

export interface ElicitationBrokerHooks {
  clock: Clock;
  timeoutMs: number;
  /** Delivers an `'ask'` request to the application; false when nobody listens. */
  ask(request: ElicitationRequest): boolean;
  /**
   * Tells the session machine a person is being asked (not a stall), to expire after
   * `timeoutMs`; false when no session machine takes it (then the broker times it).
   */
  pending(agent: string, sessionId: string, requestId: string, timeoutMs: number): boolean;
  settled(agent: string, sessionId: string, requestId: string): void;
  /** Hears a session's request and its answer (the store's transcript). */
  journal?: {
    requested(requestId: string, request: ElicitationRequestView & { sessionId: string }): void;
    answered(agent: string, sessionId: string, requestId: string, answer: ElicitationAnswer): void;
  };
  /** Called when an answer is refused (a policy function's answer that does not fit the schema). */
  invalidAnswer?(request: ElicitationRequestView, issue: string): void;
}

export class ElicitationBroker {
  private readonly asks: PendingAsks<ElicitationAnswer>;

  constructor(private readonly hooks: ElicitationBrokerHooks) {
    this.asks = new PendingAsks({ prefix: 'elicitation', clock: hooks.clock, timeoutMs: hooks.timeoutMs, cancelled });
  }

  /** Answers one request according to `policy` (the session's, or the supervisor's for a request-scoped one). Never rejects. */
  request(agent: string, params: CreateElicitationRequest, policy: ElicitationPolicy, signal: AbortSignal): Promise<ElicitationAnswer> {
    const view = elicitationView(agent, params);
    const { sessionId } = view;
    const ask = this.asks.ask(sessionGroup(agent, sessionId), signal, (requestId, answer) => {
      if (sessionId === null) return;
      this.hooks.settled(agent, sessionId, requestId);
      this.hooks.journal?.answered(agent, sessionId, requestId, answer);
    });
    if (sessionId !== null) {
      if (!this.hooks.pending(agent, sessionId, ask.id, this.hooks.timeoutMs)) ask.bound();
      this.hooks.journal?.requested(ask.id, { ...view, sessionId });
    } else ask.bound(); // request-scoped: no session machine to time it
    // A mode this client does not know (the schema lets agents name their own) is declined, like any under 'decline'.
    if (policy === 'decline' || !knownModes.has((params as { mode?: unknown }).mode)) {
      ask.settle(declined);
    } else if (typeof policy === 'function') {
      Promise.resolve()
        .then(() => policy(view))
        .then(
          (answer) => {
            const issue = elicitationAnswerIssue(view, answer);
            if (issue !== null) this.hooks.invalidAnswer?.(view, issue);
            ask.settle(issue === null ? answer : cancelled);
          },
          () => ask.settle(cancelled),
        );
    } else {
      const respond = (action: 'accept' | 'decline' | 'cancel', content?: Record<string, ElicitationValue>) => {
        if (ask.done) return;
        const answer = (action === 'accept' ? { action, ...(content !== undefined ? { content } : {}) } : { action }) as ElicitationAnswer;
        const issue = elicitationAnswerIssue(view, answer);
        if (issue !== null) throw invalidOptions(`This elicitation cannot be answered so: ${issue}`, agent);
        ask.settle(answer);
      };
      const heard = this.hooks.ask({ ...view, respond, settled: ask.answer });
      if (!heard) ask.settle(declined); // nobody listens: decline at once, never leave the agent waiting
    }
    return ask.answer;
  }

  /** Answers `cancel` to the request `requestId` if it is still pending (its session machine's timeout elapsed). */
  expire(requestId: string): void {
    this.asks.expire(requestId);
  }

  /** Answers `cancel` to every pending request of one session (its turn was cancelled). */
  cancelSession(agent: string, sessionId: string): void {
    this.asks.cancelGroup(sessionGroup(agent, sessionId));
  }

  get size(): number {
    return this.asks.size;
  }
}
