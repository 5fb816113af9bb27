/**
 * The authenticate() calls under way, per agent: their timeout, the AbortSignal that cancels
 * the login (any caller's), and what the agent asked a person to do meanwhile — a URL it
 * wrote to stderr (a browser login), reported as `agent:auth_prompt` at once and named in an
 * `auth_timeout`. The authenticate actor reads the bounds; the facade opens and ends them.
 */
import type { AuthenticationBounds } from '../actors/authenticate.actor.js';

interface Attempt {
  methodId: string;
  timeoutMs: number;
  controller: AbortController;
  urls: string[];
  callers: number;
}

const urlPattern = /https?:\/\/[^\s"'<>`]+/g;

export class AuthAttempts {
  private readonly byAgent = new Map<string, Attempt>();

  constructor(private readonly defaultTimeoutMs: number) {}

  /**
   * A caller of authenticate(): joins the attempt under way or opens one. Its `signal`
   * aborting cancels the login for every caller. Returns the function that ends its part.
   */
  begin(agent: string, methodId: string, options: { timeoutMs?: number; signal?: AbortSignal }): () => void {
    let attempt = this.byAgent.get(agent);
    // An attempt already cancelled is over for whoever comes next: a fresh one.
    if (!attempt || attempt.controller.signal.aborted) {
      attempt = { methodId, timeoutMs: options.timeoutMs ?? this.defaultTimeoutMs, controller: new AbortController(), urls: [], callers: 0 };
      this.byAgent.set(agent, attempt);
    }
    const current = attempt;
    current.callers++;
    const onAbort = () => current.controller.abort(options.signal?.reason);
    options.signal?.addEventListener('abort', onAbort, { once: true });
    if (options.signal?.aborted) onAbort();
    return () => {
      options.signal?.removeEventListener('abort', onAbort);
      // A cancelled attempt stays until the login reads its bounds: an agent still starting
      // when its caller gave up must not log in afterwards as if nobody had.
      if (--current.callers === 0 && this.byAgent.get(agent) === current && !current.controller.signal.aborted) this.byAgent.delete(agent);
    };
  }

  /** The bounds of the agent's attempt (the default timeout when none is open). */
  bounds(agent: string): AuthenticationBounds {
    const attempt = this.byAgent.get(agent);
    if (!attempt) return { timeoutMs: this.defaultTimeoutMs, asked: () => [] };
    if (attempt.callers === 0) this.byAgent.delete(agent); // a cancelled one, read once
    return { timeoutMs: attempt.timeoutMs, signal: attempt.controller.signal, asked: () => [...attempt.urls] };
  }

  /** A stderr line of the agent: the URLs in it while a login is under way (new ones only), for `agent:auth_prompt`. */
  promptsIn(agent: string, line: string): { methodId: string; urls: string[] } | null {
    const attempt = this.byAgent.get(agent);
    if (!attempt) return null;
    const urls = [...new Set(line.match(urlPattern) ?? [])].filter((url) => !attempt.urls.includes(url));
    if (urls.length === 0) return null;
    attempt.urls.push(...urls);
    return { methodId: attempt.methodId, urls };
  }
}
