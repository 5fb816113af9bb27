/**
 * The exec stream's own edges: frames that an API server sends in the same write as its 101
 * answer (they reach the client with the upgrade, before any later read) are not lost, and
 * output nobody reads yet waits in the socket, not in memory without bound.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openCluster } from '../../services/runtimes/kube-api.js';
import { openExec } from '../../services/runtimes/kube-exec.js';

const cleanups: Array<() => void | Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Polls `predicate` until it holds (10 s at most). */
async function until(predicate: () => boolean): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** An unmasked binary WebSocket frame (server to client) of one exec channel. */
function frame(channel: number, payload: string): Buffer {
  const body = Buffer.concat([Buffer.from([channel]), Buffer.from(payload)]);
  if (body.length > 125) throw new Error('keep test frames short');
  return Buffer.concat([Buffer.from([0x82, body.length]), body]);
}

/** A server that answers the upgrade and sends `after` in the very same write; then closes. */
async function upgradeAndFramesInOneWrite(after: Buffer): Promise<{ port: number }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    let request = '';
    socket.on('data', (chunk) => {
      request += chunk.toString('latin1');
      if (!request.includes('\r\n\r\n')) return;
      const key = /sec-websocket-key: *(\S+)/i.exec(request)![1]!;
      const accept = createHash('sha1').update(`${key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest('base64');
      const head = ['HTTP/1.1 101 Switching Protocols', 'Upgrade: websocket', 'Connection: Upgrade', `Sec-WebSocket-Accept: ${accept}`, 'Sec-WebSocket-Protocol: v5.channel.k8s.io', '', ''].join('\r\n');
      socket.write(Buffer.concat([Buffer.from(head, 'latin1'), after, Buffer.from([0x88, 0x00])]));
    });
    socket.on('error', () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise<void>((resolve) => (sockets.forEach((socket) => socket.destroy()), server.close(() => resolve()))));
  return { port: (server.address() as { port: number }).port };
}

/** A cluster whose kubeconfig points at 127.0.0.1:`port` (plain http, as the stand-ins are). */
async function clusterAt(port: number) {
  const dir = mkdtempSync(join(tmpdir(), 'agentvisor-kube-exec-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const kubeconfig = join(dir, 'config');
  writeFileSync(
    kubeconfig,
    ['apiVersion: v1', 'kind: Config', `clusters: [{ name: c, cluster: { server: "http://127.0.0.1:${port}", insecure-skip-tls-verify: true } }]`, 'users: [{ name: u, user: { token: t } }]', 'contexts: [{ name: c, context: { cluster: c, user: u } }]', 'current-context: c', ''].join('\n'),
  );
  return openCluster({ kubeconfig });
}

describe('openExec', () => {
  it('reads the frames that came with the 101 answer', async () => {
    const { port } = await upgradeAndFramesInOneWrite(Buffer.concat([frame(1, 'hello from the upgrade'), frame(2, 'marker 42\n'), frame(3, JSON.stringify({ status: 'Success' }))]));
    const exec = await openExec(await clusterAt(port), { namespace: 'ai', pod: 'p' }, ['true'], { stdin: false });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    exec.stdout.on('data', (chunk: Buffer) => out.push(chunk));
    exec.stderr.on('data', (chunk: Buffer) => err.push(chunk));
    expect(await exec.ended).toEqual({ exitCode: 0, dropped: false, message: '' });
    expect(Buffer.concat(out).toString()).toBe('hello from the upgrade');
    expect(Buffer.concat(err).toString()).toBe('marker 42\n');
  });

  it('output nobody reads yet stays in the socket (paused), and all of it comes, in order, once it is read', async () => {
    const chunk = 'x'.repeat(99);
    const frames = Array.from({ length: 3_000 }, (_, i) => frame(1, `${String(i).padStart(5, '0')}${chunk}`.slice(0, 100)));
    const { port } = await upgradeAndFramesInOneWrite(Buffer.concat([...frames, frame(3, JSON.stringify({ status: 'Success' }))]));
    const exec = await openExec(await clusterAt(port), { namespace: 'ai', pod: 'p' }, ['cat', 'big'], { stdin: false });
    // Both sides of the output stream's buffer: what waits to be read, and what waits to be taken in.
    const buffered = () => exec.stdout.readableLength + exec.stdout.writableLength;
    // The output has come up to where the stream pushes back (nothing reads it)...
    await until(() => buffered() >= exec.stdout.readableHighWaterMark);
    // ...and no further: without backpressure the other ~280 KB, already in this host's socket, would follow within this.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(buffered()).toBeLessThanOrEqual(64 * 1024);
    const out: Buffer[] = [];
    exec.stdout.on('data', (data: Buffer) => out.push(data));
    await new Promise((resolve) => exec.stdout.once('end', resolve));
    expect(await exec.ended).toEqual({ exitCode: 0, dropped: false, message: '' });
    const text = Buffer.concat(out).toString();
    expect(text.length).toBe(3_000 * 100);
    expect(text.slice(0, 5)).toBe('00000');
    expect(text.slice(-100, -95)).toBe('02999');
  });
});
