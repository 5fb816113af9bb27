/**
 * agentvisor: supervise AI coding-agent processes (any Agent Client Protocol agent) as
 * XState actors.
 *
 * @example
 * import { createSupervisor, presets } from 'agentvisor';
 * const supervisor = createSupervisor({ agents: { codex: presets.codex() } });
 * const codex = await supervisor.ensureAgent('codex');
 * await supervisor.shutdown();
 */
export { createSupervisor, Supervisor } from './api/supervisor.js';
export type { AgentHandle, AgentSessionPage, AgentSummary, AgentStatusEvent, AgentErrorEvent, SupervisorEventMap, CallOptions, ContainmentReport, OrphanSweepResult, ReadOptions } from './api/supervisor.js';
export type { Store, StoreWrite, StoredSession, StoredAgentSpec, TranscriptEntry, TranscriptKind, LogEntry, EventEntry, Page, Retention, RetentionRule, StoreStats, Awaitable } from './core/store.js';
export { createMemoryStore, openSqliteStore, defaultRetention } from './runtime/store-choice.js';
export { defaultStateDir } from './runtime/state-dir.js';
export type { ContainmentKind } from './core/containment-kind.js';
export { defaultOptions, type SupervisorOptions, type SessionOptions, type NewSessionOptions, type InspectOption } from './api/options.js';
export { Session, type SessionEvents, type PromptOptions } from './api/session.js';
export type { SessionStateFields, SessionUsage } from './runtime/session-state.js';
export type { ControlOptions } from './runtime/session-controls.js';
export type { ElicitationPolicy, ElicitationRequest, ElicitationRequestView, ElicitationAnswer, ElicitationValue } from './core/elicitation.js';
export type { ExtensionHandler, ExtensionHandlers } from './runtime/acp-client-handlers.js';
export type { TerminalLogin, TerminalLoginCommand } from './runtime/terminal-login.js';
export { defaultContentFileBytes } from './runtime/prompt-content.js';
export { createConsoleInspector } from './inspection/console-inspector.js';
export type { PermissionPolicy, PermissionRequest, PermissionOutcome } from './core/permission-policy.js';
export type {
  ContentBlock,
  SessionUpdate,
  UnknownSessionUpdate,
  StopReason,
  McpServer,
  AgentCapabilities,
  AuthMethod,
  AvailableCommand,
  Implementation,
  PlanEntry,
  PromptCapabilities,
  SessionConfigOption,
  SessionInfo,
  SessionModeState,
  SessionModelState,
  UsageUpdate,
} from './core/acp-types.js';
export type { AgentSpec } from './core/agent-spec.js';
export type { WorkspaceSpec, WorkspaceOwner, WorkspaceKind, CleanupStrategy } from './core/workspace-spec.js';
export type { WorkspaceInfo, PruneOptions, PruneResult, WorkspaceEvents } from './runtime/workspace-registry.js';
export { AgentError, type AgentErrorKind, type AgentFailure } from './core/errors.js';
export { presets, echoAgentScript, installHints } from './services/presets.js';
export { findExecutable } from './services/executable.js';
export { agentMachine, type AgentContext } from './machines/agent.machine.js';
export { supervisorMachine } from './machines/supervisor.machine.js';
export { sessionMachine } from './machines/session.machine.js';
export type { SessionStatus, StallPolicy } from './machines/session-events.js';
export type { AgentStatus, AgentMachineInput, ProcessEvent, ProcessCommand } from './machines/agent-events.js';
export { backoffDelay, defaultRestartPolicy, type RestartPolicy } from './machines/policies/backoff.policy.js';
export { classifyFailure, parseRetryAt } from './machines/policies/failure-class.policy.js';
export { defaultClassPolicies, type ClassAction, type ClassPolicy, type ClassPolicies } from './machines/policies/class-policy.js';
export type { FailureClass, FailurePattern, FailureEvidence, Classification } from './core/failure-class.js';
export { presetFailurePatterns } from './core/failure-patterns.js';
export { defaultOverload, type RestartOptions } from './api/options.js';
export type { AgentTerminal, TerminalEvents, PtySettings } from './runtime/pty-terminals.js';
export { ptyActivityMachine, type PtyActivityState } from './machines/pty-activity.machine.js';
