/**
 * The event stream's journal (daemon/feed-journal.ts): one seq over everything published,
 * messages sealed into segments that are batch frames as they stand, bounded by count and by
 * size, and what it can still replay.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FeedJournal, type Segment } from '../../daemon/feed-journal.js';
import { EVENT_TOPICS, type EventTopic } from '../../daemon/api-types.js';

/** Appends the next message: `{"seq":N,"p":"<pad>"}` (of session `s`, or of none with null). */
const add = (journal: FeedJournal, pad = '', topic: 'updates' | 'logs' = 'updates', sessionId: string | null = 's') => {
  const seq = journal.lastSeq + 1;
  journal.append(seq, topic, sessionId ?? undefined, JSON.stringify({ seq, p: pad }));
  return seq;
};
/** The seqs a segment holds, read back from its frame. */
const seqsOf = (segment: Segment) => (JSON.parse(segment.frame.toString()) as Array<{ seq: number }>).map((message) => message.seq);
/** Every seq the journal holds, segment after segment. */
function held(journal: FeedJournal): number[] {
  const seqs: number[] = [];
  for (let seq = journal.oldestSeq; seq <= journal.sealedSeq; ) {
    const segment = journal.segmentOf(seq)!;
    seqs.push(...seqsOf(segment));
    seq = segment.lastSeq + 1;
  }
  return seqs;
}

describe('the journal', () => {
  it('starts empty: nothing published, everything after 0 held', () => {
    const journal = new FeedJournal({ maxMessages: 3, maxBytes: 1000 });
    expect([journal.lastSeq, journal.sealedSeq, journal.oldestSeq, journal.size]).toEqual([0, 0, 1, 0]);
    expect(journal.holdsAfter(0)).toBe(true);
    expect(journal.holdsAfter(1)).toBe(false); // never published: not this journal's
    expect(journal.segmentOf(1)).toBeUndefined();
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
    const segment = journal.segmentOf(2)!;
    expect([segment.firstSeq, segment.lastSeq, segment.count]).toEqual([1, 3, 3]);
    expect(JSON.parse(segment.frame.toString())).toEqual([
      { seq: 1, p: 'é ünïcode ✓' },
      { seq: 2, p: '' },
      { seq: 3, p: 'three' },
    ]);
    expect([0, 1, 2].map((index) => JSON.parse(segment.message(index).toString()).seq)).toEqual([1, 2, 3]);
    expect(segment.message(0).buffer).toBe(segment.frame.buffer); // a view, not a copy
    expect([...segment.topics]).toEqual(['updates', 'logs', 'updates'].map((topic) => EVENT_TOPICS.indexOf(topic as EventTopic))); // each message's topic, by its index in EVENT_TOPICS
    expect(segment.sessions).toEqual(['s', undefined, 's']);
    expect(journal.heldBytes).toBe(segment.frame.length);
  });

  it('keeps at most maxMessages, evicting whole segments, oldest first', () => {
    const journal = new FeedJournal({ maxMessages: 3, maxBytes: 100_000 });
    for (let i = 0; i < 7; i++) {
      add(journal);
      journal.seal();
    }
    expect([journal.oldestSeq, journal.sealedSeq, journal.size]).toEqual([5, 7, 3]);
    expect(held(journal)).toEqual([5, 6, 7]);
    expect(journal.segmentOf(4)).toBeUndefined();
    expect(journal.holdsAfter(4)).toBe(true); // 5.. are there
    expect(journal.holdsAfter(3)).toBe(false); // 4 is gone
    expect(journal.holdsAfter(8)).toBe(false);
    // A segment of two: the oldest two single ones make room.
    add(journal);
    add(journal);
    journal.seal();
    expect(held(journal)).toEqual([7, 8, 9]);
  });

  it('keeps the newest segment even alone over a bound', () => {
    const journal = new FeedJournal({ maxMessages: 2, maxBytes: 100_000 });
    for (let i = 0; i < 5; i++) add(journal);
    journal.seal();
    expect(held(journal)).toEqual([1, 2, 3, 4, 5]);
    add(journal);
    journal.seal();
    expect(held(journal)).toEqual([6]);
  });

  it('keeps at most maxBytes of JSON', () => {
    const journal = new FeedJournal({ maxMessages: 100, maxBytes: 100 });
    for (let i = 0; i < 6; i++) {
      add(journal, 'x'.repeat(20));
      journal.seal();
    }
    expect(journal.heldBytes).toBeLessThanOrEqual(100);
    expect(held(journal)).toEqual([5, 6]); // 37 bytes each with the brackets
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

  it('holds the newest segments within both bounds, whatever the sizes and seals (against a plain list)', () => {
    const step = fc.record({ pad: fc.string({ maxLength: 30 }), seal: fc.boolean() });
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 12 }), fc.integer({ min: 1, max: 400 }), fc.array(step, { maxLength: 120 }), (maxMessages, maxBytes, steps) => {
        const journal = new FeedJournal({ maxMessages, maxBytes }, 60);
        // The model: sealed segments as lists of seqs with their sizes in bytes.
        let model: Array<{ seqs: number[]; bytes: number }> = [];
        let pending: Array<{ seq: number; bytes: number }> = [];
        let pendingChars = 0;
        const seal = () => {
          if (pending.length === 0) return;
          model.push({ seqs: pending.map((entry) => entry.seq), bytes: pending.reduce((sum, entry) => sum + entry.bytes, 0) + pending.length + 1 });
          pending = [];
          pendingChars = 0;
          const total = () => model.reduce((sum, segment) => sum + segment.seqs.length, 0);
          const bytes = () => model.reduce((sum, segment) => sum + segment.bytes, 0);
          while (model.length > 1 && (total() > maxMessages || bytes() > maxBytes)) model = model.slice(1);
        };
        for (const { pad, seal: sealNow } of steps) {
          const seq = add(journal, pad);
          const text = JSON.stringify({ seq, p: pad });
          pending.push({ seq, bytes: Buffer.byteLength(text) });
          pendingChars += text.length;
          if (pendingChars >= 60) seal();
          if (sealNow) {
            journal.seal();
            seal();
          }
          const seqs = model.flatMap((segment) => segment.seqs);
          expect(held(journal)).toEqual(seqs);
          expect(journal.heldBytes).toBe(model.reduce((sum, segment) => sum + segment.bytes, 0));
          expect(journal.oldestSeq).toBe(seqs[0] ?? journal.sealedSeq + 1);
          for (let probe = 0; probe <= seq + 1; probe++) expect(journal.segmentOf(probe) !== undefined, `seq ${probe}`).toBe(seqs.includes(probe));
        }
      }),
      { numRuns: 200 },
    );
  });
});
