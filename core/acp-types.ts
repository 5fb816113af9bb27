/**
 * The ACP vocabulary every layer speaks, as types only. Only services/acp-client.service.ts
 * imports `@agentclientprotocol/sdk` at runtime; machines, actors and the facade name its
 * types through this module, so none of them depends on an I/O module.
 */
export type {
  AuthMethod,
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
