/**
 * Workspaces (docs/workspaces.md): where an agent or a session works — a git worktree made
 * for it on a new branch, or a plain directory. The schema is the one definition (the types
 * are derived from it); the name rules are pure functions, so the git service, the registry
 * and the unit tests share them. No I/O here.
 */
import { z } from 'zod';
import { noNul } from './schema.js';

/** Longest workspace name: it becomes a directory and a branch name. */
export const maxWorkspaceNameLength = 64;

/**
 * Why `name` cannot name a workspace, or null when it can. A name is one path segment made of
 * `[A-Za-z0-9._-]`, never starting with `-` (git would read it as an option) or `.` (hidden,
 * `.`/`..`), never containing `..` (a path or a ref range), at most 64 characters.
 */
export function workspaceNameProblem(name: string): string | null {
  if (name.length === 0) return 'must not be empty';
  if (name.length > maxWorkspaceNameLength) return `must be at most ${maxWorkspaceNameLength} characters`;
  if (!/^[A-Za-z0-9._-]+$/.test(name)) return 'may contain only letters, digits, ".", "_" and "-"';
  if (name.startsWith('-')) return 'must not start with "-"';
  if (name.startsWith('.')) return 'must not start with "."';
  if (name.includes('..')) return 'must not contain ".."';
  if (name.endsWith('.lock') || name.endsWith('.')) return 'must not end with "." or ".lock"';
  return null;
}

/** True when `name` may name a workspace (see {@link workspaceNameProblem}). */
export function isValidWorkspaceName(name: string): boolean {
  return workspaceNameProblem(name) === null;
}

/**
 * A default workspace name from an agent's name (or `<agent>-session` for a session) and a
 * short id: characters outside the allowed set become `-`, leading `.`/`-` and `..` go, and
 * the stem is cut so that the whole stays within the limit.
 *
 * @example defaultWorkspaceName('Claude Code', 'a1b2c3') === 'Claude-Code-a1b2c3'
 */
export function defaultWorkspaceName(stem: string, shortId: string): string {
  const cleaned = stem
    .replace(/[^A-Za-z0-9._-]+/g, '-')
    .replace(/\.{2,}/g, '.')
    .replace(/^[.-]+/, '')
    .slice(0, maxWorkspaceNameLength - shortId.length - 1)
    .replace(/[.-]+$/, '');
  return cleaned ? `${cleaned}-${shortId}` : `workspace-${shortId}`;
}

/** A git revision or branch name as a caller may write it: nothing git could read as an option. */
const gitName = (what: string) =>
  noNul(z.string().min(1, 'must not be empty').max(256, 'must be at most 256 characters'))
    .refine((value) => !value.startsWith('-'), `must not start with "-" (git would read the ${what} as an option)`)
    // eslint-disable-next-line no-control-regex
    .refine((value) => !/[\s\u0000-\u001f\u007f]/.test(value), 'must not contain whitespace or control characters');

const workspaceName = z.string().superRefine((name, context) => {
  const problem = workspaceNameProblem(name);
  if (problem) context.addIssue({ code: 'custom', message: problem });
});

/** What happens to a workspace when its owner ends: kept (default), archived then removed, or removed. */
export const cleanupStrategies = ['keep', 'archive', 'remove'] as const;
export type CleanupStrategy = (typeof cleanupStrategies)[number];

/** A git worktree on a new branch, made under `<stateDir>/workspaces/` before the agent starts. */
export const gitWorktreeSpecSchema = z.strictObject({
  kind: z.literal('git-worktree'),
  /** The repository (any directory inside it); relative paths are resolved against the host's cwd. */
  repo: noNul(z.string().min(1, 'must be a repository path')),
  /** The worktree's directory name (default: the agent's name, or `<agent>-session`, plus a short id). */
  name: workspaceName.optional(),
  /** Where the new branch starts (default: the repository's HEAD). */
  base: gitName('base').refine((value) => !value.includes('@{'), 'must not use the @{...} syntax').optional(),
  /** The new branch (default `agentvisor/<name>`), checked with `git check-ref-format --branch`. */
  branch: gitName('branch').refine((value) => !value.includes('@{'), 'must not use the @{...} syntax').optional(),
  /** When the owner ends: `keep` (default), `archive` (bundle + patch + metadata, then remove) or `remove`. */
  cleanup: z.enum(cleanupStrategies).optional(),
  /** With `remove`: remove the worktree even when it holds uncommitted changes (they are lost). */
  force: z.boolean().optional(),
  /** Another owner whose spec also says `shared: true` may use the same worktree. */
  shared: z.boolean().optional(),
});

/** A plain directory (made if missing); never removed by agentvisor. */
export const directorySpecSchema = z.strictObject({
  kind: z.literal('directory'),
  path: noNul(z.string().min(1, 'must be a directory path')),
  /** A directory is the caller's: only `keep`. */
  cleanup: z.literal('keep', { error: "must be 'keep': agentvisor never removes a directory it did not make" }).optional(),
  shared: z.boolean().optional(),
});

/** A workspace, on an agent spec or in session options. */
export const workspaceSpecSchema = z.discriminatedUnion('kind', [gitWorktreeSpecSchema, directorySpecSchema], {
  error: "must be { kind: 'git-worktree', repo, ... } or { kind: 'directory', path }",
});

export type WorkspaceSpec = z.infer<typeof workspaceSpecSchema>;
export type GitWorktreeSpec = z.infer<typeof gitWorktreeSpecSchema>;
export type DirectorySpec = z.infer<typeof directorySpecSchema>;
export type WorkspaceKind = WorkspaceSpec['kind'];

/** Who uses a workspace: an agent, or one session of an agent. */
export interface WorkspaceOwner {
  agent: string;
  /** Set when the owner is a session (`newSession(agent, { workspace })`). */
  sessionId?: string;
}

/** How an owner reads in messages: `agent "codex"`, `session fixture-1 of agent "codex"`. */
export function describeOwner(owner: WorkspaceOwner): string {
  return owner.sessionId === undefined ? `agent "${owner.agent}"` : `session ${owner.sessionId} of agent "${owner.agent}"`;
}
