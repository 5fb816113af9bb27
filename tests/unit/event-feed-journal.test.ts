/**
 * The event stream's journal (daemon/feed-journal.ts): one seq over everything published,
 * messages sealed into segments that are batch frames as they stand, bounded by count and by
 * size, in chunks that are let go once nothing in them is held, and what it can still replay.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FeedJournal } from '../../daemon/feed-journal.js';
import { EVENT_TOPICS, type EventTopic } from '../../daemon/api-types.js';

/** Appends the next message: `{"seq":N,"p":"<pad>"}` (of session `s`, or of none with null). */
const add = (journal: FeedJournal, pad = '', topic: 'updates' | 'logs' = 'updates', sessionId: string | null = 's') => {
  const seq = journal.lastSeq + 1;
  journal.append(seq, topic, sessionId ?? undefined, JSON.stringify({ seq, p: pad }));
  return seq;
};

/** Every seq the journal holds, each read back from its own bytes. */
function held(journal: FeedJournal): number[] {
  const seqs: number[] = [];
  for (let seq = journal.oldestSeq; seq <= journal.sealedSeq; seq++) seqs.push((JSON.parse(journal.message(seq).toString()) as { seq: number }).seq);
  return seqs;
}

const chunksOf = (journal: FeedJournal) => (journal as unknown as { chunks: Buffer[] }).chunks;

describe('the journal', () => {
  it('starts empty: nothing published, everything after 0 held', () => {
    const journal = new FeedJournal({ maxMessages: 3, maxBytes: 1000 });
    expect([journal.lastSeq, journal.sealedSeq, journal.oldestSeq, journal.size]).toEqual([0, 0, 1, 0]);
    expect(journal.holdsAfter(0)).toBe(true);
    expect(journal.holdsAfter(1)).toBe(false); // never published: not this journal's
    expect(journal.holds(1)).toBe(false);
    expect(() => journal.message(1)).toThrow(/not held/);
    journal.seal(); // nothing to seal
    expect(journal.size).toBe(0);
  });

  it('takes seqs one after the other only', () => {
    const journal = new FeedJournal({ maxMessages: 3, maxBytes: 1000 });
    add(journal);
    expect(() => journal.append(3, 'updates', 's', '{}')).toThrow(/seq 3 after 1/);
    expect(() => journal.append(1, 'updates', 's', '{}')).toThrow(RangeError);
  });

  it('seals what was published into a frame that is the JSON array of the messages, with a view of each', () => {
    const journal = new FeedJournal({ maxMessages: 100, maxBytes: 100_000 });
    add(journal, 'é ünïcode ✓');
    add(journal, '', 'logs', null);
    add(journal, 'three');
    expect([journal.lastSeq, journal.sealedSeq, journal.size]).toEqual([3, 0, 0]); // published, not sealed yet
    expect(journal.holdsAfter(0)).toBe(true);
    expect(journal.holdsAfter(1)).toBe(false);
    journal.seal();
    add(journal, 'next');
    journal.seal();
    expect(journal.segmentOf(2)).toEqual({ first: 1, last: 3 });
    expect(journal.segmentOf(4)).toEqual({ first: 4, last: 4 });
    const frame = journal.segmentFrame(1, 3);
    expect(JSON.parse(frame.toString())).toEqual([
      { seq: 1, p: 'é ünïcode ✓' },
      { seq: 2, p: '' },
      { seq: 3, p: 'three' },
    ]);
    expect(JSON.parse(journal.segmentFrame(4, 4).toString())).toEqual([{ seq: 4, p: 'next' }]);
    expect(held(journal)).toEqual([1, 2, 3, 4]);
    expect(journal.message(1).buffer).toBe(frame.buffer); // views of one chunk, not copies
    expect([1, 2, 3].map((seq) => journal.topic(seq))).toEqual(['updates', 'logs', 'updates'].map((topic) => EVENT_TOPICS.indexOf(topic as EventTopic))); // each message's topic, by its index in EVENT_TOPICS
    expect([1, 2, 3].map((seq) => journal.session(seq))).toEqual(['s', undefined, 's']);
    // Each message and the separator after it.
    expect(journal.heldBytes).toBe(frame.length - 1 + journal.segmentFrame(4, 4).length - 1);
  });

  it('keeps at most maxMessages, evicting the oldest', () => {
    const journal = new FeedJournal({ maxMessages: 3, maxBytes: 100_000 });
    for (let i = 0; i < 7; i++) {
      add(journal);
      journal.seal();
    }
    expect([journal.oldestSeq, journal.sealedSeq, journal.size]).toEqual([5, 7, 3]);
    expect(held(journal)).toEqual([5, 6, 7]);
    expect(journal.holds(4)).toBe(false);
    expect(journal.holdsAfter(4)).toBe(true); // 5.. are there
    expect(journal.holdsAfter(3)).toBe(false); // 4 is gone
    expect(journal.holdsAfter(8)).toBe(false);
    // A segment larger than the bound: its own first messages go too.
    for (let i = 0; i < 5; i++) add(journal);
    journal.seal();
    expect(held(journal)).toEqual([10, 11, 12]);
    expect(journal.segmentOf(11)).toEqual({ first: 8, last: 12 });
  });

  it('keeps at most maxBytes of JSON, but the newest segment whole', () => {
    const journal = new FeedJournal({ maxMessages: 100, maxBytes: 100 });
    for (let i = 0; i < 6; i++) {
      add(journal, 'x'.repeat(20));
      journal.seal();
    }
    expect(journal.heldBytes).toBeLessThanOrEqual(100);
    expect(held(journal)).toEqual([5, 6]); // 36 bytes each with its separator
    for (let i = 0; i < 4; i++) add(journal, 'x'.repeat(20));
    journal.seal();
    expect(held(journal)).toEqual([7, 8, 9, 10]); // 144 bytes, kept whole
  });

  it('lets a chunk go once none of its messages is held, and gives a large segment a buffer of its own', () => {
    const journal = new FeedJournal({ maxMessages: 1000, maxBytes: 220_000 });
    for (let i = 0; i < 100; i++) {
      add(journal, 'y'.repeat(1000)); // ~1 KB a segment: ~64 to a 64 KiB chunk
      journal.seal();
    }
    expect(chunksOf(journal)).toHaveLength(2);
    add(journal, 'z'.repeat(200_000));
    journal.seal();
    expect(chunksOf(journal).at(-1)!.length).toBeGreaterThan(200_000);
    // 220,000 bytes: most of the 1 KB messages went, and the first chunk with them.
    expect(journal.heldBytes).toBeLessThanOrEqual(220_000);
    expect(journal.oldestSeq).toBeGreaterThan(64);
    expect(chunksOf(journal)).toHaveLength(2);
    expect(held(journal).at(-1)).toBe(101);
    add(journal, 'after');
    journal.seal();
    expect(chunksOf(journal)).toHaveLength(3); // not into the large segment's buffer
    expect(held(journal).slice(-2)).toEqual([101, 102]);
  });

  it('seals on its own once the unsealed messages pass the segment size', () => {
    const journal = new FeedJournal({ maxMessages: 100, maxBytes: 100_000 }, 50);
    add(journal, 'x'.repeat(20));
    expect(journal.sealedSeq).toBe(0);
    add(journal, 'x'.repeat(20));
    expect(journal.sealedSeq).toBe(2);
    add(journal);
    expect([journal.sealedSeq, journal.lastSeq]).toEqual([2, 3]);
  });

  it('refuses bounds that hold nothing', () => {
    expect(() => new FeedJournal({ maxMessages: 0, maxBytes: 10 })).toThrow(/maxMessages/);
    expect(() => new FeedJournal({ maxMessages: 1.5, maxBytes: 10 })).toThrow(/maxMessages/);
    expect(() => new FeedJournal({ maxMessages: 10, maxBytes: 0 })).toThrow(/maxBytes/);
  });

  it('holds the newest messages within both bounds, whatever the sizes and seals (against a plain list)', () => {
    const step = fc.record({ pad: fc.string({ maxLength: 30 }), seal: fc.boolean() });
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 12 }), fc.integer({ min: 1, max: 400 }), fc.array(step, { maxLength: 150 }), (maxMessages, maxBytes, steps) => {
        const journal = new FeedJournal({ maxMessages, maxBytes }, 60);
        // The model: the held messages (seq, bytes, their segment), and the unsealed ones.
        let model: Array<{ seq: number; bytes: number; first: number; last: number }> = [];
        let pending: Array<{ seq: number; bytes: number }> = [];
        let pendingChars = 0;
        const seal = () => {
          if (pending.length === 0) return;
          const first = pending[0]!.seq;
          const last = pending.at(-1)!.seq;
          for (const entry of pending) {
            if (model.length === maxMessages) model = model.slice(1);
            model.push({ ...entry, first, last });
          }
          pending = [];
          pendingChars = 0;
          const bytes = () => model.reduce((sum, entry) => sum + entry.bytes, 0);
          while (bytes() > maxBytes && model[0]!.seq < first) model = model.slice(1);
        };
        for (const { pad, seal: sealNow } of steps) {
          const seq = add(journal, pad);
          const text = JSON.stringify({ seq, p: pad });
          pending.push({ seq, bytes: Buffer.byteLength(text) + 1 });
          pendingChars += text.length;
          if (pendingChars >= 60) seal();
          if (sealNow) {
            journal.seal();
            seal();
          }
          expect(held(journal)).toEqual(model.map((entry) => entry.seq));
          expect(journal.heldBytes).toBe(model.reduce((sum, entry) => sum + entry.bytes, 0));
          expect(journal.oldestSeq).toBe(model[0]?.seq ?? journal.sealedSeq + 1);
          for (const entry of model) {
            expect(journal.segmentOf(entry.seq)).toEqual({ first: entry.first, last: entry.last });
            if (entry.seq !== entry.first) continue;
            const whole = Array.from({ length: entry.last - entry.first + 1 }, (_, i) => entry.first + i);
            if (!whole.every((wanted) => model.some((other) => other.seq === wanted))) continue;
            expect((JSON.parse(journal.segmentFrame(entry.first, entry.last).toString()) as Array<{ seq: number }>).map((message) => message.seq)).toEqual(whole);
          }
        }
      }),
      { numRuns: 200 },
    );
  });
});
