/**
 * The daemon's HTTP + WebSocket API, version 1: every body the daemon answers with and every
 * message of its event stream. The CLI, the dashboard and docs/http-api.md read this file as
 * the contract; bodies the daemon accepts are the zod schemas in daemon/api-schemas.ts.
 *
 * Every request carries the daemon's token: `Authorization: Bearer <token>` (the CLI), or
 * `?token=<token>` on the dashboard page and the WebSocket upgrade (a browser cannot set
 * headers there). Every error is a 4xx/5xx with an {@link ApiErrorBody}.
 */
import type {
  AgentSessionPage,
  AgentSpecSummary,
  AgentSummary,
  ElicitationRequestView,
  EventEntry,
  LogEntry,
  OrphanSweepResult,
  PtyActivityState,
  ResourceUsage,
  SessionStateChange,
  SessionStateFields,
  StoredSession,
  StoreStats,
  SupervisorEventMap,
  TranscriptEntry,
  WorkspaceInfo,
} from '../index.js';
import type { RestoreReport, StartupOrphanReport } from './daemon-types.js';

/** The API version in every path: `/v1/...`. */
export const API_VERSION = 'v1';

/**
 * Why a request failed: an agent error's kind (`unknown_agent`, `not_installed`,
 * `auth_required`, `session_busy`, ...) passed through, or one of the daemon's own.
 */
export type ApiErrorKind =
  | 'unauthorized' // 401: no token, or the wrong one
  | 'forbidden_host' // 403: the Host header is not the daemon's own (DNS rebinding)
  | 'forbidden_origin' // 403: a browser page from another origin
  | 'not_found' // 404: no such route
  | 'method_not_allowed' // 405
  | 'unsupported_media_type' // 415: a body that is not application/json
  | 'payload_too_large' // 413: a body over the limit (1 MiB)
  | 'invalid_json' // 400: a body that does not parse
  | 'invalid_request' // 400: a body or query that does not match its schema (issues say where)
  | 'permission_not_found' // 404: no pending permission request has that id
  | 'elicitation_not_found' // 404: no pending elicitation has that id
  | 'terminal_not_found' // 404: the session has no such terminal (or is not open in the daemon)
  | 'internal' // 500: a bug; the daemon keeps running
  | (string & {}); // an AgentError kind

/** Every error response's body. */
export interface ApiErrorBody {
  error: {
    kind: ApiErrorKind;
    message: string;
    agent?: string;
    /** With `invalid_request`: what was wrong, and where. */
    issues?: Array<{ path: string; message: string }>;
    /** With an agent failure: its class (docs/failures.md), when known. */
    class?: string;
    retryAt?: number | null;
    /** With `auth_required` (class auth): the methods the agent offers (`POST /v1/agents/:name/authenticate`). */
    authMethods?: Array<{ id: string; name: string; description?: string | null }>;
    /** With `not_installed`: the command not found, and how to install it when known. */
    command?: string;
    installHint?: string;
  };
}

/** `GET /v1/health`. */
export interface HealthBody {
  ok: true;
  version: string;
  pid: number;
  startedAt: number;
  agents: number;
  /**
   * What the daemon's start restored of what the last daemon on its state directory ran:
   * `state` `'restoring'` while agents of it are still starting (not the final state yet),
   * `'done'`, or `'off'` (`restore: false`, `serve --no-restore`); each agent and named
   * session with its outcome (`restored`, `failed` with the error, `skipped`).
   */
  restore: RestoreReport;
}

/** One agent as the API shows it: the library's summary plus the daemon's view. */
export interface AgentRow extends AgentSummary {
  /** When the current process connected (epoch ms), null when it has none. */
  connectedAt: number | null;
  /** Automatic and manual restarts since the daemon started. */
  restarts: number;
  /** Open sessions of this agent in the daemon. */
  sessions: number;
  /**
   * What its processes on this host cost now (CPU % of one core, resident memory; the
   * library's `resourceUsage()`), null while it has none. In the answers of `GET /v1/agents`,
   * `GET /v1/agents/:name` and `.../describe` only: absent from the event stream's rows and
   * the lifecycle POSTs' answers.
   */
  usage?: ResourceUsage | null;
}

/** `GET /v1/agents`. */
export interface AgentsBody {
  agents: AgentRow[];
}

/** `GET /v1/agents/:name/describe`: everything about one agent in one answer. */
export interface AgentDescribeBody {
  /** Its row, with `usage`. */
  agent: AgentRow;
  /** What it runs and how (env: the names only). */
  spec: AgentSpecSummary;
  /** Its sessions: the open ones first, then the newest stored, at most 20. */
  sessions: SessionRow[];
  /** How many sessions of it the store keeps (and open ones it has not written yet). */
  sessionsTotal: number;
  /** The workspaces it and its sessions use: its own first (docs/workspaces.md). */
  workspaces: WorkspaceInfo[];
}

/**
 * A session as the API shows it: what the store keeps, plus the daemon's live view. The
 * state fields (`modes`, `configOptions`, `commands`, `plan`, `usage`, `models`: the library's
 * `session.state`, docs/acp.md) are the live session's while the daemon holds it open; for a
 * session it does not hold they are `null` / `[]`, and `title` is the store's.
 */
export interface SessionRow extends StoredSession, SessionStateFields {
  /** The name it was opened under (`prompt -s NAME`), null for an unnamed one. */
  name: string | null;
  /** Open in the daemon now (its agent connected, the session not closed). */
  live: boolean;
  /** A prompt running now. */
  busy: boolean;
  /** Prompts waiting behind the running one. */
  queued: number;
}

/** `GET /v1/sessions`. */
export interface SessionsBody {
  sessions: SessionRow[];
}

/** `GET /v1/sessions/:id/history`: a page; `next` is the `after` of the next page, null at the end. */
export interface HistoryBody {
  entries: TranscriptEntry[];
  next: number | null;
}

/** `GET /v1/agents/:name/logs` (without `follow`). */
export interface LogsBody {
  entries: LogEntry[];
  next: number | null;
}

/** `GET /v1/events/log`. */
export interface EventLogBody {
  entries: EventEntry[];
  next: number | null;
}

/** A permission request waiting for an answer. */
export interface PermissionRow {
  /** The daemon's id for it: answer with `POST /v1/permissions/:id`. */
  id: string;
  agent: string;
  sessionId: string;
  requestedAt: number;
  toolCall: { toolCallId: string; title?: string | null; kind?: string | null; [key: string]: unknown };
  options: Array<{ optionId: string; name: string; kind: string }>;
}

/** `GET /v1/permissions`. */
export interface PermissionsBody {
  permissions: PermissionRow[];
}

/** `POST /v1/permissions/:id`: how it was answered. */
export interface PermissionAnswerBody {
  id: string;
  outcome: { outcome: 'selected'; optionId: string } | { outcome: 'cancelled' };
}

/**
 * An elicitation waiting for an answer (the daemon's supervisor runs with `elicitation:
 * 'ask'`): a form to fill in (`requestedSchema`) or a URL to visit (`url`).
 */
export interface ElicitationRow extends ElicitationRequestView {
  /** The daemon's id for it: answer with `POST /v1/elicitations/:id`. */
  id: string;
  requestedAt: number;
}

/** `GET /v1/elicitations`. */
export interface ElicitationsBody {
  elicitations: ElicitationRow[];
}

/**
 * `POST /v1/elicitations/:id`: how it was answered. The form's values are not repeated (they
 * may be secrets; the store keeps the field names only).
 */
export interface ElicitationAnswerBody {
  id: string;
  action: 'accept' | 'decline' | 'cancel';
}

/** `GET /v1/agents/:name/sessions`: one page of the agent's own sessions (`session/list`). */
export type AgentSessionsBody = AgentSessionPage;

/** `POST /v1/agents/:name/sessions/:sessionId/delete`: the agent deleted it (`session/delete`). */
export interface AgentSessionDeleteBody {
  agent: string;
  sessionId: string;
  deleted: true;
}

/**
 * `GET /v1/sessions/:id/terminals/:terminalId`: what a client terminal of the session shows
 * (a tool call's `{ type: 'terminal', terminalId }`): a live terminal's output now, a released
 * one's as it was when released (the library keeps the last eight).
 */
export interface TerminalOutputBody {
  sessionId: string;
  terminalId: string;
  output: string;
  truncated: boolean;
  exitStatus: { exitCode: number | null; signal: string | null } | null;
}

/** The answer of a prompt without streaming (`Accept: application/json`). */
export interface PromptResultBody {
  sessionId: string;
  stopReason: string;
  /** The agent's message text of the turn, joined. */
  text: string;
}

/**
 * The lines of a streamed prompt (`Accept: application/x-ndjson`), one JSON object each; the
 * last is `done` or `error`.
 */
export type PromptStreamLine =
  /** The prompt waits behind `position` others of its session. */
  | { type: 'queued'; sessionId: string; position: number }
  /** The session it runs in: opened now, reused, or resumed. */
  | { type: 'session'; sessionId: string; name: string | null; opened: 'new' | 'existing' | 'resumed'; notice?: string }
  | { type: 'started'; sessionId: string }
  | { type: 'update'; sessionId: string; update: unknown }
  | { type: 'permission'; permission: PermissionRow }
  /** An elicitation of the session waiting for an answer (`POST /v1/elicitations/:id`). */
  | { type: 'elicitation'; elicitation: ElicitationRow }
  | { type: 'done'; sessionId: string; stopReason: string; text: string }
  | { type: 'error'; error: ApiErrorBody['error'] };

/** `POST /v1/sessions/:id/cancel`: the running turn cancelled, and how many queued prompts were dropped. */
export interface CancelBody {
  sessionId: string;
  cancelledRunning: boolean;
  droppedQueued: number;
}

/** A preset agent, as `GET /v1/doctor` reports it. */
export interface DoctorPreset {
  agent: string;
  displayName: string;
  command: string;
  /** Where the command was found on PATH, null when not installed. */
  path: string | null;
  installHint: string | null;
}

/** `GET /v1/doctor`: what this host offers. */
export interface DoctorBody {
  version: string;
  node: string;
  stateDir: string | null;
  presets: DoctorPreset[];
  containment: { kind: string | null; refused: Array<{ kind: string; reason: string }> };
  store: { kind: 'sqlite' | 'memory' | 'custom'; ok: boolean; stats: StoreStats | null; error: string | null };
}

/**
 * `GET /v1/orphans`: what crashed supervisors left in the daemon's state directory now (the
 * library's `sweepOrphans({ dryRun: true })`: `orphans` with pid, agent, `startedAt`, command;
 * nothing killed), and what the daemon's start did with them (`startup`).
 */
export interface OrphansBody extends OrphanSweepResult {
  dryRun: true;
  startup: StartupOrphanReport;
}

/** `POST /v1/orphans/kill`: the sweep's result (`orphans` found, `killed`, `skipped`). */
export type OrphansKillBody = OrphanSweepResult;

/** Topics of the event stream: a client subscribes to some or all (`?topics=a,b`). */
export const EVENT_TOPICS = ['status', 'state', 'errors', 'updates', 'permissions', 'elicitations', 'logs', 'sessions', 'orphans', 'restore', 'workspaces', 'pty', 'terminals'] as const;
export type EventTopic = (typeof EVENT_TOPICS)[number];

/**
 * What every message of `GET /v1/events` carries. `seq`: one increasing sequence over
 * everything the daemon publishes (all topics), assigned at publish — the cursor a client
 * reconnects with (`?since=<seq>&epoch=<epoch>`); on `hello` and `resync`, the seq the
 * stream goes on from (the messages after it follow). `at` is the daemon's clock (epoch ms)
 * and `t` its monotonic clock in ns (process.hrtime, for latency measurements on the same
 * host), both taken once per batch: the updates, logs and state moves published in one turn
 * of the daemon's event loop share them.
 */
export interface MessageStamps {
  seq: number;
  at: number;
  t: string;
}

/**
 * The first message of every connection: the daemon's `epoch` (a random id per daemon
 * start: a `seq` is meaningful only with the epoch it came with), `seq` the last seq
 * published (live messages follow it), and the state to start from.
 */
export interface HelloMessage extends MessageStamps {
  type: 'hello';
  version: string;
  epoch: string;
  /**
   * With `?since=N` honoured: N + 1 — the messages after N (of the client's topics and
   * sessions) follow, replayed up to `seq`, then live. Null without `since`, or when a
   * `resync` follows instead.
   */
  replayFrom: number | null;
  /** The oldest seq the daemon still holds (a `since` older than one before it gets `resync`). */
  oldest: number;
  agents: AgentRow[];
  permissions: PermissionRow[];
  /** The elicitations waiting for an answer (as `GET /v1/elicitations`). */
  elicitations: ElicitationRow[];
  topics: EventTopic[];
}

/**
 * Why the stream cannot continue from where the client stood: `epoch` — its `since` is of
 * another daemon (the `epoch` given is not this one's, or the seq is beyond anything this
 * daemon published); `expired` — the daemon no longer holds the messages after its `since`;
 * `overflow` — the client read too slowly, its backlog passed the daemon's cap, and by the
 * time its socket drained the daemon no longer held what followed its last message.
 */
export type ResyncReason = 'epoch' | 'expired' | 'overflow';

/**
 * The client missed messages the daemon can no longer send: re-read the state over REST
 * (`GET /v1/agents`, `/v1/sessions`, `/v1/permissions`, a session's history from the store),
 * then go on with the live messages that follow (after `seq`). Never a silent gap.
 */
export interface ResyncMessage extends MessageStamps {
  type: 'resync';
  reason: ResyncReason;
  /** The oldest seq the daemon holds now. */
  oldest: number;
  /** Where the client stood: the `since` it asked for, or the last seq it was sent before it fell behind. */
  lastDelivered: number;
}

/** The messages the daemon publishes to the stream's topics (each gets a `seq` and the stamps). */
export type PublishedMessage =
  /** topic `status`: an agent's status changed. */
  | { type: 'agent:status'; agent: string; status: string; previous: string; row: AgentRow }
  /** topic `state`: the agent machine moved to another state (also within a status). */
  | { type: 'agent:state'; agent: string; state: string; status: string }
  /** topic `errors`. */
  | { type: 'agent:error'; agent: string; kind: string; message: string; class?: string; retryAt?: number | null }
  /** topic `errors`: during a login, the agent asked a person to open these URLs (`agentvisor auth` prints them). */
  | { type: 'agent:auth_prompt'; agent: string; methodId: string; urls: string[] }
  /** topic `updates`: a session update (of the sessions subscribed to, or all). */
  | { type: 'session:update'; agent: string; sessionId: string; update: unknown }
  /**
   * topic `updates`: a turn of a session — its prompt as sent (`turn: { prompt }`), then how it
   * ended (`turn: { stopReason }` or `{ error }`); the shapes of the transcript's `prompt` and
   * `prompt_result` entries, whoever sent the prompt.
   */
  | { type: 'session:turn'; agent: string; sessionId: string; turn: { prompt: unknown[] } | { stopReason: string } | { error: { kind: string; message: string } } }
  /** topic `sessions`: a session opened, changed status, or closed. */
  | { type: 'session:status'; agent: string; sessionId: string; status: string }
  /**
   * topic `sessions`: one field of a session's state changed (docs/acp.md, "Session state"):
   * `modes`, `configOptions`, `commands`, `plan`, `usage`, `title` or `models`, with its new
   * value — the library's `session:state`. A change to the same value is not sent.
   */
  | ({ type: 'session:state'; agent: string; sessionId: string } & SessionStateChange)
  /** topic `permissions`. */
  | { type: 'permission:request'; permission: PermissionRow }
  | { type: 'permission:resolved'; id: string; agent: string; sessionId: string; outcome: PermissionAnswerBody['outcome'] }
  /** topic `elicitations`: an agent asks for a form's values or a URL visited; answer with `POST /v1/elicitations/:id`. */
  | { type: 'elicitation:request'; elicitation: ElicitationRow }
  /**
   * topic `elicitations`: it was answered — by a client, by the turn's cancel, by the agent
   * withdrawing it, or by the timeout (`cancel`). The values of an `accept` are not sent.
   */
  | { type: 'elicitation:resolved'; id: string; agent: string; sessionId: string | null; action: ElicitationAnswerBody['action'] }
  /** topic `logs`: an agent's stderr line. */
  | { type: 'log'; agent: string; line: string }
  /** topic `orphans`: a sweep killed (or tried to kill) what crashed supervisors left — `POST /v1/orphans/kill`, or the start-up sweep under `'kill'`. */
  | { type: 'orphans:swept'; result: OrphanSweepResult }
  /** topic `restore`: an agent or named session of the last daemon could not be restored (`failed`), or was not tried (`skipped`), as it happens. */
  | { type: 'restore:failed'; agent: string; session: { name: string; sessionId: string } | null; outcome: 'failed' | 'skipped'; error: { kind: string; message: string } }
  /** topic `restore`: the start's restore has settled: the whole report (also `GET /v1/health`'s `restore`). */
  | { type: 'restore:done'; restore: RestoreReport }
  /** topic `workspaces`: a workspace's changed files, after files changed in it (at most one a `workspaceStatusIntervalMs`, docs/workspaces.md). */
  | ({ type: 'workspace:status' } & SupervisorEventMap['workspace:status'])
  /** topic `workspaces`: a workspace's owner ended and its cleanup strategy was applied: `kept`, `archived` or `removed`. */
  | ({ type: 'workspace:cleaned' } & SupervisorEventMap['workspace:cleaned'])
  /** topic `workspaces`: a workspace's owner ended but its cleanup was refused (`busy`, `dirty`, `failed`); it is kept for a prune. */
  | ({ type: 'workspace:cleanup_refused' } & SupervisorEventMap['workspace:cleanup_refused'])
  /** topic `pty`: a pty agent's CLI changed what it is doing (docs/pty.md): `starting`, `running`, `needsInput`, `stale`, `exited` (with `exitCode`, `signal`). */
  | { type: 'pty:activity'; agent: string; state: PtyActivityState; exitCode?: number | null; signal?: string | null }
  /**
   * topic `terminals`: what a pty agent's terminal printed, raw (escape sequences and all) — the
   * runtime's terminal `output` event.
   */
  | { type: 'terminal:output'; agent: string; data: string };

/**
 * What `GET /v1/events` (a WebSocket) sends: `hello` first, then — with `?since=` — the
 * messages after it replayed, or `resync`; then the events of the topics subscribed to, in
 * `seq` order. One message per text frame, or with `?batch=1` every frame a JSON array of
 * messages (`ServerMessage[]`).
 */
export type ServerMessage = HelloMessage | ResyncMessage | (MessageStamps & PublishedMessage);

/**
 * What a client may send on the WebSocket: change what it receives. `sessions` limits
 * `session:update` to those session ids (omitted: all).
 */
export interface SubscribeMessage {
  type: 'subscribe';
  topics?: EventTopic[];
  sessions?: string[] | null;
}
