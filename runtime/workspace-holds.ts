/**
 * A session's own workspace as the runtime and the facade see it: its hold (a
 * machines/workspace.machine.ts actor, a child of the agent's actor) and what they ask of it.
 * The hold decides; these only send it events and wait for its states.
 */
import { waitFor, type ActorRefFrom } from 'xstate';
import { holdKey, type workspaceMachine } from '../machines/workspace.machine.js';
import { WorkspaceError } from '../services/workspace/git.js';

export type WorkspaceHoldActor = ActorRefFrom<typeof workspaceMachine>;

/** A session's own workspace, once its hold made it. */
export interface SessionWorkspace {
  /** The hold's actor id in its agent (`workspace:<id>`): `session.open` names it. */
  actorId: string;
  /** The hold's key in the workspace registry. */
  key: string;
  /** The session's cwd. */
  path: string;
  actor: WorkspaceHoldActor;
}

/** Resolves with the hold's path once it is held; rejects with a WorkspaceError (git's message) when it failed. */
export async function heldWorkspace(actor: WorkspaceHoldActor, agent: string, actorId: string): Promise<SessionWorkspace> {
  const snapshot = await waitFor(actor, (state) => state.status !== 'active' || state.matches('held'));
  if (snapshot.status === 'active' && snapshot.context.path !== null) return { actorId, key: holdKey(agent, actorId), path: snapshot.context.path, actor };
  throw new WorkspaceError(snapshot.context.failure ?? 'The workspace was not made');
}

/** Resolves once the hold is over (cleaned up, kept, or never made) — also when its agent's actor went away. */
export function holdOver(actor: WorkspaceHoldActor): Promise<void> {
  return waitFor(actor, (state) => state.status !== 'active').then(
    () => undefined,
    () => undefined,
  );
}

/** The holder (a session) is about to end; `busy`: what it was doing (then its workspace is kept). */
export function endHold(workspace: SessionWorkspace, busy: string | null): void {
  workspace.actor.send({ type: 'workspace.end', busy });
}

/** The holder is gone: the hold cleans up by its strategy; resolves when that is done. */
export function releaseHold(workspace: SessionWorkspace): Promise<void> {
  workspace.actor.send({ type: 'workspace.release' });
  return holdOver(workspace.actor);
}

/**
 * No session ended up using the workspace: the hold removes a worktree it made; resolves when
 * done. Sent only once `heldWorkspace` resolved (a hold that failed is over already).
 */
export function abandonHold(workspace: SessionWorkspace): Promise<void> {
  workspace.actor.send({ type: 'workspace.abandon' });
  return holdOver(workspace.actor);
}
