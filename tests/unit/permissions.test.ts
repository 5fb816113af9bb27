import { describe, expect, it } from 'vitest';
import { SimulatedClock } from 'xstate';
import { optionFor, type PermissionRequest } from '../../core/permission-policy.js';
import { PermissionBroker } from '../../runtime/permission-broker.js';
import type { RequestPermissionRequest } from '../../core/acp-types.js';

const params: RequestPermissionRequest = {
  sessionId: 's1',
  toolCall: { toolCallId: 't1', title: 'edit' },
  options: [
    { optionId: 'always', name: 'Always', kind: 'allow_always' },
    { optionId: 'once', name: 'Once', kind: 'allow_once' },
    { optionId: 'no', name: 'No', kind: 'reject_once' },
  ],
};

/** `timedBySession`: a session machine takes each request (and times it); else the broker times it. */
function broker(listening = true, timedBySession = false) {
  const clock = new SimulatedClock();
  const asked: PermissionRequest[] = [];
  const log: string[] = [];
  const instance = new PermissionBroker({
    clock,
    timeoutMs: 1000,
    ask: (request) => (listening ? (asked.push(request), true) : false),
    pending: (_agent, _session, id, timeoutMs) => (log.push(`pending ${id} ${timeoutMs}`), timedBySession),
    settled: (_agent, _session, id) => log.push(`settled ${id}`),
  });
  return { clock, asked, log, instance };
}

describe('permission policies', () => {
  it('allow prefers allow_once, deny prefers reject_once', () => {
    expect(optionFor('allow', params.options)).toBe('once');
    expect(optionFor('deny', params.options)).toBe('no');
    expect(optionFor('deny', params.options.slice(0, 2))).toBeUndefined();
  });

  it('ask: the first answer wins, later ones are ignored, and the session is told when it settles', async () => {
    const { asked, log, instance } = broker();
    const answer = instance.request('a', params, 'ask', new AbortController().signal);
    asked[0]!.respond('no');
    asked[0]!.respond('once');
    expect(await answer).toEqual({ outcome: { outcome: 'selected', optionId: 'no' } });
    expect(log).toEqual(['pending permission-1 1000', 'settled permission-1']);
    expect(instance.size).toBe(0);
  });

  it('times out on the clock, and the agent cancelling its request settles it', async () => {
    const { clock, instance } = broker();
    const timedOut = instance.request('a', params, 'ask', new AbortController().signal);
    clock.increment(1000);
    expect(await timedOut).toEqual({ outcome: { outcome: 'cancelled' } });
    const controller = new AbortController();
    const withdrawn = instance.request('a', params, 'ask', controller.signal);
    controller.abort();
    expect(await withdrawn).toEqual({ outcome: { outcome: 'cancelled' } });
  });

  it('a request its session machine times is not timed here: it is answered cancelled when the machine expires it', async () => {
    const { clock, instance, log } = broker(true, true);
    const held = instance.request('a', params, 'ask', new AbortController().signal);
    expect(log).toEqual(['pending permission-1 1000']);
    clock.increment(60_000);
    expect(instance.size).toBe(1);
    instance.expire('permission-1');
    expect(await held).toEqual({ outcome: { outcome: 'cancelled' } });
    instance.expire('permission-1'); // once answered, later expiries change nothing
    expect(log).toEqual(['pending permission-1 1000', 'settled permission-1']);
  });

  it('a throwing policy function, or one returning an unknown id, cancels', async () => {
    const { instance } = broker();
    expect(await instance.request('a', params, () => { throw new Error('no'); }, new AbortController().signal)).toEqual({ outcome: { outcome: 'cancelled' } });
    expect(await instance.request('a', params, () => 'bogus', new AbortController().signal)).toEqual({ outcome: { outcome: 'cancelled' } });
    expect(await instance.request('a', params, async () => 'always', new AbortController().signal)).toEqual({ outcome: { outcome: 'selected', optionId: 'always' } });
  });

  it('cancelSession answers only that session\'s requests', async () => {
    const { instance, asked } = broker();
    const mine = instance.request('a', params, 'ask', new AbortController().signal);
    const other = instance.request('a', { ...params, sessionId: 's2' }, 'ask', new AbortController().signal);
    instance.cancelSession('a', 's1');
    expect(await mine).toEqual({ outcome: { outcome: 'cancelled' } });
    expect(instance.size).toBe(1);
    asked[1]!.respond('once');
    expect(await other).toEqual({ outcome: { outcome: 'selected', optionId: 'once' } });
  });
});
