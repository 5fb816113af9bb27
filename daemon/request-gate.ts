/**
 * Who may talk to the daemon: every request and WebSocket upgrade passes this gate first.
 * The Host header must name the daemon itself (a DNS-rebinding page reaches us under a
 * foreign name), a browser's Origin must be the daemon's own, and the token must match.
 * Pure: the server feeds it headers and the URL.
 */
import { timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';

/** A refusal: the status and the API error kind to answer with. */
export interface GateRefusal {
  status: 401 | 403;
  kind: 'unauthorized' | 'forbidden_host' | 'forbidden_origin';
  message: string;
}

export interface Gate {
  /** The `host:port` values a request may name (lower case). */
  readonly hosts: ReadonlySet<string>;
  /** The origins a browser page may come from. */
  readonly origins: ReadonlySet<string>;
  /** Null when the request may pass. */
  check(headers: IncomingHttpHeaders, url: URL): GateRefusal | null;
}

const loopbackNames = ['127.0.0.1', 'localhost', '[::1]'];

/** `::1` → `[::1]`, as it appears in a Host header. */
export function hostForUrl(host: string): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}

/** Makes the gate of a daemon listening on `host:port` with `token`. */
export function createGate(host: string, port: number, token: string): Gate {
  const names = new Set([...loopbackNames, hostForUrl(host).toLowerCase()]);
  const hosts = new Set([...names].map((name) => `${name}:${port}`));
  const origins = new Set([...hosts].map((value) => `http://${value}`));
  const expected = Buffer.from(token, 'utf8');
  return {
    hosts,
    origins,
    check(headers, url) {
      const hostHeader = headers.host?.toLowerCase();
      if (!hostHeader || !hosts.has(hostHeader)) {
        return { status: 403, kind: 'forbidden_host', message: `Host "${headers.host ?? ''}" is not this daemon's address` };
      }
      const origin = headers.origin;
      if (origin !== undefined && !origins.has(origin.toLowerCase())) {
        return { status: 403, kind: 'forbidden_origin', message: `Requests from the origin "${origin}" are not allowed` };
      }
      const given = tokenOf(headers, url);
      if (given === null) return { status: 401, kind: 'unauthorized', message: 'A token is required: Authorization: Bearer <token> (the daemon.token file in the state directory)' };
      const candidate = Buffer.from(given, 'utf8');
      if (candidate.length !== expected.length || !timingSafeEqual(candidate, expected)) {
        return { status: 401, kind: 'unauthorized', message: 'The token is not this daemon\'s' };
      }
      return null;
    },
  };
}

/** The token a request carries: its Bearer header, else `?token=`. */
function tokenOf(headers: IncomingHttpHeaders, url: URL): string | null {
  const authorization = headers.authorization;
  if (authorization !== undefined) {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    return match ? match[1]! : null;
  }
  return url.searchParams.get('token');
}
