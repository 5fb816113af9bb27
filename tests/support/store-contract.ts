/**
 * The behaviour every Store (core/store.ts) owes, as one suite: each implementation's test
 * file calls {@link describeStoreContract} with a factory, so the SQLite and memory stores
 * are held to the same contract — batches, session upserts, paging, retention, stats.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Awaitable, Page, Store, StoreWrite } from '../../core/store.js';

const all: Page = { after: 0, limit: Number.POSITIVE_INFINITY };

/** Write builders with defaults: agent "a", session "s". */
export const writes = {
  session: (at: number, fields: Partial<Extract<StoreWrite, { type: 'session' }>> = {}): StoreWrite => ({
    type: 'session',
    at,
    agent: 'a',
    sessionId: 's',
    ...fields,
  }),
  transcript: (at: number, data: unknown, agent = 'a', sessionId = 's'): StoreWrite => ({ type: 'transcript', at, agent, sessionId, kind: 'update', data }),
  stderr: (at: number, line: string, agent = 'a'): StoreWrite => ({ type: 'stderr', at, agent, line }),
  event: (at: number, data: unknown, agent: string | null = 'a', event = 'status'): StoreWrite => ({ type: 'event', at, agent, event, data }),
};

/** Each entry kind that retention applies to, seen through string payloads. */
const entryKinds = {
  transcript: {
    write: (at: number, payload: string) => writes.transcript(at, payload),
    read: async (store: Store) => (await store.transcript('a', 's', all)).map((entry) => ({ seq: entry.seq, payload: entry.data })),
    bytes: (payload: string) => Buffer.byteLength(JSON.stringify(payload)),
  },
  stderr: {
    write: (at: number, payload: string) => writes.stderr(at, payload),
    read: async (store: Store) => (await store.logs('a', all)).map((entry) => ({ seq: entry.seq, payload: entry.line })),
    bytes: (payload: string) => Buffer.byteLength(payload),
  },
  events: {
    write: (at: number, payload: string) => writes.event(at, payload),
    read: async (store: Store) => (await store.events({}, all)).map((entry) => ({ seq: entry.seq, payload: entry.data })),
    bytes: (payload: string) => Buffer.byteLength(JSON.stringify(payload)),
  },
};
type EntryKind = keyof typeof entryKinds;
const entryKindNames = Object.keys(entryKinds) as EntryKind[];

/** Registers the contract's tests; `open` gives a new, empty store for each test. */
export function describeStoreContract(open: () => Awaitable<Store>): void {
  let store: Store;

  beforeEach(async () => {
    store = await open();
  });

  afterEach(async () => {
    await store.close();
  });

  describe('writes', () => {
    it('applies a batch in order, each entry kind with its own increasing seq', async () => {
      await store.write([
        writes.session(1, { cwd: '/w' }),
        writes.transcript(2, { n: 1 }),
        writes.stderr(3, 'one'),
        writes.event(4, { n: 1 }),
        writes.transcript(5, { n: 2 }),
        writes.stderr(6, 'two'),
        writes.event(7, { n: 2 }, null, 'store:error'),
      ]);
      const transcript = await store.transcript('a', 's', all);
      expect(transcript).toEqual([
        { seq: expect.any(Number), at: 2, agent: 'a', sessionId: 's', kind: 'update', data: { n: 1 } },
        { seq: expect.any(Number), at: 5, agent: 'a', sessionId: 's', kind: 'update', data: { n: 2 } },
      ]);
      expect(transcript[1]!.seq).toBeGreaterThan(transcript[0]!.seq);
      const logs = await store.logs('a', all);
      expect(logs.map(({ at, agent, line }) => ({ at, agent, line }))).toEqual([
        { at: 3, agent: 'a', line: 'one' },
        { at: 6, agent: 'a', line: 'two' },
      ]);
      expect(logs[1]!.seq).toBeGreaterThan(logs[0]!.seq);
      const events = await store.events({}, all);
      expect(events.map(({ at, agent, event, data }) => ({ at, agent, event, data }))).toEqual([
        { at: 4, agent: 'a', event: 'status', data: { n: 1 } },
        { at: 7, agent: null, event: 'store:error', data: { n: 2 } },
      ]);
      expect(events[1]!.seq).toBeGreaterThan(events[0]!.seq);
    });

    it('numbers a batch\'s transcript entries session by session (sessions in order of their first entry), each in the order written', async () => {
      await store.write([
        writes.transcript(1, { n: 1 }, 'a', 's'),
        writes.transcript(2, { n: 1 }, 'a', 't'),
        writes.transcript(3, { n: 2 }, 'a', 's'),
        writes.transcript(4, { n: 2 }, 'a', 't'),
        writes.transcript(5, { n: 3 }, 'a', 's'),
      ]);
      const s = await store.transcript('a', 's', all);
      const t = await store.transcript('a', 't', all);
      expect(s.map((entry) => entry.data)).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);
      expect(t.map((entry) => entry.data)).toEqual([{ n: 1 }, { n: 2 }]);
      expect(t.map((entry) => entry.at)).toEqual([2, 4]);
      expect(Math.max(...s.map((entry) => entry.seq))).toBeLessThan(Math.min(...t.map((entry) => entry.seq)));
      // Retention by count keeps the highest seqs: t's entries, then s's last.
      await store.prune({ transcript: { maxCount: 3 } }, 10);
      expect((await store.transcript('a', 's', all)).map((entry) => entry.data)).toEqual([{ n: 3 }]);
      expect(await store.transcript('a', 't', all)).toHaveLength(2);
    });

    it('accepts an empty batch and agent registrations', async () => {
      await store.write([]);
      const spec = { command: 'codex', args: ['acp'], cwd: null, displayName: 'Codex', envNames: ['OPENAI_API_KEY'] };
      await store.write([{ type: 'agent', at: 1, agent: 'codex', spec }]);
      await store.write([{ type: 'agent', at: 2, agent: 'codex', spec: { ...spec, args: [] } }]);
      expect((await store.stats()).sessions).toBe(0);
    });

    it('keeps a transcript entry whose session has no row yet', async () => {
      await store.write([writes.transcript(1, 'early', 'a', 'unknown')]);
      expect((await store.transcript('a', 'unknown', all)).map((entry) => entry.data)).toEqual(['early']);
      expect(await store.sessions({})).toEqual([]);
    });

    it('keeps payloads as JSON: mutating what was written or read changes nothing stored, undefined reads back null', async () => {
      const data = { list: [1, 2], nested: { text: 'é' } };
      await store.write([writes.transcript(1, data), writes.event(2, data), writes.event(3, undefined)]);
      data.list.push(3);
      data.nested.text = 'changed';
      const [read] = await store.transcript('a', 's', all);
      (read!.data as typeof data).list.push(4);
      expect((await store.transcript('a', 's', all))[0]!.data).toEqual({ list: [1, 2], nested: { text: 'é' } });
      expect((await store.events({}, all)).map((entry) => entry.data)).toEqual([{ list: [1, 2], nested: { text: 'é' } }, null]);
    });

    it('refuses a batch it cannot apply whole, with store_failed, and applies the next one', async () => {
      await store.write([writes.stderr(1, 'before')]);
      const failing = [writes.session(2), writes.stderr(3, 'lost'), writes.transcript(4, { big: 1n }), writes.event(5, 'lost')];
      await expect(async () => store.write(failing)).rejects.toMatchObject({ name: 'AgentError', kind: 'store_failed' });
      expect(await store.sessions({})).toEqual([]);
      expect((await store.logs('a', all)).map((entry) => entry.line)).toEqual(['before']);
      expect(await store.transcript('a', 's', all)).toEqual([]);
      expect(await store.events({}, all)).toEqual([]);
      await store.write([writes.stderr(6, 'after')]);
      expect((await store.logs('a', all)).map((entry) => entry.line)).toEqual(['before', 'after']);
    });
  });

  describe('sessions', () => {
    it('inserts a session with defaults, created and updated at its first write', async () => {
      await store.write([writes.session(10)]);
      expect(await store.sessions({})).toEqual([
        { agent: 'a', sessionId: 's', cwd: '', title: null, state: 'idle', stopReason: null, createdAt: 10, updatedAt: 10 },
      ]);
    });

    it('replaces only the fields a write carries (null is a value) and moves updatedAt', async () => {
      await store.write([writes.session(10, { cwd: '/w', title: 'Fix', state: 'ready', stopReason: 'end_turn' })]);
      await store.write([writes.session(20, { state: 'running' })]);
      expect(await store.sessions({})).toEqual([
        { agent: 'a', sessionId: 's', cwd: '/w', title: 'Fix', state: 'running', stopReason: 'end_turn', createdAt: 10, updatedAt: 20 },
      ]);
      await store.write([writes.session(30, { title: null, stopReason: null, cwd: '/v', state: 'stopped' })]);
      expect(await store.sessions({})).toEqual([
        { agent: 'a', sessionId: 's', cwd: '/v', title: null, state: 'stopped', stopReason: null, createdAt: 10, updatedAt: 30 },
      ]);
    });

    it('filters by agent, cwd and session id, newest updatedAt first, ties newest createdAt first', async () => {
      await store.write([
        writes.session(1, { agent: 'a', sessionId: 's1', cwd: '/x' }),
        writes.session(2, { agent: 'a', sessionId: 's2', cwd: '/y' }),
        writes.session(3, { agent: 'b', sessionId: 's3', cwd: '/x' }),
        writes.session(4, { agent: 'a', sessionId: 's1', state: 'running' }),
        writes.session(5, { agent: 'b', sessionId: 's4', cwd: '/x' }),
        writes.session(5, { agent: 'b', sessionId: 's3' }),
      ]);
      const ids = async (filter: Parameters<Store['sessions']>[0]) => (await store.sessions(filter)).map((session) => session.sessionId);
      expect(await ids({})).toEqual(['s4', 's3', 's1', 's2']);
      expect(await ids({ agent: 'a' })).toEqual(['s1', 's2']);
      expect(await ids({ cwd: '/x' })).toEqual(['s4', 's3', 's1']);
      expect(await ids({ agent: 'b', cwd: '/x' })).toEqual(['s4', 's3']);
      expect(await ids({ sessionId: 's2' })).toEqual(['s2']);
      expect(await ids({ agent: 'b', sessionId: 's1' })).toEqual([]);
      expect(await ids({ agent: 'nobody' })).toEqual([]);
    });
  });

  describe('paging', () => {
    it('pages a transcript by seq: after a cursor, at most limit, of that session only', async () => {
      const batch: StoreWrite[] = [];
      for (let i = 0; i < 10; i++) batch.push(writes.transcript(i, i, 'a', 's'), writes.transcript(i, -i, 'a', 'other'), writes.transcript(i, -i, 'b', 's'));
      await store.write(batch);
      const first = await store.transcript('a', 's', { after: 0, limit: 4 });
      expect(first.map((entry) => entry.data)).toEqual([0, 1, 2, 3]);
      const second = await store.transcript('a', 's', { after: first[3]!.seq, limit: 4 });
      expect(second.map((entry) => entry.data)).toEqual([4, 5, 6, 7]);
      const rest = await store.transcript('a', 's', { after: second[3]!.seq, limit: 100 });
      expect(rest.map((entry) => entry.data)).toEqual([8, 9]);
      expect(await store.transcript('a', 's', { after: rest[1]!.seq, limit: 100 })).toEqual([]);
      expect(await store.transcript('a', 's', { after: 0, limit: 0 })).toEqual([]);
      expect(await store.transcript('a', 'missing', all)).toEqual([]);
    });

    it('pages stderr per agent, and events of all agents or of one', async () => {
      const batch: StoreWrite[] = [];
      for (let i = 0; i < 6; i++) batch.push(writes.stderr(i, `a${i}`, 'a'), writes.stderr(i, `b${i}`, 'b'), writes.event(i, i, i % 2 ? 'a' : null));
      await store.write(batch);
      const logs = await store.logs('a', { after: 0, limit: 4 });
      expect(logs.map((entry) => entry.line)).toEqual(['a0', 'a1', 'a2', 'a3']);
      expect((await store.logs('a', { after: logs[3]!.seq, limit: 4 })).map((entry) => entry.line)).toEqual(['a4', 'a5']);
      expect((await store.logs('b', { after: 0, limit: 2 })).map((entry) => entry.line)).toEqual(['b0', 'b1']);
      const events = await store.events({}, { after: 0, limit: 5 });
      expect(events.map((entry) => entry.data)).toEqual([0, 1, 2, 3, 4]);
      expect((await store.events({}, { after: events[4]!.seq, limit: 5 })).map((entry) => entry.data)).toEqual([5]);
      expect((await store.events({ agent: 'a' }, all)).map((entry) => entry.data)).toEqual([1, 3, 5]);
      expect((await store.events({ agent: 'a' }, { after: events[1]!.seq, limit: 1 })).map((entry) => entry.data)).toEqual([3]);
    });

    it('keeps 10,000 transcript updates complete and in order, across batches and pages', async () => {
      for (let batch = 0; batch < 100; batch++) {
        const updates: StoreWrite[] = [];
        for (let i = 0; i < 100; i++) updates.push(writes.transcript(batch, { i: batch * 100 + i, text: 'chunk' }));
        updates.push(writes.transcript(batch, 'noise', 'a', 'other'));
        await store.write(updates);
      }
      const read: number[] = [];
      let after = 0;
      for (;;) {
        const page = await store.transcript('a', 's', { after, limit: 1000 });
        if (page.length === 0) break;
        read.push(...page.map((entry) => (entry.data as { i: number }).i));
        after = page.at(-1)!.seq;
      }
      expect(read).toEqual(Array.from({ length: 10_000 }, (_, i) => i));
      expect((await store.stats()).transcript.count).toBe(10_100);
    });
  });

  describe('prune', () => {
    for (const kind of entryKindNames) {
      const entries = entryKinds[kind];
      const payloads = async () => (await entries.read(store)).map((entry) => entry.payload);
      describe(kind, () => {
        it('keeps the newest maxCount entries', async () => {
          await store.write(['e1', 'e2', 'e3', 'e4', 'e5'].map((payload, i) => entries.write(i, payload)));
          await store.prune({ [kind]: { maxCount: 2 } }, 100);
          expect(await payloads()).toEqual(['e4', 'e5']);
          await store.prune({ [kind]: { maxCount: 5 } }, 100);
          expect(await payloads()).toEqual(['e4', 'e5']);
          await store.prune({ [kind]: { maxCount: 0 } }, 100);
          expect(await payloads()).toEqual([]);
        });

        it('drops entries older than maxAgeMs', async () => {
          await store.write(['e1', 'e2', 'e3', 'e4'].map((payload, i) => entries.write(1000 + i * 10, payload)));
          await store.prune({ [kind]: { maxAgeMs: 15 } }, 1035);
          expect(await payloads()).toEqual(['e3', 'e4']);
        });

        it('keeps the newest entries within maxBytes, dropping everything older than the first that does not fit', async () => {
          const sizes = ['x'.repeat(10), 'a', 'b', 'ccccc', 'd'];
          await store.write(sizes.map((payload, i) => entries.write(i, payload)));
          const fits = entries.bytes('d') + entries.bytes('ccccc') + entries.bytes('b');
          await store.prune({ [kind]: { maxBytes: fits + entries.bytes('a') - 1 } }, 100);
          expect(await payloads()).toEqual(['b', 'ccccc', 'd']);
          await store.prune({ [kind]: { maxBytes: fits } }, 100);
          expect(await payloads()).toEqual(['b', 'ccccc', 'd']);
          await store.prune({ [kind]: { maxBytes: fits - 1 } }, 100);
          expect(await payloads()).toEqual(['ccccc', 'd']);
        });

        it('applies every rule set, leaves other kinds alone, and never reuses a seq', async () => {
          await store.write([writes.session(0), writes.transcript(0, 'keep'), writes.stderr(0, 'keep'), writes.event(0, 'keep')]);
          await store.write(['e1', 'e2', 'e3', 'e4', 'e5'].map((payload, i) => entries.write(10 + i, payload)));
          await store.prune({ [kind]: { maxCount: 3, maxAgeMs: 10, maxBytes: entries.bytes('e5') * 10 } }, 22);
          expect(await payloads()).toEqual(['e3', 'e4', 'e5']);
          for (const other of entryKindNames.filter((name) => name !== kind)) {
            expect((await entryKinds[other].read(store)).map((entry) => entry.payload)).toEqual(['keep']);
          }
          expect((await store.stats())[kind].count).toBe(3);
          await store.prune({ [kind]: { maxCount: 0 } }, 22);
          await store.write([entries.write(30, 'new')]);
          const after = await entries.read(store);
          expect(after.map((entry) => entry.payload)).toEqual(['new']);
          expect(after[0]!.seq).toBeGreaterThan(6);
        });
      });
    }

    describe('sessions', () => {
      /** Sessions s1 (oldest) .. s4 (newest), each with `sizes[i]` bytes of transcript, and a transcript entry with no session. */
      async function writeSessions(sizes = [100, 100, 100, 100]) {
        const batch: StoreWrite[] = [writes.transcript(0, 'orphan', 'a', 'orphan')];
        sizes.forEach((size, i) => {
          const sessionId = `s${i + 1}`;
          batch.push(writes.session(1000 + i * 100, { sessionId }), writes.transcript(1000 + i * 100, 'x'.repeat(size - 2), 'a', sessionId));
        });
        await store.write(batch);
      }
      const ids = async () => (await store.sessions({})).map((session) => session.sessionId);
      const transcriptOf = async (sessionId: string) => (await store.transcript('a', sessionId, all)).length;

      it('drops sessions not updated within maxAgeMs, with their transcript', async () => {
        await writeSessions();
        await store.write([writes.session(1350, { sessionId: 's1', state: 'running' })]);
        await store.prune({ sessions: { maxAgeMs: 150 } }, 1360);
        expect(await ids()).toEqual(['s1', 's4']);
        expect([await transcriptOf('s1'), await transcriptOf('s2'), await transcriptOf('s3'), await transcriptOf('s4')]).toEqual([1, 0, 0, 1]);
        expect(await transcriptOf('orphan')).toBe(1);
      });

      it('keeps the newest maxCount sessions', async () => {
        await writeSessions();
        await store.prune({ sessions: { maxCount: 2 } }, 2000);
        expect(await ids()).toEqual(['s4', 's3']);
        expect(await transcriptOf('s2')).toBe(0);
        expect((await store.stats()).transcript.count).toBe(3);
        await store.prune({ sessions: { maxCount: 0 } }, 2000);
        expect(await ids()).toEqual([]);
        expect(await transcriptOf('orphan')).toBe(1);
      });

      it('keeps the newest sessions whose transcripts fit in maxBytes', async () => {
        await writeSessions([10, 100, 50, 30]);
        await store.prune({ sessions: { maxBytes: 80 } }, 2000);
        expect(await ids()).toEqual(['s4', 's3']);
        expect(await transcriptOf('s2')).toBe(0);
        expect(await transcriptOf('s1')).toBe(0);
        await store.prune({ sessions: { maxBytes: 79 } }, 2000);
        expect(await ids()).toEqual(['s4']);
        expect((await store.stats()).transcript).toEqual({ count: 2, bytes: 30 + Buffer.byteLength('"orphan"') });
      });
    });
  });

  describe('stats', () => {
    it('counts entries and their payload bytes per kind', async () => {
      expect(await store.stats()).toMatchObject({ sessions: 0, transcript: { count: 0, bytes: 0 }, stderr: { count: 0, bytes: 0 }, events: { count: 0, bytes: 0 } });
      await store.write([
        writes.session(1),
        writes.session(2, { sessionId: 's2' }),
        writes.transcript(3, { t: 'é' }),
        writes.transcript(3, [1, 2]),
        writes.stderr(4, 'héllo'),
        writes.event(5, null),
      ]);
      expect(await store.stats()).toMatchObject({
        sessions: 2,
        transcript: { count: 2, bytes: Buffer.byteLength('{"t":"é"}') + Buffer.byteLength('[1,2]') },
        stderr: { count: 1, bytes: 6 },
        events: { count: 1, bytes: 4 },
      });
    });
  });

  describe('close', () => {
    it('is idempotent, and the store refuses calls afterwards with store_failed', async () => {
      await store.close();
      await store.close();
      await expect(async () => store.write([writes.stderr(1, 'late')])).rejects.toMatchObject({ kind: 'store_failed' });
      await expect(async () => store.sessions({})).rejects.toMatchObject({ kind: 'store_failed' });
    });
  });
}
