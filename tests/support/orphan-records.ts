/**
 * What a crashed supervisor leaves, made on purpose for the orphan sweep's tests: a process
 * record (docs/containment.md) whose owner is this test process with a start time it never
 * had — a dead owner, as far as any sweep can tell — naming a real process that runs.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AgentRecord } from '../../services/agent-records.service.js';
import { startTimeOf } from '../../services/containment/proc-table.js';
import { eventually, isRunning } from './real-agents.js';

/** Writes a record into `<stateDir>/processes/<name>.json` as a dead owner would have left it. */
export function writeDeadOwnerRecord(stateDir: string, name: string, record: Partial<AgentRecord> & Pick<AgentRecord, 'wrapper'>): string {
  const dir = join(stateDir, 'processes');
  mkdirSync(dir, { recursive: true });
  const full: AgentRecord = {
    version: 1,
    agent: name,
    command: 'sleep',
    agentProcess: record.wrapper,
    pgid: record.wrapper.pid,
    sid: record.wrapper.pid,
    containment: null,
    handle: null,
    owner: { pid: process.pid, startTime: startTimeOf(process.pid)! + 1 },
    createdAt: new Date().toISOString(),
    ...record,
  };
  const path = join(dir, `${name}.json`);
  writeFileSync(path, JSON.stringify(full));
  return path;
}

/** A leftover of agent `agent`: a real `sleep` in a group and session of its own, recorded with a dead owner. */
export interface Leftover {
  agent: string;
  pid: number;
  process: ChildProcess;
  /** Kills it if it still runs (afterEach). */
  kill(): void;
}

export async function leaveOrphan(stateDir: string, agent: string): Promise<Leftover> {
  const child = spawn('sleep', ['600'], { stdio: 'ignore', detached: true });
  const pid = child.pid!;
  await eventually(() => startTimeOf(pid) !== null, `the leftover ${agent} to run`);
  writeDeadOwnerRecord(stateDir, agent, { agent, wrapper: { pid, startTime: startTimeOf(pid)! } });
  return {
    agent,
    pid,
    process: child,
    kill: () => {
      if (isRunning(pid)) child.kill('SIGKILL');
    },
  };
}
