/**
 * The git and file work of a workspace hold (machines/workspace.machine.ts), as the actors
 * it invokes: each one call of the workspace registry (runtime/workspace-registry.ts), which
 * does the work and writes the `workspace:*` events.
 */
import { fromPromise } from 'xstate';
import type { CleanupStrategy } from '../core/workspace-spec.js';
import type { CleanInput, CleanOutcome, KeepInput, KeepReason, WorkspaceDetached, WorkspaceHoldRef } from '../machines/workspace.machine.js';

export interface WorkspaceWork {
  acquire(hold: WorkspaceHoldRef): Promise<{ path: string }>;
  restore(hold: WorkspaceHoldRef): Promise<{ path: string }>;
  detach(hold: WorkspaceHoldRef): Promise<WorkspaceDetached>;
  clean(hold: WorkspaceHoldRef, strategy: 'archive' | 'remove'): Promise<CleanOutcome>;
  keep(hold: WorkspaceHoldRef, why: KeepReason, strategy: CleanupStrategy): Promise<void>;
}

/** The actors a workspace machine is provided with. */
export function createWorkspaceActors(work: WorkspaceWork) {
  return {
    acquireWorkspace: fromPromise<{ path: string }, WorkspaceHoldRef>(({ input }) => work.acquire(input)),
    restoreWorkspace: fromPromise<{ path: string }, WorkspaceHoldRef>(({ input }) => work.restore(input)),
    detachWorkspace: fromPromise<WorkspaceDetached, WorkspaceHoldRef>(({ input }) => work.detach(input)),
    cleanWorkspace: fromPromise<CleanOutcome, CleanInput>(({ input }) => work.clean(input, input.strategy)),
    keepWorkspace: fromPromise<void, KeepInput>(({ input }) => work.keep(input, input.why, input.strategy)),
  };
}
