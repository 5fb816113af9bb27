/**
 * Running git for workspaces, and its failures: every git call is
 * `git -c core.fsmonitor=false -c gc.auto=0 -C <dir> <command> ... -- <paths>`. Paths always
 * follow `--`, and names are validated (core/workspace-spec.ts) so that nothing a caller gives
 * is read as an option. No fsmonitor daemon and no background gc is started, so no git process
 * outlives the call that ran it.
 */
import { execa } from 'execa';

/** A workspace operation failed: the message is git's own (its `fatal:`/`error:` lines), or the reason. */
export class WorkspaceError extends Error {
  override readonly name: string = 'WorkspaceError';
}

/** A removal refused because the worktree holds uncommitted or untracked changes. */
export class DirtyWorktreeError extends WorkspaceError {
  override readonly name = 'DirtyWorktreeError';
}

/** Variables that would point git at another repository than the one named with `-C`. */
const locatingVariables = ['GIT_DIR', 'GIT_WORK_TREE', 'GIT_INDEX_FILE', 'GIT_COMMON_DIR', 'GIT_PREFIX', 'GIT_OBJECT_DIRECTORY', 'GIT_ALTERNATE_OBJECT_DIRECTORIES', 'GIT_NAMESPACE'];

/** A git run longer than this (a hung hook, say) is killed and reported. */
const gitTimeoutMs = 120_000;

export interface GitOptions {
  /** Extra environment (GIT_INDEX_FILE for the archive's scratch index). */
  env?: Record<string, string>;
  /** Write stdout to this file instead of returning it. */
  stdoutFile?: string;
  /** A read: no optional lock (the index is not refreshed), so an agent's own git is never blocked. */
  read?: boolean;
}

export interface GitResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/** Runs git in `dir`; never throws (see {@link git} for the throwing form). */
export async function runGit(dir: string, args: string[], options: GitOptions = {}): Promise<GitResult> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) if (value !== undefined && !locatingVariables.includes(key)) env[key] = value;
  env.GIT_TERMINAL_PROMPT = '0';
  if (options.read) env.GIT_OPTIONAL_LOCKS = '0';
  Object.assign(env, options.env);
  const result = await execa('git', ['-c', 'core.fsmonitor=false', '-c', 'gc.auto=0', '-C', dir, ...args], {
    env,
    extendEnv: false,
    stdin: 'ignore',
    stdout: options.stdoutFile ? { file: options.stdoutFile } : 'pipe',
    reject: false,
    timeout: gitTimeoutMs,
    killSignal: 'SIGKILL',
    encoding: 'utf8',
    stripFinalNewline: false,
  });
  if (result.timedOut) return { exitCode: -1, stdout: '', stderr: `fatal: git ${args[0]} did not finish within ${gitTimeoutMs / 1000} s` };
  if (result.failed && result.exitCode === undefined) return { exitCode: -1, stdout: '', stderr: result.shortMessage ?? 'git could not be run' };
  return { exitCode: result.exitCode ?? -1, stdout: typeof result.stdout === 'string' ? result.stdout : '', stderr: typeof result.stderr === 'string' ? result.stderr : '' };
}

/** Runs git in `dir`; rejects with {@link WorkspaceError} carrying git's own message. */
export async function git(dir: string, args: string[], options: GitOptions = {}): Promise<string> {
  const result = await runGit(dir, args, options);
  if (result.exitCode !== 0) throw new WorkspaceError(gitMessage(result.stderr, `git ${args[0]} failed (exit code ${result.exitCode})`));
  return result.stdout;
}

/** Git's own words for a failure: its `fatal:`/`error:` lines (not "Preparing worktree ..."), or all it said. */
export function gitMessage(stderr: string, fallback: string): string {
  const lines = stderr.split('\n').map((line) => line.trim()).filter(Boolean);
  const reasons = lines.filter((line) => /^(fatal|error):/.test(line));
  return (reasons.length > 0 ? reasons : lines).join('\n') || fallback;
}
