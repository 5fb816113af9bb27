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
export type { AgentHandle, AgentSummary, AgentStatusEvent, AgentErrorEvent, SupervisorEventMap, CallOptions } from './api/supervisor.js';
export { defaultOptions, type SupervisorOptions, type InspectOption } from './api/options.js';
export { createConsoleInspector } from './api/console-inspector.js';
export { Session, type SessionEvents } from './api/session.js';
export type { SessionOptions } from './api/session-factory.js';
export type { PermissionPolicy, PermissionRequest } from './api/permissions.js';
export type { SessionStatus, StallPolicy } from './machines/session-events.js';
export { sessionMachine } from './machines/session.machine.js';
export type { ContentBlock, SessionUpdate, StopReason, McpServer } from './services/acp-client.service.js';
export { presets, echoAgentScript } from './services/presets.js';
export type { AgentSpec } from './services/agent-spec.js';
export { AgentError, type AgentErrorKind, type AgentFailure } from './services/errors.js';
export { agentMachine, type AgentContext } from './machines/agent.machine.js';
export { supervisorMachine } from './machines/supervisor.machine.js';
export type { AgentStatus, AgentMachineInput, ProcessEvent, ProcessCommand } from './machines/agent-events.js';
export { backoffDelay, defaultRestartPolicy, type RestartPolicy } from './machines/policies/backoff.policy.js';
