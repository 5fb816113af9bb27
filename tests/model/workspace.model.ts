/**
 * A session's own workspace (docs/workspaces.md) as a *model* machine for `createTestModel`:
 * a git worktree made for the session with its cleanup strategy, changed, busy with a turn,
 * and ended by `close()` or by a stop of its agent — and the openings that never hold one
 * (a repository that is not one: nothing made; an agent that refuses the session: the
 * worktree made for it removed again). No `invoke`, no `after`: every stimulus is an event.
 *
 * Each way back to `none` names the outcome the real supervisor must report before the
 * call that ended the hold resolves (`outcome`, and `last` in context): `kept`, `archived`,
 * `removed` (`workspace:cleaned`), `busy` or `dirty` (`workspace:cleanup_refused`), or
 * `failed` (the opening rejected with workspace_failed; no event). What the real system does
 * and the model therefore says:
 * - `keep` keeps, whatever happened; a busy session (a turn running) keeps the others too;
 * - `remove` of a worktree with uncommitted changes is refused (`dirty`); `archive` takes
 *   the changes into its patch and removes the worktree;
 * - a stop of the agent answers after its sessions' workspaces were cleaned up (or kept).
 */
import { assign, setup } from 'xstate';

export type ModelStrategy = 'keep' | 'archive' | 'remove';
export type ModelOutcome = 'kept' | 'archived' | 'removed' | 'busy' | 'dirty' | 'failed';

export interface WorkspaceModelContext {
  /** The open session's strategy (null: none open). */
  strategy: ModelStrategy | null;
  /** A file was changed in the worktree (uncommitted). */
  dirty: boolean;
  /** What the last hold ended with (null: none ended yet, or one is open). */
  last: ModelOutcome | null;
}

export type WorkspaceModelEvent =
  | { type: 'OPEN_KEEP' }
  | { type: 'OPEN_ARCHIVE' }
  | { type: 'OPEN_REMOVE' }
  | { type: 'OPEN_OUTSIDE_REPO' }
  | { type: 'OPEN_REFUSED' }
  | { type: 'CHANGE_FILE' }
  | { type: 'START_TURN' }
  | { type: 'CLOSE' }
  | { type: 'STOP_AGENT' };

export const workspaceModelEvents: Array<WorkspaceModelEvent['type']> = [
  'OPEN_KEEP', 'OPEN_ARCHIVE', 'OPEN_REMOVE', 'OPEN_OUTSIDE_REPO', 'OPEN_REFUSED', 'CHANGE_FILE', 'START_TURN', 'CLOSE', 'STOP_AGENT',
];

const ended = (outcome: ModelOutcome) => [
  { type: 'outcome' as const, params: { outcome } },
  { type: 'recordEnd' as const, params: { outcome } },
];
const opened = (strategy: ModelStrategy) => ({ type: 'recordOpen' as const, params: { strategy } });

/** How a hold that ends while idle (not busy) ends, by strategy and changes: one transition each. */
const idleEnds = [
  { guard: 'keeps', actions: ended('kept'), description: 'strategy keep: kept.' },
  { guard: 'archives', actions: ended('archived'), description: 'strategy archive: bundle + patch, removed.' },
  { guard: 'removesDirty', actions: ended('dirty'), description: 'strategy remove, uncommitted changes, no force: refused dirty, kept.' },
  { actions: ended('removed'), description: 'strategy remove, clean: removed with its branch.' },
] as const;

export const workspaceModel = setup({
  types: {
    context: {} as WorkspaceModelContext,
    events: {} as WorkspaceModelEvent,
  },
  guards: {
    keeps: ({ context }) => context.strategy === 'keep',
    archives: ({ context }) => context.strategy === 'archive',
    removesDirty: ({ context }) => context.strategy === 'remove' && context.dirty,
    clean: ({ context }) => !context.dirty,
  },
  actions: {
    /** Documents what the ending reports; the harness reads it with `transition()`. */
    outcome: (_, _params: { outcome: ModelOutcome }) => {},
    recordOpen: assign((_, params: { strategy: ModelStrategy }) => ({ strategy: params.strategy, dirty: false, last: null })),
    recordEnd: assign((_, params: { outcome: ModelOutcome }) => ({ strategy: null, dirty: false, last: params.outcome })),
    recordChange: assign({ dirty: true }),
  },
}).createMachine({
  id: 'workspaceModel',
  description: 'One session at a time in its own git worktree, on one fixture agent.',
  context: { strategy: null, dirty: false, last: null },
  initial: 'none',
  states: {
    none: {
      description: 'No session holds a workspace; the last hold ended as `last` says.',
      on: {
        OPEN_KEEP: { target: 'held', actions: opened('keep'), description: 'newSession with a worktree, cleanup keep.' },
        OPEN_ARCHIVE: { target: 'held', actions: opened('archive'), description: 'newSession with a worktree, cleanup archive.' },
        OPEN_REMOVE: { target: 'held', actions: opened('remove'), description: 'newSession with a worktree, cleanup remove.' },
        OPEN_OUTSIDE_REPO: { target: 'none', actions: ended('failed'), description: 'The repo is not a repository: workspace_failed, nothing made, no agent asked.' },
        OPEN_REFUSED: { target: 'none', actions: ended('removed'), description: 'The agent refuses session/new: the worktree made for it is removed (abandoned), whatever its strategy.' },
      },
    },
    held: {
      description: 'A session works in its worktree (its cwd); the hold is `held`.',
      on: {
        CHANGE_FILE: { guard: 'clean', actions: 'recordChange', description: 'A file is written in the worktree (uncommitted).' },
        START_TURN: { target: 'busy', description: 'A turn runs (and does not end by itself).' },
        CLOSE: idleEnds.map((end) => ({ ...end, target: 'none' })),
        STOP_AGENT: idleEnds.map((end) => ({ ...end, target: 'none', description: `stop() of the agent: ${end.description}` })),
      },
    },
    busy: {
      description: 'The session is running a turn.',
      on: {
        CLOSE: [
          { guard: 'keeps', target: 'none', actions: ended('kept'), description: 'close() during a turn, strategy keep: kept.' },
          { target: 'none', actions: ended('busy'), description: 'close() during a turn: not cleaned up, refused busy.' },
        ],
        STOP_AGENT: [
          { guard: 'keeps', target: 'none', actions: ended('kept'), description: 'stop() during a turn, strategy keep: kept.' },
          { target: 'none', actions: ended('busy'), description: 'stop() during a turn: not cleaned up, refused busy.' },
        ],
      },
    },
  },
});
