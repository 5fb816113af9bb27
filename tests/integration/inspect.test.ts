/** The `inspect` option reaches every actor; `'console'` prints readable transitions. */
import { afterEach, describe, expect, it } from 'vitest';
import type { InspectionEvent } from 'xstate';
import { createConsoleInspector, createSupervisor, type Supervisor } from '../../index.js';
import { fixtureSpec } from '../support/real-agents.js';

let supervisor: Supervisor | undefined;

afterEach(async () => {
  await supervisor?.shutdown();
  supervisor = undefined;
});

describe('inspection', () => {
  it('an inspection observer sees the supervisor, agent, process and session actors', async () => {
    const events: InspectionEvent[] = [];
    supervisor = createSupervisor({ inspect: (event) => events.push(event), agents: { fixture: fixtureSpec() } });
    const session = await supervisor.newSession('fixture', { cwd: process.cwd() });
    await session.prompt('hello');
    await supervisor.shutdown();
    const actorIds = new Set(events.filter((event) => event.type === '@xstate.actor').map((event) => (event.actorRef as unknown as { id: string }).id));
    expect(actorIds).toContain('fixture');
    expect(actorIds).toContain('process');
    expect([...actorIds].filter((id) => id.startsWith(`session:${session.id}#`))).toHaveLength(1);
    expect(actorIds).toContain('promptTurn');
  });

  it("'console' writes one readable line per state change", async () => {
    const lines: string[] = [];
    supervisor = createSupervisor({ inspect: createConsoleInspector((line) => lines.push(line)), agents: { fixture: fixtureSpec() } });
    await supervisor.ensureAgent('fixture');
    await supervisor.shutdown();
    expect(lines).toContain('[agentvisor] agent fixture: idle → starting  (ensure)');
    expect(lines).toContain('[agentvisor] agent fixture: starting → connected.settling  (process.initialized)');
    expect(lines).toContain('[agentvisor] supervisor: running.normal → shuttingDown  (shutdown)');
    expect(lines).toContain('[agentvisor] supervisor: shuttingDown → stopped  (agent.status)');
    expect(lines.some((line) => line.includes('agent fixture: connected.settling → stopping.closing  (stop)'))).toBe(true);
  });
});
