/**
 * The permission requests waiting for a person: every `permission:request` of the daemon's
 * supervisor gets an id and waits here until a client answers it (`POST
 * /v1/permissions/:id`) or the library settles it (the turn cancelled, the permission
 * timeout). Each arrival and each settlement is announced to the desk's listeners.
 */
import { randomBytes } from 'node:crypto';
import type { PermissionOutcome, PermissionRequest, Supervisor } from '../index.js';
import type { PermissionRow } from './api-types.js';
import { ApiError } from './http-kit.js';

export interface PermissionDeskListener {
  requested(row: PermissionRow): void;
  resolved(row: PermissionRow, outcome: PermissionOutcome): void;
}

export class PermissionDesk {
  private readonly pending = new Map<string, { row: PermissionRow; request: PermissionRequest }>();
  private readonly listeners = new Set<PermissionDeskListener>();
  private readonly off: () => void;

  constructor(supervisor: Supervisor, now: () => number = Date.now) {
    this.off = supervisor.on('permission:request', (request) => {
      const id = randomBytes(6).toString('hex');
      const row: PermissionRow = {
        id,
        agent: request.agent,
        sessionId: request.sessionId,
        requestedAt: now(),
        toolCall: request.toolCall as PermissionRow['toolCall'],
        options: request.options.map(({ optionId, name, kind }) => ({ optionId, name, kind })),
      };
      this.pending.set(id, { row, request });
      for (const listener of this.listeners) listener.requested(row);
      void request.settled.then((outcome) => {
        this.pending.delete(id);
        for (const listener of this.listeners) listener.resolved(row, outcome);
      });
    });
  }

  /** Hears every request and settlement; returns the function that stops listening. */
  listen(listener: PermissionDeskListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** The pending requests, oldest first; of one session when given. */
  list(sessionId?: string): PermissionRow[] {
    return [...this.pending.values()].map(({ row }) => row).filter((row) => sessionId === undefined || row.sessionId === sessionId);
  }

  /**
   * Answers a pending request with one of its options, or `cancelled`; resolves with the
   * outcome the agent got. `permission_not_found` for an unknown or already settled id,
   * `invalid_request` for an option the request does not offer.
   */
  async answer(id: string, answer: { optionId: string } | { cancel: true }): Promise<PermissionOutcome> {
    const entry = this.pending.get(id);
    if (!entry) throw new ApiError(404, 'permission_not_found', `No pending permission request has the id "${id}"`);
    if ('optionId' in answer) {
      if (!entry.row.options.some((option) => option.optionId === answer.optionId)) {
        const offered = entry.row.options.map((option) => option.optionId).join(', ');
        throw new ApiError(400, 'invalid_request', `Permission request ${id} has no option "${answer.optionId}" (it offers ${offered})`);
      }
      entry.request.respond(answer.optionId);
    } else {
      entry.request.cancel();
    }
    return entry.request.settled;
  }

  close(): void {
    this.off();
    this.listeners.clear();
  }
}
