/** Real git repositories for the workspace tests (docs/workspaces.md). */
import { execFileSync } from 'node:child_process';
import { mkdirSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** git is a Debian package `.ci/run` installs when missing; without it the workspace tests skip, saying so. */
export const hasGit = (() => {
  try {
    execFileSync('git', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    console.warn('workspace tests skipped: git is not installed (apt-get install git)');
    return false;
  }
})();

const gitEnv = { ...process.env, GIT_AUTHOR_NAME: 'Test', GIT_AUTHOR_EMAIL: 'test@example.com', GIT_COMMITTER_NAME: 'Test', GIT_COMMITTER_EMAIL: 'test@example.com' };

/** Runs git in `dir`; its stdout, trimmed. */
export const git = (dir: string, ...args: string[]) => execFileSync('git', ['-C', dir, ...args], { encoding: 'utf8', env: gitEnv, stdio: ['ignore', 'pipe', 'pipe'] }).trim();

/** A repository at `dir` (made here) with one commit on `main`; its real path. */
export function makeRepoAt(dir: string): string {
  mkdirSync(dir);
  git(dir, 'init', '--quiet', '--initial-branch=main');
  writeFileSync(join(dir, 'README.md'), '# repo\n');
  git(dir, 'add', 'README.md');
  git(dir, 'commit', '--quiet', '-m', 'init');
  return realpathSync(dir);
}
