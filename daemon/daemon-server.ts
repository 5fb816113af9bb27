/**
 * Puts the daemon together: the HTTP server behind its gate (daemon/request-gate.ts), the
 * routes, the WebSocket event stream, the supervisor with its session and permission desks,
 * and the files by which the CLI finds it. See daemon/daemon.ts for the options.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { resolve } from 'node:path';
import { WebSocketServer } from 'ws';
import { invalidOptions } from '../core/errors.js';
import { createSupervisor, toolStateDir, type OrphanSweepResult, type Supervisor } from '../index.js';
import { AgentWatch } from './agent-watch.js';
import type { DoctorBody } from './api-types.js';
import { addressUnavailable, daemonRunning } from './daemon-errors.js';
import { processAlive, readDaemonFiles, removeDaemonFiles, writeDaemonFiles, newToken } from './daemon-files.js';
import { DaemonStateFile } from './daemon-state-file.js';
import { DEFAULT_ORPHAN_POLICY, DEFAULT_PORT, ORPHAN_POLICIES, type Daemon, type DaemonOptions, type OrphanPolicy, type StartupOrphanReport } from './daemon-types.js';
import { EventFeed, parseStreamRequest, type EventFeedOptions } from './event-feed.js';
import { baseHeaders, sendError, sendJson, type NdjsonStream } from './http-kit.js';
import { dashboardPage, packageVersion } from './package-assets.js';
import { ElicitationDesk } from './elicitation-desk.js';
import { PermissionDesk } from './permission-desk.js';
import { createGate, hostForUrl } from './request-gate.js';
import { Restore } from './restore.js';
import { dispatch, type RouteContext } from './routes.js';
import { SessionDesk } from './session-desk.js';

export async function startDaemon(options: DaemonOptions): Promise<Daemon> {
  const supervisorOptions = options.supervisor ?? {};
  const orphanPolicy = orphanPolicyOf(options);
  const restoreEnabled = restoreOf(options);
  const feedOptions = eventsOf(options);
  const stateDir = supervisorOptions.stateDir === false ? null : resolve(supervisorOptions.stateDir ?? toolStateDir());
  const writeFiles = (options.writeFiles ?? true) && stateDir !== null;
  if (writeFiles) refuseSecondDaemon(stateDir!);

  const host = options.host ?? '127.0.0.1';
  const server = createServer();
  const port = await listen(server, host, options.port ?? DEFAULT_PORT);
  const token = newToken();
  const gate = createGate(host, port, token);
  const url = `http://${hostForUrl(host)}:${port}`;

  let supervisor: Supervisor;
  try {
    // The daemon's state is the tools' own directory (the CLI finds it there), not a program's default.
    // The orphan policy decides the start-up sweep: 'kill' is the library's sweepOnStart.
    // Permissions and elicitations wait for a client's answer (the desks below), unless the options say otherwise.
    supervisor = createSupervisor({ handleSignals: false, permissions: 'ask', elicitation: 'ask', ...supervisorOptions, sweepOnStart: orphanPolicy === 'kill', stateDir: stateDir ?? false });
  } catch (error) {
    server.close();
    throw error;
  }
  // 'kill': the supervisor's own sweep, heard as it ends (emitted asynchronously: this listener is in time);
  // 'report': a dry run, nothing killed. Awaited before the daemon files are written, so a client finds it done.
  // Without a state directory nothing is recorded, so there is nothing to sweep (and the supervisor never sweeps).
  const startupSweep: Promise<OrphanSweepResult | null> =
    stateDir === null
      ? Promise.resolve(null)
      : orphanPolicy === 'kill'
      ? new Promise((done) => {
          const off = supervisor.on('orphans:swept', (result) => {
            off();
            done(result);
          });
        })
      : orphanPolicy === 'report'
        ? supervisor.sweepOrphans({ dryRun: true })
        : Promise.resolve(null);
  let startupOrphans: StartupOrphanReport = { policy: orphanPolicy, at: null, result: null };

  const startedAt = Date.now();
  const feed = new EventFeed(feedOptions);
  const permissions = new PermissionDesk(supervisor);
  const elicitations = new ElicitationDesk(supervisor);
  const stateFile = new DaemonStateFile(stateDir);
  const sessions = new SessionDesk({
    supervisor,
    permissions,
    elicitations,
    names: stateFile,
    onUpdate: (agent, sessionId, update) => feed.publish('updates', { type: 'session:update', agent, sessionId, update }, sessionId),
    onChange: () => restoring.record(), // never called before the restore below exists: the desk holds no session yet
  });
  const log = options.log ?? ((line: string) => void process.stderr.write(`agentvisor daemon: ${line}\n`));
  const restoring = new Restore({
    supervisor,
    desk: sessions,
    file: stateFile,
    enabled: restoreEnabled,
    log,
    failed: (item) => feed.publish('restore', { type: 'restore:failed', ...item }),
    done: (report) => feed.publish('restore', { type: 'restore:done', restore: report }),
  });
  const agents = new AgentWatch(
    supervisor,
    {
      status: ({ agent, status, previous }, row) => feed.publish('status', { type: 'agent:status', agent, status, previous, row }),
      state: (agent, state, status) => feed.publish('state', { type: 'agent:state', agent, state, status }),
    },
    () => sessions.openCounts(),
  );
  const offs = [
    supervisor.on('error', (event) => feed.publish('errors', { type: 'agent:error', agent: event.agent, kind: event.kind, message: event.message, ...(event.class ? { class: event.class, retryAt: event.retryAt ?? null } : {}) })),
    supervisor.on('session:turn', ({ agent, sessionId, ...turn }) => feed.publish('updates', { type: 'session:turn', agent, sessionId, turn }, sessionId)),
    supervisor.on('session:status', ({ agent, sessionId, status }) => feed.publish('sessions', { type: 'session:status', agent, sessionId, status })),
    supervisor.on('session:state', ({ agent, sessionId, ...change }) => feed.publish('sessions', { type: 'session:state', agent, sessionId, ...change })),
    supervisor.on('agent:stderr', ({ agent, line }) => feed.publish('logs', { type: 'log', agent, line })),
    supervisor.on('agent:auth_prompt', ({ agent, methodId, urls }) => feed.publish('errors', { type: 'agent:auth_prompt', agent, methodId, urls })),
    supervisor.on('orphans:swept', (result) => feed.publish('orphans', { type: 'orphans:swept', result })),
    permissions.listen({
      requested: (permission) => feed.publish('permissions', { type: 'permission:request', permission }),
      resolved: ({ id, agent, sessionId }, outcome) => feed.publish('permissions', { type: 'permission:resolved', id, agent, sessionId, outcome }),
    }),
    elicitations.listen({
      requested: (elicitation) => feed.publish('elicitations', { type: 'elicitation:request', elicitation }),
      resolved: ({ id, agent, sessionId }, { action }) => feed.publish('elicitations', { type: 'elicitation:resolved', id, agent, sessionId, action }),
    }),
    supervisor.on('workspace:status', (event) => feed.publish('workspaces', { type: 'workspace:status', ...event })),
    supervisor.on('workspace:cleaned', (event) => feed.publish('workspaces', { type: 'workspace:cleaned', ...event })),
    supervisor.on('workspace:cleanup_refused', (event) => feed.publish('workspaces', { type: 'workspace:cleanup_refused', ...event })),
    supervisor.on('pty:activity', (event) => feed.publish('pty', { type: 'pty:activity', ...event })),
    // A pty agent's terminal output (the runtime's terminal `output` event): its agents are registered by now.
    ...supervisor
      .list()
      .filter(({ name }) => supervisor.agentSpec(name).protocol === 'pty')
      .map(({ name }) => supervisor.terminal(name).on('output', ({ data }) => feed.publish('terminals', { type: 'terminal:output', agent: name, data }))),
  ];

  const streams = new Set<NdjsonStream>();
  let closing: Promise<void> | undefined;
  let markClosed!: () => void;
  const closed = new Promise<void>((done) => (markClosed = done));
  const storeKind: DoctorBody['store']['kind'] =
    typeof supervisorOptions.store === 'object' ? 'custom' : supervisorOptions.store === 'memory' || stateDir === null ? 'memory' : 'sqlite';
  const context: RouteContext = {
    supervisor,
    agents,
    sessions,
    permissions,
    elicitations,
    doctor: { agents: supervisorOptions.agents ?? {}, stateDir, storeKind },
    version: packageVersion,
    startedAt,
    streams,
    requestShutdown: () => void close(),
    startupOrphans: () => startupOrphans,
    restore: () => restoring.report(),
  };

  server.on('request', (request, response) => {
    const requestUrl = new URL(request.url ?? '/', 'http://daemon.invalid');
    const refusal = gate.check(request.headers, requestUrl);
    if (refusal) return sendJson(response, refusal.status, { error: { kind: refusal.kind, message: refusal.message } });
    if (closing) return sendJson(response, 503, { error: { kind: 'shutting_down', message: 'The daemon is shutting down' } });
    if (requestUrl.pathname === '/' && request.method === 'GET') {
      let page: { html: string; csp: string };
      try {
        page = dashboardPage(`${hostForUrl(host)}:${port}`);
      } catch (error) {
        // A dashboard module the linker refuses, or a file missing from the package: said, not thrown at the server.
        return sendError(response, error);
      }
      response.writeHead(200, { ...baseHeaders, 'Content-Type': 'text/html; charset=utf-8', 'Content-Security-Policy': page.csp, 'X-Frame-Options': 'DENY' });
      return void response.end(page.html);
    }
    // A REST answer never overtakes the events published before it: once a client has the
    // answer to POST .../start, the status messages the start caused have been written to it.
    const writeHead = response.writeHead;
    response.writeHead = function (this: typeof response, ...args: Parameters<typeof writeHead>) {
      feed.flush();
      return writeHead.apply(this, args);
    } as typeof writeHead;
    dispatch({ request, response, url: requestUrl, context }).catch((error: unknown) => sendError(response, error));
  });

  const sockets = new WebSocketServer({ noServer: true, maxPayload: 64 * 1024 });
  server.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => socket.destroy());
    const requestUrl = new URL(request.url ?? '/', 'http://daemon.invalid');
    const refuse = (status: number, kind: string, message: string) => {
      const body = JSON.stringify({ error: { kind, message } });
      socket.end(`HTTP/1.1 ${status} ${kind}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
    };
    const refusal = gate.check(request.headers, requestUrl);
    if (refusal) return refuse(refusal.status, refusal.kind, refusal.message);
    if (closing) return refuse(503, 'shutting_down', 'The daemon is shutting down');
    if (requestUrl.pathname !== '/v1/events') return refuse(404, 'not_found', `No WebSocket at ${requestUrl.pathname} (the event stream is /v1/events)`);
    const stream = parseStreamRequest(requestUrl.searchParams);
    if ('error' in stream) return refuse(400, 'invalid_request', stream.error);
    sockets.handleUpgrade(request, socket, head, (webSocket) => {
      const peer = `${request.socket.remoteAddress ?? ''}:${request.socket.remotePort ?? ''}`;
      feed.attach(webSocket, stream, (subscribed) => ({ version: packageVersion, agents: agents.rows(), permissions: permissions.list(), elicitations: elicitations.list(), topics: subscribed }), peer);
    });
  });
  server.on('clientError', (_error, socket) => socket.destroy());

  try {
    const result = await startupSweep;
    startupOrphans = { policy: orphanPolicy, at: orphanPolicy === 'ignore' || stateDir === null ? null : Date.now(), result };
  } catch (error) {
    await close();
    throw error;
  }

  // After the orphan policy has run (the old processes are gone under 'kill'), and before the
  // daemon files: a client that finds the daemon sees the restored agents starting, not idle.
  // Not awaited: an agent that hangs in its handshake does not keep the daemon from serving.
  restoring.begin();

  if (writeFiles) writeDaemonFiles(stateDir!, { pid: process.pid, host, port, url, startedAt, version: packageVersion }, token);

  async function close(): Promise<void> {
    closing ??= (async () => {
      restoring.close(); // the shutdown's stops are not recorded: the next daemon restores what ran
      sessions.closeAll();
      try {
        await supervisor.shutdown();
      } finally {
        for (const stream of [...streams]) stream.end();
        feed.close();
        sockets.close();
        for (const off of offs) off();
        agents.close();
        permissions.close();
        elicitations.close();
        await new Promise<void>((done) => {
          server.close(() => done());
          server.closeAllConnections();
        });
        if (writeFiles) removeDaemonFiles(stateDir!);
        markClosed();
      }
    })();
    return closing;
  }

  return {
    url,
    host,
    port,
    token,
    stateDir,
    supervisor,
    get orphans() {
      return startupOrphans;
    },
    get restore() {
      return restoring.report();
    },
    restored: restoring.done,
    dashboardUrl: `${url}/?token=${token}`,
    eventStream: () => feed.stats(),
    closed,
    close,
  };
}

/**
 * The start's orphan policy (docs/http-api.md, "Orphans"): `invalid_options` naming the field
 * for a value that is none of them, or when `supervisor.sweepOnStart` is given beside it.
 */
function orphanPolicyOf(options: DaemonOptions): OrphanPolicy {
  const given: unknown = options.orphans;
  const sweepOnStart = options.supervisor?.sweepOnStart;
  if (given === undefined) return sweepOnStart === false ? 'ignore' : DEFAULT_ORPHAN_POLICY;
  if (!(ORPHAN_POLICIES as readonly unknown[]).includes(given)) {
    throw invalidOptions(`Option orphans: must be one of ${ORPHAN_POLICIES.map((policy) => `'${policy}'`).join(', ')} (got ${JSON.stringify(given) ?? String(given)})`);
  }
  if (sweepOnStart !== undefined) throw invalidOptions('Option orphans: give it or supervisor.sweepOnStart, not both (the orphan policy decides the start-up sweep)');
  return given as OrphanPolicy;
}

/** The start's `events` option: whole numbers ≥ 1, else `invalid_options` naming the field. */
function eventsOf(options: DaemonOptions): EventFeedOptions {
  const given: unknown = options.events;
  if (given === undefined) return {};
  const fields = ['journalMessages', 'journalBytes', 'clientCapBytes'];
  if (typeof given !== 'object' || given === null || Array.isArray(given)) throw invalidOptions(`Option events: must be an object of ${fields.join(', ')} (got ${JSON.stringify(given)})`);
  const values = given as Record<string, unknown>;
  for (const [field, value] of Object.entries(values)) {
    if (!fields.includes(field)) throw invalidOptions(`Option events.${field}: unknown (known: ${fields.join(', ')})`);
    if (value !== undefined && !(typeof value === 'number' && Number.isSafeInteger(value) && value >= 1)) {
      throw invalidOptions(`Option events.${field}: must be a whole number ≥ 1 (got ${JSON.stringify(value) ?? String(value)})`);
    }
  }
  const { journalMessages, journalBytes, clientCapBytes } = values as NonNullable<DaemonOptions['events']>;
  return {
    journal: { ...(journalMessages === undefined ? {} : { maxMessages: journalMessages }), ...(journalBytes === undefined ? {} : { maxBytes: journalBytes }) },
    ...(clientCapBytes === undefined ? {} : { clientCapBytes }),
  };
}

/** The start's restore option: a boolean, else `invalid_options` naming the field. */
function restoreOf(options: DaemonOptions): boolean {
  const given: unknown = options.restore;
  if (given === undefined) return true;
  if (typeof given !== 'boolean') throw invalidOptions(`Option restore: must be a boolean (got ${JSON.stringify(given) ?? String(given)})`);
  return given;
}

/** Listens on host:port; resolves with the port bound (0 picks one). */
function listen(server: Server, host: string, port: number): Promise<number> {
  return new Promise<number>((resolvePort, reject) => {
    const onError = (error: NodeJS.ErrnoException) => reject(addressUnavailable(`${hostForUrl(host)}:${port}`, error));
    server.once('error', onError);
    server.listen({ host, port, exclusive: true }, () => {
      server.off('error', onError);
      resolvePort((server.address() as { port: number }).port);
    });
  });
}

/** Refuses to start when a live daemon already owns the state directory (stale files are replaced). */
function refuseSecondDaemon(stateDir: string): void {
  const existing = readDaemonFiles(stateDir);
  if (!existing || existing.info.pid === process.pid || !processAlive(existing.info.pid)) return;
  throw daemonRunning(stateDir, existing.info);
}
