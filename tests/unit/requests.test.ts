/**
 * Asking a machine and awaiting its answer (runtime/requests.ts): the answer with the request's
 * id settles the promise (a failure as an AgentError), other requests' answers do not, and
 * nothing listens once it settled — with the actor's own listener per request, or through an
 * answer source that routes one listener's answers by request id (a session's turns).
 */
import { describe, expect, it } from 'vitest';
import { createActor, emit, setup } from 'xstate';
import { AgentError } from '../../core/errors.js';
import { AnswerRouter, request, type Answer } from '../../runtime/requests.js';

/** A machine that answers `ask` with `answer` (ok unless `fail`), at once or on `release`. */
const answering = setup({
  types: { events: {} as { type: 'ask'; requestId: string; fail?: boolean; later?: boolean } | { type: 'release'; requestId: string } },
}).createMachine({
  on: {
    ask: {
      actions: emit(({ event }) =>
        event.later
          ? { type: 'ignored' }
          : { type: 'answer', requestId: event.requestId, result: event.fail ? { ok: false, failure: { kind: 'protocol_error', message: 'refused', stderr: [] } } : { ok: true, value: 1 } },
      ),
    },
    release: { actions: emit(({ event }) => ({ type: 'answer', requestId: event.requestId, result: { ok: true, value: 2 } })) },
  },
});

/** The routing a session keeps (runtime/session-registry.ts): one listener of the actor feeds the router. */
function routedAnswers(actor: ReturnType<typeof createActor<typeof answering>>) {
  const router = new AnswerRouter();
  actor.on('answer', (answer) => router.deliver(answer as unknown as Answer));
  return router;
}

const listeners = (actor: object) => [...((actor as { eventListeners: Map<string, Set<unknown>> }).eventListeners.get('answer') ?? [])].length;

describe('request', () => {
  it("settles with the actor's answer to its own id, and listens no more", async () => {
    const actor = createActor(answering).start();
    await expect(request<{ value: number }>(actor, 'answer', { type: 'ask' }, 'codex')).resolves.toEqual({ ok: true, value: 1 });
    const refused = request(actor, 'answer', { type: 'ask', fail: true }, 'codex');
    await expect(refused).rejects.toBeInstanceOf(AgentError);
    await expect(refused).rejects.toMatchObject({ kind: 'protocol_error', agent: 'codex' });
    const later = request<{ value: number }>(actor, 'answer', { type: 'ask', later: true }, 'codex', { requestId: 'r1' });
    actor.send({ type: 'release', requestId: 'other' }); // another request's answer
    expect(listeners(actor)).toBe(1);
    actor.send({ type: 'release', requestId: 'r1' });
    await expect(later).resolves.toEqual({ ok: true, value: 2 });
    expect(listeners(actor)).toBe(0);
  });

  it('through an answer source: no listener of its own on the actor, and the router forgets the request once settled', async () => {
    const actor = createActor(answering).start();
    const source = routedAnswers(actor);
    const before = listeners(actor);
    const later = request<{ value: number }>(actor, 'answer', { type: 'ask', later: true }, 'codex', { requestId: 'r1', answers: source });
    expect(listeners(actor)).toBe(before);
    expect(source.pending).toBe(1);
    actor.send({ type: 'release', requestId: 'r2' });
    actor.send({ type: 'release', requestId: 'r1' });
    await expect(later).resolves.toEqual({ ok: true, value: 2 });
    expect(source.pending).toBe(0);
    // Answered at once, refused, or aborted: forgotten all the same.
    await expect(request(actor, 'answer', { type: 'ask' }, 'codex', { answers: source })).resolves.toMatchObject({ ok: true });
    await expect(request(actor, 'answer', { type: 'ask', fail: true }, 'codex', { answers: source })).rejects.toMatchObject({ kind: 'protocol_error' });
    const abort = new AbortController();
    const aborted = request(actor, 'answer', { type: 'ask', later: true }, 'codex', { answers: source, signal: abort.signal });
    abort.abort();
    await expect(aborted).rejects.toMatchObject({ kind: 'aborted' });
    expect(source.pending).toBe(0);
  });
});
