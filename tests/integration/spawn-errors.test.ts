/**
 * A command that cannot be run, told as what it is, under every containment this host offers
 * and without one (docs/failures.md, "Spawn errors"): a directory or a file without execute
 * permission — by an absolute path, a path relative to the agent's cwd, or a bare name that
 * PATH resolves to one — rejects `ensureAgent` with kind `spawn_failed` naming the path
 * ("… is a directory", "… is not executable"); a command that does not exist stays
 * `not_installed`. Nothing is left running, and nothing is left recorded.
 *
 * The wrappers (a PID namespace's shim, a cgroup's shell) exec the agent in a helper process,
 * where a failed exec is only an exit code: the command is looked at before the spawn, and a
 * command that changes between that look and the exec (simulated here by a mechanism whose
 * wrap() changes it) is told the same way.
 */
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createActor, setup } from 'xstate';
import { describe, expect, it } from 'vitest';
import { createSupervisor, type AgentError, type ContainmentKind } from '../../index.js';
import type { ContainmentPreference } from '../../services/containment/select.js';
import { createAgentProcessActor } from '../../actors/agent-process.actor.js';
import type { ProcessEvent } from '../../machines/agent-events.js';
import { spawnAgentProcess } from '../../services/agent-process.service.js';
import type { ContainmentMechanism } from '../../services/containment/containment.js';
import { chooseContainment } from '../../services/containment/select.js';
import { eventually, useRealAgentEnvironment } from '../support/real-agents.js';

const env = useRealAgentEnvironment();

const kinds: ContainmentKind[] = ['pid-namespace', 'cgroup', 'proc-tracking'];
const available = new Set(kinds.filter((kind) => chooseContainment(kind).mechanism?.kind === kind));
for (const kind of kinds) if (!available.has(kind)) console.warn(`spawn error tests under ${kind} skipped: ${chooseContainment(kind).refused[0]?.reason ?? 'not offered here'}`);
const modes: ContainmentPreference[] = ['none', ...kinds];
const offered = (mode: ContainmentPreference) => mode === 'none' || available.has(mode as ContainmentKind);

/** Commands that cannot run, in a scratch folder: `dir/`, `plain` (no execute bit), and the same names in `bin/` for PATH. */
function badCommands(dir: string) {
  const bin = join(dir, 'bin');
  mkdirSync(join(dir, 'agent-dir'), { recursive: true });
  mkdirSync(join(bin, 'agentvisor-dir-tool'), { recursive: true });
  for (const file of [join(dir, 'agent-plain'), join(bin, 'agentvisor-plain-tool')]) {
    writeFileSync(file, '#!/bin/sh\nexit 0\n');
    chmodSync(file, 0o644);
  }
  return { bin, path: `${bin}:${process.env.PATH ?? ''}` };
}

/** Processes on this host whose command line mentions `text` (the scratch folder): what a failed start might leave. */
function processesMentioning(text: string): number[] {
  const found: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${name}/cmdline`, 'utf8').includes(text)) found.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

async function startError(supervisor: ReturnType<typeof createSupervisor>, agent: string): Promise<AgentError> {
  return (await supervisor.ensureAgent(agent).then(
    () => {
      throw new Error(`${agent} started`);
    },
    (error: unknown) => error,
  )) as AgentError;
}

describe.each(modes)('spawn errors, containment %s', (mode) => {
  it.skipIf(!offered(mode))('a directory or a non-executable file as command is spawn_failed naming the path; a missing command stays not_installed; nothing is left behind', async () => {
    const dir = env.files.dir;
    const { bin, path } = badCommands(dir);
    const stateDir = env.files.path('state');
    env.supervisor = createSupervisor({
      stateDir,
      containment: mode,
      agents: {
        absoluteDir: { command: join(dir, 'agent-dir'), displayName: 'Absolute dir' },
        relativeDir: { command: './agent-dir', cwd: dir },
        pathDir: { command: 'agentvisor-dir-tool', env: { PATH: path } },
        absolutePlain: { command: join(dir, 'agent-plain') },
        relativePlain: { command: './agent-plain', cwd: dir },
        pathPlain: { command: 'agentvisor-plain-tool', env: { PATH: path } },
        missing: { command: 'agentvisor-no-such-command', env: { PATH: path } },
        missingPath: { command: join(dir, 'no-such-agent') },
      },
    });
    expect(env.supervisor.containment.kind).toBe(mode === 'none' ? null : mode);

    const directories = { absoluteDir: join(dir, 'agent-dir'), relativeDir: join(dir, 'agent-dir'), pathDir: join(bin, 'agentvisor-dir-tool') };
    for (const [agent, resolved] of Object.entries(directories)) {
      const error = await startError(env.supervisor, agent);
      expect(error, agent).toMatchObject({ kind: 'spawn_failed', agent, class: 'config', retryable: false, retryAt: null });
      expect(error.message, agent).toContain(`${resolved} is a directory`);
    }
    expect((await startError(env.supervisor, 'absoluteDir')).message).toBe(`Could not start Absolute dir: ${join(dir, 'agent-dir')} is a directory`);

    const plainFiles = { absolutePlain: join(dir, 'agent-plain'), relativePlain: join(dir, 'agent-plain'), pathPlain: join(bin, 'agentvisor-plain-tool') };
    for (const [agent, resolved] of Object.entries(plainFiles)) {
      const error = await startError(env.supervisor, agent);
      expect(error, agent).toMatchObject({ kind: 'spawn_failed', agent, class: 'config', retryable: false });
      expect(error.message, agent).toContain(`${resolved} is not executable`);
    }

    for (const agent of ['missing', 'missingPath']) {
      const error = await startError(env.supervisor, agent);
      expect(error, agent).toMatchObject({ kind: 'not_installed', class: 'config', message: `Could not start ${agent}. Check that it's installed.` });
    }
    expect(env.supervisor.list().map((agent) => [agent.name, agent.status, agent.pid])).toEqual(
      Object.keys({ ...directories, ...plainFiles, missing: 0, missingPath: 0 }).map((name) => [name, 'disconnected', null]),
    );
    expect(processesMentioning(dir)).toEqual([]);
    const records = join(stateDir, 'processes');
    expect(existsSync(records) ? readdirSync(records) : []).toEqual([]);
  });
});

describe('a command that changes between the look before the spawn and the exec', () => {
  /** The mechanism of `kind`, whose wrap() (called after the look, right before the spawn) runs `change` first. */
  function racing(kind: ContainmentKind, change: () => void): ContainmentMechanism {
    const real = chooseContainment(kind).mechanism!;
    return {
      kind: real.kind,
      wrap: (request) => {
        change();
        return real.wrap(request);
      },
      contain: (pid, request) => real.contain(pid, request),
    };
  }

  const changes = {
    'made a directory': (file: string) => (rmSync(file), mkdirSync(file)),
    'made non-executable': (file: string) => chmodSync(file, 0o644),
    removed: (file: string) => rmSync(file),
  };
  const expected = (file: string) => ({
    'made a directory': { kind: 'spawn_failed', detail: `${file} is a directory` },
    'made non-executable': { kind: 'spawn_failed', detail: `${file} is not executable` },
    removed: { kind: 'not_installed', command: file },
  });

  describe.each(kinds)('under %s', (kind) => {
    it.skipIf(!available.has(kind)).each(Object.keys(changes) as Array<keyof typeof changes>)('%s: the same spawn failure as when found before the spawn', async (how) => {
      const file = env.files.path('agent');
      writeFileSync(file, '#!/bin/sh\nexit 0\n');
      chmodSync(file, 0o755);
      const proc = spawnAgentProcess({ command: file }, { containment: racing(kind, () => changes[how](file)), agent: 'racer' });
      const exit = await proc.exited;
      if (kind === 'proc-tracking') {
        // No wrapper: the spawn itself fails (EACCES, ENOENT), and is told by a second look.
        expect(proc.pid).toBeUndefined();
        expect(await proc.spawnFailure).toMatchObject(expected(file)[how]);
      } else {
        // The wrapper ran, and its shell could not exec the agent: 126 (cannot execute) or 127 (not found).
        expect(proc.pid).toBeDefined();
        expect(exit).toEqual({ exitCode: how === 'removed' ? 127 : 126, signal: null });
        expect(proc.spawnFailureOfExit?.(exit)).toMatchObject(expected(file)[how]);
      }
      expect(processesMentioning(env.files.dir)).toEqual([]);
    });
  });

  it.skipIf(!available.has('pid-namespace'))('the process actor reports a wrapper that could not exec the agent as the spawn failure, before its exit', async () => {
    const file = env.files.path('agent');
    writeFileSync(file, '#!/bin/sh\nexit 0\n');
    chmodSync(file, 0o755);
    const events: ProcessEvent[] = [];
    const logic = createAgentProcessActor({
      getSpec: () => ({ command: file }),
      connections: { add: () => {}, remove: () => {} },
      containment: racing('pid-namespace', () => chmodSync(file, 0o644)),
    });
    const parent = setup({ actors: { agentProcess: logic } }).createMachine({
      invoke: { src: 'agentProcess', input: { agent: 'racer' } },
      on: { '*': { actions: ({ event }) => events.push(event as ProcessEvent) } },
    });
    const actor = createActor(parent).start();
    try {
      await eventually(() => events.some((event) => event.type === 'process.exited'), 'the process to exit');
    } finally {
      actor.stop();
    }
    const reported = events.filter((event) => event.type === 'process.failed' || event.type === 'process.exited');
    expect(reported).toMatchObject([
      { type: 'process.failed', kind: 'spawn_failed', detail: `${file} is not executable` },
      { type: 'process.exited', exitCode: 126 },
    ]);
  });
});
