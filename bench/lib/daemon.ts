/**
 * The daemon as the daemon benchmarks see it: `startDaemon` from the built package
 * (dist/daemon/daemon.js, imported dynamically like lib/agentvisor.ts so that `tsc --noEmit`
 * checks bench/ on a checkout without dist/), an HTTP client that calls its API with the token
 * and the Host header the gate wants (tests/support/daemon-http.ts does the same for the
 * tests), and helper processes spoken to over IPC (the benchmarks' clients run in processes
 * of their own, as a dashboard or a CLI would).
 */
import { fork, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { Agent, request as httpRequest } from 'node:http';
import { fileURLToPath } from 'node:url';
import type * as DaemonModule from '../../daemon/daemon.js';

const daemonEntry = new URL('../../dist/daemon/daemon.js', import.meta.url);
if (!existsSync(fileURLToPath(daemonEntry))) throw new Error(`${fileURLToPath(daemonEntry)} is missing: run npm run build first (npm run bench does)`);

export const daemonModule: typeof DaemonModule = (await import(daemonEntry.href)) as typeof DaemonModule;
export type { Daemon, DaemonOptions } from '../../daemon/daemon.js';
export type { AgentRow, AgentsBody, ServerMessage } from '../../daemon/api-types.js';

/** The CLI's entry in dist/ (written by `npm run build` once cli/ exists). */
export const cliEntry = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));
/** The benchmarks' client processes (plain JS, run with `node`). */
export const wsStatusClientScript = fileURLToPath(new URL('./ws-status-client.mjs', import.meta.url));
export const promptLoadClientScript = fileURLToPath(new URL('./prompt-load-client.mjs', import.meta.url));
export const clientScripts = [wsStatusClientScript, promptLoadClientScript];

/** Where a daemon (or a server that stands in for one) answers, and its token. */
export interface Endpoint {
  port: number;
  token: string;
}

export interface JsonAnswer {
  status: number;
  text: string;
}

/**
 * One request to the daemon's API over `agent` (a keep-alive agent reuses its connection;
 * undefined: one connection per request). Resolves once the whole body is in.
 */
export function callDaemon(endpoint: Endpoint, method: string, path: string, options: { body?: unknown; agent?: Agent } = {}): Promise<JsonAnswer> {
  const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
  const headers: Record<string, string> = {
    Host: `127.0.0.1:${endpoint.port}`,
    Authorization: `Bearer ${endpoint.token}`,
    ...(payload === undefined ? {} : { 'Content-Type': 'application/json' }),
  };
  return new Promise<JsonAnswer>((resolve, reject) => {
    const request = httpRequest({ host: '127.0.0.1', port: endpoint.port, method, path, headers, agent: options.agent ?? false }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
      response.on('error', reject);
    });
    request.on('error', reject);
    request.end(payload);
  });
}

/** `callDaemon` that expects a 2xx JSON answer and returns it parsed. */
export async function callJson<T>(endpoint: Endpoint, method: string, path: string, options: { body?: unknown; agent?: Agent } = {}): Promise<T> {
  const answer = await callDaemon(endpoint, method, path, options);
  if (answer.status < 200 || answer.status >= 300) throw new Error(`${method} ${path}: ${answer.status} ${answer.text.slice(0, 300)}`);
  return JSON.parse(answer.text) as T;
}

/** A helper process driven by request/answer messages over IPC (each answer carries its request's id). */
export interface IpcChild {
  pid: number;
  /** Sends `message` and resolves with the child's answer to it; rejects after `timeoutMs` or if the child dies. */
  request<T = Record<string, unknown>>(message: Record<string, unknown>, timeoutMs?: number): Promise<T>;
  /** Asks the child to exit, then SIGKILLs it if it has not within `graceMs`; resolves once it is gone. */
  close(graceMs?: number): Promise<void>;
}

/**
 * Forks `script` with plain node (no tsx loader: `execArgv: []`), stdout ignored, the last
 * lines of its stderr kept for error messages, and an IPC channel.
 */
export function forkClient(script: string, args: readonly string[] = []): IpcChild {
  const child: ChildProcess = fork(script, [...args], { execArgv: [], stdio: ['ignore', 'ignore', 'pipe', 'ipc'] });
  if (child.pid === undefined) throw new Error(`could not fork ${script}`);
  const pid = child.pid;
  let stderr = '';
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-4000);
  });
  let nextId = 0;
  const pending = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();
  let exited = false;
  const exit = new Promise<void>((resolve) =>
    child.once('exit', (code, signal) => {
      exited = true;
      const error = new Error(`${script} exited (${signal ?? code}) with requests pending; stderr: ${stderr.trim().slice(-1500)}`);
      for (const waiter of pending.values()) waiter.reject(error);
      pending.clear();
      resolve();
    }),
  );
  child.on('message', (message: { id?: number; error?: string }) => {
    const waiter = message.id === undefined ? undefined : pending.get(message.id);
    if (!waiter) return;
    pending.delete(message.id!);
    if (message.error !== undefined) waiter.reject(new Error(`${script}: ${message.error}`));
    else waiter.resolve(message);
  });
  child.on('error', () => {});
  return {
    pid,
    request<T>(message: Record<string, unknown>, timeoutMs = 60_000) {
      if (exited) return Promise.reject(new Error(`${script} is not running; stderr: ${stderr.trim().slice(-1500)}`));
      const id = ++nextId;
      return new Promise<T>((resolve, reject) => {
        const timer = setTimeout(() => {
          pending.delete(id);
          reject(new Error(`${script}: no answer to ${String(message['type'])} within ${timeoutMs} ms; stderr: ${stderr.trim().slice(-1500)}`));
        }, timeoutMs);
        pending.set(id, {
          resolve: (value) => {
            clearTimeout(timer);
            resolve(value as T);
          },
          reject: (error) => {
            clearTimeout(timer);
            reject(error);
          },
        });
        child.send({ ...message, id });
      });
    },
    async close(graceMs = 3000) {
      if (exited) return;
      try {
        child.send({ type: 'exit' });
      } catch {
        // the channel is closed already
      }
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await exit;
      clearTimeout(timer);
    },
  };
}

/** A keep-alive agent with one socket: sequential requests reuse one connection. */
export function keepAliveAgent(): Agent {
  return new Agent({ keepAlive: true, maxSockets: 1 });
}
