/**
 * Claude Code's stream-json mode on real processes (docs/stream-json.md): the fixture
 * tests/fixtures/stream-json-agent.mjs prints Claude Code's own line shapes, and the agent is
 * supervised like an ACP agent — sessions, updates of the same shapes, the store, failure,
 * restart with `--resume` and the stop ladder.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { SimulatedClock } from 'xstate';
import { createSupervisor, presets, type SessionUpdate, type Supervisor } from '../../index.js';
import { eventually, isRunning, useRealAgentEnvironment, waitForStatus } from '../support/real-agents.js';

const env = useRealAgentEnvironment();
const streamJsonAgent = fileURLToPath(new URL('../fixtures/stream-json-agent.mjs', import.meta.url));

/** The fixture through the preset, as `claude` would be run. */
function claudeFixture(extraArgs: string[] = []) {
  const preset = presets.claudeCodeStreamJson();
  return presets.claudeCodeStreamJson({ command: process.execPath, args: [streamJsonAgent, ...preset.args!, ...extraArgs], displayName: 'Claude (fixture)' });
}

const cmdline = (pid: number) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);

/**
 * The agent's process once it runs the CLI: the bridge answers initialize and session/new by
 * itself, so a session can be open before the process's pid is known, or while it is still
 * in its exec (an empty command line).
 */
async function cliPid(supervisor: Supervisor, not?: number): Promise<number> {
  let found: number | undefined;
  await eventually(() => {
    const pid = supervisor.list()[0]?.pid ?? undefined;
    found = pid !== undefined && pid !== not && cmdline(pid).includes(streamJsonAgent) ? pid : undefined;
    return found !== undefined;
  }, "the CLI's process");
  return found!;
}

describe('stream-json: Claude Code behind the ACP bridge', () => {
  it('runs a turn: text, a tool call and its result as ACP updates, the stop reason, and the transcript in the store', async () => {
    env.supervisor = createSupervisor({ stateDir: env.files.path('state'), agents: { claude: claudeFixture() } });
    const session = await env.supervisor.newSession('claude', { cwd: env.files.dir });
    expect(session.id).toMatch(/^[0-9a-f-]{36}$/);
    const updates: SessionUpdate[] = [];
    session.on('update', (update) => updates.push(update));
    expect(await session.prompt('hello')).toBe('end_turn');
    const kinds = updates.map((update) => update.sessionUpdate);
    expect(kinds).toContain('agent_message_chunk');
    const call = updates.find((update) => update.sessionUpdate === 'tool_call');
    expect(call).toMatchObject({ sessionUpdate: 'tool_call', kind: 'execute', status: 'in_progress' });
    expect(updates.find((update) => update.sessionUpdate === 'tool_call_update')).toMatchObject({ toolCallId: (call as { toolCallId: string }).toolCallId, status: 'completed' });
    const pid = await cliPid(env.supervisor);
    expect(cmdline(pid)).toEqual(expect.arrayContaining(['-p', '--input-format', 'stream-json', '--output-format', 'stream-json', '--verbose', '--session-id', session.id]));
    const stored = [];
    for await (const entry of env.supervisor.history(session.id)) stored.push(entry);
    expect(stored.filter((entry) => entry.kind === 'update')).toHaveLength(updates.length);
    expect(stored.at(-1)).toMatchObject({ kind: 'prompt_result' });
  });

  it('a line that is not JSON and one of an unknown type are warnings, never a crash; the turn goes on', async () => {
    env.supervisor = createSupervisor({ stateDir: false, agents: { claude: claudeFixture() } });
    const warnings: string[] = [];
    env.supervisor.on('protocol:warning', ({ message }) => warnings.push(message));
    const session = await env.supervisor.newSession('claude', { cwd: env.files.dir });
    const unknown: unknown[] = [];
    session.on('update', (update) => {
      if (update.sessionUpdate === 'session_info_update' && update._meta?.['agentvisor/unknownLine']) unknown.push(update._meta['agentvisor/unknownLine']);
    });
    expect(await session.prompt('malformed')).toBe('end_turn');
    expect(warnings.some((message) => message.includes('not JSON'))).toBe(true);
    // Each one is also an update of its own: a session_info_update carrying the line in _meta.
    expect(unknown).toHaveLength(2);
    expect(unknown[0]).toMatchObject({ line: expect.any(String), reason: expect.any(String) });
    expect(env.supervisor.getStatus('claude')).toBe('connected');
  });

  it('a result with is_error rejects the prompt with the CLI\'s text; one session per process', async () => {
    env.supervisor = createSupervisor({ stateDir: false, agents: { claude: claudeFixture() } });
    const session = await env.supervisor.newSession('claude', { cwd: env.files.dir });
    await expect(session.prompt('error')).rejects.toMatchObject({ kind: 'protocol_error' });
    await expect(env.supervisor.newSession('claude', { cwd: env.files.dir })).rejects.toMatchObject({ kind: 'protocol_error', message: expect.stringContaining('one session per process') });
  });

  it('a crash mid-turn: agent_exited, restarted with --resume <the same session>, and the session resumes', async () => {
    const clock = new SimulatedClock();
    env.supervisor = createSupervisor({ clock, stateDir: false, agents: { claude: claudeFixture() } });
    const session = await env.supervisor.newSession('claude', { cwd: env.files.dir });
    const first = await cliPid(env.supervisor);
    await expect(session.prompt('crash')).rejects.toMatchObject({ kind: 'agent_exited' });
    await waitForStatus(env.supervisor, 'claude', 'reconnecting');
    clock.increment(1000);
    await waitForStatus(env.supervisor, 'claude', 'connected');
    const second = await cliPid(env.supervisor, first);
    expect(cmdline(second)).toEqual(expect.arrayContaining(['--resume', session.id]));
    expect(cmdline(second)).not.toContain('--session-id');
    await session.resume();
    expect(await session.prompt('again')).toBe('end_turn');
  });

  it('cancel sends the CLI an interrupt and the turn ends cancelled; stop() closes stdin and the CLI exits by itself', async () => {
    env.supervisor = createSupervisor({ stateDir: false, agents: { claude: claudeFixture() } });
    const session = await env.supervisor.newSession('claude', { cwd: env.files.dir });
    const turn = session.prompt('slow');
    await eventually(() => session.status === 'running', 'the turn to run');
    session.cancel();
    expect(await turn).toBe('cancelled');
    const { pid } = env.supervisor.list()[0]!;
    await env.supervisor.stop('claude');
    expect(isRunning(pid!)).toBe(false);
  });

  it('a stop forgets the conversation: the next start begins a new session', async () => {
    env.supervisor = createSupervisor({ stateDir: false, agents: { claude: claudeFixture() } });
    const first = await env.supervisor.newSession('claude', { cwd: env.files.dir });
    await env.supervisor.stop('claude');
    const second = await env.supervisor.newSession('claude', { cwd: env.files.dir });
    expect(second.id).not.toBe(first.id);
    expect(cmdline(await cliPid(env.supervisor))).toEqual(expect.arrayContaining(['--session-id', second.id]));
  });
});
