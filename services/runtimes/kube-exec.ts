/**
 * One exec into a pod over the Kubernetes API's WebSocket (`/api/v1/namespaces/N/pods/P/exec`),
 * as byte streams: the channel protocol `v5.channel.k8s.io` (or `v4.channel.k8s.io` from an
 * older server): every frame starts with its channel, 0 stdin, 1 stdout, 2 stderr, 3 the
 * command's status (a metav1.Status, with the exit code), and in v5 255 closes a stream, so
 * stdin can end while stdout goes on. No XState here; the credentials come from the
 * kubeconfig (its bearer token, client certificate), never from an argv.
 */
import { PassThrough, Writable } from 'node:stream';
import type WebSocket from 'ws';
import { apiUrl, RuntimeFailureError, type Cluster } from './kube-api.js';

/** WebSocket ready states (ws's constants, without loading it). */
const socketOpen = 1;
const socketClosed = 3;

const channel = { stdin: 0, stdout: 1, stderr: 2, status: 3, close: 255 } as const;

/** How an exec ended: the command's exit code, or `dropped` (the stream closed without a status: the agent is lost, not ended). */
export interface ExecEnd {
  exitCode: number | null;
  dropped: boolean;
  /** The status's message, or why the stream dropped. */
  message: string;
}

/** An open exec. */
export interface ExecStream {
  /** The negotiated subprotocol: `v5.channel.k8s.io` can close stdin alone; v4 cannot. */
  readonly protocol: string;
  readonly stdin: Writable;
  readonly stdout: PassThrough;
  readonly stderr: PassThrough;
  /** Settles once the stream is closed (never rejects). */
  readonly ended: Promise<ExecEnd>;
  /** Whether ending `stdin` reaches the command as EOF (v5). */
  readonly canCloseStdin: boolean;
  /** Drops the stream from this end. */
  close(): void;
}

export interface ExecTarget {
  namespace: string;
  pod: string;
  container?: string | undefined;
}

export interface ExecOptions {
  /** Whether the command reads stdin (the agent: yes; a signal: no). */
  stdin: boolean;
  /** A ping every this many ms; a missing pong by the next one drops the stream (a node or a link gone quietly). 0: none. */
  keepAliveMs?: number;
  /** The subprotocols offered, most preferred first (tests narrow it). */
  protocols?: readonly string[];
  /** How long the upgrade may take before the exec fails `runtime_unreachable`. */
  connectTimeoutMs?: number;
}

export const execProtocols = ['v5.channel.k8s.io', 'v4.channel.k8s.io'] as const;

/**
 * Opens an exec of `command` in the target pod; rejects with a {@link RuntimeFailureError}:
 * `runtime_auth_failed` (401, 403), `runtime_missing` (404, a pod that is not running: 400),
 * `runtime_unreachable` (refused, timed out, 5xx).
 */
export async function openExec(cluster: Cluster, target: ExecTarget, command: readonly string[], options: ExecOptions): Promise<ExecStream> {
  const url = apiUrl(cluster, `/api/v1/namespaces/${encodeURIComponent(target.namespace)}/pods/${encodeURIComponent(target.pod)}/exec`, {
    command,
    ...(target.container ? { container: target.container } : {}),
    stdin: String(options.stdin),
    stdout: 'true',
    stderr: 'true',
    tty: 'false',
  });
  url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
  const socketOptions: WebSocket.ClientOptions = { handshakeTimeout: options.connectTimeoutMs ?? 15_000, perMessageDeflate: false };
  await cluster.config.applyToHTTPSOptions(socketOptions);
  const where = `exec into pod ${target.namespace}/${target.pod}`;

  // ws is loaded with the first exec, as the client library is: nothing of it at start-up.
  const { default: WebSocketClass } = await import('ws');
  const socket = new WebSocketClass(url, [...(options.protocols ?? execProtocols)], socketOptions);
  return new Promise<ExecStream>((resolve, reject) => {
    const fail = (error: RuntimeFailureError) => {
      socket.removeAllListeners();
      socket.on('error', () => {});
      socket.terminate();
      reject(error);
    };
    socket.once('open', () => {
      socket.removeAllListeners('error');
      socket.removeAllListeners('unexpected-response');
      // The streams are attached here, in the same tick as the upgrade: frames that came with
      // its answer are read right after 'open', before a promise's continuation would run.
      resolve(execStream(socket, options));
    });
    socket.once('unexpected-response', (_request, response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (body = (body + chunk).slice(0, 4096)));
      response.on('error', () => {});
      response.on('end', () => fail(upgradeRefusal(response.statusCode ?? 0, body, where)));
    });
    socket.once('error', (error: Error & { code?: string }) => {
      fail(new RuntimeFailureError('runtime_unreachable', `${where}: the API server cannot be reached: ${error.message}`));
    });
  });
}

/** A refused upgrade as a runtime failure. */
function upgradeRefusal(status: number, body: string, where: string): RuntimeFailureError {
  let message = body.trim();
  try {
    const parsed = JSON.parse(body) as { message?: unknown };
    if (typeof parsed.message === 'string') message = parsed.message;
  } catch {
    // plain text
  }
  const said = message ? `: ${message}` : '';
  if (status === 401) return new RuntimeFailureError('runtime_auth_failed', `${where}: the API server refused the credentials (401 Unauthorized)${said}`);
  if (status === 403) return new RuntimeFailureError('runtime_auth_failed', `${where}: forbidden (403)${said}`);
  if (status >= 500 || status === 408 || status === 429) return new RuntimeFailureError('runtime_unreachable', `${where}: the API server answered ${status}${said}`);
  return new RuntimeFailureError('runtime_missing', `${where}: the API server answered ${status}${said}`);
}

/** The streams of an open socket. */
function execStream(socket: WebSocket, options: ExecOptions): ExecStream {
  const protocol = socket.protocol;
  const canCloseStdin = protocol === 'v5.channel.k8s.io';
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let status: ExecEnd | null = null;
  let dropReason = 'the exec stream closed without a status';
  const send = (frame: Buffer, done: (error?: Error | null) => void) => {
    if (socket.readyState !== socketOpen) return done();
    socket.send(frame, (error) => done(error ?? null));
  };
  const stdin = new Writable({
    write(chunk: Buffer, _encoding, done) {
      send(Buffer.concat([Buffer.from([channel.stdin]), chunk]), () => done());
    },
    final(done) {
      // v5: the close frame for stdin (the agent reads EOF, its output goes on); v4 has none.
      if (canCloseStdin) send(Buffer.from([channel.close, channel.stdin]), () => done());
      else done();
    },
  });
  stdin.on('error', () => {});
  // Backpressure: an output stream its reader does not keep up with pauses the socket (and so
  // the API server and the command) until it drains, instead of buffering without bound.
  let full = 0;
  const deliver = (stream: PassThrough, body: Buffer) => {
    if (stream.write(body)) return;
    if (full++ === 0) socket.pause();
    const drained = () => {
      stream.off('drain', drained);
      stream.off('close', drained);
      if (--full === 0) socket.resume();
    };
    stream.on('drain', drained);
    stream.on('close', drained);
  };
  socket.on('message', (data: Buffer, isBinary: boolean) => {
    const frame = isBinary ? data : Buffer.from(data);
    if (frame.length === 0) return;
    const body = frame.subarray(1);
    switch (frame[0]) {
      case channel.stdout:
        deliver(stdout, body);
        break;
      case channel.stderr:
        deliver(stderr, body);
        break;
      case channel.status:
        status = statusEnd(body);
        break;
      case channel.close:
        if (body[0] === channel.stdout) stdout.end();
        if (body[0] === channel.stderr) stderr.end();
        break;
    }
  });
  // A quiet link (a node gone without a word): no pong by the next ping drops the stream.
  let alive = true;
  const keepAlive =
    options.keepAliveMs && options.keepAliveMs > 0
      ? setInterval(() => {
          if (!alive) {
            dropReason = `no answer from the API server for ${options.keepAliveMs} ms`;
            socket.terminate();
            return;
          }
          alive = false;
          socket.ping();
        }, options.keepAliveMs)
      : null;
  keepAlive?.unref();
  socket.on('pong', () => (alive = true));
  socket.on('error', (error) => (dropReason = `the exec stream failed: ${error.message}`));
  const ended = new Promise<ExecEnd>((resolve) => {
    socket.once('close', () => {
      if (keepAlive) clearInterval(keepAlive);
      stdout.end();
      stderr.end();
      stdin.destroy();
      resolve(status ?? { exitCode: null, dropped: true, message: dropReason });
    });
  });
  return {
    protocol,
    stdin,
    stdout,
    stderr,
    ended,
    canCloseStdin,
    close: () => {
      if (socket.readyState === socketClosed) return;
      if (!status) dropReason = 'the exec stream was closed by the supervisor';
      socket.terminate();
    },
  };
}

/** The exit code a metav1.Status carries: 0 for Success, the `ExitCode` cause of a NonZeroExitCode, else null. */
export function statusEnd(body: Buffer): ExecEnd {
  try {
    const status = JSON.parse(body.toString('utf8')) as { status?: string; message?: string; reason?: string; details?: { causes?: Array<{ reason?: string; message?: string }> } };
    if (status.status === 'Success') return { exitCode: 0, dropped: false, message: '' };
    const cause = status.details?.causes?.find((each) => each.reason === 'ExitCode');
    const code = cause?.message !== undefined ? Number(cause.message) : NaN;
    return { exitCode: Number.isInteger(code) ? code : null, dropped: false, message: status.message ?? status.reason ?? 'the exec failed' };
  } catch {
    return { exitCode: null, dropped: false, message: 'the exec ended with an unreadable status' };
  }
}
