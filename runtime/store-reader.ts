/**
 * Reading back what the store keeps: sessions, a session's transcript, an agent's stderr
 * lines and the event log. Every read first waits for the writes queued so far, so a caller
 * reads what it has just seen happen. Long reads are async iterators over pages; `follow`
 * keeps an agent's log open, waking on each new line and reading it back from the store,
 * so no line is missed or repeated between the stored ones and the live ones.
 */
import { abortedError, AgentError, failures, invalidOptions, sessionNotFound, toError } from '../core/errors.js';
import type { EventEntry, LogEntry, Page, Store, StoredSession, StoreStats, TranscriptEntry } from '../core/store.js';
import type { EventHub } from '../util/event-hub.js';
import type { RuntimeEvents } from './session-registry.js';
import type { StoreWriter } from './store-writer.js';

/** Where a read starts and how much it returns. */
export interface ReadRange {
  /** Entries after this `seq` (default 0: from the first). */
  after?: number;
  /** At most this many entries in all (default: no limit). */
  limit?: number;
  signal?: AbortSignal;
}

/** Entries read from the store per page. */
const pageSize = 500;

export class StoreReader {
  private closed: Promise<void> | null = null;
  /** Wakes followers when the reader closes (shutdown). */
  private readonly closing = new AbortController();

  constructor(
    private readonly store: Store,
    private readonly writer: StoreWriter,
    private readonly events: EventHub<RuntimeEvents>,
  ) {}

  async sessions(filter: { agent?: string; cwd?: string; sessionId?: string }): Promise<StoredSession[]> {
    await this.ready('sessions');
    return this.store.sessions(filter);
  }

  /**
   * The stored session `sessionId` (of `agent`, when given). Rejects `session_not_found`, or
   * `invalid_options` when several agents have a session of that id and no agent is named.
   */
  async find(sessionId: string, agent?: string): Promise<StoredSession> {
    const found = await this.sessions({ sessionId, ...(agent === undefined ? {} : { agent }) });
    if (found.length === 0) throw sessionNotFound(sessionId, agent);
    if (found.length > 1) throw invalidOptions(`Agents ${found.map((session) => session.agent).join(', ')} each have a session ${sessionId}: name the agent`);
    return found[0]!;
  }

  async stats(): Promise<StoreStats> {
    await this.ready('stats');
    return this.store.stats();
  }

  transcript(agent: string, sessionId: string, range: ReadRange = {}): AsyncIterableIterator<TranscriptEntry> {
    return this.pages('history', (page) => this.store.transcript(agent, sessionId, page), range);
  }

  eventLog(filter: { agent?: string }, range: ReadRange = {}): AsyncIterableIterator<EventEntry> {
    return this.pages('events', (page) => this.store.events(filter, page), range);
  }

  /**
   * An agent's stderr lines; with `follow`, then every new line until `return()`, shutdown,
   * or the signal (which ends a follow quietly, and rejects a plain read `aborted`).
   */
  logs(agent: string, range: ReadRange & { follow?: boolean } = {}): AsyncIterableIterator<LogEntry> {
    const stored = this.pages('logs', (page) => this.store.logs(agent, page), range);
    if (!range.follow) return stored;
    return this.follow(agent, stored, range);
  }

  /** Writes what is queued and closes the store (shutdown). Reads after that reject `shutting_down`. */
  close(): Promise<void> {
    this.closing.abort();
    this.closed ??= this.writer.close();
    return this.closed;
  }

  private async ready(what: string): Promise<void> {
    if (this.closed) throw toError(what, failures.shuttingDown(what, 'read the store for'));
    await this.writer.drain();
  }

  private async *pages<T extends { seq: number }>(what: string, read: (page: Page) => T[] | Promise<T[]>, range: ReadRange): AsyncIterableIterator<T> {
    let after = range.after ?? 0;
    let left = range.limit ?? Number.POSITIVE_INFINITY;
    while (left > 0) {
      if (range.signal?.aborted) throw abortedError(what, range.signal);
      await this.ready(what);
      const entries = await read({ after, limit: Math.min(pageSize, left) });
      for (const entry of entries) {
        yield entry;
        after = entry.seq;
        left--;
      }
      if (entries.length < pageSize) return;
    }
  }

  private async *follow(agent: string, stored: AsyncIterableIterator<LogEntry>, range: ReadRange): AsyncIterableIterator<LogEntry> {
    let after = range.after ?? 0;
    let left = range.limit ?? Number.POSITIVE_INFINITY;
    // Listening before the first read: a line written meanwhile wakes the loop, and is read from the store.
    let wake: (() => void) | null = null;
    let pendingLines = false;
    const off = this.events.on('agent:stderr', (event) => {
      if (event.agent !== agent) return;
      pendingLines = true;
      wake?.();
    });
    const stop = () => wake?.();
    this.closing.signal.addEventListener('abort', stop);
    range.signal?.addEventListener('abort', stop);
    try {
      for await (const entry of stored) {
        yield entry;
        after = entry.seq;
        left--;
      }
      while (left > 0 && !this.closing.signal.aborted && !range.signal?.aborted) {
        if (!pendingLines) await new Promise<void>((resolve) => (wake = resolve));
        wake = null;
        pendingLines = false;
        if (this.closing.signal.aborted || range.signal?.aborted) break;
        for await (const entry of this.pages('logs', (page) => this.store.logs(agent, page), { after, limit: left })) {
          yield entry;
          after = entry.seq;
          left--;
        }
      }
    } catch (error) {
      // A read that raced shutdown or the signal ends the follow; any other failure is the caller's to see.
      if (!(error instanceof AgentError && (error.kind === 'shutting_down' || error.kind === 'aborted'))) throw error;
    } finally {
      off();
      this.closing.signal.removeEventListener('abort', stop);
      range.signal?.removeEventListener('abort', stop);
    }
  }
}
