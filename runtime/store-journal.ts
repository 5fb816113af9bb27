/**
 * What the store keeps, as it happens: turns the supervisor's events (agents registered,
 * status changes, errors, stderr lines, sessions opened and their updates, prompts and their
 * outcomes, permission requests and answers) into store writes. Updates an agent replays
 * during `session/load` of a session the store already holds are not written twice.
 */
import type { ContentBlock, RequestPermissionResponse, SessionUpdate } from '../core/acp-types.js';
import type { AgentSpec } from '../core/agent-spec.js';
import type { AgentFailure } from '../core/errors.js';
import type { ElicitationAnswer, ElicitationRequestView } from '../core/elicitation.js';
import type { PermissionRequest } from '../core/permission-policy.js';
import type { StoredAgentSpec, StoredFailure, TranscriptKind } from '../core/store.js';
import type { StoreWriter } from './store-writer.js';

/** How a prompt turn ended, as the transcript keeps it. */
export type TurnOutcome = { stopReason: string } | { error: { kind: string; message: string } };

/** A session that is live in this process, as the journal follows it. */
export interface JournaledSession {
  readonly agent: string;
  readonly id: string;
  /** True while `session/load` replays the session's history. */
  readonly replaying: boolean;
  /** True when its transcript is already in the store, so a replay must not be written again. */
  readonly stored: boolean;
}

export class StoreJournal {
  constructor(private readonly writer: StoreWriter) {}

  agentRegistered(agent: string, spec: AgentSpec): void {
    this.writer.add({ type: 'agent', at: Date.now(), agent, spec: storedSpec(spec) });
  }

  agentStatus(agent: string, status: string, previous: string): void {
    this.writer.add({ type: 'event', at: Date.now(), agent, event: 'agent:status', data: { status, previous } });
  }

  /** A failure of the agent, whole: its class, whether and when it is retried, and its stderr tail (never its env). */
  agentError(agent: string, failure: AgentFailure): void {
    this.writer.add({ type: 'event', at: Date.now(), agent, event: 'error', data: storedFailure(failure) });
  }

  event(agent: string | null, event: string, data: unknown): void {
    this.writer.add({ type: 'event', at: Date.now(), agent, event, data });
  }

  stderr(agent: string, line: string): void {
    this.writer.add({ type: 'stderr', at: Date.now(), agent, line });
  }

  sessionOpened(agent: string, sessionId: string, cwd: string): void {
    this.writer.add({ type: 'session', at: Date.now(), agent, sessionId, cwd, state: 'ready' });
  }

  sessionStatus(agent: string, sessionId: string, state: string): void {
    this.writer.add({ type: 'session', at: Date.now(), agent, sessionId, state });
  }

  /** One `session/update`; a replay of a stored session is skipped. */
  update(session: JournaledSession, update: SessionUpdate): void {
    if (session.replaying && session.stored) return;
    const at = Date.now();
    if (update.sessionUpdate === 'session_info_update' && update.title !== undefined) {
      this.writer.add({ type: 'session', at, agent: session.agent, sessionId: session.id, title: update.title ?? null });
    }
    this.writer.add({ type: 'transcript', at, agent: session.agent, sessionId: session.id, kind: 'update', data: update });
  }

  prompt(agent: string, sessionId: string, prompt: ContentBlock[]): void {
    this.entry(agent, sessionId, 'prompt', { prompt });
  }

  promptResult(agent: string, sessionId: string, outcome: TurnOutcome): void {
    const at = Date.now();
    this.writer.add({ type: 'transcript', at, agent, sessionId, kind: 'prompt_result', data: outcome });
    if ('stopReason' in outcome) this.writer.add({ type: 'session', at, agent, sessionId, stopReason: outcome.stopReason });
  }

  permission(requestId: string, request: Pick<PermissionRequest, 'agent' | 'sessionId' | 'toolCall' | 'options'>): void {
    this.entry(request.agent, request.sessionId, 'permission', { requestId, toolCall: request.toolCall, options: request.options });
  }

  permissionOutcome(agent: string, sessionId: string, requestId: string, response: RequestPermissionResponse): void {
    this.entry(agent, sessionId, 'permission_outcome', { requestId, outcome: response.outcome });
  }

  /** A session's elicitation: what the agent asked (never the answer's content: it may hold what the user typed, like a secret). */
  elicitation(requestId: string, request: ElicitationRequestView & { sessionId: string }): void {
    const { mode, message, requestedSchema, url, elicitationId, toolCallId } = request;
    this.entry(request.agent, request.sessionId, 'elicitation', { requestId, mode, message, requestedSchema, url, elicitationId, toolCallId });
  }

  elicitationOutcome(agent: string, sessionId: string, requestId: string, answer: ElicitationAnswer): void {
    this.entry(agent, sessionId, 'elicitation_outcome', { requestId, action: answer.action, ...(answer.action === 'accept' && answer.content ? { fields: Object.keys(answer.content) } : {}) });
  }

  private entry(agent: string, sessionId: string, kind: TranscriptKind, data: unknown): void {
    this.writer.add({ type: 'transcript', at: Date.now(), agent, sessionId, kind, data });
  }
}

/** The longest stderr line kept with a failure, as the stderr log keeps its lines (util/stderr-tail.ts). */
const maxStderrLine = 1000;

/** A failure as the event log keeps it: the record's plain fields, its class, and its stderr tail (already bounded by `stderrLines`). */
export function storedFailure(failure: AgentFailure): StoredFailure {
  return {
    kind: failure.kind,
    message: failure.message,
    detail: failure.detail ?? null,
    exitCode: failure.exitCode ?? null,
    signal: failure.signal ?? null,
    class: failure.class ?? null,
    retryable: failure.retryable ?? false,
    retryAt: failure.retryAt ?? null,
    stderr: failure.stderr.map((line) => (line.length > maxStderrLine ? `${line.slice(0, maxStderrLine)}…` : line)),
    ...(failure.command !== undefined ? { command: failure.command } : {}),
    ...(failure.installHint !== undefined ? { installHint: failure.installHint } : {}),
  };
}

/** The spec without secrets: environment variable names, never their values. */
export function storedSpec(spec: AgentSpec): StoredAgentSpec {
  return {
    command: spec.command,
    args: [...(spec.args ?? [])],
    cwd: spec.cwd ?? null,
    displayName: spec.displayName ?? null,
    envNames: Object.keys(spec.env ?? {}).sort(),
  };
}
