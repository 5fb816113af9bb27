/**
 * The slash-command palette's decisions without a browser (dashboard/palette.js): when the
 * prompt box asks for it, which commands match and in which order, what a pick writes, and the
 * highlighted row moving around.
 */
import { describe, expect, it } from 'vitest';
import { PALETTE_LIMIT, movePaletteCursor, paletteMatches, paletteQuery, pickedCommand } from '../../dashboard/palette.js';
import type { AvailableCommand } from '../../index.js';

const commands: AvailableCommand[] = [
  { name: 'review', description: 'Review the change', input: { hint: 'what to review' } },
  { name: 'explain', description: 'Explain the code' },
  { name: 'preview', description: 'Show the result' },
  { name: 'compact', description: 'Summarize to free context: review later' },
];
const names = (listed: AvailableCommand[]) => listed.map((command) => command.name);

describe('paletteQuery', () => {
  it('is the word after a leading "/" while it is the whole text; otherwise there is no palette', () => {
    expect([paletteQuery('/'), paletteQuery('/rev'), paletteQuery('/Rev-2')]).toEqual(['', 'rev', 'Rev-2']);
    expect([paletteQuery(''), paletteQuery('review'), paletteQuery(' /rev'), paletteQuery('/review this'), paletteQuery('/rev\n')]).toEqual([null, null, null, null, null]);
  });
});

describe('paletteMatches', () => {
  it('lists them all, in the agent\'s order, for an empty query', () => {
    expect(names(paletteMatches(commands, ''))).toEqual(['review', 'explain', 'preview', 'compact']);
  });

  it('names that begin with the query first, then names that hold it, then descriptions; case does not matter', () => {
    expect(names(paletteMatches(commands, 'rev'))).toEqual(['review', 'preview', 'compact']);
    expect(names(paletteMatches(commands, 'EX'))).toEqual(['explain', 'compact']); // compact: its description says "context"
    expect(names(paletteMatches(commands, 'code'))).toEqual(['explain']);
    expect(paletteMatches(commands, 'nothing')).toEqual([]);
  });

  it(`lists at most ${PALETTE_LIMIT} (or the limit given)`, () => {
    const many = Array.from({ length: 30 }, (_, index) => ({ name: `cmd${index}`, description: '' }));
    expect(paletteMatches(many, 'cmd')).toHaveLength(PALETTE_LIMIT);
    expect(names(paletteMatches(many, 'cmd', 2))).toEqual(['cmd0', 'cmd1']);
  });
});

describe('a pick', () => {
  it('writes "/name " (its input follows) and says the hint of a command that takes an input', () => {
    expect(pickedCommand(commands[0]!)).toEqual({ text: '/review ', hint: 'what to review' });
    expect(pickedCommand(commands[1]!)).toEqual({ text: '/explain ', hint: null });
  });

  it('the highlighted row moves down and up, around the ends', () => {
    expect([movePaletteCursor(0, 1, 3), movePaletteCursor(2, 1, 3), movePaletteCursor(0, -1, 3), movePaletteCursor(1, -1, 3)]).toEqual([1, 0, 2, 0]);
    expect(movePaletteCursor(0, 1, 0)).toBe(0);
  });
});
