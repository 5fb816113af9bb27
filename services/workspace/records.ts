/**
 * The worktree records under `<stateDir>/workspaces/<repo key>/.meta/`: one JSON file per
 * worktree agentvisor made, and the host that uses it, so that a later run (or this one) can
 * prune it.
 */
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { CleanupStrategy, WorkspaceOwner } from '../../core/workspace-spec.js';
import { isSameProcess, startTimeOf, type ProcessIdentity } from '../containment/proc-table.js';
import type { RepoIdentity } from './worktree.js';

/** What is kept of one worktree agentvisor made, in `<stateDir>/workspaces/<repo key>/.meta/<name>.json`. */
export interface WorktreeRecord {
  version: 1;
  path: string;
  name: string;
  repo: string;
  commonDir: string;
  repoKey: string;
  branch: string;
  base: string;
  baseCommit: string;
  cleanup: CleanupStrategy;
  force: boolean;
  shared: boolean;
  /** Who uses it now; null once its owner ended (the workspace is stale). */
  owner: WorkspaceOwner | null;
  /** The supervisor's process while an owner uses it: a dead host means a stale workspace. */
  host: ProcessIdentity | null;
  createdAt: string;
  updatedAt: string;
}

let self: ProcessIdentity | undefined;
/** This process, as records name it. */
export function hostIdentity(): ProcessIdentity {
  return (self ??= { pid: process.pid, startTime: startTimeOf(process.pid) ?? 0 });
}

/** True when the record's host is this process. */
export function hostedHere(record: WorktreeRecord): boolean {
  const host = hostIdentity();
  return record.host !== null && record.host.pid === host.pid && record.host.startTime === host.startTime;
}

/** True when the record's host is another process that still runs. */
export function hostedElsewhere(record: WorktreeRecord): boolean {
  return record.host !== null && !hostedHere(record) && isSameProcess(record.host);
}

function recordFile(stateDir: string, repoKey: string, name: string): string {
  return join(resolve(stateDir), 'workspaces', repoKey, '.meta', `${name}.json`);
}

/** Writes a worktree's record atomically (temporary file, then rename). */
export async function writeWorktreeRecord(stateDir: string, record: WorktreeRecord): Promise<void> {
  const file = recordFile(stateDir, record.repoKey, record.name);
  await mkdir(join(file, '..'), { recursive: true });
  await writeFile(`${file}.tmp`, `${JSON.stringify(record, null, 2)}\n`);
  await rename(`${file}.tmp`, file);
}

export async function readWorktreeRecord(stateDir: string, repoKey: string, name: string): Promise<WorktreeRecord | null> {
  try {
    const record = JSON.parse(await readFile(recordFile(stateDir, repoKey, name), 'utf8')) as WorktreeRecord;
    return record?.version === 1 && typeof record.path === 'string' ? record : null;
  } catch {
    return null;
  }
}

export async function removeWorktreeRecord(stateDir: string, repoKey: string, name: string): Promise<void> {
  await rm(recordFile(stateDir, repoKey, name), { force: true });
}

/** Every readable worktree record under `<stateDir>/workspaces/`. */
export async function readWorktreeRecords(stateDir: string): Promise<WorktreeRecord[]> {
  const root = join(resolve(stateDir), 'workspaces');
  const records: WorktreeRecord[] = [];
  for (const repoKey of await readdir(root).catch(() => [] as string[])) {
    const names = await readdir(join(root, repoKey, '.meta')).catch(() => [] as string[]);
    for (const file of names.filter((name) => name.endsWith('.json'))) {
      const record = await readWorktreeRecord(stateDir, repoKey, file.slice(0, -'.json'.length));
      if (record) records.push(record);
    }
  }
  return records;
}

/** The repository a record names, without asking git (its top level and common dir were recorded). */
export function recordedRepo(record: WorktreeRecord): RepoIdentity {
  return { toplevel: record.repo, commonDir: record.commonDir, key: record.repoKey };
}
