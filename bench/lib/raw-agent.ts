/**
 * The raw baseline: the same work as agentvisor does, written directly with execa and
 * `@agentclientprotocol/sdk` — no agentvisor, no XState. Spawn in a new process group,
 * connect the SDK client over the child's stdio, `initialize`, and stop with the same
 * ladder (close stdin → SIGTERM the group → SIGKILL the group). An exit counts from the
 * child's `exit` event, the signal agentvisor acts on, so both sides notice deaths alike.
 *
 * stdio: stdin/stdout piped for ACP; stderr ignored (agentvisor pipes and keeps a tail of
 * it; the baseline is the minimal correct consumer, so any cost of that shows as overhead).
 */
import { Readable, Writable } from 'node:stream';
import { client, ndJsonStream, PROTOCOL_VERSION, type ClientApp, type ClientCapabilities, type ClientConnection, type InitializeResponse } from '@agentclientprotocol/sdk';
import { execa, type ResultPromise } from 'execa';
import { now } from './stats.js';

export interface RawAgent {
  pid: number;
  child: ResultPromise;
  stdin: Writable;
  connection: ClientConnection;
  initialize: InitializeResponse;
  /** Resolves on the child's `exit` event (never rejects; its pipes may still be closing). */
  exited: Promise<void>;
  isRunning(): boolean;
  /** Phase timestamps (performance.now() ms) of this start. */
  timings: { start: number; spawned: number; initialized: number };
}

export interface RawStartOptions {
  /** Registers handlers on the SDK client app before it connects. */
  configure?: (app: ClientApp) => void;
  /** The child's working directory (this process's by default). */
  cwd?: string;
  /** Merged over this process's environment. */
  env?: Record<string, string>;
  /** Hears the child's stderr (piped only then; ignored otherwise). */
  onStderr?: (chunk: Buffer) => void;
  /** What `initialize` advertises (none by default): a comparison with agentvisor may ask the agent for the same work. */
  clientCapabilities?: ClientCapabilities;
}

/** Spawns `node script ...args` as a group leader and performs the `initialize` handshake. */
export function startRawAgent(script: string, args: readonly string[] = [], options: RawStartOptions = {}): Promise<RawAgent> {
  return startRawCommand(process.execPath, [script, ...args], options);
}

/** Spawns any agent command as a group leader and performs the `initialize` handshake. */
export async function startRawCommand(command: string, args: readonly string[], options: RawStartOptions = {}): Promise<RawAgent> {
  const start = now();
  const child = execa(command, args, {
    ...(options.cwd !== undefined ? { cwd: options.cwd } : {}),
    ...(options.env ? { env: options.env, extendEnv: true } : {}),
    detached: true,
    stdin: 'pipe',
    stdout: 'pipe',
    stderr: options.onStderr ? 'pipe' : 'ignore',
    buffer: false,
    reject: false,
    cleanup: false,
  });
  const pid = child.pid;
  if (pid === undefined) {
    const failed = await child;
    throw new Error(`could not spawn ${command}: ${failed.shortMessage ?? failed.message ?? 'unknown'}`);
  }
  child.stdin.on('error', () => {});
  child.stdout.on('error', () => {});
  if (options.onStderr) child.stderr?.on('data', options.onStderr);
  const spawned = now();
  let running = true;
  // The 'exit' event, as agentvisor's process service notices exits, not execa's promise,
  // which settles only once every stdio pipe has closed as well.
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => {
      running = false;
      resolve();
    });
  });
  const app = client({ name: 'raw-baseline' });
  options.configure?.(app);
  const connection = app.connect(
    ndJsonStream(Writable.toWeb(child.stdin) as WritableStream<Uint8Array>, Readable.toWeb(child.stdout) as ReadableStream<Uint8Array>),
  );
  let initialize: InitializeResponse;
  try {
    initialize = await connection.agent.request('initialize', {
      protocolVersion: PROTOCOL_VERSION,
      clientCapabilities: options.clientCapabilities ?? {},
      clientInfo: { name: 'raw-baseline', version: '0.0.0' },
    });
  } catch (error) {
    killGroup(pid, 'SIGKILL');
    await exited;
    throw error;
  }
  return { pid, child, stdin: child.stdin, connection, initialize, exited, isRunning: () => running, timings: { start, spawned, initialized: now() } };
}

export interface LadderTimeouts {
  shutdownTimeoutMs: number;
  killTimeoutMs: number;
}

export interface LadderOptions extends LadderTimeouts {
  /**
   * false: the SDK's connection stays open, so that it reads the agent's stdout on until the
   * exit (as agentvisor does) instead of closing that pipe with stdin. Default true.
   */
  closeConnection?: boolean;
}

/** The stop ladder: close ACP and stdin, wait, SIGTERM the group, wait, SIGKILL the group. */
export async function stopRawAgent(
  agent: RawAgent,
  { shutdownTimeoutMs, killTimeoutMs, closeConnection = true }: LadderOptions = { shutdownTimeoutMs: 5000, killTimeoutMs: 2000 },
  onRung?: (rung: 'SIGTERM' | 'SIGKILL') => void,
): Promise<void> {
  if (closeConnection) agent.connection.close();
  if (!agent.stdin.destroyed) agent.stdin.end();
  try {
    if (await exitsWithin(agent, shutdownTimeoutMs)) return;
    onRung?.('SIGTERM');
    killGroup(agent.pid, 'SIGTERM');
    if (await exitsWithin(agent, killTimeoutMs)) return;
    onRung?.('SIGKILL');
    killGroup(agent.pid, 'SIGKILL');
    await agent.exited;
  } finally {
    if (!closeConnection) agent.connection.close(); // the agent is gone: nothing more to read
  }
}

async function exitsWithin(agent: RawAgent, ms: number): Promise<boolean> {
  if (!agent.isRunning()) return true;
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  const exited = await Promise.race([agent.exited.then(() => true as const), timedOut]);
  clearTimeout(timer);
  return exited;
}

/** Signals one process; a gone process is no error. */
export function killProcess(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // already gone
  }
}

/** Signals a process group; a gone group is no error. */
export function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // the group is gone
  }
}
