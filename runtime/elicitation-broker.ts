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

const cancelled: ElicitationAnswer = { action: 'cancel' };
const declined: ElicitationAnswer = { action: 'decline' };
const knownModes: ReadonlySet<unknown> = new Set(['form', 'url']);

export interface ElicitationBrokerHooks {
  clock: Clock;
  timeoutMs: number;
  /** Delivers an `'ask'` request to the application; false when nobody listens. */
  ask(request: ElicitationRequest): boolean;
  /** Tells the session machine a person is being asked (not a stall) / is no longer. */
  pending(agent: string, sessionId: string, requestId: string): void;
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
  private readonly pendingRequests = new Map<string, { agent: string; sessionId: string | null; settle(answer: ElicitationAnswer): void }>();
  private nextId = 0;

  constructor(private readonly hooks: ElicitationBrokerHooks) {}

  /** Answers one request according to `policy` (the session's, or the supervisor's for a request-scoped one). Never rejects. */
  request(agent: string, params: CreateElicitationRequest, policy: ElicitationPolicy, signal: AbortSignal): Promise<ElicitationAnswer> {
    const view = elicitationView(agent, params);
    const requestId = `elicitation-${++this.nextId}`;
    const { sessionId } = view;
    return new Promise<ElicitationAnswer>((resolveRequest) => {
      let done = false;
      let settledAnswer!: (answer: ElicitationAnswer) => void;
      const settled = new Promise<ElicitationAnswer>((resolve) => (settledAnswer = resolve));
      const timer = this.hooks.clock.setTimeout(() => settle(cancelled), this.hooks.timeoutMs);
      const onAbort = () => settle(cancelled);
      const settle = (answer: ElicitationAnswer) => {
        if (done) return;
        done = true;
        this.hooks.clock.clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        this.pendingRequests.delete(requestId);
        if (sessionId !== null) {
          this.hooks.settled(agent, sessionId, requestId);
          this.hooks.journal?.answered(agent, sessionId, requestId, answer);
        }
        settledAnswer(answer);
        resolveRequest(answer);
      };
      this.pendingRequests.set(requestId, { agent, sessionId, settle });
      signal.addEventListener('abort', onAbort, { once: true });
      if (sessionId !== null) {
        this.hooks.pending(agent, sessionId, requestId);
        this.hooks.journal?.requested(requestId, { ...view, sessionId });
      }
      // A mode this client does not know (the schema lets agents name their own) is declined, like any under 'decline'.
      if (policy === 'decline' || !knownModes.has((params as { mode?: unknown }).mode)) return settle(declined);
      if (typeof policy === 'function') {
        Promise.resolve()
          .then(() => policy(view))
          .then(
            (answer) => {
              const issue = elicitationAnswerIssue(view, answer);
              if (issue === null) return settle(answer);
              this.hooks.invalidAnswer?.(view, issue);
              settle(cancelled);
            },
            () => settle(cancelled),
          );
        return;
      }
      const respond = (action: 'accept' | 'decline' | 'cancel', content?: Record<string, ElicitationValue>) => {
        if (done) return;
        const answer = (action === 'accept' ? { action, ...(content !== undefined ? { content } : {}) } : { action }) as ElicitationAnswer;
        const issue = elicitationAnswerIssue(view, answer);
        if (issue !== null) throw invalidOptions(`This elicitation cannot be answered so: ${issue}`, agent);
        settle(answer);
      };
      const heard = this.hooks.ask({ ...view, respond, settled });
      if (!heard) settle(declined); // nobody listens: decline at once, never leave the agent waiting
    });
  }

  /** Answers `cancel` to every pending request of one session (its turn was cancelled). */
  cancelSession(agent: string, sessionId: string): void {
    for (const pending of [...this.pendingRequests.values()]) if (pending.agent === agent && pending.sessionId === sessionId) pending.settle(cancelled);
  }

  get size(): number {
    return this.pendingRequests.size;
  }
}
