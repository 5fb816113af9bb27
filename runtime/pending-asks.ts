/**
 * The questions an agent is waiting on a person for — permission requests, elicitations —
 * each answered exactly once: by its policy or the person, or `cancelled` when its turn is
 * cancelled, its request is aborted (the connection closed, `$/cancel_request`), or nobody
 * answered within the timeout. The timeout is the session machine's (`askTimeout`, it
 * `expire()`s the question); a question no session machine holds — a session agentvisor does
 * not supervise, a request-scoped elicitation — is `bound()` here, on the supervisor's clock.
 * The brokers decide what to ask and how to check an answer; this is what they share.
 */
import type { Clock } from '../core/clock.js';

/** One open question. */
export interface PendingAsk<Answer> {
  readonly id: string;
  /** Answers it; later answers are ignored. */
  settle(answer: Answer): void;
  /** True once answered. */
  readonly done: boolean;
  /** Resolves with the answer, however it came. */
  readonly answer: Promise<Answer>;
  /** Answers it `cancelled` after the timeout on the supervisor's clock (when no session machine times it). */
  bound(): void;
}

export class PendingAsks<Answer> {
  private readonly open = new Map<string, { group: string; settle(answer: Answer): void }>();
  private nextId = 0;

  constructor(
    private readonly options: {
      /** Ids are `<prefix>-<n>`. */
      prefix: string;
      clock: Clock;
      timeoutMs: number;
      /** The answer of a question cancelled, aborted or timed out. */
      cancelled: Answer;
    },
  ) {}

  /**
   * Opens a question of `group` (its session), bounded by `signal` (and by its timeout, see
   * the module's comment); `onSettled` runs once, with the answer, before `answer` resolves.
   */
  ask(group: string, signal: AbortSignal, onSettled: (id: string, answer: Answer) => void): PendingAsk<Answer> {
    const { clock, timeoutMs, cancelled } = this.options;
    const id = `${this.options.prefix}-${++this.nextId}`;
    let done = false;
    let resolveAnswer!: (answer: Answer) => void;
    const answer = new Promise<Answer>((resolve) => (resolveAnswer = resolve));
    const onAbort = () => settle(cancelled);
    let timer: ReturnType<Clock['setTimeout']> | undefined;
    const settle = (given: Answer) => {
      if (done) return;
      done = true;
      if (timer !== undefined) clock.clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      this.open.delete(id);
      onSettled(id, given);
      resolveAnswer(given);
    };
    this.open.set(id, { group, settle });
    signal.addEventListener('abort', onAbort, { once: true });
    return {
      id,
      settle,
      answer,
      bound() {
        if (!done && timer === undefined) timer = clock.setTimeout(onAbort, timeoutMs);
      },
      get done() {
        return done;
      },
    };
  }

  /** Answers `cancelled` to the question `id` if it is still open (its session machine's timeout elapsed). */
  expire(id: string): void {
    this.open.get(id)?.settle(this.options.cancelled);
  }

  /** Answers `cancelled` to every open question of `group` (its turn was cancelled). */
  cancelGroup(group: string): void {
    for (const question of [...this.open.values()]) if (question.group === group) question.settle(this.options.cancelled);
  }

  get size(): number {
    return this.open.size;
  }
}

/** The group of a session's questions: its turn's cancel answers them all. */
export function sessionGroup(agent: string, sessionId: string | null): string {
  return `${agent}\u0000${sessionId ?? ''}`;
}
