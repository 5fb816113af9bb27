/**
 * A `protocol: 'pty'` agent under the supervisor (docs/pty.md), on real processes: the
 * interactive fixture CLI in a real pseudo-terminal, the same lifecycle as an ACP agent
 * (connected, lost, restarted by the policy, stopped by the ladder), prompts typed into the
 * terminal, the activity machine on the supervisor's SimulatedClock, and a scrollback that
 * keeps the old process's lines across a restart, after a separator.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { SimulatedClock } from 'xstate';
import { AgentError, createSupervisor, presets, type SessionUpdate } from '../../index.js';
import { eventually, fixtureSpec, isRunning, useRealAgentEnvironment, waitForStatus } from '../support/real-agents.js';

const env = useRealAgentEnvironment();
const interactiveCli = fileURLToPath(new URL('../fixtures/interactive-cli.mjs', import.meta.url));

function ptySupervisor(clock: SimulatedClock) {
  return createSupervisor({ clock, stateDir: false, agents: { cli: presets.pty(process.execPath, [interactiveCli], { displayName: 'CLI', pty: { cols: 100, rows: 30 } }) } });
}

describe('pty agents', () => {
  it('connects, runs a prompt typed into the terminal, and ends the turn when the CLI waits for input again', async () => {
    const clock = new SimulatedClock();
    env.supervisor = ptySupervisor(clock);
    const activity: string[] = [];
    env.supervisor.on('pty:activity', ({ agent, state }) => activity.push(`${agent}:${state}`));
    const handle = await env.supervisor.ensureAgent('cli');
    expect(handle.agentInfo).toMatchObject({ name: 'pty' });
    const terminal = env.supervisor.terminal('cli');
    expect(terminal.cols).toBe(100);
    await eventually(() => terminal.activity === 'running', 'the banner');
    clock.increment(5_000);
    expect(terminal.activity).toBe('needsInput');

    const session = await env.supervisor.newSession('cli', { cwd: env.files.dir });
    const chunks: string[] = [];
    session.on('update', (update: SessionUpdate) => {
      if (update.sessionUpdate === 'agent_message_chunk' && update.content.type === 'text') chunks.push(update.content.text);
    });
    const turn = session.prompt('hello');
    // The answer and the prompt after it are two writes that may reach the terminal in two
    // reads: wait for the prompt too, or output arriving after the clock moved restarts the timers.
    await eventually(() => /you said: hello\s*\r?\n> /.test(chunks.join('')), 'the answer and the prompt after it');
    expect(terminal.activity).toBe('running');
    clock.increment(4_999);
    expect(session.status).toBe('running');
    clock.increment(1);
    expect(await turn).toBe('end_turn');
    expect(chunks.join('')).not.toContain('\u001b'); // escape sequences are the screen's, not the chunks'
    expect(await terminal.screen()).toContain('you said: hello');
    clock.increment(60_000);
    expect(terminal.activity).toBe('stale');
    expect(activity).toEqual(expect.arrayContaining(['cli:starting', 'cli:running', 'cli:needsInput', 'cli:stale']));
  });

  it('a crash is restarted by the policy; the scrollback keeps the old lines, a separator, then the new process', async () => {
    const clock = new SimulatedClock();
    env.supervisor = ptySupervisor(clock);
    const terminal = env.supervisor.terminal('cli');
    const first = await env.supervisor.ensureAgent('cli');
    await eventually(() => terminal.activity === 'running', 'the banner');
    expect(terminal.write('fail\r')).toBe(true);
    await waitForStatus(env.supervisor, 'cli', 'reconnecting');
    expect(terminal.activity).toBe('exited');
    expect(env.supervisor.list()[0]!.lastError).toMatchObject({ kind: 'agent_exited', exitCode: 3, class: 'crash', stderr: expect.arrayContaining([expect.stringContaining('fail')]) });
    expect(terminal.write('lost\r')).toBe(false);
    clock.increment(1_000);
    await waitForStatus(env.supervisor, 'cli', 'connected');
    expect(env.supervisor.list()[0]!.pid).not.toBe(first.pid);
    expect(isRunning(first.pid)).toBe(false);
    await eventually(() => terminal.activity === 'running', 'the new banner');
    terminal.write('again\r');
    let lines: string[] = [];
    await eventually(() => {
      void terminal.scrollback().then((all) => (lines = all));
      return lines.some((line) => line.includes('you said: again'));
    }, 'the scrollback');
    const separator = lines.findIndex((line) => line.includes('──── restarted (exited with code 3) ────'));
    expect(separator).toBeGreaterThan(0);
    expect(lines.slice(0, separator).join('\n')).toContain('interactive-cli 1.0');
    expect(lines.slice(separator + 1).join('\n')).toContain('interactive-cli 1.0');
  });

  it('stop() runs the ladder: Ctrl-D ends a line-reading CLI; resize reaches the process', async () => {
    const clock = new SimulatedClock();
    env.supervisor = ptySupervisor(clock);
    const { pid } = await env.supervisor.ensureAgent('cli');
    const terminal = env.supervisor.terminal('cli');
    terminal.resize(120, 40);
    terminal.write('size\r');
    await eventually(() => {
      void terminal.screen().then((text) => (screen = text));
      return screen.includes('size: 120x40');
    }, 'the new size');
    await env.supervisor.stop('cli');
    expect(isRunning(pid)).toBe(false);
    expect(terminal.activity).toBe('exited');
  });

  it('terminal() of an agent of another protocol is not_supported; pty settings without protocol pty are invalid', () => {
    env.supervisor = createSupervisor({ stateDir: false, agents: { acp: fixtureSpec() } });
    expect(() => env.supervisor!.terminal('acp')).toThrow(expect.objectContaining({ kind: 'not_supported' }) as Error);
    expect(() => env.supervisor!.terminal('nobody')).toThrow(AgentError);
    expect(() => createSupervisor({ stateDir: false, agents: { bad: { command: 'x', pty: { cols: 80 } } } })).toThrow(expect.objectContaining({ kind: 'invalid_options' }) as Error);
  });
});

let screen = '';
