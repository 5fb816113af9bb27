/**
 * The workspace hold machine alone, its git and file work replaced by actors that answer
 * when the test says so: each way a hold ends (cleaned by its strategy, kept by strategy, kept
 * for a busy holder, kept when git refuses, removed when abandoned, left to other holders,
 * never made) and the events it sends its agent. The real work is tested on real
 * repositories in tests/integration/workspaces.test.ts and tests/model/workspace.model.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { createActor, fromPromise } from 'xstate';
import type { CleanupStrategy } from '../../core/workspace-spec.js';
import {
  workspaceMachine,
  type CleanInput,
  type CleanOutcome,
  type KeepInput,
  type WorkspaceDetached,
  type WorkspaceHoldRef,
  type WorkspaceHoldReport,
} from '../../machines/workspace.machine.js';

/** A promise the test settles. */
function deferred<T>() {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((yes, no) => ((resolve = yes), (reject = no)));
  return { promise, resolve, reject };
}

function startHold(options: { detached?: Partial<WorkspaceDetached>; clean?: CleanOutcome; spec?: 'session' | 'agent' } = {}) {
  const acquire = deferred<{ path: string }>();
  const work: string[] = [];
  const reports: WorkspaceHoldReport[] = [];
  const kept: KeepInput[] = [];
  const cleaned: CleanInput[] = [];
  const detached: WorkspaceDetached = { othersHold: false, keeps: false, made: false, strategy: 'archive', ...options.detached };
  const restore = deferred<{ path: string }>();
  const machine = workspaceMachine.provide({
    actors: {
      acquireWorkspace: fromPromise<{ path: string }, WorkspaceHoldRef>(({ input }) => (work.push(`acquire ${input.key}`), acquire.promise)),
      restoreWorkspace: fromPromise<{ path: string }, WorkspaceHoldRef>(() => (work.push('restore'), restore.promise)),
      detachWorkspace: fromPromise<WorkspaceDetached, WorkspaceHoldRef>(async () => (work.push('detach'), detached)),
      cleanWorkspace: fromPromise<CleanOutcome, CleanInput>(async ({ input }) => (work.push(`clean ${input.strategy}`), cleaned.push(input), options.clean ?? { refused: null })),
      keepWorkspace: fromPromise<void, KeepInput>(async ({ input }) => void (work.push(`keep ${input.why.reason}`), kept.push(input))),
    },
    actions: {
      reportHeld: ({ context }) => void reports.push({ type: 'workspace.held', id: context.actorId, path: context.path ?? '' }),
      reportFailed: ({ context }) => void reports.push({ type: 'workspace.failed', id: context.actorId, message: context.failure ?? '' }),
    },
  });
  const actor = createActor(machine, {
    input: { actorId: 'workspace:h1', agent: 'echo', spec: options.spec === 'agent' ? null : { kind: 'git-worktree', repo: '/repo', cleanup: detached.strategy } },
  });
  actor.start();
  const settle = () => new Promise((resolve) => setTimeout(resolve, 0));
  return {
    actor,
    work,
    reports,
    kept,
    cleaned,
    acquire,
    restoreAnswer: () => restore,
    state: () => actor.getSnapshot().value,
    settle,
    /** Made at `path`, and the event loop run until the hold has moved on. */
    async held(path = '/ws') {
      acquire.resolve({ path });
      await settle();
    },
  };
}

const strategies: Array<[CleanupStrategy, string]> = [
  ['archive', 'clean archive'],
  ['remove', 'clean remove'],
];

describe('workspaceMachine', () => {
  it('acquires under its key and tells its agent the path', async () => {
    const hold = startHold();
    expect(hold.state()).toBe('acquiring');
    expect(hold.work).toEqual(['acquire echo/workspace:h1']);
    await hold.held('/state/ws-1');
    expect(hold.state()).toBe('held');
    expect(hold.reports).toEqual([{ type: 'workspace.held', id: 'workspace:h1', path: '/state/ws-1' }]);
  });

  for (const [strategy, work] of strategies) {
    it(`a released holder's workspace is cleaned by its strategy (${strategy}), and the agent hears it is over`, async () => {
      const hold = startHold({ detached: { strategy } });
      await hold.held();
      hold.actor.send({ type: 'workspace.release' });
      await hold.settle();
      expect(hold.work).toEqual(['acquire echo/workspace:h1', 'detach', work]);
      expect(hold.state()).toBe('released');
      expect(hold.actor.getSnapshot().status).toBe('done');
      expect(hold.reports, 'only workspace.held: its agent learns the end from its done event').toEqual([{ type: 'workspace.held', id: 'workspace:h1', path: '/ws' }]);
    });
  }

  it('a directory or strategy keep is kept, and reported kept', async () => {
    const hold = startHold({ detached: { keeps: true, strategy: 'keep' } });
    await hold.held();
    hold.actor.send({ type: 'workspace.end', busy: null });
    expect(hold.state()).toBe('ending');
    hold.actor.send({ type: 'workspace.release' });
    await hold.settle();
    expect(hold.work.slice(1)).toEqual(['detach', 'keep kept']);
    expect(hold.state()).toBe('kept');
    expect(hold.kept[0]?.strategy).toBe('keep');
  });

  it('a holder that was busy when it ended keeps the workspace; the first busy reason sticks', async () => {
    const hold = startHold({ detached: { strategy: 'remove' } });
    await hold.held();
    hold.actor.send({ type: 'workspace.end', busy: 'session s1 of agent "echo" is running a turn' });
    hold.actor.send({ type: 'workspace.end', busy: null });
    hold.actor.send({ type: 'workspace.release' });
    await hold.settle();
    expect(hold.work.slice(1)).toEqual(['detach', 'keep busy']);
    expect(hold.kept[0]?.why).toEqual({ reason: 'busy', message: 'Not removed: session s1 of agent "echo" is running a turn (kept; pruneWorkspaces() cleans it up later)' });
    expect(hold.state()).toBe('kept');
  });

  it('git refusing the cleanup keeps the workspace with its reason', async () => {
    const hold = startHold({ clean: { refused: { reason: 'dirty', message: 'uncommitted changes' } } });
    await hold.held();
    hold.actor.send({ type: 'workspace.release' });
    await hold.settle();
    expect(hold.work.slice(1)).toEqual(['detach', 'clean archive', 'keep dirty']);
    expect(hold.kept[0]?.why).toEqual({ reason: 'dirty', message: 'uncommitted changes' });
    expect(hold.state()).toBe('kept');
  });

  it('abandoned (no session came to hold it), a worktree it made is removed whatever its strategy — and busy does not count', async () => {
    const hold = startHold({ detached: { made: true, keeps: true, strategy: 'keep' } });
    await hold.held();
    hold.actor.send({ type: 'workspace.end', busy: 'a turn' });
    hold.actor.send({ type: 'workspace.abandon' });
    await hold.settle();
    expect(hold.work.slice(1)).toEqual(['detach', 'clean remove']);
    expect(hold.state()).toBe('released');
  });

  it('abandoned, a workspace it did not make (a reuse, a share) follows its strategy', async () => {
    const hold = startHold({ detached: { made: false, strategy: 'archive' } });
    await hold.held();
    hold.actor.send({ type: 'workspace.abandon' });
    await hold.settle();
    expect(hold.work.slice(1)).toEqual(['detach', 'clean archive']);
  });

  it('a shared workspace that others still hold is left to them: nothing cleaned, nothing kept', async () => {
    const hold = startHold({ detached: { othersHold: true } });
    await hold.held();
    hold.actor.send({ type: 'workspace.release' });
    await hold.settle();
    expect(hold.work.slice(1)).toEqual(['detach']);
    expect(hold.state()).toBe('released');
  });

  it('a workspace that cannot be made fails the hold with git\'s message', async () => {
    const hold = startHold();
    hold.acquire.reject(new Error('fatal: not a git repository'));
    await hold.settle();
    expect(hold.state()).toBe('failed');
    expect(hold.reports).toEqual([{ type: 'workspace.failed', id: 'workspace:h1', message: 'fatal: not a git repository' }]);
  });

  it('released while still being made: cleaned up once made (a git command is never cut), its end remembered', async () => {
    const hold = startHold({ detached: { strategy: 'remove' } });
    hold.actor.send({ type: 'workspace.end', busy: 'a turn' });
    hold.actor.send({ type: 'workspace.release' });
    expect(hold.state()).toBe('acquiring');
    await hold.held();
    expect(hold.work.slice(1)).toEqual(['detach', 'keep busy']);
    expect(hold.reports, 'never held').toEqual([]);
    expect(hold.actor.getSnapshot().status).toBe('done');
  });

  it('an agent restart checks the workspace again; held again with the path it has now', async () => {
    const hold = startHold({ spec: 'agent' });
    await hold.held('/ws');
    hold.actor.send({ type: 'workspace.acquire' });
    expect(hold.state()).toBe('restoring');
    hold.actor.send({ type: 'workspace.acquire' }); // a second ask while checking: the one answer serves both
    hold.restoreAnswer().resolve({ path: '/ws' });
    await hold.settle();
    expect(hold.state()).toBe('held');
    expect(hold.work).toEqual(['acquire echo/workspace:h1', 'restore']);
    expect(hold.reports).toEqual([
      { type: 'workspace.held', id: 'workspace:h1', path: '/ws' },
      { type: 'workspace.held', id: 'workspace:h1', path: '/ws' },
    ]);
  });

  it('a restart whose workspace cannot be made again fails the hold', async () => {
    const hold = startHold({ spec: 'agent' });
    await hold.held();
    hold.actor.send({ type: 'workspace.acquire' });
    hold.restoreAnswer().reject(new Error('branch gone'));
    await hold.settle();
    expect(hold.state()).toBe('failed');
    expect(hold.reports.at(-1)).toEqual({ type: 'workspace.failed', id: 'workspace:h1', message: 'branch gone' });
  });

  it('released while a restart checks it: cleaned up once checked', async () => {
    const hold = startHold({ spec: 'agent' });
    await hold.held();
    hold.actor.send({ type: 'workspace.acquire' });
    hold.actor.send({ type: 'workspace.end', busy: null });
    hold.actor.send({ type: 'workspace.release' });
    hold.restoreAnswer().resolve({ path: '/ws' });
    await hold.settle();
    expect(hold.work.slice(1)).toEqual(['restore', 'detach', 'clean archive']);
    expect(hold.state()).toBe('released');
  });
});
