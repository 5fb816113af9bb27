/**
 * Writes to the store in batches: every write of one event-loop tick goes into one batch,
 * applied by the store in one transaction, so a host that crashes loses at most the batch
 * of its last tick and never leaves half of one. Batches are applied in order, one at a
 * time, also for a store that answers with promises. A failed batch (a full disk, say) is
 * reported, never thrown at the code that produced the writes: the agents keep running.
 */
import { AgentError, storeFailed } from '../core/errors.js';
import type { Retention, Store, StoreWrite } from '../core/store.js';

export interface StoreWriterOptions {
  retention: Retention;
  /** How often retention is enforced (real time, ms): at the first batch, then at most this often. */
  pruneEveryMs: number;
  /** A failed write or prune; `droppedWrites` counts the writes lost since the last report. */
  onError(error: AgentError, droppedWrites: number): void;
}

/** Failures are reported at most this often; the ones in between are counted. */
const errorReportEveryMs = 1_000;

export class StoreWriter {
  private pending: StoreWrite[] = [];
  private scheduled: NodeJS.Immediate | null = null;
  /** The batches in flight, in order. */
  private chain: Promise<void> = Promise.resolve();
  private lastPruneAt = Number.NEGATIVE_INFINITY;
  private lastErrorAt = Number.NEGATIVE_INFINITY;
  private droppedWrites = 0;
  private closing: Promise<void> | null = null;

  constructor(
    readonly store: Store,
    private readonly options: StoreWriterOptions,
  ) {}

  /** Queues one write for this tick's batch. Ignored once the writer is closed. */
  add(write: StoreWrite): void {
    if (this.closing) return;
    this.pending.push(write);
    this.scheduled ??= setImmediate(() => this.flush());
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
    if (this.scheduled) clearImmediate(this.scheduled);
    this.scheduled = null;
    if (this.pending.length === 0) return;
    const batch = this.pending;
    this.pending = [];
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
