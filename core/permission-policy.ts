/** How permission requests are answered: the public vocabulary and the fixed policies' choice. */
import type { PermissionOption, ToolCallUpdate } from './acp-types.js';

/** A permission request as the application sees it with the `'ask'` policy. */
export interface PermissionRequest {
  agent: string;
  sessionId: string;
  toolCall: ToolCallUpdate;
  options: PermissionOption[];
  /** Answers with one of `options` (by `optionId`). Later answers are ignored. */
  respond(optionId: string): void;
  /** Answers `cancelled`. */
  cancel(): void;
  /**
   * Resolves with the answer once the request is settled — by `respond`/`cancel`, by the
   * turn's cancel, or by `permissionTimeoutMs` — so an application can withdraw it from view.
   */
  settled: Promise<PermissionOutcome>;
}

/** How a permission request was answered. */
export type PermissionOutcome = { outcome: 'selected'; optionId: string } | { outcome: 'cancelled' };

/**
 * How permission requests are answered: ask the application (`permission:request` events),
 * allow, deny, or a function that returns an option id (or undefined to cancel).
 *
 * @example
 * createSupervisor({ permissions: ({ toolCall }) => (toolCall.kind === 'read' ? 'allow-once' : undefined) });
 */
export type PermissionPolicy =
  | 'ask'
  | 'allow'
  | 'deny'
  /** Allows the tool calls that only look (kinds `read`, `search`, `fetch`, `think`: {@link READ_ONLY_TOOL_KINDS}); asks as `'ask'` for the rest. */
  | 'allow-reads'
  | ((request: Omit<PermissionRequest, 'respond' | 'cancel' | 'settled'>) => string | undefined | Promise<string | undefined>);

/**
 * The ACP tool kinds that change nothing: reading files, searching, fetching, thinking. The
 * `'allow-reads'` policy allows these and asks for every other kind, and for a tool call
 * without a kind (an agent that says nothing may be doing anything).
 */
export const READ_ONLY_TOOL_KINDS: ReadonlySet<string> = new Set(['read', 'search', 'fetch', 'think']);

/** Whether `'allow-reads'` allows this tool call by itself: its kind is a read-only one. */
export function isReadOnlyToolCall(toolCall: { kind?: string | null }): boolean {
  return typeof toolCall.kind === 'string' && READ_ONLY_TOOL_KINDS.has(toolCall.kind);
}

/** The option a fixed policy picks: allow once (else always), reject once (else always). */
export function optionFor(policy: 'allow' | 'deny', options: PermissionOption[]): string | undefined {
  const preference = policy === 'allow' ? ['allow_once', 'allow_always'] : ['reject_once', 'reject_always'];
  for (const kind of preference) {
    const option = options.find((candidate) => candidate.kind === kind);
    if (option) return option.optionId;
  }
  return undefined;
}
