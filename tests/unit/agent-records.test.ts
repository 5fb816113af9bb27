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

// The unlink behind remove(), held at this test's edge until the test lets it go, so that
// "resolves once it is gone" can be told from "resolves as soon as it started" (a real unlink
// is done before a test looks). Null: unlinks run at once.
const unlinkGate = vi.hoisted(() => ({ held: null as Promise<void> | null }));
vi.mock('node:fs/promises', async (importOriginal) => {
  const original = await importOriginal<typeof import('node:fs/promises')>();
  return {
    ...original,
    unlink: async (path: string) => {
      await unlinkGate.held;
      return original.unlink(path);
    },
  };
});

/** Holds every unlink until the returned function is called. */
function holdUnlinks(): () => void {
  let open!: () => void;
  unlinkGate.held = new Promise((resolve) => (open = resolve));
  return open;
}

const dirs: string[] = [];
afterEach(() => {
  unlinkGate.held = null;
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
  it('names an uncontained agent (the spawned process) in its first write, before any later turn of the event loop', () => {
    const { records: made, read } = records();
    recordSpawned(made, { agent: 'echo', command: 'node', pid: process.pid, contained: null });
    const self = { pid: process.pid, startTime: startTimeOf(process.pid) };
    expect(read()).toEqual([expect.objectContaining({ agent: 'echo', wrapper: self, agentProcess: self, containment: null })]);
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
    const record = made.create('echo', 'node', process.pid, null);
    expect(files()).toHaveLength(1);
    const letGo = holdUnlinks();
    const removed = record.remove();
    let done = false;
    void removed.then(() => (done = true));
    await new Promise((resolve) => setImmediate(resolve));
    expect(done).toBe(false); // the unlink is held: the removal has not resolved
    expect(record.remove()).toBe(removed); // asked again: the same removal
    letGo();
    record.update({ handle: null, agentProcess: { pid: 1, startTime: 1 } });
    await removed;
    expect(files()).toEqual([]);
    record.update({ agentProcess: { pid: 2, startTime: 2 } });
    expect(files()).toEqual([]);
  });
});
