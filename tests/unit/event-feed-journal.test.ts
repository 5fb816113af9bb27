/**
 * The event stream's journal (daemon/feed-journal.ts): one seq over everything published,
 * a ring bounded by count and by size, and what it can still replay.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FeedJournal, type JournalEntry } from '../../daemon/feed-journal.js';

const entry = (seq: number, text = `{"seq":${seq}}`): JournalEntry => ({ seq, topic: 'updates', sessionId: 's', text });

describe('the journal', () => {
  it('starts empty: nothing published, everything after 0 held', () => {
    const journal = new FeedJournal({ maxMessages: 3, maxBytes: 1000 });
    expect(journal.lastSeq).toBe(0);
    expect(journal.oldestSeq).toBe(1);
    expect(journal.size).toBe(0);
    expect(journal.holdsAfter(0)).toBe(true);
    expect(journal.holdsAfter(1)).toBe(false); // never published: not this journal's
    expect(journal.at(1)).toBeUndefined();
  });

  it('takes seqs one after the other only', () => {
    const journal = new FeedJournal({ maxMessages: 3, maxBytes: 1000 });
    journal.append(entry(1));
    expect(() => journal.append(entry(3))).toThrow(/seq 3 after 1/);
    expect(() => journal.append(entry(1))).toThrow(RangeError);
  });

  it('keeps the last maxMessages, evicting the oldest', () => {
    const journal = new FeedJournal({ maxMessages: 3, maxBytes: 1000 });
    for (let seq = 1; seq <= 7; seq++) journal.append(entry(seq));
    expect([journal.oldestSeq, journal.lastSeq, journal.size]).toEqual([5, 7, 3]);
    expect([5, 6, 7].map((seq) => journal.at(seq)?.seq)).toEqual([5, 6, 7]);
    expect(journal.at(4)).toBeUndefined();
    expect(journal.at(8)).toBeUndefined();
    expect(journal.holdsAfter(4)).toBe(true); // 5.. are there
    expect(journal.holdsAfter(3)).toBe(false); // 4 is gone
    expect(journal.holdsAfter(7)).toBe(true);
    expect(journal.holdsAfter(8)).toBe(false);
  });

  it('keeps at most maxBytes of JSON, but always the newest message', () => {
    const journal = new FeedJournal({ maxMessages: 100, maxBytes: 25 });
    journal.append(entry(1, 'a'.repeat(10)));
    journal.append(entry(2, 'b'.repeat(10)));
    expect([journal.size, journal.heldBytes]).toEqual([2, 20]);
    journal.append(entry(3, 'c'.repeat(10)));
    expect([journal.oldestSeq, journal.size, journal.heldBytes]).toEqual([2, 2, 20]);
    journal.append(entry(4, 'd'.repeat(40))); // alone over the bound: kept, the rest evicted
    expect([journal.oldestSeq, journal.size, journal.heldBytes]).toEqual([4, 1, 40]);
    expect(journal.at(4)?.text).toBe('d'.repeat(40));
    journal.append(entry(5, 'e'));
    expect([journal.oldestSeq, journal.size]).toEqual([5, 1]);
  });

  it('refuses bounds that hold nothing', () => {
    expect(() => new FeedJournal({ maxMessages: 0, maxBytes: 10 })).toThrow(/maxMessages/);
    expect(() => new FeedJournal({ maxMessages: 1.5, maxBytes: 10 })).toThrow(/maxMessages/);
    expect(() => new FeedJournal({ maxMessages: 10, maxBytes: 0 })).toThrow(/maxBytes/);
  });

  it('holds exactly the newest messages within both bounds, whatever the sizes (against a plain list)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 12 }), fc.integer({ min: 1, max: 60 }), fc.array(fc.integer({ min: 1, max: 30 }), { maxLength: 200 }), (maxMessages, maxBytes, sizes) => {
        const journal = new FeedJournal({ maxMessages, maxBytes });
        let model: JournalEntry[] = [];
        sizes.forEach((size, index) => {
          const next = entry(index + 1, 'x'.repeat(size));
          journal.append(next);
          model.push(next);
          if (model.length > maxMessages) model.shift();
          while (model.length > 1 && model.reduce((sum, held) => sum + held.text.length, 0) > maxBytes) model = model.slice(1);
          expect(journal.size).toBe(model.length);
          expect(journal.oldestSeq).toBe(model[0]!.seq);
          expect(journal.lastSeq).toBe(next.seq);
          expect(journal.heldBytes).toBe(model.reduce((sum, held) => sum + held.text.length, 0));
        });
        for (let seq = 0; seq <= sizes.length + 1; seq++) {
          const held = model.find((candidate) => candidate.seq === seq);
          expect(journal.at(seq)).toBe(held);
        }
      }),
      { numRuns: 300 },
    );
  });
});
