/**
 * The adapter between the workspace model and the real runtime: one `WorkspaceRun` per path
 * owns a fresh supervisor with two real fixture agents — `fixture`, which opens sessions, and
 * `locked`, which refuses them (it requires a login) — and a real git repository. It causes
 * each model event for real and checks each model state on the supervisor's workspaces, the
 * workspace holds in the agent's actor, the worktree on disk and the `workspace:*` events.
 *
 * The outcome of an ending is checked as soon as the call that ended the hold (`close()`,
 * `stop()`, the rejected `newSession()`) resolves, not eventually: each of them answers only
 * after the cleanup is done — the agent machine waits in `stopping.releasingWorkspaces` for
 * its holds.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import { transition } from 'xstate';
import { createSupervisor, type Session, type Supervisor, type SupervisorEventMap } from '../../index.js';
import { git, makeRepoAt } from '../support/git-repo.js';
import { command, eventually, fixtureSpec, isRunning, scratch } from '../support/real-agents.js';
import type { ModelCoverage, ModelPath, ModelSnapshot, ModelStep } from './model-paths.js';
import { ModelRun } from './model-run.js';
import { within } from './sut.js';
import { workspaceModel, workspaceModelEvents, type ModelOutcome, type ModelStrategy, type WorkspaceModelContext, type WorkspaceModelEvent } from './workspace.model.js';

/** How paths show the model context. */
export const showWorkspace = (context: Record<string, unknown>) => {
  const { strategy, dirty, last } = context as unknown as WorkspaceModelContext;
  return [strategy, dirty ? 'dirty' : null, last ? `last ${last}` : null].filter(Boolean).join(', ');
};

/** The outcome a model step names (`outcome` action), if it ends a hold. */
function modelOutcome(previous: ModelSnapshot, event: WorkspaceModelEvent): ModelOutcome | undefined {
  const [, actions] = transition(workspaceModel, previous as never, event) as unknown as [unknown, Array<{ type: string; params?: unknown }>];
  return (actions.find((action) => action.type === 'outcome')?.params as { outcome: ModelOutcome } | undefined)?.outcome;
}

/**
 * How long a call that ends a hold may take: its git work (an archive is a bundle, a patch
 * and a removal, eight git processes) on a loaded two-core machine running the whole suite.
 */
const endingBoundMs = 30_000;

type WorkspaceEvent = { type: 'cleaned'; event: SupervisorEventMap['workspace:cleaned'] } | { type: 'refused'; event: SupervisorEventMap['workspace:cleanup_refused'] };

export class WorkspaceRun extends ModelRun {
  private readonly files = scratch();
  private readonly repo: string;
  private readonly notARepo: string;
  private readonly supervisor: Supervisor;
  private readonly events: WorkspaceEvent[] = [];
  private session: Session | null = null;
  private turn: Promise<unknown> | null = null;
  /** The last session's worktree, and the last opening's error. */
  private lastPath: string | null = null;
  private lastError: unknown = null;

  constructor(
    path: ModelPath,
    private readonly coverage: ModelCoverage,
  ) {
    super(path, showWorkspace);
    this.repo = makeRepoAt(this.files.path('repo'));
    this.notARepo = this.files.path('plain');
    mkdirSync(this.notARepo);
    this.supervisor = createSupervisor({
      stateDir: this.files.path('state'),
      store: 'memory',
      handleSignals: false,
      sweepOnStart: false,
      agents: {
        fixture: fixtureSpec(['--pid-file', this.files.path('fixture.pids')]),
        locked: fixtureSpec(['--require-auth', '--pid-file', this.files.path('locked.pids')]),
      },
    });
    this.supervisor.on('workspace:cleaned', (event) => this.events.push({ type: 'cleaned', event }));
    this.supervisor.on('workspace:cleanup_refused', (event) => this.events.push({ type: 'refused', event }));
  }

  params() {
    return this.testParams(['none', 'held', 'busy'], workspaceModelEvents);
  }

  override async dispose(): Promise<number[]> {
    await this.supervisor.shutdown().catch(() => {});
    await this.turn;
    const leaked = ['fixture', 'locked'].flatMap((agent) => this.files.pidLines(`${agent}.pids`).map(([pid]) => pid!)).filter((pid) => isRunning(pid));
    for (const pid of leaked) process.kill(pid, 'SIGKILL');
    this.files.cleanup();
    return leaked;
  }

  private async open(strategy: ModelStrategy): Promise<void> {
    this.session = await within(this.supervisor.newSession('fixture', { workspace: { kind: 'git-worktree', repo: this.repo, cleanup: strategy } }), 'newSession with a worktree');
    this.lastPath = this.session.cwd;
  }

  protected async execute(step: ModelStep): Promise<void> {
    const previous = this.path.steps[this.index - 1]!.state;
    const event = step.event as WorkspaceModelEvent;
    const outcome = modelOutcome(previous, event);
    this.events.length = 0;
    this.lastError = null;
    switch (event.type) {
      case 'OPEN_KEEP':
        return this.open('keep');
      case 'OPEN_ARCHIVE':
        return this.open('archive');
      case 'OPEN_REMOVE':
        return this.open('remove');
      case 'OPEN_OUTSIDE_REPO':
        this.lastPath = null;
        this.lastError = await within(this.supervisor.newSession('fixture', { workspace: { kind: 'git-worktree', repo: this.notARepo } }).catch((error: unknown) => error), 'the refused opening');
        break;
      case 'OPEN_REFUSED':
        this.lastPath = null;
        this.lastError = await within(this.supervisor.newSession('locked', { workspace: { kind: 'git-worktree', repo: this.repo, cleanup: 'keep' } }).catch((error: unknown) => error), 'the refused session', endingBoundMs);
        break;
      case 'CHANGE_FILE':
        writeFileSync(join(this.session!.cwd, 'notes.txt'), 'uncommitted\n');
        return;
      case 'START_TURN': {
        const session = this.session!;
        this.turn = session.prompt(command({ op: 'hang' })).catch((error: unknown) => error);
        // Fails the step (instead of going on unchecked) when the turn never starts.
        return eventually(() => session.status === 'running', 'the turn to run');
      }
      case 'CLOSE':
        await within(this.session!.close(), 'close()', endingBoundMs);
        this.session = null;
        break;
      case 'STOP_AGENT':
        await within(this.supervisor.stop('fixture'), "stop('fixture')", endingBoundMs);
        this.session = null;
        break;
    }
    if (this.turn) {
      await within(this.turn, 'the turn to end with its session');
      this.turn = null;
    }
    this.expectOutcome(outcome!);
  }

  /** Checked at once: the call that ended the hold has resolved, so its cleanup is done. */
  private expectOutcome(outcome: ModelOutcome): void {
    const seen = this.events.map(({ type, event }) => (type === 'cleaned' ? event.action : event.reason));
    if (outcome === 'failed') {
      expect(this.lastError, 'the opening is refused').toMatchObject({ kind: 'workspace_failed' });
      expect(seen, 'no workspace event').toEqual([]);
      return;
    }
    if (this.lastPath === null) {
      // The refused session: made for it, never used, removed.
      expect(this.lastError, 'the agent refuses the session').toMatchObject({ kind: 'auth_required' });
      expect(this.events, 'the worktree made for it is removed').toEqual([
        { type: 'cleaned', event: expect.objectContaining({ owner: { agent: 'locked' }, strategy: 'remove', action: 'removed', branchDeleted: true }) },
      ]);
      return;
    }
    expect(seen, 'what the ending reported').toEqual([outcome]);
    expect(existsSync(this.lastPath), `the worktree is ${outcome === 'archived' || outcome === 'removed' ? 'gone' : 'kept'}`).toBe(outcome !== 'archived' && outcome !== 'removed');
  }

  /** The workspace holds running in an agent's actor, by actor id, with their states. */
  private holds(agent: string): Record<string, unknown> {
    const children = (this.supervisor.actor.getSnapshot().children as Record<string, { getSnapshot(): { children: Record<string, { getSnapshot(): { value: unknown } }> } }>)[agent]?.getSnapshot().children ?? {};
    return Object.fromEntries(Object.entries(children).filter(([id]) => id.startsWith('workspace')).map(([id, child]) => [id, child.getSnapshot().value]));
  }

  protected async check(state: ModelSnapshot): Promise<void> {
    const context = state.context as WorkspaceModelContext;
    const live = (await this.supervisor.workspaces()).filter((workspace) => workspace.owner !== null);
    expect(this.holds('locked'), 'no hold left in the refusing agent').toEqual({});
    if (state.matches('none')) {
      expect(live, 'no workspace in use').toEqual([]);
      expect(this.holds('fixture'), 'no hold left').toEqual({});
      expect(git(this.repo, 'branch', '--format=%(refname:short)').split('\n').includes('main')).toBe(true);
    } else {
      const session = this.session!;
      expect(live, 'the session holds its worktree').toEqual([expect.objectContaining({ path: session.cwd, owner: { agent: 'fixture', sessionId: session.id }, cleanup: context.strategy, clean: !context.dirty })]);
      expect(Object.values(this.holds('fixture')), 'its hold is held').toEqual(['held']);
      expect(session.status).toBe(state.matches('busy') ? 'running' : 'ready');
    }
    const previous = this.index > 0 ? this.path.steps[this.index - 1]!.state : undefined;
    this.coverage.recordStep(previous, this.path.steps[this.index]!);
  }
}
