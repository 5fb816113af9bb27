/**
 * The sandbox and container runtimes on real processes, spawned with `spawnAgentProcess` and
 * spoken to with `openAcpConnection`, as the process actor does.
 *
 * (a) sandbox: real bubblewrap on this host. The fixture agent's handshake and prompt; what
 *     a command in the sandbox can read, write and reach (asked for by the fixture's
 *     `terminal` op; this test's client runs each such command in a fresh bwrap of the
 *     agent's own policy — the library offers sandboxed agents no client terminals, since
 *     `terminal/create` would run on this host, outside the sandbox: docs/runtimes.md); and
 *     that nothing in it outlives bwrap, the stop ladder, or the supervisor itself.
 *     Skipped, with the reason, where bwrap is missing or cannot make namespaces.
 * (b) docker and kubernetes: through tests/fixtures/runtime-shim.mjs on PATH under those names
 *     — NOT a real engine (none runs here): "the container" is this host. What is checked is
 *     the argv the runtime produced, its env handling, and the wrapper's real behaviour.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { AgentSpec } from '../../core/agent-spec.js';
import { acpMethods, openAcpConnection, type AcpClientHandlers } from '../../services/acp-client.service.js';
import { spawnAgentProcess, type AgentProcess } from '../../services/agent-process.service.js';
import { dockerCommand, kubernetesCommand, signalScript, type ContainerRuntimeCommand } from '../../services/runtimes/container.runtime.js';
import { envPreamble, type RuntimeCommand } from '../../services/runtimes/runtime.js';
import { sandboxCommand, type SandboxRuntime } from '../../services/runtimes/sandbox.runtime.js';
import { shellQuote } from '../../services/runtimes/shell-quote.js';
import { eventually, fixtureAgentScript, fixtureSpec, isRunning } from '../support/real-agents.js';
import { useRuntimeShim } from '../support/runtime-shim.js';

const repoRoot = fileURLToPath(new URL('../..', import.meta.url)).replace(/\/$/, '');

// ---------------------------------------------------------------------------------------------
// Shared: spawning a runtime's command and talking ACP to it.
// ---------------------------------------------------------------------------------------------

const spawned: AgentProcess[] = [];
const strayPids = new Set<number>();
afterEach(async () => {
  for (const proc of spawned.splice(0)) {
    proc.signalGroup('SIGKILL');
    await proc.exited;
  }
  for (const pid of strayPids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
  strayPids.clear();
});

/** Spawns what the runtime says, as the process actor does: its command, args and env, in `cwd`. */
function spawnRuntime(command: RuntimeCommand, cwd: string, options: { cleanup?: boolean } = {}): AgentProcess {
  const proc = spawnAgentProcess(
    { command: command.command, args: command.args, env: command.env, cwd },
    {
      onStderrLine: (line) => void command.onStderrLine?.(line),
      ...(command.stdinPreamble ? { stdinPreamble: command.stdinPreamble } : {}),
      // As the process actor does: what the runtime leaves is cleaned up before `exited` resolves.
      ...(options.cleanup ? { remote: command } : {}),
    },
  );
  spawned.push(proc);
  return proc;
}

/** A client for one agent process: terminals run by `runTerminal`, chunks collected per session. */
async function connect(proc: AgentProcess, runTerminal?: (command: string, args: string[], cwd: string) => TerminalRun) {
  const chunks: string[] = [];
  const terminals = new Map<string, TerminalRun>();
  let next = 0;
  const handlers: AcpClientHandlers = {
    sessionUpdate: (notification) => {
      const update = notification.update;
      if (update.sessionUpdate === 'agent_message_chunk' && update.content.type === 'text') chunks.push(update.content.text);
      return true;
    },
  };
  if (runTerminal) {
    handlers.createTerminal = async (params) => {
      const id = `t${++next}`;
      terminals.set(id, runTerminal(params.command, params.args ?? [], params.cwd ?? '/'));
      return { terminalId: id };
    };
    handlers.waitForTerminalExit = async (params) => terminals.get(params.terminalId)!.exit;
    handlers.terminalOutput = async (params) => ({ output: terminals.get(params.terminalId)!.output(), truncated: false });
    handlers.killTerminal = async (params) => terminals.get(params.terminalId)!.kill();
    handlers.releaseTerminal = async (params) => {
      terminals.get(params.terminalId)?.kill();
      terminals.delete(params.terminalId);
    };
  }
  const acp = openAcpConnection(proc.stdin, proc.stdout, { clientCapabilities: { terminal: Boolean(runTerminal) }, handlers });
  const init = await acp.initialize();
  const { sessionId } = await acp.connection.agent.request(acpMethods.agent.session.new, { cwd: '/', mcpServers: [] });
  return {
    init,
    /** Sends a prompt; resolves with the text of the chunks it produced. */
    async prompt(text: string): Promise<string> {
      const from = chunks.length;
      const answer = await acp.connection.agent.request(acpMethods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text }] });
      expect(answer.stopReason).toBe('end_turn');
      return chunks.slice(from).join('');
    },
    /** Runs a command through the fixture's `terminal` op: its output and exit. */
    async terminal(command: string, args: string[], cwd?: string): Promise<{ output: string; exit: string }> {
      const text = await this.prompt(JSON.stringify({ op: 'terminal', command, args, ...(cwd ? { cwd } : {}) }));
      const match = /^terminal-output:([\s\S]*)terminal-exit:(.*)$/.exec(text);
      if (!match) throw new Error(`unexpected terminal answer: ${text}`);
      return { output: match[1] ?? '', exit: match[2] ?? '' };
    },
  };
}

interface TerminalRun {
  exit: Promise<{ exitCode: number | null; signal: string | null }>;
  output(): string;
  kill(): void;
}

/** Runs a command to its end, here, with its output collected. */
function runLocally(command: string, args: string[], cwd: string, env?: Record<string, string>): TerminalRun {
  const child = spawn(command, args, { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exit = new Promise<{ exitCode: number | null; signal: string | null }>((resolve) => {
    child.once('error', () => resolve({ exitCode: 127, signal: null }));
    child.once('close', (exitCode, signal) => resolve({ exitCode, signal }));
  });
  return {
    exit,
    output: () => output,
    kill: () => {
      try {
        if (child.pid) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // done already
      }
    },
  };
}

/**
 * The stop ladder, as the agent machine runs it: close stdin, then SIGTERM, then SIGKILL, each
 * after its wait. With `signalInside` (a container) the signals are sent in, not to the local
 * client (whose death would lose the agent's exit status); the client is SIGKILLed last, if
 * it has not ended by itself 2 s after the agent's SIGKILL.
 */
async function stopLadder(proc: AgentProcess, rungs: { shutdownMs: number; killMs: number; signalInside?: RuntimeCommand['signalInside'] }): Promise<string> {
  const within = (ms: number) => Promise.race([proc.exited.then(() => true), new Promise<boolean>((resolve) => setTimeout(() => resolve(false), ms))]);
  proc.closeInput();
  if (await within(rungs.shutdownMs)) return 'stdin';
  if (rungs.signalInside) await rungs.signalInside('SIGTERM');
  else proc.signalGroup('SIGTERM');
  if (await within(rungs.killMs)) return 'SIGTERM';
  if (rungs.signalInside) {
    await rungs.signalInside('SIGKILL');
    if (await within(2_000)) return 'SIGKILL';
  }
  proc.signalGroup('SIGKILL');
  await proc.exited;
  return 'SIGKILL';
}

/** Every pid on this host whose command line contains `marker`. */
function pidsWithArgv(marker: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^[0-9]+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(marker)) pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

/** The PID namespace of a process, as its /proc link names it; null when it is gone. */
function pidNamespaceOf(pid: number | 'self'): string | null {
  try {
    return readlinkSync(`/proc/${pid}/ns/pid`);
  } catch {
    return null;
  }
}

/** Every live process on this host in the PID namespace `ns`. */
function pidsInNamespace(ns: string): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^[0-9]+$/.test(entry))
    .map(Number)
    .filter((pid) => pidNamespaceOf(pid) === ns && isRunning(pid));
}

function environOf(pid: number): string[] {
  return readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
}

// ---------------------------------------------------------------------------------------------
// (a) sandbox: real bubblewrap.
// ---------------------------------------------------------------------------------------------

/** Why bwrap cannot be tested here (missing, or no namespaces), or null when it can. */
function bwrapUnavailable(): string | null {
  const probe = spawnSync('bwrap', ['--die-with-parent', '--unshare-pid', '--unshare-net', '--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--', 'true'], {
    encoding: 'utf8',
    timeout: 10_000,
  });
  if (probe.error) return `bwrap cannot be run: ${probe.error.message}`;
  if (probe.status !== 0) return `bwrap cannot create a sandbox here: ${probe.stderr.trim() || `exit ${probe.status}`}`;
  return null;
}

const noBwrap = bwrapUnavailable();
if (noBwrap) console.warn(`sandbox runtime tests skipped: ${noBwrap}`);

describe.skipIf(noBwrap !== null)(`sandbox runtime, real bubblewrap${noBwrap ? ` (skipped: ${noBwrap})` : ''}`, () => {
  let root: string;
  let workspace: string;
  let shared: string;
  let listener: Server;
  let port: number;
  /** The fixture's script and the SDK it imports: the agent's program, read-only. */
  const program = [repoRoot];

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'agentvisor-runtimes-'));
    workspace = join(root, 'workspace');
    shared = join(root, 'shared');
    mkdirSync(workspace);
    mkdirSync(join(shared, 'secret'), { recursive: true });
    writeFileSync(join(shared, 'readable.txt'), 'shared-content');
    writeFileSync(join(shared, 'secret', 'key.txt'), 'secret-content');
    writeFileSync(join(root, 'outside.txt'), 'outside-content');
    listener = createServer((socket) => socket.end('hello-from-the-host\n'));
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
    port = (listener.address() as { port: number }).port;
  });
  afterAll(async () => {
    await new Promise((resolve) => listener.close(resolve));
    rmSync(root, { recursive: true, force: true });
  });

  const policy = (extra: Partial<SandboxRuntime> = {}): SandboxRuntime => ({
    kind: 'sandbox',
    readOnly: [...program, shared],
    hide: [homedir(), join(shared, 'secret')],
    ...extra,
  });
  /** This client's terminals run in a fresh sandbox of the same policy: what a process in the sandbox can do. */
  const sandboxedTerminal = (runtime: SandboxRuntime) => (command: string, args: string[], cwd: string) => {
    const wrapped = sandboxCommand({ command, args }, runtime, { cwd });
    return runLocally(wrapped.command, wrapped.args, cwd);
  };
  /** Starts the fixture in the sandbox, with a pid file of its own: its path in the agent's argv finds it on this host. */
  const startSandboxed = (runtime: SandboxRuntime, flags: string[] = []) => {
    const pidFile = join(workspace, `pids-${Math.random().toString(16).slice(2)}.txt`);
    const spec = fixtureSpec([...flags, '--pid-file', pidFile]);
    const command = sandboxCommand(spec, runtime, { cwd: workspace });
    expect(command.localContainment).toBe(false);
    /** The agent's pid on this host: the node process in another PID namespace with its pid file in its argv. */
    const agentHostPid = () =>
      pidsWithArgv(pidFile).find((pid) => pidNamespaceOf(pid) !== pidNamespaceOf('self') && readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'node');
    return { command, proc: spawnRuntime(command, workspace), pidFile, agentHostPid };
  };

  it('runs the fixture agent: handshake and prompt through bwrap', async () => {
    const { proc } = startSandboxed(policy());
    const client = await connect(proc);
    expect(client.init.agentInfo).toEqual({ name: 'fixture-agent', version: '0.1.0' });
    expect(await client.prompt('hello from outside')).toBe('hello from outside');
    expect(await stopLadder(proc, { shutdownMs: 5_000, killMs: 2_000 })).toBe('stdin');
    expect(await proc.exited).toEqual({ exitCode: 0, signal: null });
  });

  it('the file system: hidden paths are empty, the system and readOnly paths read-only, the workspace writable', async () => {
    const runtime = policy();
    const { proc, agentHostPid } = startSandboxed(runtime);
    const client = await connect(proc, sandboxedTerminal(runtime));
    const run = (script: string) => client.terminal('/bin/sh', ['-c', script], workspace);

    // Hidden: a file in a hidden path, a file outside every visible path, the home directory.
    const hidden = await run(`cat ${shellQuote(join(shared, 'secret', 'key.txt'))}`);
    expect(hidden.exit).not.toBe('0');
    expect(hidden.output).toMatch(/No such file or directory/);
    expect(hidden.output).not.toContain('secret-content');
    expect((await run(`cat ${shellQuote(join(root, 'outside.txt'))}`)).output).toMatch(/No such file or directory/);
    const homeFile = readdirSync(homedir()).map((name) => join(homedir(), name)).find((path) => spawnSync('test', ['-f', path]).status === 0);
    if (homeFile) expect((await run(`cat ${shellQuote(homeFile)}`)).output, `${homeFile} exists on this host`).toMatch(/No such file or directory/);
    expect(readdirSync(homedir()).length, 'the host home is not empty').toBeGreaterThan(0);
    expect(await run('ls -A "$HOME" | wc -l')).toEqual({ output: '0\n', exit: '0' });

    // Read-only: the spec's readOnly path and the system; readable, never writable.
    expect(await run(`cat ${shellQuote(join(shared, 'readable.txt'))}`)).toEqual({ output: 'shared-content', exit: '0' });
    const sharedWrite = await run(`echo x > ${shellQuote(join(shared, 'x'))}`);
    expect(sharedWrite.exit).not.toBe('0');
    expect(sharedWrite.output).toMatch(/Read-only file system/);
    expect(existsSync(join(shared, 'x'))).toBe(false);
    const systemWrite = await run('echo x > /usr/local/avtest');
    expect(systemWrite.output).toMatch(/Read-only file system/);
    expect(existsSync('/usr/local/avtest')).toBe(false);

    // Writable: the workspace (the host sees the file), and a private /tmp (the host does not).
    expect(await run('echo written > ./out.txt && cat ./out.txt')).toEqual({ output: 'written\n', exit: '0' });
    expect(readFileSync(join(workspace, 'out.txt'), 'utf8')).toBe('written\n');
    expect((await run('echo t > /tmp/private && cat /tmp/private')).output).toBe('t\n');
    expect(existsSync('/tmp/private')).toBe(false);

    // The agent's own process sees the same: it is pid 2 of its namespace, its /proc the namespace's.
    const agentPid = agentHostPid();
    expect(agentPid).toBeDefined();
    expect(readFileSync(`/proc/${agentPid}/status`, 'utf8')).toMatch(/^NSpid:\s+[0-9]+\s+2$/m);
    await stopLadder(proc, { shutdownMs: 5_000, killMs: 2_000 });
  });

  it('the network: off by default (the host\'s 127.0.0.1 and Unix sockets unreachable), on with network: true', async () => {
    const socketDir = mkdtempSync(join(tmpdir(), 'agentvisor-socket-'));
    const unixListener = createServer((socket) => socket.end('unix\n'));
    await new Promise<void>((resolve) => unixListener.listen(join(socketDir, 'host.sock'), resolve));
    const probe = (target: string) =>
      `require('net').connect(${target})` +
      ".on('data', (d) => { process.stdout.write('connected:' + d); process.exit(0); })" +
      ".on('error', (e) => { process.stdout.write('error:' + e.code); process.exit(1); })";
    try {
      for (const network of [false, true]) {
        const runtime = policy({ network });
        const { proc } = startSandboxed(runtime);
        const client = await connect(proc, sandboxedTerminal(runtime));
        const tcp = await client.terminal(process.execPath, ['-e', probe(String(port)) /* 127.0.0.1 by default */], workspace);
        if (network) expect(tcp).toEqual({ output: 'connected:hello-from-the-host\n', exit: '0' });
        else expect(tcp).toEqual({ output: 'error:ECONNREFUSED', exit: '1' });
        // A Unix socket of the host is not in the sandbox's file system, with or without network.
        expect(await client.terminal(process.execPath, ['-e', probe(JSON.stringify(join(socketDir, 'host.sock')))], workspace)).toEqual({ output: 'error:ENOENT', exit: '1' });
        await stopLadder(proc, { shutdownMs: 5_000, killMs: 2_000 });
      }
    } finally {
      await new Promise((resolve) => unixListener.close(resolve));
      rmSync(socketDir, { recursive: true, force: true });
    }
  });

  /** Starts an agent with an escapee and returns every host pid of its sandbox (bwrap's init, the agent, the escapee). */
  async function startWithEscapee(flags: string[] = []) {
    const started = startSandboxed(policy(), ['--spawn-grandchild', '--grandchild-escapes', ...flags]);
    await connect(started.proc);
    // The pid file is written inside the sandbox: namespace pids (the agent is 2 there).
    expect(readFileSync(started.pidFile, 'utf8')).toMatch(/^2 [0-9]+\n$/);
    const agent = started.agentHostPid();
    expect(agent, 'the agent, found on this host by its pid file in its argv').toBeDefined();
    const members = pidsInNamespace(pidNamespaceOf(agent!)!);
    members.forEach((pid) => strayPids.add(pid));
    // bwrap's init, the agent and the escaped grandchild (node -e, in a session of its own)
    expect(members.length).toBe(3);
    const escapee = members.find((pid) => pid !== agent && readFileSync(`/proc/${pid}/cmdline`, 'utf8').startsWith(`${process.execPath}\0-e\0`));
    expect(escapee, 'the escapee').toBeDefined();
    // …in a session of its own: out of reach of any signal to the agent's group.
    expect(readFileSync(`/proc/${escapee}/stat`, 'utf8').split(') ')[1]?.split(' ')[3], 'the escapee leads its own session').not.toBe(
      readFileSync(`/proc/${agent}/stat`, 'utf8').split(') ')[1]?.split(' ')[3],
    );
    return { ...started, members, agent: agent! };
  }

  it('nothing outlives a SIGKILLed bwrap: the escapee dies with the namespace', async () => {
    const { proc, members } = await startWithEscapee();
    process.kill(proc.pid!, 'SIGKILL'); // bwrap alone, not its group
    await eventually(() => members.every((pid) => !isRunning(pid)), 'every process of the sandbox to be gone', 5_000);
    expect(await proc.exited).toEqual({ exitCode: null, signal: 'SIGKILL' });
  });

  it('the stop ladder: stdin EOF ends the agent, and the escapee with it', async () => {
    const { proc, members } = await startWithEscapee();
    expect(await stopLadder(proc, { shutdownMs: 5_000, killMs: 2_000 })).toBe('stdin');
    expect(await proc.exited).toEqual({ exitCode: 0, signal: null });
    await eventually(() => members.every((pid) => !isRunning(pid)), 'every process of the sandbox to be gone', 5_000);
  });

  it('the stop ladder: SIGTERM reaches the agent itself (bwrap outlives it and reports 128 + 15)', async () => {
    const { proc, members, agent } = await startWithEscapee(['--linger']);
    expect(await stopLadder(proc, { shutdownMs: 300, killMs: 5_000 })).toBe('SIGTERM');
    // Killed by SIGTERM *inside*: bwrap exits 143. Had bwrap died of the SIGTERM itself, the exit would be the signal.
    expect(await proc.exited).toEqual({ exitCode: 143, signal: null });
    expect(isRunning(agent)).toBe(false);
    await eventually(() => members.every((pid) => !isRunning(pid)), 'every process of the sandbox to be gone', 5_000);
  });

  it('the stop ladder: an agent that ignores SIGTERM ends at SIGKILL, its escapee too', async () => {
    const { proc, members, agent } = await startWithEscapee(['--ignore-sigterm']);
    expect(await stopLadder(proc, { shutdownMs: 300, killMs: 500 })).toBe('SIGKILL');
    expect(isRunning(agent)).toBe(false);
    await eventually(() => members.every((pid) => !isRunning(pid)), 'every process of the sandbox to be gone', 5_000);
  });

  it('a supervisor that dies (SIGKILL) takes the sandbox with it: bwrap\'s parent-death signal', async () => {
    const pidFile = join(workspace, 'pids-parent.txt');
    const command = sandboxCommand(fixtureSpec(['--linger', '--spawn-grandchild', '--grandchild-escapes', '--pid-file', pidFile]), policy(), { cwd: workspace });
    // A stand-in supervisor: a node process that spawns the sandbox and then is killed.
    const script = `require('child_process').spawn(${JSON.stringify(command.command)}, ${JSON.stringify(command.args)}, { stdio: ['pipe', 'ignore', 'ignore'], detached: true });`;
    const parent = spawn(process.execPath, ['-e', `${script} setInterval(() => {}, 1000);`], { cwd: workspace, stdio: 'ignore' });
    strayPids.add(parent.pid!);
    await eventually(() => existsSync(pidFile), 'the sandboxed agent to start');
    const agent = pidsWithArgv(pidFile).find((pid) => pidNamespaceOf(pid) !== pidNamespaceOf('self') && readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'node');
    const members = pidsInNamespace(pidNamespaceOf(agent!)!);
    members.forEach((pid) => strayPids.add(pid));
    expect(members.length).toBe(3);
    parent.kill('SIGKILL');
    await eventually(() => members.every((pid) => !isRunning(pid)), 'every process of the sandbox to be gone', 5_000);
  });

  it('failures of the sandbox itself: a bind source that does not exist, a bwrap that is not installed', async () => {
    const missingSource = sandboxCommand(fixtureSpec(), policy({ readOnly: [...program, '/nonexistent-agentvisor-path'] }), { cwd: workspace });
    const proc = spawnRuntime(missingSource, workspace);
    const exit = await proc.exited;
    expect(exit).toEqual({ exitCode: 1, signal: null });
    expect(missingSource.failureOf?.(exit, proc.stderr.snapshot())).toEqual({
      kind: 'runtime_missing',
      detail: "bubblewrap could not set up the sandbox: Can't find source path /nonexistent-agentvisor-path: No such file or directory",
    });

    const noBwrapHere = sandboxCommand(fixtureSpec(), policy(), { cwd: workspace, bwrap: '/nonexistent/bwrap' });
    const proc2 = spawnRuntime(noBwrapHere, workspace);
    const exit2 = await proc2.exited;
    expect(exit2.exitCode).toBe(127);
    expect(noBwrapHere.failureOf?.(exit2, proc2.stderr.snapshot())).toMatchObject({ kind: 'runtime_missing', detail: expect.stringMatching(/bubblewrap is not installed/) });

    const invisible = sandboxCommand({ command: join(root, 'outside.txt') }, policy(), { cwd: workspace });
    const proc3 = spawnRuntime(invisible, workspace);
    const exit3 = await proc3.exited;
    expect(invisible.failureOf?.(exit3, proc3.stderr.snapshot())).toMatchObject({ kind: 'runtime_missing', detail: expect.stringMatching(/cannot be run inside the sandbox/) });
  });
});

// ---------------------------------------------------------------------------------------------
// (b) docker and kubernetes: through the recording shim. Not a real engine.
// ---------------------------------------------------------------------------------------------

describe('container runtimes, through the recording shim (NOT a real engine)', () => {
  const shim = useRuntimeShim();
  const calls = () => shim.calls();

  beforeAll(() => {
    // `docker` on PATH is the shim (it refuses what it does not emulate, in its own words).
    expect(spawnSync('docker', ['version'], { encoding: 'utf8' }).stderr).toMatch(/^runtime-shim: docker version is not emulated/);
    rmSync(shim.log, { force: true });
  });
  afterEach(() => rmSync(shim.log, { force: true }));

  /** The pids of the remote group, on this host (the shim runs "the container" here). */
  const groupMembers = (pgid: number) =>
    readdirSync('/proc')
      .filter((entry) => /^[0-9]+$/.test(entry))
      .map(Number)
      .filter((pid) => {
        try {
          return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ')[2] === String(pgid) && isRunning(pid);
        } catch {
          return false;
        }
      });

  async function startInContainer(command: ContainerRuntimeCommand, options: { cleanup?: boolean } = {}) {
    const proc = spawnRuntime(command, shim.work, options);
    const client = await connect(proc);
    await eventually(() => command.remotePid() !== null, 'the wrapper\'s marker');
    const pgid = command.remotePid()!;
    // The marker names the agent itself: the leader of its own group.
    expect(readFileSync(`/proc/${pgid}/cmdline`, 'utf8').split('\0').slice(0, 2)).toEqual([process.execPath, fixtureAgentScript]);
    groupMembers(pgid).forEach((pid) => strayPids.add(pid));
    return { proc, client, pgid };
  }

  it('docker exec: handshake and prompt in "the container"; the exact argv; env by name only', async () => {
    const spec: AgentSpec = fixtureSpec(['--spawn-grandchild'], { env: { AV_SECRET: 'value with spaces $(id) `id`' }, cwd: shim.work });
    const command = dockerCommand(spec, { kind: 'docker', container: 'dev' });
    expect(command.command).toBe('docker');
    const { proc, client, pgid } = await startInContainer(command);
    expect(client.init.agentInfo).toEqual({ name: 'fixture-agent', version: '0.1.0' });
    expect(await client.prompt('hello container')).toBe('hello container');

    const [call] = calls();
    expect(call?.tool).toBe('docker');
    expect(call?.argv).toEqual(command.args);
    expect(call?.argv.slice(0, 8)).toEqual(['exec', '-i', '-e', 'AV_SECRET', '-w', shim.work, '--', 'dev']);
    expect(call?.envKeys).toContain('AV_SECRET');
    expect(JSON.stringify(call?.argv)).not.toContain('value with spaces');
    // docker's client took the value from its environment: the agent has it, byte for byte, in its -w.
    expect(environOf(pgid)).toContain('AV_SECRET=value with spaces $(id) `id`');
    expect(readlinkSync(`/proc/${pgid}/cwd`)).toBe(shim.work);
    // The marker went to onStderrLine (swallowed there), not to the agent's protocol.
    expect(proc.stderr.snapshot()).toContain(`agentvisor-remote-pid ${pgid}`);
    expect(command.onStderrLine(`agentvisor-remote-pid ${pgid}`)).toBe(true);

    expect(await stopLadder(proc, { shutdownMs: 5_000, killMs: 2_000, signalInside: (signal) => command.signalInside(signal) })).toBe('stdin');
    expect(await proc.exited).toEqual({ exitCode: 0, signal: null });
    await eventually(() => groupMembers(pgid).length === 0, 'the agent\'s group (its grandchild too) to be gone', 5_000);
  });

  it('docker exec: the ladder\'s SIGTERM goes in through `docker exec <c> … kill` and reaches the agent', async () => {
    const command = dockerCommand(fixtureSpec(['--linger', '--spawn-grandchild']), { kind: 'docker', container: 'dev' });
    const { proc, pgid } = await startInContainer(command);
    const members = groupMembers(pgid);
    expect(members.length).toBeGreaterThanOrEqual(3); // the agent, its grandchild, the stdin feeder (and its cat)
    expect(await stopLadder(proc, { shutdownMs: 300, killMs: 5_000, signalInside: (signal) => command.signalInside(signal) })).toBe('SIGTERM');
    const signalCall = calls().find((call) => call.argv.includes('agentvisor-signal'));
    expect(signalCall?.argv).toEqual(['exec', '--', 'dev', '/bin/sh', '-c', signalScript, 'agentvisor-signal', 'TERM', String(pgid)]);
    // The agent died of SIGTERM in the container: the wrapper and docker report 143.
    expect(await proc.exited).toEqual({ exitCode: 143, signal: null });
    await eventually(() => members.every((pid) => !isRunning(pid)), 'the agent\'s group to be gone', 5_000);
  });

  it('docker exec: an agent that ignores SIGTERM ends at the SIGKILL sent in', async () => {
    const command = dockerCommand(fixtureSpec(['--ignore-sigterm']), { kind: 'docker', container: 'dev' });
    const { proc, pgid } = await startInContainer(command);
    expect(await stopLadder(proc, { shutdownMs: 300, killMs: 500, signalInside: (signal) => command.signalInside(signal) })).toBe('SIGKILL');
    expect(calls().filter((call) => call.argv.includes('agentvisor-signal')).map((call) => call.argv.at(-2))).toEqual(['TERM', 'KILL']);
    await eventually(() => !isRunning(pgid), 'the agent to be gone', 5_000);
  });

  it('docker exec: a client that dies leaves no agent behind (the wrapper sees stdin close, then signals the group)', async () => {
    // shutdownTimeoutMs 0: the wrapper waits 1 s after EOF before SIGTERM, 3 s more before SIGKILL.
    const command = dockerCommand(fixtureSpec(['--linger'], { shutdownTimeoutMs: 0 }), { kind: 'docker', container: 'dev' });
    const { proc, pgid } = await startInContainer(command);
    const members = groupMembers(pgid);
    proc.signalGroup('SIGKILL'); // the local client only: "the container" is in a session of its own
    await proc.exited;
    expect(isRunning(pgid), 'the agent outlives its client for a moment').toBe(true);
    await eventually(() => members.every((pid) => !isRunning(pid)), 'the agent to be ended by its wrapper', 5_000);
  });

  it('docker exec, with the cleanup: a client killed by a signal gets its agent SIGKILLed inside at once (the wrapper would wait 31 s)', async () => {
    const command = dockerCommand(fixtureSpec(['--linger'], { shutdownTimeoutMs: 30_000 }), { kind: 'docker', container: 'dev' });
    const { proc, pgid } = await startInContainer(command, { cleanup: true });
    const members = groupMembers(pgid);
    proc.signalGroup('SIGKILL'); // the local client only
    await proc.exited; // after the cleanup
    expect(calls().filter((call) => call.argv.includes('agentvisor-signal')).map((call) => call.argv.slice(-2))).toEqual([['KILL', String(pgid)]]);
    await eventually(() => members.every((pid) => !isRunning(pid)), 'the agent to be gone', 3_000);
  });

  it('docker exec, with the cleanup: a client that ends with its agent sends nothing in (the wrapper killed the group)', async () => {
    const command = dockerCommand(fixtureSpec(), { kind: 'docker', container: 'dev' });
    const { proc, pgid } = await startInContainer(command, { cleanup: true });
    proc.closeInput(); // the agent exits on EOF, the wrapper and the client with it
    expect(await proc.exited).toEqual({ exitCode: 0, signal: null });
    expect(calls().some((call) => call.argv.includes('agentvisor-signal'))).toBe(false);
    expect(isRunning(pgid)).toBe(false);
  });

  it('docker run, with the cleanup: the client killed, its container is removed by its label before the exit is told', async () => {
    const command = dockerCommand(fixtureSpec(['--linger'], { shutdownTimeoutMs: 30_000 }), { kind: 'docker', image: 'agent-image' }, { name: 'agentvisor-test-gone', agent: 'a' });
    const { proc, pgid } = await startInContainer(command, { cleanup: true });
    proc.signalGroup('SIGKILL');
    await proc.exited;
    expect(isRunning(pgid)).toBe(false); // `docker rm --force` ended "the container" before `exited` resolved
    const engineCalls = calls().filter((call) => call.argv[0] === 'ps' || call.argv[0] === 'rm').map((call) => call.argv);
    expect(engineCalls).toEqual([
      ['ps', '--all', '--quiet', '--no-trunc', '--filter', 'label=io.agentvisor.container=agentvisor-test-gone'],
      ['rm', '--force', '--', 'agentvisor-test-gone'],
    ]);
  });

  it('docker run: a named container, signals sent in by that name', async () => {
    const command = dockerCommand(fixtureSpec(['--linger']), { kind: 'docker', image: 'agent-image', runArgs: ['--init'] }, { name: 'agentvisor-test-run' });
    const { proc, client, pgid } = await startInContainer(command);
    expect(await client.prompt('hello run')).toBe('hello run');
    expect(calls()[0]?.argv).toEqual(command.args);
    expect(command.args.slice(0, 11)).toEqual([
      'run',
      '-i',
      '--init',
      '--name',
      'agentvisor-test-run',
      '--init',
      '--label',
      'io.agentvisor.agent=Fixture',
      '--label',
      'io.agentvisor.container=agentvisor-test-run',
      '--',
    ]);
    expect(await stopLadder(proc, { shutdownMs: 300, killMs: 5_000, signalInside: (signal) => command.signalInside(signal) })).toBe('SIGTERM');
    expect(calls().find((call) => call.argv.includes('agentvisor-signal'))?.argv.slice(0, 3)).toEqual(['exec', '--', 'agentvisor-test-run']);
    expect(await proc.exited).toEqual({ exitCode: 143, signal: null });
    expect(isRunning(pgid)).toBe(false);
  });

  it('kubectl exec: handshake and prompt in "the pod"; the exact argv; env inside the wrapper; SIGTERM sent in', async () => {
    const spec: AgentSpec = fixtureSpec(['--linger'], { env: { AV_SECRET: "it's $HOME" }, cwd: shim.work });
    const command = kubernetesCommand(spec, { kind: 'kubernetes', pod: 'agent-0', namespace: 'tools', container: 'main', context: 'ctx', kubeconfig: '/etc/kube/config' });
    const { proc, client, pgid } = await startInContainer(command);
    expect(await client.prompt('hello pod')).toBe('hello pod');
    const [call] = calls();
    expect(call?.tool).toBe('kubectl');
    expect(call?.argv).toEqual(command.args);
    expect(call?.argv.slice(0, 12)).toEqual(['--kubeconfig', '/etc/kube/config', '--context', 'ctx', 'exec', '-i', '-n', 'tools', 'agent-0', '-c', 'main', '--']);
    // Not through kubectl's environment, and in no argv: on its stdin, first (envPreamble).
    expect(call?.envKeys).not.toContain('AV_SECRET');
    expect(JSON.stringify(call?.argv)).not.toContain("it's $HOME");
    expect(command.stdinPreamble).toBe(envPreamble({ AV_SECRET: "it's $HOME" }));
    for (const pid of groupMembers(pgid)) expect(readFileSync(`/proc/${pid}/cmdline`, 'utf8')).not.toContain('$HOME');
    expect(environOf(pgid)).toContain("AV_SECRET=it's $HOME");
    expect(environOf(pgid).some((entry) => entry.startsWith('AGENTVISOR_ENV='))).toBe(false);
    expect(readlinkSync(`/proc/${pgid}/cwd`)).toBe(shim.work);

    expect(await stopLadder(proc, { shutdownMs: 300, killMs: 5_000, signalInside: (signal) => command.signalInside(signal) })).toBe('SIGTERM');
    expect(calls().find((entry) => entry.argv.includes('agentvisor-signal'))?.argv).toEqual([
      '--kubeconfig',
      '/etc/kube/config',
      '--context',
      'ctx',
      '--request-timeout',
      '5s',
      'exec',
      '-n',
      'tools',
      'agent-0',
      '-c',
      'main',
      '--',
      '/bin/sh',
      '-c',
      signalScript,
      'agentvisor-signal',
      'TERM',
      String(pgid),
    ]);
    expect(await proc.exited).toEqual({ exitCode: 143, signal: null });
    expect(proc.stderr.snapshot()).toContain('command terminated with exit code 143');
  });

  it('a missing container, image or pod is runtime_missing, from the clients\' own words', async () => {
    const cases: Array<[ContainerRuntimeCommand, number, string]> = [
      [dockerCommand(fixtureSpec(), { kind: 'docker', container: 'nope' }), 1, 'Error response from daemon: No such container: nope'],
      [dockerCommand(fixtureSpec(), { kind: 'docker', image: 'nope' }), 125, 'pull access denied for nope'],
      [kubernetesCommand(fixtureSpec(), { kind: 'kubernetes', pod: 'nope' }), 1, 'Error from server (NotFound): pods "nope" not found'],
    ];
    for (const [command, code, detail] of cases) {
      const proc = spawnRuntime(command, shim.work);
      const exit = await proc.exited;
      expect(exit).toEqual({ exitCode: code, signal: null });
      const failure = command.failureOf(exit, proc.stderr.snapshot());
      expect(failure?.kind).toBe('runtime_missing');
      expect(failure?.detail).toContain(detail);
    }
  });
});


// ---------------------------------------------------------------------------------------------
// (c) the real clients read the argv as meant. No engine or cluster runs here, and none is
//     contacted: docker is pointed at a socket that does not exist, kubectl at a closed port
//     of 127.0.0.1. A client that parsed the argv stops at connecting ("Cannot connect…",
//     "…was refused"); one that did not would print its usage ("unknown flag", "requires…").
// ---------------------------------------------------------------------------------------------

/** The real client's path, found before any test puts the shim first on PATH; null: not installed. */
const realClient = (name: string) => spawnSync('/bin/sh', ['-c', `command -v ${name}`], { encoding: 'utf8' }).stdout.trim() || null;
const realDocker = realClient('docker');
const realKubectl = realClient('kubectl');

describe('the real docker and kubectl clients parse the argv (they stop at connecting: no engine here)', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'agentvisor-clients-'));
    writeFileSync(
      join(dir, 'kubeconfig'),
      [
        'apiVersion: v1',
        'kind: Config',
        'clusters: [{ name: c, cluster: { server: "https://127.0.0.1:1" } }]',
        'users: [{ name: u, user: { token: not-a-token } }]',
        'contexts: [{ name: ctx, context: { cluster: c, user: u } }]',
        'current-context: ctx',
        '',
      ].join('\n'),
    );
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const run = (command: string, args: string[], env: Record<string, string> = {}) =>
    spawnSync(command, args, { encoding: 'utf8', timeout: 20_000, env: { ...process.env, ...env }, input: '' });

  it.skipIf(!realDocker)(`docker: exec, run and the signal call${realDocker ? '' : ' (skipped: no docker client)'}`, () => {
    const env = { DOCKER_HOST: `unix://${join(dir, 'no-daemon.sock')}`, DOCKER_CONFIG: join(dir, 'docker-config'), OPENAI_API_KEY: 'k' };
    const spec = fixtureSpec(['--linger'], { env: { OPENAI_API_KEY: 'k' }, cwd: '/srv' });
    const commands = [
      dockerCommand(spec, { kind: 'docker', container: '-looks-like-a-flag' }),
      dockerCommand(spec, { kind: 'docker', image: 'agent-image', runArgs: ['--network', 'none', '--name=mine'] }),
    ];
    for (const command of commands) {
      const result = run(realDocker!, command.args, env);
      expect(result.stderr, command.args.slice(0, 8).join(' ')).toMatch(/Cannot connect to the Docker daemon at unix:\/\/.*no-daemon\.sock/);
      expect(command.failureOf({ exitCode: result.status, signal: null }, result.stderr.split('\n'))).toMatchObject({ kind: 'runtime_unreachable' });
    }
    // The signal call's argv, as signalInside builds it (checked in (b)): its docker exec parses too.
    const signalArgs = ['exec', '--', 'dev', '/bin/sh', '-c', signalScript, 'agentvisor-signal', 'TERM', '42'];
    expect(run(realDocker!, signalArgs, env).stderr).toMatch(/Cannot connect to the Docker daemon/);
  });

  it.skipIf(!realKubectl)(`kubectl: exec with every option, and the signal call${realKubectl ? '' : ' (skipped: no kubectl client)'}`, () => {
    const env = { KUBECACHEDIR: join(dir, 'kube-cache') };
    const kubeconfig = join(dir, 'kubeconfig');
    const spec = fixtureSpec([], { env: { TOKEN: 'v' }, cwd: '/srv' });
    const command = kubernetesCommand(spec, { kind: 'kubernetes', pod: 'agent-0', namespace: 'tools', container: 'main', context: 'ctx', kubeconfig });
    const result = run(realKubectl!, command.args, env);
    expect(result.stderr).toMatch(/The connection to the server 127\.0\.0\.1:1 was refused/);
    expect(command.failureOf({ exitCode: result.status, signal: null }, result.stderr.split('\n'))).toMatchObject({ kind: 'runtime_unreachable' });
    const signalArgs = ['--kubeconfig', kubeconfig, '--context', 'ctx', '--request-timeout', '5s', 'exec', '-n', 'tools', 'agent-0', '-c', 'main', '--'];
    expect(run(realKubectl!, [...signalArgs, '/bin/sh', '-c', signalScript, 'agentvisor-signal', 'TERM', '42'], env).stderr).toMatch(/was refused/);
    // A context that does not exist is the runtime's failure too.
    const missing = kubernetesCommand(spec, { kind: 'kubernetes', pod: 'agent-0', context: 'nope', kubeconfig });
    const missingResult = run(realKubectl!, missing.args, env);
    expect(missing.failureOf({ exitCode: missingResult.status, signal: null }, missingResult.stderr.split('\n'))).toMatchObject({ kind: 'runtime_missing' });
  });
});
