/**
 * `agentvisor monit` keeps its rows current from the event stream between polls
 * (cli/commands/monit.ts `applyEvent`): a status brings the agent's new row with the usage
 * last polled, a state move and an error change their fields, anything else nothing.
 */
import { describe, expect, it } from 'vitest';
import { applyEvent } from '../../cli/commands/monit.js';
import type { AgentRow } from '../../daemon/api-types.js';

const row = (name: string, extra: Partial<AgentRow> = {}): AgentRow =>
  ({ name, status: 'connected', state: 'connected.stable', pid: 1, connectedAt: 1, restarts: 0, sessions: 0, lastError: null, usage: { cpuPercent: 5, memoryBytes: 10, processes: 1, windowMs: 1000 }, ...extra }) as AgentRow;
const stamps = { seq: 1, at: 1, t: '1' };

describe("monit's rows from the event stream", () => {
  it('a status change replaces the row and keeps the polled usage; a new agent is added', () => {
    const rows = [row('a'), row('b')];
    const streamRow = row('a', { status: 'stopping', state: 'stopping.closing', restarts: 2 });
    delete streamRow.usage; // the stream's rows carry no usage
    const next = applyEvent(rows, { ...stamps, type: 'agent:status', agent: 'a', status: 'stopping', previous: 'connected', row: streamRow });
    expect(next[0]).toMatchObject({ name: 'a', status: 'stopping', restarts: 2, usage: { cpuPercent: 5 } });
    expect(next[1]).toBe(rows[1]);
    const added = applyEvent(rows, { ...stamps, type: 'agent:status', agent: 'c', status: 'starting', previous: 'idle', row: row('c', { status: 'starting', usage: undefined }) });
    expect(added.map((entry) => entry.name)).toEqual(['a', 'b', 'c']);
  });

  it('a state move and an error change their fields; other messages change nothing', () => {
    const rows = [row('a')];
    expect(applyEvent(rows, { ...stamps, type: 'agent:state', agent: 'a', state: 'reconnecting.backoff', status: 'reconnecting' })[0]).toMatchObject({ state: 'reconnecting.backoff', status: 'reconnecting' });
    expect(applyEvent(rows, { ...stamps, type: 'agent:error', agent: 'a', kind: 'agent_exited', message: 'exit 1', class: 'crash' })[0]!.lastError).toMatchObject({ kind: 'agent_exited', message: 'exit 1', class: 'crash' });
    expect(applyEvent(rows, { ...stamps, type: 'log', agent: 'a', line: 'x' })).toBe(rows);
  });
});
