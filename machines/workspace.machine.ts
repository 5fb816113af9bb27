/**
 * One hold on a workspace (docs/workspaces.md): an agent's own, or a session's. acquiring →
 * held → (ending) → detaching → choosing → applying | keeping → released | kept, or failed.
 * The machine decides what happens to the workspace when its holder ends: kept (a directory,
 * strategy `keep`, a holder that was busy, git refusing), archived or removed (its strategy),
 * removed because the holder never came to be (`abandon` of a worktree this hold made), or
 * left to the other holders of a shared one. Pure: the git and file work is in the actors
 * the runtime provides (`acquireWorkspace`, `restoreWorkspace`, `detachWorkspace`,
 * `cleanWorkspace`, `keepWorkspace`; runtime/workspace-registry.ts does it), and the events
 * (`workspace:cleaned`, `workspace:cleanup_refused`) are written by them.
 *
 * Its parent is the agent machine: the agent's own hold has the actor id `workspace` and is
 * spawned when its process first asks for its directory; a session's hold is spawned at
 * `session.admit`. Each tells the parent when it is held (`workspace.held`, with the path),
 * and when it could not be made (`workspace.failed`); that it is over, the agent learns from
 * its done event (`xstate.done.actor.<id>`), which comes once the hold has finished — a
 * stop of the agent waits for every hold to be over.
 */
import { assertEvent, assign, fromPromise, sendParent, setup } from 'xstate';
import { describeError } from '../core/errors.js';
import type { CleanupStrategy, WorkspaceSpec } from '../core/workspace-spec.js';

export interface WorkspaceHoldInput {
  /** The hold's actor id in its agent (`workspace`, or `workspace:<id>` for a session's). */
  actorId: string;
  agent: string;
  /** A session's own workspace spec; null: the agent's own workspace (the spec is its agent's). */
  spec: WorkspaceSpec | null;
}

/** What the git and file actors are given: the hold, by its key in the registry. */
export interface WorkspaceHoldRef {
  /** `<agent>/<actorId>`: unique among a supervisor's holds. */
  key: string;
  agent: string;
  spec: WorkspaceSpec | null;
}

/** What `detachWorkspace` found when the holder let go: what may be done with the workspace. */
export interface WorkspaceDetached {
  /** A shared workspace others still hold: nothing is cleaned up. */
  othersHold: boolean;
  /** A directory, or a worktree with strategy `keep`: it stays. */
  keeps: boolean;
  /** This hold's acquire made the worktree (not a reuse, not a share). */
  made: boolean;
  strategy: CleanupStrategy;
}

/** Why a workspace is kept, as `keepWorkspace` reports it (`workspace:cleaned` kept, or `workspace:cleanup_refused`). */
export type KeepReason = { reason: 'kept' } | { reason: 'busy' | 'dirty' | 'failed'; message: string };

export type CleanInput = WorkspaceHoldRef & { strategy: 'archive' | 'remove' };
export type KeepInput = WorkspaceHoldRef & { why: KeepReason; strategy: CleanupStrategy };

/** What `cleanWorkspace` did: cleaned (it reported `workspace:cleaned`), or refused by git. */
export type CleanOutcome = { refused: null } | { refused: { reason: 'dirty' | 'failed'; message: string } };

export type WorkspaceHoldEvent =
  /** The agent's process needs its directory: acquire, or (held: a restart) check that it is still there. */
  | { type: 'workspace.acquire' }
  /** The holder is about to end; `busy` says what it was doing (then no cleanup runs). The first busy reason sticks. */
  | { type: 'workspace.end'; busy: string | null }
  /** The holder is gone: clean up. */
  | { type: 'workspace.release' }
  /** The holder never came to be (its session failed to open): a worktree this hold made is removed. */
  | { type: 'workspace.abandon' };

/** The hold's own actors' answers. */
type WorkspaceActorEvent =
  | { type: 'xstate.done.actor.acquire'; output: { path: string } }
  | { type: 'xstate.done.actor.restore'; output: { path: string } }
  | { type: 'xstate.error.actor.acquire'; error: unknown }
  | { type: 'xstate.error.actor.restore'; error: unknown }
  | { type: 'xstate.done.actor.detach'; output: WorkspaceDetached }
  | { type: 'xstate.done.actor.clean'; output: CleanOutcome };

/** What a hold tells its agent. */
export type WorkspaceHoldReport =
  | { type: 'workspace.held'; id: string; path: string }
  | { type: 'workspace.failed'; id: string; message: string };

export interface WorkspaceHoldContext extends WorkspaceHoldInput {
  path: string | null;
  /** Why the holder's end must not clean up (a session was busy), or null. */
  busy: string | null;
  abandoned: boolean;
  /** The holder went away while the workspace was still being made: clean up once it is. */
  releaseAsked: boolean;
  detached: WorkspaceDetached | null;
  /** The cleanup to apply, once chosen. */
  cleanup: 'archive' | 'remove' | null;
  keep: KeepReason | null;
  /** Why the workspace could not be made (git's message). */
  failure: string | null;
}

/** Placeholders for the git and file work; the runtime provides the real actors. */
function placeholder<Output, Input>(name: string) {
  return fromPromise<Output, Input>(() => {
    throw new Error(`workspaceMachine needs the ${name} actor: use .provide({ actors: { ${name} } })`);
  });
}

/** A hold's key in the registry: `<agent>/<actor id>`. */
export const holdKey = (agent: string, actorId: string) => `${agent}/${actorId}`;

/** The hold as the registry knows it. */
const holdRef = ({ context }: { context: WorkspaceHoldContext }): WorkspaceHoldRef => ({ key: holdKey(context.agent, context.actorId), agent: context.agent, spec: context.spec });

export const workspaceMachine = setup({
  types: {
    context: {} as WorkspaceHoldContext,
    events: {} as WorkspaceHoldEvent | WorkspaceActorEvent,
    input: {} as WorkspaceHoldInput,
  },
  actors: {
    acquireWorkspace: placeholder<{ path: string }, WorkspaceHoldRef>('acquireWorkspace'),
    restoreWorkspace: placeholder<{ path: string }, WorkspaceHoldRef>('restoreWorkspace'),
    detachWorkspace: placeholder<WorkspaceDetached, WorkspaceHoldRef>('detachWorkspace'),
    cleanWorkspace: placeholder<CleanOutcome, CleanInput>('cleanWorkspace'),
    keepWorkspace: placeholder<void, KeepInput>('keepWorkspace'),
  },
  guards: {
    /** The holder went away while the workspace was being made or checked. */
    releaseWasAsked: ({ context }) => context.releaseAsked,
    /** A shared workspace that others still hold. */
    othersStillHold: ({ context }) => context.detached?.othersHold === true,
    /** The holder never came to be, and this hold made the worktree (only worktrees are made): it goes again, whatever its strategy. */
    abandonedWhatItMade: ({ context }) => context.abandoned && context.detached?.made === true,
    /** A directory, or strategy `keep`. */
    keepsWorkspace: ({ context }) => context.detached?.keeps === true,
    /** A session was running a turn or awaiting an answer when its holder ended. */
    holderWasBusy: ({ context }) => context.busy !== null && !context.abandoned,
    cleanupRefused: ({ event }) => {
      assertEvent(event, 'xstate.done.actor.clean');
      return event.output.refused !== null;
    },
  },
  actions: {
    recordPath: assign({
      path: ({ event }) => {
        assertEvent(event, ['xstate.done.actor.acquire', 'xstate.done.actor.restore']);
        return event.output.path;
      },
    }),
    recordFailure: assign({
      failure: ({ event }) => {
        assertEvent(event, ['xstate.error.actor.acquire', 'xstate.error.actor.restore']);
        return describeError(event.error);
      },
      path: null,
    }),
    /** The first busy reason sticks. */
    recordEnd: assign({
      busy: ({ context, event }) => {
        assertEvent(event, 'workspace.end');
        return context.busy ?? event.busy;
      },
    }),
    recordRelease: assign({ releaseAsked: true }),
    recordAbandon: assign({ abandoned: true }),
    recordDetached: assign({
      detached: ({ event }) => {
        assertEvent(event, 'xstate.done.actor.detach');
        return event.output;
      },
    }),
    chooseRemoval: assign({ cleanup: 'remove' as const }),
    chooseStrategy: assign({ cleanup: ({ context }) => (context.detached?.strategy === 'archive' ? ('archive' as const) : ('remove' as const)) }),
    keepAsStrategy: assign({ keep: { reason: 'kept' } as KeepReason }),
    keepForBusyHolder: assign({
      keep: ({ context }): KeepReason => ({
        reason: 'busy',
        message: `Not ${context.detached?.strategy === 'archive' ? 'archived' : 'removed'}: ${context.busy} (kept; pruneWorkspaces() cleans it up later)`,
      }),
    }),
    keepAsRefused: assign({
      keep: ({ event }): KeepReason => {
        assertEvent(event, 'xstate.done.actor.clean');
        return event.output.refused ?? { reason: 'kept' };
      },
    }),
    // What a hold tells its agent. A hold run on its own (a test) provides replacements.
    reportHeld: sendParent(({ context }): WorkspaceHoldReport => ({ type: 'workspace.held', id: context.actorId, path: context.path ?? '' })),
    reportFailed: sendParent(({ context }): WorkspaceHoldReport => ({ type: 'workspace.failed', id: context.actorId, message: context.failure ?? 'the workspace could not be made' })),
  },
}).createMachine({
  id: 'workspace',
  description: 'One hold on a workspace (an agent\'s own, or a session\'s): made, held, then cleaned up by its strategy or kept.',
  context: ({ input }) => ({ ...input, path: null, busy: null, abandoned: false, releaseAsked: false, detached: null, cleanup: null, keep: null, failure: null }),
  initial: 'acquiring',
  states: {
    acquiring: {
      description: 'The worktree made (or reused, or checked out again), or the directory made; the holder waits.',
      invoke: {
        id: 'acquire',
        src: 'acquireWorkspace',
        input: holdRef,
        onDone: [
          { guard: 'releaseWasAsked', target: 'detaching', actions: 'recordPath', description: 'Made, but its holder is already gone: clean up.' },
          { target: 'held', actions: 'recordPath', description: 'Made: its path is the holder\'s cwd.' },
        ],
        onError: { target: 'failed', actions: 'recordFailure', description: 'git refused, or another owner uses it: workspace_failed.' },
      },
      on: {
        'workspace.end': { actions: 'recordEnd', description: 'The holder is ending: remembered for the cleanup.' },
        'workspace.release': { actions: 'recordRelease', description: 'The holder is gone: cleaned up once made (a git command is never cut halfway).' },
      },
    },
    held: {
      description: 'In use: its path is the holder\'s cwd; its status is watched.',
      entry: 'reportHeld',
      on: {
        'workspace.acquire': { target: 'restoring', description: 'The agent restarts: check that the workspace is still there.' },
        'workspace.end': { target: 'ending', actions: 'recordEnd', description: 'The holder is about to end (a stop, a close).' },
        'workspace.release': { target: 'detaching', description: 'The holder is gone.' },
        'workspace.abandon': { target: 'detaching', actions: 'recordAbandon', description: 'The holder never came to be (its session failed to open).' },
      },
    },
    restoring: {
      description: 'A restart: still a worktree on its branch (or still a directory)? Made again if it went missing.',
      invoke: {
        id: 'restore',
        src: 'restoreWorkspace',
        input: holdRef,
        onDone: [
          { guard: 'releaseWasAsked', target: 'detaching', actions: 'recordPath', description: 'There, but its holder is already gone: clean up.' },
          { target: 'held', actions: 'recordPath', description: 'There (again).' },
        ],
        onError: { target: 'failed', actions: 'recordFailure', description: 'Gone, and it could not be made again.' },
      },
      on: {
        'workspace.end': { actions: 'recordEnd', description: 'The holder is ending: remembered for the cleanup.' },
        'workspace.release': { actions: 'recordRelease', description: 'The holder is gone: cleaned up once checked.' },
      },
    },
    ending: {
      description: 'Its holder is ending; the cleanup waits until it is gone (its terminals killed, its process exited).',
      on: {
        'workspace.end': { actions: 'recordEnd', description: 'Another end (a shutdown after a stop): the first busy reason sticks.' },
        'workspace.release': { target: 'detaching', description: 'The holder is gone.' },
        'workspace.abandon': { target: 'detaching', actions: 'recordAbandon', description: 'The holder never came to be.' },
      },
    },
    detaching: {
      description: 'The holder lets go: its status watcher stops when it was the last one.',
      invoke: {
        id: 'detach',
        src: 'detachWorkspace',
        input: holdRef,
        onDone: { target: 'choosing', actions: 'recordDetached' },
      },
    },
    choosing: {
      description: 'What happens to the workspace.',
      always: [
        { guard: 'othersStillHold', target: 'released', description: 'Shared, and others still hold it: their record names the next owner.' },
        { guard: 'abandonedWhatItMade', target: 'applying', actions: 'chooseRemoval', description: 'Made for a holder that never came to be: removed, whatever its strategy.' },
        { guard: 'keepsWorkspace', target: 'keeping', actions: 'keepAsStrategy', description: 'A directory, or strategy keep.' },
        { guard: 'holderWasBusy', target: 'keeping', actions: 'keepForBusyHolder', description: 'A session was busy when its holder ended: not cleaned up (pruneWorkspaces() does it later).' },
        { target: 'applying', actions: 'chooseStrategy', description: 'Its strategy: archive or remove.' },
      ],
    },
    applying: {
      description: 'archive (bundle + patch, then removal) or remove.',
      invoke: {
        id: 'clean',
        src: 'cleanWorkspace',
        input: ({ context }) => ({ ...holdRef({ context }), strategy: context.cleanup ?? 'remove' }),
        onDone: [
          { guard: 'cleanupRefused', target: 'keeping', actions: 'keepAsRefused', description: 'git refused (dirty without force, or an error): kept.' },
          { target: 'released', description: 'Archived or removed (workspace:cleaned).' },
        ],
      },
    },
    keeping: {
      description: 'Kept: its record says it has no owner (stale until pruned), and the event says why.',
      invoke: {
        id: 'keep',
        src: 'keepWorkspace',
        input: ({ context }) => ({ ...holdRef({ context }), why: context.keep ?? { reason: 'kept' }, strategy: context.detached?.strategy ?? 'keep' }),
        onDone: { target: 'kept' },
      },
    },
    released: {
      type: 'final',
      description: 'Cleaned up, or left to the other holders.',
    },
    kept: {
      type: 'final',
      description: 'Kept on disk.',
    },
    failed: {
      type: 'final',
      description: 'Never made (or gone and not made again): the holder fails with workspace_failed.',
      entry: 'reportFailed',
    },
  },
});

export type WorkspaceMachine = typeof workspaceMachine;
