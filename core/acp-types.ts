/**
 * The ACP vocabulary every layer speaks, as types only. Only services/acp-client.service.ts
 * imports `@agentclientprotocol/sdk` at runtime; machines, actors and the facade name its
 * types through this module, so none of them depends on an I/O module.
 */
export type {
  AgentCapabilities,
  AuthMethod,
  AvailableCommand,
  CreateElicitationRequest,
  CreateElicitationResponse,
  ElicitationPropertySchema,
  ElicitationSchema,
  Implementation,
  ListSessionsResponse,
  PlanEntry,
  PromptCapabilities,
  SessionConfigOption,
  SessionInfo,
  SessionModeState,
  UsageUpdate,
  ClientCapabilities,
  ClientConnection,
  ContentBlock,
  InitializeResponse,
  McpServer,
  PermissionOption,
  RequestPermissionRequest,
  RequestPermissionResponse,
  SessionNotification,
  SessionUpdate,
  StopReason,
  ToolCallUpdate,
} from '@agentclientprotocol/sdk';

/**
 * The unstable `models` field some agents (gemini-cli) answer session/new, load and resume
 * with, and change with `session/set_model`; ACP's stable schema has config options of
 * category `model` instead.
 */
export interface SessionModelState {
  currentModelId: string;
  availableModels: Array<{ modelId: string; name: string; description?: string | null }>;
}

/** A `session/update` of a kind the installed schema does not know (an unstable one such as `plan_removed`): delivered as the agent sent it. */
export interface UnknownSessionUpdate {
  sessionUpdate: string;
  [key: string]: unknown;
}
