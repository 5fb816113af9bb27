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
  | ((request: Omit<PermissionRequest, 'respond' | 'cancel' | 'settled'>) => string | undefined | Promise<string | undefined>);

/** The option a fixed policy picks: allow once (else always), reject once (else always). */
export function optionFor(policy: 'allow' | 'deny', options: PermissionOption[]): string | undefined {
  const preference = policy === 'allow' ? ['allow_once', 'allow_always'] : ['reject_once', 'reject_always'];
  for (const kind of preference) {
    const option = options.find((candidate) => candidate.kind === kind);
    if (option) return option.optionId;
  }
  return undefined;
}
