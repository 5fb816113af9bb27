/**
 * Workspaces (docs/workspaces.md) on real git repositories in temporary directories and
 * real fixture agents: a worktree made before the spawn and used as the agent's cwd, its
 * status, archive and removal, the failures (git's own message, nothing spawned), sharing,
 * cleanup refused while a permission request is pending, pruning after a crash, throttled
 * status events, and no git process or watcher left behind.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, readlinkSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { SimulatedClock } from 'xstate';
import { AgentError, createSupervisor, type AgentSpec, type Session, type Supervisor, type SupervisorEventMap, type SupervisorOptions, type WorkspaceSpec } from '../../index.js';
import { git, hasGit, makeRepoAt } from '../support/git-repo.js';
import { agentState, collectChunks, command, eventually, fixtureAgentScript, fixtureSpec, isRunning, useRealAgentEnvironment, waitForStatus } from '../support/real-agents.js';

const env = useRealAgentEnvironment();

const root = fileURLToPath(new URL('../..', import.meta.url));

/** A repository with one commit on `main`. */
const makeRepo = (name = 'repo') => makeRepoAt(env.files.path(name));

const stateDir = () => env.files.path('state');

function supervise(agents: Record<string, AgentSpec> = {}, options: SupervisorOptions = {}): Supervisor {
  env.supervisor = createSupervisor({ stateDir: stateDir(), store: 'memory', handleSignals: false, sweepOnStart: false, ...options, agents });
  return env.supervisor;
}

/** Every event of `type` the supervisor emits from now on. */
function record<K extends keyof SupervisorEventMap>(supervisor: Supervisor, type: K): Array<SupervisorEventMap[K]> {
  const events: Array<SupervisorEventMap[K]> = [];
  supervisor.on(type, (event) => events.push(event));
  return events;
}

async function ask(session: Session, op: Record<string, unknown>): Promise<string> {
  const received = collectChunks(session);
  await session.prompt(command(op));
  received.off();
  return received.text();
}

const worktrees = (repo: string) => git(repo, 'worktree', 'list', '--porcelain').split('\n').filter((line) => line.startsWith('worktree ')).length;
const branches = (repo: string) => git(repo, 'branch', '--format=%(refname:short)').split('\n').filter(Boolean);
const cwdOf = (pid: number) => readlinkSync(`/proc/${pid}/cwd`);
const worktree = (repo: string, extra: Partial<Extract<WorkspaceSpec, { kind: 'git-worktree' }>> = {}): WorkspaceSpec => ({ kind: 'git-worktree', repo, ...extra });

describe.skipIf(!hasGit)('an agent in its own git worktree', () => {
  it('is made before the spawn and is the cwd; the agent writes a file; stopped, the workspace is dirty; archived, then removed', async () => {
    const repo = makeRepo();
    const supervisor = supervise({ fixture: fixtureSpec([], { workspace: worktree(repo, { name: 'feature' }) }) });
    const agent = await supervisor.ensureAgent('fixture');
    const [made] = await supervisor.workspaces();
    const path = made!.path;
    expect(path.startsWith(join(realpathSync(stateDir()), 'workspaces'))).toBe(true);
    expect(path.endsWith('/feature')).toBe(true);
    expect(cwdOf(agent.pid)).toBe(path);
    expect(git(path, 'rev-parse', '--abbrev-ref', 'HEAD')).toBe('agentvisor/feature');
    expect(made).toMatchObject({ kind: 'git-worktree', repo, branch: 'agentvisor/feature', base: 'main', owner: { agent: 'fixture' }, clean: true, changedFiles: [], ahead: 0, behind: 0, cleanup: 'keep' });

    // A session with no cwd works in its agent's workspace (its sandbox root).
    const session = await supervisor.newSession('fixture');
    expect(session.cwd).toBe(path);
    expect(await ask(session, { op: 'write', path: join(path, 'src', 'hello.ts'), content: 'export const hello = 1;\n' })).toBe('write:ok');
    expect(await ask(session, { op: 'write', path: join(repo, 'outside.txt'), content: 'x' })).toMatch(/^error:.*Access denied/);
    expect((await supervisor.workspaces())[0]).toMatchObject({ clean: false, changedFiles: ['src/hello.ts'], changedCount: 1 });

    const cleaned = record(supervisor, 'workspace:cleaned');
    await supervisor.stop('fixture');
    expect(cleaned).toEqual([{ owner: { agent: 'fixture' }, path, strategy: 'keep', action: 'kept', branchDeleted: false }]);
    // Kept: stale now (no owner), still dirty.
    expect(await supervisor.workspaces()).toEqual([expect.objectContaining({ path, owner: null, owners: [], clean: false, changedFiles: ['src/hello.ts'] })]);

    const pruned = await supervisor.pruneWorkspaces({ strategy: 'archive' });
    expect(pruned.refused).toEqual([]);
    expect(pruned.cleaned).toEqual([expect.objectContaining({ path, branch: 'agentvisor/feature', action: 'archived', branchDeleted: true })]);
    expect(pruned.repos).toEqual([repo]);
    const archive = pruned.cleaned[0]!.archive!;
    expect(archive.startsWith(join(realpathSync(stateDir()), 'workspace-archives'))).toBe(true);
    const metadata = JSON.parse(readFileSync(join(archive, 'metadata.json'), 'utf8')) as Record<string, unknown>;
    expect(metadata).toMatchObject({ repo, branch: 'agentvisor/feature', base: 'main', bundle: null, changedFiles: ['src/hello.ts'], owner: null });
    expect(readFileSync(join(archive, 'uncommitted.patch'), 'utf8')).toContain('export const hello = 1;');
    // Removed: the directory, the worktree and its branch are gone; the patch applies on main.
    expect(existsSync(path)).toBe(false);
    expect(worktrees(repo)).toBe(1);
    expect(branches(repo)).toEqual(['main']);
    git(repo, 'apply', '--check', join(archive, 'uncommitted.patch'));
    expect(await supervisor.workspaces()).toEqual([]);
  });

  it("cleanup 'archive' on stop: a bundle of the branch's commits and a patch of the rest; ahead after a commit", async () => {
    const repo = makeRepo();
    const supervisor = supervise({ fixture: fixtureSpec([], { workspace: worktree(repo, { name: 'work', cleanup: 'archive' }) }) });
    await supervisor.ensureAgent('fixture');
    const session = await supervisor.newSession('fixture');
    const path = session.cwd;
    expect(await ask(session, { op: 'write', path: join(path, 'committed.txt'), content: 'committed\n' })).toBe('write:ok');
    git(path, 'add', 'committed.txt');
    git(path, 'commit', '--quiet', '-m', 'agent work');
    expect(await ask(session, { op: 'write', path: join(path, 'pending.txt'), content: 'pending\n' })).toBe('write:ok');
    expect((await supervisor.workspaces())[0]).toMatchObject({ branch: 'agentvisor/work', clean: false, changedFiles: ['pending.txt'], ahead: 1, behind: 0 });

    const cleaned = record(supervisor, 'workspace:cleaned');
    await supervisor.stop('fixture');
    expect(cleaned).toEqual([expect.objectContaining({ owner: { agent: 'fixture' }, path, strategy: 'archive', action: 'archived', branchDeleted: true })]);
    const archive = cleaned[0]!.archive!;
    expect(readdirSync(archive).sort()).toEqual(['branch.bundle', 'metadata.json', 'uncommitted.patch']);
    expect(existsSync(path)).toBe(false);
    expect(branches(repo)).toEqual(['main']);
    // The bundle gives the branch back.
    git(repo, 'fetch', '--quiet', join(archive, 'branch.bundle'), 'agentvisor/work:restored');
    expect(git(repo, 'show', 'restored:committed.txt')).toBe('committed');
    expect(await supervisor.workspaces()).toEqual([]);
  });

  it("cleanup 'remove' refuses a dirty worktree unless forced, and never deletes a branch with commits", async () => {
    const repo = makeRepo();
    const supervisor = supervise({ fixture: fixtureSpec([], { workspace: worktree(repo, { name: 'scratch', cleanup: 'remove' }) }) });
    const refused = record(supervisor, 'workspace:cleanup_refused');
    await supervisor.ensureAgent('fixture');
    const path = (await supervisor.workspaces())[0]!.path;
    writeFileSync(join(path, 'dirty.txt'), 'x');
    await supervisor.stop('fixture');
    expect(refused).toEqual([expect.objectContaining({ path, strategy: 'remove', reason: 'dirty', message: expect.stringMatching(/uncommitted change/) })]);
    expect(existsSync(path)).toBe(true);

    expect((await supervisor.pruneWorkspaces()).refused).toEqual([expect.objectContaining({ path, reason: 'dirty' })]);
    git(path, 'add', 'dirty.txt');
    git(path, 'commit', '--quiet', '-m', 'work');
    writeFileSync(join(path, 'more.txt'), 'y');
    const pruned = await supervisor.pruneWorkspaces({ force: true });
    expect(pruned.cleaned).toEqual([{ path, branch: 'agentvisor/scratch', action: 'removed', branchDeleted: false }]);
    expect(existsSync(path)).toBe(false);
    expect(branches(repo)).toEqual(['agentvisor/scratch', 'main']);
  });

  it('is reused when the agent restarts, and when it is started again after a stop (keep)', async () => {
    const repo = makeRepo();
    const supervisor = supervise({ fixture: fixtureSpec([], { workspace: worktree(repo) }) }, { restart: { initialDelayMs: 10 } });
    const first = await supervisor.ensureAgent('fixture');
    const path = cwdOf(first.pid);
    expect(path).toMatch(/\/fixture-[0-9a-f]{6}$/);
    writeFileSync(join(path, 'marker.txt'), 'still here');
    process.kill(first.pid, 'SIGKILL');
    await eventually(() => supervisor.list()[0]!.status === 'connected' && supervisor.list()[0]!.pid !== first.pid, 'the agent to reconnect');
    expect(cwdOf(supervisor.list()[0]!.pid!)).toBe(path);
    await supervisor.stop('fixture');
    const again = await supervisor.ensureAgent('fixture');
    expect(cwdOf(again.pid)).toBe(path);
    expect(readFileSync(join(path, 'marker.txt'), 'utf8')).toBe('still here');
    expect(worktrees(repo)).toBe(2);
    // Removed by hand between two starts: checked out again, on its branch.
    const branch = git(path, 'rev-parse', '--abbrev-ref', 'HEAD');
    await supervisor.stop('fixture');
    git(repo, 'worktree', 'remove', '--force', path);
    const third = await supervisor.ensureAgent('fixture');
    expect(cwdOf(third.pid)).toBe(path);
    expect(git(path, 'rev-parse', '--abbrev-ref', 'HEAD')).toBe(branch);
    expect(worktrees(repo)).toBe(2);
  });
});

describe.skipIf(!hasGit)('failures: workspace_failed with git’s own message, and nothing spawned', () => {
  async function expectFailure(workspace: (repo: string) => WorkspaceSpec, message: RegExp, before?: (repo: string) => void) {
    const repo = makeRepo();
    before?.(repo);
    const pids = env.files.path('pids.txt');
    const supervisor = supervise({ fixture: fixtureSpec(['--pid-file', pids], { workspace: workspace(repo) }) });
    const errors = record(supervisor, 'error');
    const error = await supervisor.ensureAgent('fixture').catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(AgentError);
    expect(error).toMatchObject({ kind: 'workspace_failed', agent: 'fixture', message: expect.stringMatching(message) });
    expect((error as AgentError).message).toMatch(/^Could not prepare the workspace of Fixture: /);
    expect(errors).toEqual([expect.objectContaining({ kind: 'workspace_failed' })]);
    expect(supervisor.list()[0]).toMatchObject({ status: 'disconnected', pid: null, lastError: { kind: 'workspace_failed' } });
    expect(existsSync(pids)).toBe(false); // never spawned
    expect(worktrees(repo)).toBe(1);
    return repo;
  }

  it('a repository that does not exist', async () => {
    await expectFailure(() => worktree('/nonexistent/agentvisor-repo'), /cannot change to '\/nonexistent\/agentvisor-repo'/);
  });

  it('a branch that already exists (and the failure is not retried)', async () => {
    const repo = await expectFailure((repo) => worktree(repo, { name: 'taken' }), /fatal: a branch named 'agentvisor\/taken' already exists/, (repo) => git(repo, 'branch', 'agentvisor/taken'));
    const [key] = readdirSync(join(stateDir(), 'workspaces'));
    expect(readdirSync(join(stateDir(), 'workspaces', key!))).toEqual(['.meta']); // no worktree directory
    expect(readdirSync(join(stateDir(), 'workspaces', key!, '.meta'))).toEqual([]); // and its record is gone
    expect(branches(repo)).toEqual(['agentvisor/taken', 'main']);
  });

  it('a base that does not resolve', async () => {
    await expectFailure((repo) => worktree(repo, { base: 'no-such-branch' }), /invalid reference: no-such-branch/);
  });

  it('a branch name git refuses (git check-ref-format --branch)', async () => {
    await expectFailure((repo) => worktree(repo, { branch: 'bad..name' }), /'bad\.\.name' is not a valid branch name/);
  });

  it('names with "..", a leading "-" or a slash are invalid_options before anything starts', async () => {
    const repo = makeRepo();
    const supervisor = supervise();
    for (const name of ['..', 'a..b', '-rf', '--help', '.hidden', 'a/b', '../escape', '']) {
      expect(() => supervisor.register(`agent-${name}`, fixtureSpec([], { workspace: worktree(repo, { name }) })), name).toThrow(
        expect.objectContaining({ kind: 'invalid_options', message: expect.stringContaining('spec.workspace.name') }),
      );
    }
    expect(() => supervisor.register('dash-base', fixtureSpec([], { workspace: worktree(repo, { base: '--orphan' }) }))).toThrow(expect.objectContaining({ kind: 'invalid_options', message: expect.stringContaining('spec.workspace.base') }));
    expect(() => supervisor.register('both', fixtureSpec([], { cwd: repo, workspace: worktree(repo) }))).toThrow(expect.objectContaining({ kind: 'invalid_options', message: expect.stringContaining('spec.workspace') }));
    expect(() => supervisor.register('dir-remove', fixtureSpec([], { workspace: { kind: 'directory', path: repo, cleanup: 'remove' } as unknown as WorkspaceSpec }))).toThrow(expect.objectContaining({ kind: 'invalid_options' }));
    supervisor.register('fixture', fixtureSpec());
    await expect(supervisor.newSession('fixture', { workspace: worktree(repo, { name: '-x' }) })).rejects.toMatchObject({ kind: 'invalid_options', message: expect.stringContaining('workspace.name') });
    await expect(supervisor.newSession('fixture', { cwd: repo, workspace: worktree(repo) })).rejects.toMatchObject({ kind: 'invalid_options' });
    expect(supervisor.list().every((agent) => agent.status === 'idle')).toBe(true);
    expect(worktrees(repo)).toBe(1);
    const noState = createSupervisor({ stateDir: false, store: 'memory', handleSignals: false });
    expect(() => noState.register('fixture', fixtureSpec([], { workspace: worktree(repo) }))).toThrow(expect.objectContaining({ kind: 'invalid_options', message: expect.stringContaining('stateDir') }));
    await noState.shutdown();
  });
});

describe.skipIf(!hasGit)('sessions in their own workspace', () => {
  it('ten worktrees are made concurrently, each the cwd and sandbox root of its session', async () => {
    const repo = makeRepo();
    const supervisor = supervise({ fixture: fixtureSpec() });
    const sessions = await Promise.all(Array.from({ length: 10 }, () => supervisor.newSession('fixture', { workspace: worktree(repo, { cleanup: 'remove' }) })));
    const paths = sessions.map((session) => session.cwd);
    expect(new Set(paths).size).toBe(10);
    expect(sessions.map((session) => session.workspace)).toEqual(paths);
    expect(worktrees(repo)).toBe(11);
    const listed = await supervisor.workspaces();
    expect(listed).toHaveLength(10);
    for (const session of sessions) expect(listed.find((workspace) => workspace.path === session.cwd)?.owner).toEqual({ agent: 'fixture', sessionId: session.id });
    expect(await ask(sessions[3]!, { op: 'write', path: join(paths[3]!, 'mine.txt'), content: 'x' })).toBe('write:ok');
    expect(await ask(sessions[3]!, { op: 'write', path: join(paths[4]!, 'theirs.txt'), content: 'x' })).toMatch(/^error:.*Access denied/);
    // Closed: clean ones are removed; the dirty one is refused and kept.
    const refused = record(supervisor, 'workspace:cleanup_refused');
    await Promise.all(sessions.map((session) => session.close()));
    expect(refused).toEqual([expect.objectContaining({ owner: { agent: 'fixture', sessionId: sessions[3]!.id }, reason: 'dirty' })]);
    expect(paths.filter((path) => existsSync(path))).toEqual([paths[3]]);
    expect(worktrees(repo)).toBe(2);
    expect(branches(repo)).toEqual([(await supervisor.workspaces())[0]!.branch, 'main']);
  });

  it('a session that fails to open leaves no worktree behind; an unknown agent makes none', async () => {
    const repo = makeRepo();
    const supervisor = supervise({ locked: fixtureSpec(['--require-auth']) });
    await expect(supervisor.newSession('nobody', { workspace: worktree(repo) })).rejects.toMatchObject({ kind: 'unknown_agent' });
    const cleaned = record(supervisor, 'workspace:cleaned');
    await expect(supervisor.newSession('locked', { workspace: worktree(repo, { cleanup: 'keep' }) })).rejects.toMatchObject({ kind: 'auth_required' });
    expect(cleaned).toEqual([expect.objectContaining({ owner: { agent: 'locked' }, strategy: 'remove', action: 'removed', branchDeleted: true })]); // made for it, never used: removed whatever its strategy
    expect(worktrees(repo)).toBe(1);
    expect(branches(repo)).toEqual(['main']);
    expect(await supervisor.workspaces()).toEqual([]);
  });

  it('during shutdown no session is opened and no workspace made for one: the supervisor machine refuses it', async () => {
    const repo = makeRepo();
    const supervisor = supervise({ fixture: fixtureSpec() });
    await supervisor.ensureAgent('fixture'); // its stop ladder keeps the supervisor machine in shuttingDown meanwhile
    const stopping = supervisor.shutdown();
    expect(supervisor.actor.getSnapshot().value).toBe('shuttingDown');
    await expect(supervisor.newSession('fixture', { workspace: worktree(repo) })).rejects.toMatchObject({
      kind: 'shutting_down',
      message: expect.stringContaining('Cannot open a session on "fixture"'),
    });
    await stopping;
    expect(worktrees(repo)).toBe(1);
    expect(branches(repo)).toEqual(['main']);
  });

  it('the same name is refused to a second owner, and shared when both say shared: true', async () => {
    const repo = makeRepo();
    const supervisor = supervise({ a: fixtureSpec([], { workspace: worktree(repo, { name: 'common' }) }), b: fixtureSpec([], { workspace: worktree(repo, { name: 'common' }) }) });
    const a = await supervisor.ensureAgent('a');
    await expect(supervisor.ensureAgent('b')).rejects.toMatchObject({ kind: 'workspace_failed', message: expect.stringMatching(/common is already used by agent "a" \(both must say shared: true/) });
    await expect(supervisor.newSession('a', { workspace: worktree(repo, { name: 'common' }) })).rejects.toMatchObject({ kind: 'workspace_failed', message: expect.stringContaining('already used by agent "a"') });

    supervisor.register('c', fixtureSpec([], { workspace: worktree(repo, { name: 'together', shared: true }) }));
    supervisor.register('d', fixtureSpec([], { workspace: worktree(repo, { name: 'together', shared: true, cleanup: 'remove' }) }));
    const c = await supervisor.ensureAgent('c');
    const d = await supervisor.ensureAgent('d');
    expect(cwdOf(c.pid)).toBe(cwdOf(d.pid));
    const together = (await supervisor.workspaces()).find((workspace) => workspace.path === cwdOf(c.pid))!;
    expect(together.owners).toHaveLength(2);
    // The last owner to end cleans up, with the strategy of the one that made it.
    await supervisor.stop('c');
    expect(existsSync(together.path)).toBe(true);
    await supervisor.stop('d');
    expect(existsSync(together.path)).toBe(true);
    expect(cwdOf(a.pid)).toMatch(/\/common$/);
  });

  it("a 'directory' workspace is made if missing, is the cwd, is never removed, and is shared only when asked", async () => {
    const dir = env.files.path('plain/nested');
    const supervisor = supervise({
      one: fixtureSpec([], { workspace: { kind: 'directory', path: dir } }),
      two: fixtureSpec([], { workspace: { kind: 'directory', path: dir } }),
    });
    const one = await supervisor.ensureAgent('one');
    expect(cwdOf(one.pid)).toBe(realpathSync(dir));
    await expect(supervisor.ensureAgent('two')).rejects.toMatchObject({ kind: 'workspace_failed', message: expect.stringContaining('already used by agent "one"') });
    expect(await supervisor.workspaces()).toEqual([
      { path: realpathSync(dir), kind: 'directory', repo: null, branch: null, base: null, owner: { agent: 'one' }, owners: [{ agent: 'one' }], cleanup: 'keep', clean: null, changedFiles: [], changedCount: 0, ahead: null, behind: null },
    ]);
    const session = await supervisor.newSession('one', { workspace: { kind: 'directory', path: env.files.path('shared'), shared: true } });
    const other = await supervisor.newSession('one', { workspace: { kind: 'directory', path: env.files.path('shared'), shared: true } });
    expect(session.cwd).toBe(other.cwd);
    await supervisor.stop('one');
    expect(existsSync(dir) && existsSync(env.files.path('shared'))).toBe(true);
    expect(await supervisor.workspaces()).toEqual([]);
  });
});

describe.skipIf(!hasGit)('cleanup never runs while a session awaits input or a permission', () => {
  it('a stop during a pending permission request keeps the workspace and reports it; pruneWorkspaces() cleans it up later', async () => {
    const repo = makeRepo();
    const supervisor = supervise({ fixture: fixtureSpec([], { workspace: worktree(repo, { name: 'asked', cleanup: 'remove' }) }) });
    const refused = record(supervisor, 'workspace:cleanup_refused');
    const cleaned = record(supervisor, 'workspace:cleaned');
    supervisor.on('permission:request', () => {}); // asked, never answered
    const session = await supervisor.newSession('fixture');
    const path = session.cwd;
    const turn = session.prompt(command({ op: 'permission', title: 'Delete everything' })).catch((error: unknown) => error);
    await eventually(() => session.status === 'awaiting_permission', 'the permission request');
    await supervisor.stop('fixture');
    expect(await turn).toMatchObject({ kind: 'stopped' });
    expect(refused).toEqual([
      { owner: { agent: 'fixture' }, path, strategy: 'remove', reason: 'busy', message: expect.stringMatching(new RegExp(`session ${session.id} of agent "fixture" is awaiting a permission answer`)) },
    ]);
    expect(cleaned).toEqual([]);
    expect(existsSync(path)).toBe(true);
    expect(await supervisor.workspaces()).toEqual([expect.objectContaining({ path, owner: null, clean: true })]);
    expect((await supervisor.pruneWorkspaces()).cleaned).toEqual([{ path, branch: 'agentvisor/asked', action: 'removed', branchDeleted: true }]);
    expect(existsSync(path)).toBe(false);
  });

  it("a session's own workspace: close() during a turn keeps it; close() when idle archives it", async () => {
    const repo = makeRepo();
    const supervisor = supervise({ fixture: fixtureSpec() });
    const refused = record(supervisor, 'workspace:cleanup_refused');
    const cleaned = record(supervisor, 'workspace:cleaned');
    const busy = await supervisor.newSession('fixture', { workspace: worktree(repo, { cleanup: 'archive' }) });
    const turn = busy.prompt(command({ op: 'hang' })).catch(() => null);
    await eventually(() => busy.status === 'running', 'the turn');
    await busy.close();
    await turn;
    expect(refused).toEqual([expect.objectContaining({ owner: { agent: 'fixture', sessionId: busy.id }, reason: 'busy', message: expect.stringContaining('is running a turn') })]);
    expect(existsSync(busy.cwd)).toBe(true);

    const idle = await supervisor.newSession('fixture', { workspace: worktree(repo, { cleanup: 'archive' }) });
    expect(await ask(idle, { op: 'write', path: join(idle.cwd, 'result.txt'), content: 'done\n' })).toBe('write:ok');
    await idle.close();
    expect(cleaned).toEqual([expect.objectContaining({ owner: { agent: 'fixture', sessionId: idle.id }, action: 'archived' })]);
    expect(existsSync(idle.cwd)).toBe(false);
    expect(readFileSync(join(cleaned[0]!.archive!, 'uncommitted.patch'), 'utf8')).toContain('+done');
  });
});

describe.skipIf(!hasGit)('pruneWorkspaces', () => {
  it('removes the worktree of a host that crashed, after its orphan sweep; a live owner’s is left alone', async () => {
    const repo = makeRepo();
    const hostScript = `
      import { createSupervisor } from 'agentvisor';
      const { stateDir, repo, command, args } = JSON.parse(process.env.HOST_SETTINGS);
      const supervisor = createSupervisor({ stateDir, store: 'memory', sweepOnStart: false, agents: { crashed: { command, args, workspace: { kind: 'git-worktree', repo, name: 'crashed' } } } });
      const agent = await supervisor.ensureAgent('crashed');
      console.log(JSON.stringify({ pid: agent.pid }));
      setInterval(() => {}, 1 << 30);
    `;
    const settings = { stateDir: stateDir(), repo, command: process.execPath, args: [fixtureAgentScript] };
    const host = execa(process.execPath, ['--input-type=module', '-e', hostScript], { cwd: root, env: { HOST_SETTINGS: JSON.stringify(settings) }, reject: false, buffer: false });
    const started = await new Promise<{ pid: number }>((resolve, reject) => {
      host.stdout!.once('data', (chunk: Buffer) => resolve(JSON.parse(chunk.toString()) as { pid: number }));
      void host.then((result) => reject(new Error(`the host exited: ${String(result.exitCode)} ${String(result.stderr)}`)));
    });
    const crashedPath = cwdOf(started.pid);

    // While the host runs, its workspace is not stale.
    const supervisor = supervise({ live: fixtureSpec([], { workspace: worktree(repo, { name: 'live' }) }) });
    await supervisor.ensureAgent('live');
    expect((await supervisor.pruneWorkspaces()).cleaned).toEqual([]);
    expect((await supervisor.workspaces()).map((workspace) => workspace.path)).toEqual([expect.stringMatching(/\/live$/)]);

    host.kill('SIGKILL');
    await host;
    await supervisor.sweepOrphans();
    await eventually(() => !isRunning(started.pid), 'the orphaned agent to be killed');
    expect(await supervisor.workspaces()).toEqual([expect.objectContaining({ path: expect.stringMatching(/\/live$/), owner: { agent: 'live' } }), expect.objectContaining({ path: crashedPath, owner: null, clean: true })]);
    const pruned = await supervisor.pruneWorkspaces();
    expect(pruned).toEqual({ cleaned: [{ path: crashedPath, branch: 'agentvisor/crashed', action: 'removed', branchDeleted: true }], refused: [], missing: [], repos: [repo] });
    expect(existsSync(crashedPath)).toBe(false);
    expect(worktrees(repo)).toBe(2);
    expect(branches(repo)).toEqual(['agentvisor/live', 'main']);
  });
});

describe.skipIf(!hasGit)('workspace:status', () => {
  it('reports changed files, at most once per interval, and stops with the owner: no watcher, timer or git left', async () => {
    const repo = makeRepo();
    const handles = () => process.getActiveResourcesInfo().filter((kind) => kind === 'FSEventWrap' || kind === 'ProcessWrap' || kind === 'Timeout').length;
    const before = handles();
    const supervisor = supervise({ fixture: fixtureSpec([], { workspace: worktree(repo, { name: 'watched' }) }) }, { workspaceStatusIntervalMs: 200 });
    const statuses = record(supervisor, 'workspace:status');
    await supervisor.ensureAgent('fixture');
    const path = (await supervisor.workspaces())[0]!.path;
    await eventually(() => statuses.length === 1, 'the first status');
    expect(statuses[0]).toEqual({ owner: { agent: 'fixture' }, owners: [{ agent: 'fixture' }], path, branch: 'agentvisor/watched', clean: true, changedFiles: [], changedCount: 0 });

    const started = performance.now();
    mkdirSync(join(path, 'deep', 'er'), { recursive: true });
    for (let index = 0; index < 40; index++) {
      writeFileSync(join(path, index % 2 ? 'deep/er' : '.', `file-${index}.txt`), String(index));
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await eventually(() => statuses.at(-1)!.changedCount === 40, 'a status with every file');
    const elapsed = performance.now() - started;
    expect(statuses.length - 1).toBeLessThanOrEqual(Math.ceil(elapsed / 200) + 1);
    expect(statuses.length - 1).toBeGreaterThanOrEqual(2);
    expect(statuses.at(-1)).toMatchObject({ clean: false, changedFiles: expect.arrayContaining(['file-0.txt', 'deep/er/file-1.txt']) });

    // A commit touches no file of the work tree: the worktree's own git directory is watched too.
    git(path, 'add', '--all');
    git(path, 'commit', '--quiet', '-m', 'everything');
    await eventually(() => statuses.at(-1)!.clean, 'a clean status after the commit');

    await supervisor.stop('fixture');
    const count = statuses.length;
    writeFileSync(join(path, 'after-stop.txt'), 'x');
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(statuses).toHaveLength(count);
    await supervisor.shutdown();
    env.supervisor = undefined;
    await eventually(() => handles() <= before, `handles back to ${before} (${process.getActiveResourcesInfo().join(', ')})`, 3000);
  });

  it('a host whose agent had a watched workspace exits by itself after shutdown()', async () => {
    const repo = makeRepo();
    const hostScript = `
      import { createSupervisor } from 'agentvisor';
      import { writeFileSync } from 'node:fs';
      const { stateDir, repo, command, args } = JSON.parse(process.env.HOST_SETTINGS);
      const supervisor = createSupervisor({ stateDir, store: 'memory', workspaceStatusIntervalMs: 50, agents: { fixture: { command, args, workspace: { kind: 'git-worktree', repo, cleanup: 'archive' } } } });
      let statuses = 0;
      supervisor.on('workspace:status', () => statuses++);
      const session = await supervisor.newSession('fixture');
      writeFileSync(session.cwd + '/touched.txt', 'x');
      while (statuses < 2) await new Promise((resolve) => setTimeout(resolve, 10));
      await supervisor.shutdown();
      console.log(JSON.stringify({ statuses, workspace: session.cwd }));
    `;
    const settings = { stateDir: stateDir(), repo, command: process.execPath, args: [fixtureAgentScript] };
    const started = performance.now();
    const result = await execa(process.execPath, ['--input-type=module', '-e', hostScript], { cwd: root, env: { HOST_SETTINGS: JSON.stringify(settings) }, reject: false, timeout: 10_000 });
    expect(result.timedOut, 'the host to exit by itself').toBe(false);
    expect(result.exitCode, result.stderr).toBe(0);
    expect(performance.now() - started).toBeLessThan(8_000);
    const output = JSON.parse(result.stdout) as { statuses: number; workspace: string };
    expect(existsSync(output.workspace)).toBe(false); // archived on shutdown
    expect(readdirSync(join(stateDir(), 'workspace-archives'))).toHaveLength(1);
  });
});

/** The state of an agent's workspace hold (`workspace`, or a session's `workspace:<id>`), read from the real actors. */
function holdStates(supervisor: Supervisor, agent: string): Record<string, unknown> {
  const children = (supervisor.actor.getSnapshot().children as Record<string, { getSnapshot(): { children: Record<string, { getSnapshot(): { value: unknown } }> } }>)[agent]?.getSnapshot().children ?? {};
  return Object.fromEntries(Object.entries(children).filter(([id]) => id.startsWith('workspace')).map(([id, child]) => [id, child.getSnapshot().value]));
}

describe.skipIf(!hasGit)('the hold: a stop waits for the workspace, in the agent machine', () => {
  const timings = { shutdownTimeoutMs: 1_000, killTimeoutMs: 1_000, restart: { initialDelayMs: 1_000, jitter: 0 } };

  it('a stop that outlasts the worktree being made: the agent waits in releasingWorkspaces; once made, it is cleaned up; nothing was spawned', async () => {
    const repo = makeRepo();
    const clock = new SimulatedClock();
    const pids = env.files.path('pids');
    const supervisor = supervise({ fixture: fixtureSpec(['--pid-file', pids], { workspace: worktree(repo, { name: 'slow', cleanup: 'remove' }) }) }, { clock, ...timings });
    const cleaned = record(supervisor, 'workspace:cleaned');
    const starting = supervisor.ensureAgent('fixture').catch((error: unknown) => error);
    expect(holdStates(supervisor, 'fixture'), 'git is making the worktree').toEqual({ workspace: 'acquiring' });
    const stopping = supervisor.stop('fixture');
    // The ladder runs out on the clock while git works: the process actor never got its directory.
    clock.increment(1_000);
    clock.increment(1_000);
    clock.increment(1_000);
    expect(agentState(supervisor, 'fixture')).toMatch(/^stopping\.releasingWorkspaces/);
    expect(holdStates(supervisor, 'fixture'), 'released while still being made').toEqual({ workspace: 'acquiring' });
    await stopping;
    expect(supervisor.getStatus('fixture')).toBe('idle');
    expect(cleaned).toEqual([expect.objectContaining({ owner: { agent: 'fixture' }, strategy: 'remove', action: 'removed' })]);
    expect(await starting).toMatchObject({ kind: 'stopped' });
    expect(worktrees(repo)).toBe(1);
    expect(existsSync(pids) ? readFileSync(pids, 'utf8') : '', 'no process was spawned').toBe('');
    expect(holdStates(supervisor, 'fixture')).toEqual({});
  });

  it('a shutdown, forced twice, while a restart checks the worktree: the check finishes and the workspace is cleaned up before shutdown resolves', async () => {
    const repo = makeRepo();
    const clock = new SimulatedClock();
    const supervisor = supervise({ fixture: fixtureSpec([], { workspace: worktree(repo, { name: 'restarted', cleanup: 'archive' }) }) }, { clock, ...timings });
    const cleaned = record(supervisor, 'workspace:cleaned');
    const agent = await supervisor.ensureAgent('fixture');
    process.kill(agent.pid, 'SIGKILL');
    await waitForStatus(supervisor, 'fixture', 'reconnecting');
    clock.increment(1_000); // the backoff: a new process, which asks for its workspace again
    expect(holdStates(supervisor, 'fixture'), 'a restart checks the worktree').toEqual({ workspace: 'restoring' });
    const shutdown = supervisor.shutdown();
    void supervisor.shutdown({ force: true }); // to SIGKILL at once; the process is still waiting for its directory
    clock.increment(1_000);
    expect(agentState(supervisor, 'fixture')).toMatch(/^stopping\.releasingWorkspaces/);
    void supervisor.shutdown({ force: true }); // nothing left to kill: the cleanup goes on
    expect(agentState(supervisor, 'fixture')).toMatch(/^stopping\.releasingWorkspaces/);
    await shutdown;
    expect(cleaned).toEqual([expect.objectContaining({ owner: { agent: 'fixture' }, action: 'archived' })]);
    expect(worktrees(repo)).toBe(1);
  });

  it('a restart whose workspace cannot be made again (its repository is gone) fails with workspace_failed and is not retried', async () => {
    const repo = makeRepo();
    const clock = new SimulatedClock();
    const supervisor = supervise({ fixture: fixtureSpec([], { workspace: worktree(repo, { name: 'lost' }) }) }, { clock, ...timings });
    const agent = await supervisor.ensureAgent('fixture');
    const [made] = await supervisor.workspaces();
    rmSync(repo, { recursive: true, force: true });
    rmSync(made!.path, { recursive: true, force: true });
    process.kill(agent.pid, 'SIGKILL');
    await waitForStatus(supervisor, 'fixture', 'reconnecting');
    clock.increment(1_000);
    await waitForStatus(supervisor, 'fixture', 'disconnected');
    expect(supervisor.list()[0]!.lastError).toMatchObject({ kind: 'workspace_failed', class: 'config', retryable: false });
    expect(holdStates(supervisor, 'fixture'), 'the failed hold is gone').toEqual({});
  });

  it("close() and a stop of the agent at once: the session's workspace hears both; the first busy reason stands", async () => {
    const repo = makeRepo();
    const supervisor = supervise({ fixture: fixtureSpec() });
    const refused = record(supervisor, 'workspace:cleanup_refused');
    const session = await supervisor.newSession('fixture', { workspace: worktree(repo, { cleanup: 'remove' }) });
    const turn = session.prompt(command({ op: 'hang' })).catch(() => null);
    await eventually(() => session.status === 'running', 'the turn');
    await Promise.all([session.close(), supervisor.stop('fixture')]);
    await turn;
    expect(refused).toEqual([expect.objectContaining({ owner: { agent: 'fixture', sessionId: session.id }, reason: 'busy', message: expect.stringContaining('is running a turn') })]);
    expect(holdStates(supervisor, 'fixture')).toEqual({});
  });

  it('a stop while a session opens in its own workspace (its agent still starting): the opening fails, and the worktree made for it is removed before the stop resolves', async () => {
    const repo = makeRepo();
    const supervisor = supervise({ fixture: fixtureSpec() });
    const cleaned = record(supervisor, 'workspace:cleaned');
    const opening = supervisor.newSession('fixture', { workspace: worktree(repo, { cleanup: 'keep' }) }).catch((error: unknown) => error);
    await eventually(() => Object.values(holdStates(supervisor, 'fixture')).includes('held') && supervisor.getStatus('fixture') === 'starting', 'the workspace made, the agent starting');
    await supervisor.stop('fixture');
    expect(cleaned, 'made for it, never held by a session: removed whatever its strategy').toEqual([expect.objectContaining({ owner: { agent: 'fixture' }, strategy: 'remove', action: 'removed' })]);
    expect(await opening).toMatchObject({ kind: 'stopped' });
    expect(worktrees(repo)).toBe(1);
    expect(holdStates(supervisor, 'fixture')).toEqual({});
  });
});
