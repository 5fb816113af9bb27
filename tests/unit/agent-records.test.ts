/**
 * One record file's life (services/agent-records.service.ts), on a real directory: what its
 * first write holds, rewrites, and removal. The crash and sweep behaviour is in
 * tests/integration/orphans.test.ts.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { AgentRecords, recordSpawned, type AgentRecord } from '../../services/agent-records.service.js';
import { startTimeOf } from '../../services/containment/proc-table.js';

// The unlink behind remove(), slowed at this test's edge so that "resolves once it is gone"
// can be told from "resolves as soon as it started" (a real unlink is done before a test looks).
const unlinkDelayMs = vi.hoisted(() => ({ value: 0 }));
vi.mock('node:fs/promises', async (importOriginal) => {
  const original = await importOriginal<typeof import('node:fs/promises')>();
  return {
    ...original,
    unlink: async (path: string) => {
      if (unlinkDelayMs.value > 0) await new Promise((resolve) => setTimeout(resolve, unlinkDelayMs.value));
      return original.unlink(path);
    },
  };
});

const dirs: string[] = [];
afterEach(() => {
  unlinkDelayMs.value = 0;
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function records(): { records: AgentRecords; files: () => string[]; read: () => AgentRecord[] } {
  const dir = mkdtempSync(join(tmpdir(), 'agentvisor-records-'));
  dirs.push(dir);
  const made = new AgentRecords(dir);
  const files = () => readdirSync(made.dir);
  return { records: made, files, read: () => files().map((name) => JSON.parse(readFileSync(join(made.dir, name), 'utf8')) as AgentRecord) };
}

describe('a record file', () => {
  it('names the agent in its first write when the spawned process is the agent (no wrapper)', () => {
    const { records: made, read } = records();
    made.create('echo', 'node', process.pid, null, false, undefined, true);
    expect(read()).toEqual([expect.objectContaining({ agent: 'echo', wrapper: { pid: process.pid, startTime: startTimeOf(process.pid) }, agentProcess: { pid: process.pid, startTime: startTimeOf(process.pid) } })]);
  });

  it('recordSpawned names an uncontained agent in the first write, before any later turn of the event loop', () => {
    const { records: made, read } = records();
    recordSpawned(made, { agent: 'echo', command: 'node', pid: process.pid, contained: null });
    expect(read()[0]?.agentProcess).toEqual({ pid: process.pid, startTime: startTimeOf(process.pid) });
  });

  it('leaves the agent unnamed behind a wrapper until it is told', () => {
    const { records: made, read } = records();
    const record = made.create('echo', 'node', process.pid, 'pid-namespace');
    expect(read()[0]?.agentProcess).toBeNull();
    record.update({ agentProcess: { pid: 42, startTime: 7 }, handle: { kind: 'pid-namespace', initPid: 41, initStartTime: 6 } });
    expect(read()[0]).toMatchObject({ agentProcess: { pid: 42, startTime: 7 }, handle: { kind: 'pid-namespace', initPid: 41 } });
  });

  it('is gone once remove() resolves (not before), and no update writes it again', async () => {
    const { records: made, files } = records();
    const record = made.create('echo', 'node', process.pid, null, false, undefined, true);
    expect(files()).toHaveLength(1);
    unlinkDelayMs.value = 10;
    const removed = record.remove();
    record.update({ handle: null, agentProcess: { pid: 1, startTime: 1 } });
    await removed;
    expect(files()).toEqual([]);
    record.update({ agentProcess: { pid: 2, startTime: 2 } });
    expect(files()).toEqual([]);
  });
});
