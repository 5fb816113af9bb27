/**
 * The elicitations waiting for a person, as the permission desk keeps permission requests:
 * every `elicitation:request` of the daemon's supervisor (it runs with `elicitation: 'ask'`)
 * gets an id and waits here until a client answers it (`POST /v1/elicitations/:id`) or the
 * library settles it (the turn cancelled, the agent withdrawing it, the elicitation timeout).
 * Each arrival and each settlement is announced to the desk's listeners.
 */
import { randomBytes } from 'node:crypto';
import { AgentError, type ElicitationAnswer, type ElicitationRequest, type ElicitationValue, type Supervisor } from '../index.js';
import type { ElicitationRow } from './api-types.js';
import { ApiError } from './http-kit.js';

export interface ElicitationDeskListener {
  requested(row: ElicitationRow): void;
  resolved(row: ElicitationRow, answer: ElicitationAnswer): void;
}

/** A client's answer: accept (with a form's values), decline or cancel. */
export type ElicitationReply = { action: 'accept'; content?: Record<string, ElicitationValue> } | { action: 'decline' } | { action: 'cancel' };

export class ElicitationDesk {
  private readonly pending = new Map<string, { row: ElicitationRow; request: ElicitationRequest }>();
  private readonly listeners = new Set<ElicitationDeskListener>();
  private readonly off: () => void;

  constructor(supervisor: Supervisor, now: () => number = Date.now) {
    this.off = supervisor.on('elicitation:request', (request) => {
      const id = randomBytes(6).toString('hex');
      const row: ElicitationRow = {
        id,
        agent: request.agent,
        sessionId: request.sessionId,
        toolCallId: request.toolCallId,
        mode: request.mode,
        message: request.message,
        requestedSchema: request.requestedSchema,
        url: request.url,
        elicitationId: request.elicitationId,
        requestedAt: now(),
      };
      this.pending.set(id, { row, request });
      for (const listener of this.listeners) listener.requested(row);
      void request.settled.then((answer) => {
        this.pending.delete(id);
        for (const listener of this.listeners) listener.resolved(row, answer);
      });
    });
  }

  /** Hears every request and settlement; returns the function that stops listening. */
  listen(listener: ElicitationDeskListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** The pending elicitations, oldest first; of one session when given. */
  list(sessionId?: string): ElicitationRow[] {
    return [...this.pending.values()].map(({ row }) => row).filter((row) => sessionId === undefined || row.sessionId === sessionId);
  }

  /**
   * Answers a pending elicitation; resolves with the answer the agent got (the first one given
   * wins). `elicitation_not_found` for an unknown or settled id; `invalid_request` for content
   * the library refuses (values that do not fit the form's schema, content for a URL), and the
   * elicitation stays open for a correct answer.
   */
  async answer(id: string, reply: ElicitationReply): Promise<ElicitationAnswer> {
    const entry = this.pending.get(id);
    if (!entry) throw new ApiError(404, 'elicitation_not_found', `No pending elicitation has the id "${id}"`);
    try {
      if (reply.action === 'accept') entry.request.respond('accept', reply.content);
      else entry.request.respond(reply.action);
    } catch (error) {
      if (error instanceof AgentError && error.kind === 'invalid_options') throw new ApiError(400, 'invalid_request', `Elicitation ${id}: ${error.message}`, { agent: entry.row.agent });
      throw error;
    }
    return entry.request.settled;
  }

  close(): void {
    this.off();
    this.listeners.clear();
  }
}
