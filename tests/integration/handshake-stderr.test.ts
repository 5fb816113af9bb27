/**
 * A handshake failure always comes with what the agent wrote to stderr before it failed —
 * also under load, with many agents failing at once while the CPU is busy: the reason is
 * never an empty "could not connect". Both ways a handshake fails: the agent refuses
 * `initialize` and keeps running, or exits on it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { AgentError, createSupervisor } from '../../index.js';
import { fixtureSpec, useRealAgentEnvironment } from '../support/real-agents.js';

const env = useRealAgentEnvironment();
const AGENTS = 24;

/** Busy loops on every core, ended after each test. */
const burners: ChildProcess[] = [];
afterEach(() => {
  for (const burner of burners.splice(0)) burner.kill('SIGKILL');
});

function loadTheCpu(): void {
  for (let i = 0; i < 3; i++) burners.push(spawn(process.execPath, ['-e', 'for(;;){}'], { stdio: 'ignore' }));
}

describe('handshake failures carry their stderr, under load', () => {
  it.each([
    ['refuses initialize and keeps running', '--fail-initialize', 'handshake_failed'],
    ['exits on initialize', '--exit-on-initialize', 'handshake_failed'],
  ])(`%s: ${AGENTS} agents at once on a busy CPU, every error has the reason`, async (_name, flag, kind) => {
    loadTheCpu();
    const agents = Object.fromEntries(
      Array.from({ length: AGENTS }, (_, i) => [`a${i}`, fixtureSpec([flag, '--stderr', `fixture reason ${i}: a bad config line 42`, '--stderr-lines', '3'])]),
    );
    env.supervisor = createSupervisor({ agents, maxAgents: AGENTS, stateDir: false, containment: 'none' });
    const errors = await Promise.all(
      Object.keys(agents).map((name) =>
        env.supervisor!.ensureAgent(name).then(
          () => null,
          (error: unknown) => error as AgentError,
        ),
      ),
    );
    const missing: string[] = [];
    errors.forEach((error, i) => {
      expect(error).toBeInstanceOf(AgentError);
      expect(error!.kind).toBe(kind);
      if (!error!.stderr.includes(`fixture reason ${i}: a bad config line 42`)) missing.push(`a${i}: ${JSON.stringify(error!.stderr)}`);
    });
    expect(missing).toEqual([]);
  }, 60_000);
});
