/**
 * The ssh runtime on real processes: the fixture ACP agent run on a real sshd (in a network
 * namespace of its own, tests/support/ssh-test-host.ts) through `sshCommand`, spawned with the
 * library's own process service and ACP client, without the process actor. Covers the
 * protocol over SSH, the agent's exit code, the stop ladder's rungs over SSH, remote
 * containment when the local ssh dies or the link drops, and ssh's own failures. Skipped,
 * with the reason printed, where this machine cannot make the host (not root, no iproute2,
 * no sshd, no network namespaces).
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { AgentSpec } from '../../core/agent-spec.js';
import { openAcpConnection } from '../../services/acp-client.service.js';
import { spawnAgentProcess, type AgentProcess, type ProcessExit } from '../../services/agent-process.service.js';
import { sshCommand, type SshRuntimeSpec } from '../../services/runtimes/ssh.runtime.js';
import { startSshTestHost } from '../support/ssh-test-host.js';
import { eventually, fixtureSpec } from '../support/real-agents.js';

const started = await startSshTestHost();
if (started.unavailable !== undefined) console.warn(`ssh runtime tests skipped: ${started.unavailable}`);
const host = started.host;
afterAll(() => host?.destroy());

interface Launched {
  proc: AgentProcess;
  marker: string;
  runtime: ReturnType<typeof sshCommand>;
  /** stderr lines the runtime did not claim (the agent's and ssh's own). */
  lines: string[];
  /** The remote agent's pid, from the wrapper's marker line, once seen. */
  remotePid(): number | undefined;
  /** The agent's processes (it and its children: the marker is in their environment) still running on the remote side. */
  remote(): number[];
  /** Those and the remote wrapper and its watcher (the marker names the agent's cwd, one of the wrapper's arguments). */
  remoteAll(): number[];
  exited: Promise<ProcessExit>;
}

const launched: Launched[] = [];

/** Spawns `spec` over SSH (the fixture with `flags` by default), tagged with a unique env marker to find its remote processes. */
function launch(flags: string[] = [], overrides: Partial<SshRuntimeSpec> = {}, spec?: AgentSpec): Launched {
  const marker = `avssh-${randomBytes(4).toString('hex')}`;
  // The env travels on stdin (in no argv): the marker is also the cwd, so that the wrapper's arguments hold it.
  const cwd = join(host!.dir, marker);
  mkdirSync(cwd);
  const agentSpec = spec ? { cwd, ...spec, env: { AGENTVISOR_SSH_TEST: marker, ...spec.env } } : fixtureSpec(flags, { env: { AGENTVISOR_SSH_TEST: marker }, cwd });
  const runtime = sshCommand(agentSpec, host!.runtime(overrides));
  const lines: string[] = [];
  let remotePid: number | undefined;
  const proc = spawnAgentProcess(
    { command: runtime.command, args: runtime.args, env: runtime.env },
    {
      containment: null,
      ...(runtime.stdinPreamble ? { stdinPreamble: runtime.stdinPreamble } : {}),
      stderrLines: 100,
      onStderrLine: (line) => {
        const claimed = runtime.onStderrLine?.(line) ?? false;
        const pid = /^agentvisor-remote-pid (\d+)$/.exec(line);
        if (claimed && pid && remotePid === undefined) remotePid = Number(pid[1]);
        if (!claimed) lines.push(line);
      },
    },
  );
  const entry: Launched = {
    proc,
    marker,
    runtime,
    lines,
    remotePid: () => remotePid,
    remote: () => host!.remotePids(`AGENTVISOR_SSH_TEST=${marker}`, 'environ'),
    remoteAll: () => [...new Set([...host!.remotePids(marker, 'cmdline'), ...host!.remotePids(`AGENTVISOR_SSH_TEST=${marker}`, 'environ')])],
    exited: proc.exited,
  };
  launched.push(entry);
  return entry;
}

/** The ACP handshake and a session over the launched agent's stdio. */
async function connect(agent: Launched) {
  const chunks: string[] = [];
  const acp = openAcpConnection(agent.proc.stdin, agent.proc.stdout, {
    handlers: {
      sessionUpdate: ({ update }) => {
        if (update.sessionUpdate === 'agent_message_chunk' && update.content.type === 'text') chunks.push(update.content.text);
        return true;
      },
    },
  });
  const initialized = await acp.initialize();
  const session = await acp.connection.agent.request('session/new', { cwd: '/', mcpServers: [] });
  return { acp, initialized, session, chunks };
}

/** Resolves with the elapsed ms once `promise` settles, rejecting after `ms`. */
async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<{ value: T; elapsed: number }> {
  const start = Date.now();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms)));
  try {
    const value = await Promise.race([promise, timeout]);
    return { value, elapsed: Date.now() - start };
  } finally {
    clearTimeout(timer);
  }
}

afterEach(async () => {
  host?.linkUp();
  for (const agent of launched.splice(0)) {
    agent.proc.signalGroup('SIGKILL');
    await agent.exited;
    for (const pid of agent.remoteAll()) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
  }
});

describe.skipIf(!host)('ssh runtime on a real sshd in a network namespace', () => {
  it('runs the ACP handshake and a prompt over SSH; closing stdin ends the remote agent (rung 1)', async () => {
    const agent = launch();
    const { acp, initialized, session, chunks } = await connect(agent);
    expect(initialized.agentInfo).toEqual({ name: 'fixture-agent', version: '0.1.0' });
    const reply = await acp.connection.agent.request('session/prompt', { sessionId: session.sessionId, prompt: [{ type: 'text', text: 'hello over ssh' }] });
    expect(reply.stopReason).toBe('end_turn');
    expect(chunks.join('')).toBe('hello over ssh');
    // The agent runs on the "remote" side (sshd's namespace), as the leader of its own group, and only the marker was claimed.
    const remotePid = agent.remotePid()!;
    expect(agent.remote()).toEqual([remotePid]);
    const stat = readFileSync(`/proc/${remotePid}/stat`, 'utf8');
    const [, , pgid, sid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    expect([Number(pgid), Number(sid)]).toEqual([remotePid, remotePid]);
    expect(agent.lines).toEqual([]);

    agent.proc.closeInput();
    const { value: exit } = await within(agent.exited, 5_000, 'the local ssh to exit');
    expect(exit).toEqual({ exitCode: 0, signal: null });
    expect(agent.runtime.failureOf!(exit, agent.proc.stderr.snapshot())).toBeNull();
    expect(agent.remoteAll()).toEqual([]);
  });

  it('passes hostile arguments, env names and values, and cwd through the remote shells unchanged', async () => {
    const hostile = ['', ' spaced  out ', "it's", '"double"', '$HOME', '`id`', '$(id)', 'a\nb', '\\back\\slash', '*', '-n', 'x=y', ';exit 9', '~', "'\\''"];
    const env = { AV_HOSTILE: "v'a\"l $HOME `id` \n end", AV_EMPTY: '', 'AV-DASHED': 'dash', 'AV.DOT': '=' };
    const report =
      'const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => name.startsWith("AV")));' +
      'console.log(JSON.stringify({ argv: process.argv.slice(1), cwd: process.cwd(), env }))';
    const agent = launch([], {}, { command: process.execPath, args: ['-e', report, '--', ...hostile], env, cwd: host!.dir });
    const output: Buffer[] = [];
    agent.proc.stdout.on('data', (chunk: Buffer) => output.push(chunk));
    const { value: exit } = await within(agent.exited, 5_000, 'the remote node to exit');
    expect(exit).toEqual({ exitCode: 0, signal: null });
    expect(JSON.parse(Buffer.concat(output).toString('utf8'))).toEqual({ argv: hostile, cwd: host!.dir, env });
    expect(agent.lines).toEqual([]);
  });

  it('the env travels on stdin: no value in any argv, here or remote; the agent has it exactly', async () => {
    const secret = `sk-${randomBytes(6).toString('hex')}`;
    const agent = launch([], {}, fixtureSpec(['--linger'], { env: { AV_API_KEY: secret, 'AV-ODD': `${secret}!` } }));
    await connect(agent);
    const argvs = readdirSync('/proc')
      .filter((name) => /^\d+$/.test(name))
      .map((pid) => {
        try {
          return readFileSync(`/proc/${pid}/cmdline`, 'utf8');
        } catch {
          return '';
        }
      });
    expect(argvs.filter((argv) => argv.includes(secret))).toEqual([]);
    const environ = readFileSync(`/proc/${agent.remotePid()}/environ`, 'utf8').split('\0');
    expect(environ).toContain(`AV_API_KEY=${secret}`);
    expect(environ).toContain(`AV-ODD=${secret}!`);
    expect(environ.some((entry) => entry.startsWith('AGENTVISOR_ENV='))).toBe(false);
  });

  it('the agent crashing remotely: the local ssh exits with the agent\'s own code, not a runtime failure', async () => {
    const agent = launch(['--exit-after', '200', '--exit-code', '7', '--stderr', 'fixture crashing']);
    const { value: exit } = await within(agent.exited, 5_000, 'the local ssh to exit');
    expect(exit).toEqual({ exitCode: 7, signal: null });
    expect(agent.lines).toEqual(['fixture crashing']);
    expect(agent.runtime.failureOf!(exit, agent.proc.stderr.snapshot())).toBeNull();
    expect(agent.remoteAll()).toEqual([]);
  });

  it('stop rung 1 takes the grandchild with it: zero remote survivors', async () => {
    const agent = launch(['--spawn-grandchild']);
    await connect(agent);
    expect(agent.remote()).toHaveLength(2); // the agent and its grandchild
    agent.proc.closeInput();
    const { value: exit } = await within(agent.exited, 5_000, 'the local ssh to exit');
    expect(exit.exitCode).toBe(0);
    expect(agent.remoteAll()).toEqual([]);
  });

  it("signalInside('SIGTERM') ends an agent that ignores stdin EOF (rung 2), on the remote host", async () => {
    const agent = launch(['--linger']);
    await connect(agent);
    agent.proc.closeInput();
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(agent.proc.isRunning()).toBe(true);
    expect(agent.remote()).toEqual([agent.remotePid()]);
    await within(agent.runtime.signalInside!('SIGTERM'), 8_000, 'signalInside');
    const { value: exit } = await within(agent.exited, 5_000, 'the local ssh to exit');
    expect(exit).toEqual({ exitCode: 128 + 15, signal: null }); // the wrapper reports a signal n as 128 + n
    expect(agent.remoteAll()).toEqual([]);
    expect(agent.lines).toEqual([]); // nothing from the remote shells ("Terminated")
  });

  it("signalInside('SIGKILL') ends an agent that ignores SIGTERM (rung 3)", async () => {
    const agent = launch(['--ignore-sigterm']);
    await connect(agent);
    await agent.runtime.signalInside!('SIGTERM');
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(agent.proc.isRunning()).toBe(true);
    await within(agent.runtime.signalInside!('SIGKILL'), 8_000, 'signalInside');
    const { value: exit } = await within(agent.exited, 5_000, 'the local ssh to exit');
    expect(exit).toEqual({ exitCode: 128 + 9, signal: null });
    expect(agent.remoteAll()).toEqual([]);
    expect(agent.lines).toEqual([]); // nothing from the remote shells ("Killed")
  });

  it('the local ssh SIGKILLed: the remote agent and its grandchild are gone within seconds (remote containment)', async () => {
    // The hardest case: both ignore SIGTERM and stdin EOF, so only the wrapper's SIGKILL ends them.
    const agent = launch(['--ignore-sigterm', '--spawn-grandchild']);
    await connect(agent);
    const remote = agent.remote();
    expect(remote).toHaveLength(2);
    agent.proc.signalGroup('SIGKILL');
    await agent.exited;
    const gone = eventually(() => agent.remoteAll().length === 0, 'the remote agent, its grandchild and the wrapper to be gone', 8_000);
    const { elapsed } = await within(gone, 8_500, 'containment');
    console.info(`remote containment after the local ssh was SIGKILLed: ${elapsed} ms`);
    expect(elapsed).toBeLessThan(6_000);
  });

  it.each([
    ['SIGTERM', 'its trap ends the agent, and it exits 143'],
    ['SIGKILL', 'its watcher sees it gone and ends the agent'],
  ] as const)('the remote wrapper sent %s: %s', async (signal, _what) => {
    const agent = launch(['--linger']);
    await connect(agent);
    const stat = readFileSync(`/proc/${agent.remotePid()}/stat`, 'utf8');
    const wrapper = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    expect(host!.remotePids(agent.marker, 'cmdline')).toContain(wrapper);
    process.kill(wrapper, signal);
    await within(eventually(() => agent.remoteAll().length === 0, 'the remote agent to be gone', 5_000), 5_500, 'containment');
    const { value: exit } = await within(agent.exited, 5_000, 'the local ssh to exit');
    if (signal === 'SIGTERM') expect(exit).toEqual({ exitCode: 143, signal: null });
    else expect(exit.exitCode).toBe(255); // sshd reports a session whose command was killed as exit-signal: ssh exits 255
    expect(agent.runtime.failureOf!(exit, agent.proc.stderr.snapshot())).toBeNull();
  });

  it('the link cut: ssh exits within aliveTimeoutMs as runtime_unreachable, the remote side is cleaned up, a new connection works after', async () => {
    const agent = launch(['--linger'], { aliveTimeoutMs: 3_000 });
    await connect(agent);
    host!.linkDown();
    let exit: ProcessExit;
    try {
      const result = await within(agent.exited, 6_000, 'the local ssh to notice the dead link');
      exit = result.value;
      console.info(`local ssh noticed the cut link after ${result.elapsed} ms (aliveTimeoutMs 3000)`);
      expect(result.elapsed).toBeLessThan(3_000 + 1_000);
    } finally {
      host!.linkUp();
    }
    expect(exit.exitCode).toBe(255);
    const failure = agent.runtime.failureOf!(exit, agent.proc.stderr.snapshot());
    expect(failure).toMatchObject({ kind: 'runtime_unreachable' });
    expect(failure!.detail).toMatch(/Timeout, server .* not responding/);
    // sshd notices the dead client (ClientAlive, ~3 s), its session ends, and the wrapper ends the agent.
    await eventually(() => agent.remoteAll().length === 0, 'the remote agent to be gone after the drop', 10_000);

    const again = launch();
    const { initialized } = await connect(again);
    expect(initialized.agentInfo?.name).toBe('fixture-agent');
  });

  it('a remote command that is not installed, and a cwd that is not there: not_installed and spawn_failed', async () => {
    const missing = launch([], {}, { command: 'agentvisor-no-such-agent' });
    const missingExit = (await within(missing.exited, 5_000, 'ssh to exit')).value;
    expect(missingExit.exitCode).toBe(127);
    expect(missing.runtime.failureOf!(missingExit, missing.proc.stderr.snapshot())).toMatchObject({ kind: 'not_installed' });
    const badCwd = launch([], {}, fixtureSpec([], { cwd: '/nonexistent/agentvisor' }));
    const badCwdExit = (await within(badCwd.exited, 5_000, 'ssh to exit')).value;
    expect(badCwdExit.exitCode).toBe(126);
    expect(badCwd.runtime.failureOf!(badCwdExit, badCwd.proc.stderr.snapshot())).toMatchObject({
      kind: 'spawn_failed',
      detail: expect.stringContaining('/nonexistent/agentvisor'),
    });
    expect([missing.lines, badCwd.lines]).toEqual([[], []]);
  });

  describe('ssh failures before the agent runs', () => {
    async function failureOf(overrides: Partial<SshRuntimeSpec>) {
      const agent = launch([], overrides);
      const { value: exit } = await within(agent.exited, 8_000, 'ssh to fail');
      expect(exit.exitCode).toBe(255);
      expect(agent.remotePid()).toBeUndefined();
      expect(agent.remoteAll()).toEqual([]);
      return agent.runtime.failureOf!(exit, agent.proc.stderr.snapshot());
    }

    it('no listener on the port: runtime_unreachable', async () => {
      expect(await failureOf({ port: host!.port + 1 })).toMatchObject({ kind: 'runtime_unreachable', detail: expect.stringMatching(/Connection refused/) });
    });

    it('a client key not in authorized_keys: runtime_auth_failed', async () => {
      expect(await failureOf({ identityFile: host!.strangerKey })).toMatchObject({
        kind: 'runtime_auth_failed',
        detail: expect.stringMatching(/Permission denied \(publickey\)/),
      });
    });

    it('a known_hosts file with another key for the host, or none: runtime_host_key_changed, and the file is never written', async () => {
      const wrongBefore = readFileSync(host!.wrongKnownHosts, 'utf8');
      expect(await failureOf({ knownHostsFile: host!.wrongKnownHosts })).toMatchObject({ kind: 'runtime_host_key_changed' });
      expect(await failureOf({ knownHostsFile: host!.emptyKnownHosts })).toMatchObject({ kind: 'runtime_host_key_changed' });
      expect(readFileSync(host!.wrongKnownHosts, 'utf8')).toBe(wrongBefore);
      expect(readFileSync(host!.emptyKnownHosts, 'utf8')).toBe('');
    });
  });
});
