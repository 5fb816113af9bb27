/** The elicitation broker (runtime/elicitation-broker.ts) on a SimulatedClock: policies, journaling, timeouts, cancel. */
import { describe, expect, it } from 'vitest';
import { SimulatedClock } from 'xstate';
import type { CreateElicitationRequest } from '../../core/acp-types.js';
import type { ElicitationRequest } from '../../index.js';
import { ElicitationBroker } from '../../runtime/elicitation-broker.js';

const form = { sessionId: 's1', mode: 'form', message: 'Name?', requestedSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] } } as unknown as CreateElicitationRequest;

function broker(options: { listening?: boolean } = {}) {
  const clock = new SimulatedClock();
  const log: string[] = [];
  const asked: ElicitationRequest[] = [];
  const instance = new ElicitationBroker({
    clock,
    timeoutMs: 1000,
    ask: (request) => {
      asked.push(request);
      return options.listening ?? true;
    },
    pending: (_agent, _sessionId, id) => (log.push(`pending ${id}`), false), // no session machine here: the broker times it
    settled: (_agent, _sessionId, id) => log.push(`settled ${id}`),
    journal: {
      requested: (id, request) => log.push(`requested ${id} ${request.mode}`),
      answered: (_agent, _sessionId, id, answer) => log.push(`answered ${id} ${answer.action}`),
    },
  });
  return { clock, log, asked, instance };
}

describe('ElicitationBroker', () => {
  it("'decline' answers at once, and the transcript still keeps the request and the answer", async () => {
    const { instance, log } = broker();
    expect(await instance.request('a', form, 'decline', new AbortController().signal)).toEqual({ action: 'decline' });
    expect(log).toEqual(['pending elicitation-1', 'requested elicitation-1 form', 'settled elicitation-1', 'answered elicitation-1 decline']);
    expect(instance.size).toBe(0);
  });

  it('a mode this client does not know is declined before any policy sees it', async () => {
    const { instance, asked } = broker();
    const custom = { ...form, mode: 'carrier-pigeon' } as unknown as CreateElicitationRequest;
    expect(await instance.request('a', custom, 'ask', new AbortController().signal)).toEqual({ action: 'decline' });
    expect(asked).toEqual([]);
  });

  it("'ask': a wrong answer throws and leaves it open; the right one settles it once", async () => {
    const { instance, asked } = broker();
    const answer = instance.request('a', form, 'ask', new AbortController().signal);
    expect(asked).toHaveLength(1);
    expect(() => asked[0]!.respond('accept', {})).toThrow(expect.objectContaining({ kind: 'invalid_options' }) as Error);
    asked[0]!.respond('accept', { name: 'Ada' });
    asked[0]!.respond('decline');
    expect(await answer).toEqual({ action: 'accept', content: { name: 'Ada' } });
    expect(await asked[0]!.settled).toEqual({ action: 'accept', content: { name: 'Ada' } });
  });

  it('times out on the clock, is cancelled with its session and by its signal, and declines when nobody listens', async () => {
    const { instance, clock } = broker();
    const timed = instance.request('a', form, 'ask', new AbortController().signal);
    clock.increment(1000);
    expect(await timed).toEqual({ action: 'cancel' });
    const cancelled = instance.request('a', form, 'ask', new AbortController().signal);
    instance.cancelSession('a', 's1');
    expect(await cancelled).toEqual({ action: 'cancel' });
    const controller = new AbortController();
    const aborted = instance.request('a', form, 'ask', controller.signal);
    controller.abort();
    expect(await aborted).toEqual({ action: 'cancel' });
    expect(await broker({ listening: false }).instance.request('a', form, 'ask', new AbortController().signal)).toEqual({ action: 'decline' });
    expect(instance.size).toBe(0);
  });
});
