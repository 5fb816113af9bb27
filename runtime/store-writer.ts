/**
 * Writes to the store in batches, each applied by the store in one transaction, so a host
 * that crashes loses at most its last batch and never leaves half of one. A batch is the
 * writes of one event-loop tick, committed at the end of that tick (`setImmediate`); while
 * writes keep coming tick after tick (a stream), the ticks of up to `commitEveryMs` go into
 * one batch — a commit costs ~20-40 µs whatever it holds, more than a whole update's
 * delivery when a fast stream brings only a few updates a tick. Batches are applied in
 * order, one at a time, also for a store that answers with promises. A failed batch (a full
 * disk, say) is reported, never thrown at the code that produced the writes: the agents
 * keep running.
 */
import { AgentError, storeFailed } from '../core/errors.js';
import { clockNow, realClock, type Clock } from '../core/clock.js';
import type { Retention, Store, StoreWrite } from '../core/store.js';

export interface StoreWriterOptions {
  retention: Retention;
  /** How often retention is enforced (real time, ms): at the first batch, then at most this often. */
  pruneEveryMs: number;
  /** A failed write or prune; `droppedWrites` counts the writes lost since the last report. */
  onError(error: AgentError, droppedWrites: number): void;
  /**
   * A batch is committed at most this long (ms) after the batch before it: writes within
   * that window wait for its end, so a host crash loses at most this much of a stream
   * (default {@link defaultCommitEveryMs}; 0: every tick).
   */
  commitEveryMs?: number;
  /** The clock of that window (the real one by default; a SimulatedClock in tests). */
  clock?: Clock;
}

/** How far apart commits of a busy stream are by default (ms). */
export const defaultCommitEveryMs = 20;

/** Failures are reported at most this often; the ones in between are counted. */
const errorReportEveryMs = 1_000;

export class StoreWriter {
  private pending: StoreWrite[] = [];
  /** The flush due: at the end of this tick, or (a timer) at the end of the commit window. */
  private scheduled: { immediate: NodeJS.Immediate } | { timer: unknown } | null = null;
  /** When the last batch was taken (the clock's time). */
  private lastCommitAt = Number.NEGATIVE_INFINITY;
  private readonly commitEveryMs: number;
  private readonly clock: Clock;
  /** The batches in flight, in order. */
  private chain: Promise<void> = Promise.resolve();
  private lastPruneAt = Number.NEGATIVE_INFINITY;
  private lastErrorAt = Number.NEGATIVE_INFINITY;
  private droppedWrites = 0;
  private closing: Promise<void> | null = null;

  constructor(
    readonly store: Store,
    private readonly options: StoreWriterOptions,
  ) {
    this.commitEveryMs = options.commitEveryMs ?? defaultCommitEveryMs;
    this.clock = options.clock ?? realClock;
  }

  /** Queues one write for this tick's batch. Ignored once the writer is closed. */
  add(write: StoreWrite): void {
    if (this.closing) return;
    this.pending.push(write);
    if (this.scheduled) return;
    // At most one window away, also when the clock stepped back since the last commit.
    const wait = Math.min(this.lastCommitAt + this.commitEveryMs - clockNow(this.clock), this.commitEveryMs);
    this.scheduled = wait > 0 ? { timer: this.clock.setTimeout(() => this.flush(), wait) } : { immediate: setImmediate(() => this.flush()) };
  }

  /** Resolves once every write added so far has been applied (or has failed and been reported). */
  drain(): Promise<void> {
    this.flush();
    return this.chain;
  }

  /** Applies what is queued, enforces retention once more, then closes the store. Idempotent. */
  close(): Promise<void> {
    this.closing ??= this.drain().then(async () => {
      for (const step of [() => this.store.prune(this.options.retention, Date.now()), () => this.store.close()]) {
        try {
          await step();
        } catch (error) {
          this.report(error, 0);
        }
      }
    });
    return this.closing;
  }

  private flush(): void {
    const scheduled = this.scheduled;
    if (scheduled) {
      if ('immediate' in scheduled) clearImmediate(scheduled.immediate);
      else this.clock.clearTimeout(scheduled.timer);
    }
    this.scheduled = null;
    if (this.pending.length === 0) return;
    const batch = this.pending;
    this.pending = [];
    this.lastCommitAt = clockNow(this.clock);
    this.chain = this.chain.then(() => this.apply(batch));
  }

  private async apply(batch: StoreWrite[]): Promise<void> {
    try {
      await this.store.write(batch);
    } catch (error) {
      this.report(error, batch.length);
      return;
    }
    const now = Date.now();
    if (now - this.lastPruneAt < this.options.pruneEveryMs) return;
    this.lastPruneAt = now;
    try {
      await this.store.prune(this.options.retention, now);
    } catch (error) {
      this.report(error, 0);
    }
  }

  private report(error: unknown, lost: number): void {
    this.droppedWrites += lost;
    const now = Date.now();
    if (now - this.lastErrorAt < errorReportEveryMs) return;
    this.lastErrorAt = now;
    const dropped = this.droppedWrites;
    this.droppedWrites = 0;
    const failure = error instanceof AgentError ? error : storeFailed(`The store failed: ${error instanceof Error ? error.message : String(error)}`, error);
    this.options.onError(failure, dropped);
  }
}
