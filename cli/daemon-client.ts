/**
 * The CLI's client of the daemon's HTTP API (docs/http-api.md): finds the daemon through the
 * files in the state directory, sends the token and JSON bodies, turns every error body into
 * an {@link ApiError} carrying its kind and class, and reads NDJSON streams line by line.
 * node:http only, one connection per request (no keep-alive), so the CLI exits as soon as
 * it is done.
 */
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { createInterface } from 'node:readline';
import { readDaemonFiles, type DaemonInfo } from '../daemon/daemon-files.js';
import type { ApiErrorBody } from '../daemon/api-types.js';
import { CliError } from './cli-error.js';
import { ExitCode } from './exit-codes.js';

/** A request the daemon refused: its `ApiErrorBody`, with the HTTP status. */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  readonly kind: string;
  readonly class: string | undefined;
  readonly agent: string | undefined;
  readonly retryAt: number | null | undefined;
  readonly issues: Array<{ path: string; message: string }>;
  readonly authMethods: ApiErrorBody['error']['authMethods'];
  readonly command: string | undefined;
  readonly installHint: string | undefined;
  /** The agent's stderr does not travel in API errors (the daemon's `logs` has it). */
  readonly stderr: string[] = [];

  constructor(
    readonly status: number,
    body: ApiErrorBody['error'],
  ) {
    super(body.message);
    this.kind = body.kind;
    this.class = body.class;
    this.agent = body.agent;
    this.retryAt = body.retryAt;
    this.issues = body.issues ?? [];
    this.authMethods = body.authMethods;
    this.command = body.command;
    this.installHint = body.installHint;
  }
}

/** What a request may carry. */
export interface RequestOptions {
  body?: unknown;
  /** Aborting destroys the connection; a stream then just ends. */
  signal?: AbortSignal | undefined;
}

/** A connection to the daemon of one state directory. */
export class DaemonClient {
  private constructor(
    readonly stateDir: string,
    readonly info: DaemonInfo,
    private readonly token: string,
  ) {}

  /** The daemon of `stateDir`; exit 6 with how to start one when there is none. */
  static connect(stateDir: string): DaemonClient {
    const files = readDaemonFiles(stateDir);
    if (!files) throw noDaemon(stateDir);
    return new DaemonClient(stateDir, files.info, files.token);
  }

  /** The dashboard's address, token included. */
  get dashboardUrl(): string {
    const url = new URL('/', this.info.url);
    url.searchParams.set('token', this.token);
    return url.toString();
  }

  /** Sends one request and resolves with its parsed JSON answer (undefined for an empty one). */
  async request<T>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
    return (await this.exchange<T>(method, path, options)).body;
  }

  /** As {@link request}, with the answer's HTTP status (`POST /v1/sessions`: 201 opened, 200 already open). */
  async exchange<T>(method: string, path: string, options: RequestOptions = {}): Promise<{ status: number; body: T }> {
    const response = await this.send(method, path, 'application/json', options);
    const status = response.statusCode ?? 0;
    const text = await readAll(response);
    if (text.trim() === '') return { status, body: undefined as T };
    try {
      return { status, body: JSON.parse(text) as T };
    } catch {
      throw new CliError(`The daemon answered ${method} ${path} with something that is not JSON`, ExitCode.internal);
    }
  }

  /**
   * Sends one request whose answer is NDJSON and yields each line parsed, as it comes; ends
   * when the daemon ends the stream or `signal` aborts.
   */
  async *stream<T>(method: string, path: string, options: RequestOptions = {}): AsyncGenerator<T> {
    const response = await this.send(method, path, 'application/x-ndjson', options);
    const lines = createInterface({ input: response, crlfDelay: Infinity });
    try {
      for await (const line of lines) {
        if (line.trim() === '') continue;
        yield JSON.parse(line) as T;
      }
    } catch (error) {
      if (options.signal?.aborted) return;
      throw new CliError(`The connection to the daemon broke: ${(error as Error).message}`, ExitCode.noDaemon);
    } finally {
      lines.close();
      response.destroy();
    }
  }

  /** Sends the request; resolves with a successful response, or rejects with the daemon's error. */
  private send(method: string, path: string, accept: string, { body, signal }: RequestOptions): Promise<IncomingMessage> {
    const url = new URL(path, this.info.url);
    const payload = body === undefined ? undefined : JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const request = httpRequest(url, {
        method,
        agent: false, // a connection of its own, closed after the answer: nothing keeps the CLI alive
        headers: {
          authorization: `Bearer ${this.token}`,
          accept,
          ...(payload === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }),
        },
        ...(signal ? { signal } : {}),
      });
      request.on('error', (error: NodeJS.ErrnoException) => {
        if (signal?.aborted) reject(new CliError('Interrupted', ExitCode.interrupted));
        else if (['ECONNREFUSED', 'ECONNRESET', 'EHOSTUNREACH', 'ENOTFOUND'].includes(error.code ?? '')) reject(unreachable(this.stateDir, this.info, error));
        else reject(new CliError(`Could not reach the daemon at ${this.info.url}: ${error.message}`, ExitCode.noDaemon));
      });
      request.on('response', (response) => {
        const status = response.statusCode ?? 0;
        if (status < 400) return resolve(response);
        readAll(response).then((text) => reject(errorOf(status, text)), reject);
      });
      request.end(payload);
    });
  }
}

/** The error of a failed answer: its `ApiErrorBody`, or what little the status says. */
function errorOf(status: number, text: string): ApiError {
  try {
    const body = JSON.parse(text) as Partial<ApiErrorBody>;
    if (body.error && typeof body.error.kind === 'string') return new ApiError(status, body.error);
  } catch {
    // not JSON: described from the status below
  }
  return new ApiError(status, { kind: status >= 500 ? 'internal' : 'not_found', message: `The daemon answered ${status}${text ? `: ${text.slice(0, 200)}` : ''}` });
}

function readAll(response: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    response.setEncoding('utf8');
    response.on('data', (chunk: string) => (text += chunk));
    response.on('end', () => resolve(text));
    response.on('error', reject);
  });
}

/** Exit 6: no daemon files in the state directory. */
export function noDaemon(stateDir: string): CliError {
  return new CliError(`no daemon running for state dir ${stateDir}; start one with \`agentvisor serve\``, ExitCode.noDaemon);
}

/** Exit 6: the files are there, but nothing answers (a daemon that crashed left them). */
function unreachable(stateDir: string, info: DaemonInfo, error: Error): CliError {
  return new CliError(
    `no daemon running for state dir ${stateDir}; start one with \`agentvisor serve\``,
    ExitCode.noDaemon,
    `daemon.json names pid ${info.pid} at ${info.url}, but nothing answers there (${error.message})`,
  );
}

/**
 * What `ask` gets from the daemon of `stateDir`, or null when no daemon answers there (none
 * runs, or its files are stale): for commands that work with or without one (doctor, orphans)
 * and never start one.
 */
export async function askRunningDaemon<T>(stateDir: string, ask: (client: DaemonClient) => Promise<T>): Promise<T | null> {
  let client: DaemonClient;
  try {
    client = DaemonClient.connect(stateDir);
  } catch {
    return null;
  }
  try {
    return await ask(client);
  } catch (error) {
    if (error instanceof CliError && error.exitCode === ExitCode.noDaemon) return null;
    throw error;
  }
}
