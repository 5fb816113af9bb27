/**
 * The statechart's arithmetic without a browser (dashboard/statechart-model.js): which of
 * the Graphviz drawing's groups a dotted state lights, and the zoom's steps and bounds. The
 * titles are the real drawing's (visualizations/agent.svg).
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ZOOM_MAX, ZOOM_MIN, litTitles, zoomedBy } from '../../dashboard/statechart-model.js';

/** The <title>s of the agent statechart's node and cluster groups, as the page finds them. */
const drawn = new Set(
  [...readFileSync(new URL('../../visualizations/agent.svg', import.meta.url), 'utf8').matchAll(/<g id="[^"]*" class="(?:node|cluster)">\s*<title>([^<]+)<\/title>/g)].map((match) => match[1]!),
);
const exists = (title: string) => drawn.has(title);

describe('litTitles', () => {
  it('reads the titles of the real drawing', () => {
    expect(drawn.has('idle')).toBe(true);
    expect(drawn.has('cluster_connected')).toBe(true);
  });

  it("lights a nested leaf's node and every enclosing cluster, outermost first", () => {
    expect(litTitles('connected.stable', exists)).toEqual(['cluster_connected', 'connected_stable']);
  });

  it('lights a top-level leaf alone, and a compound state given alone by its cluster', () => {
    expect(litTitles('idle', exists)).toEqual(['idle']);
    expect(litTitles('connected', exists)).toEqual(['cluster_connected']);
  });

  it('leaves out what the drawing lacks; no state lights nothing', () => {
    expect(litTitles('connected.brandNew', exists)).toEqual(['cluster_connected']);
    expect(litTitles('', exists)).toEqual([]);
    expect(litTitles('a.b.c', (title) => ['cluster_a', 'cluster_a_b', 'a_b_c'].includes(title))).toEqual(['cluster_a', 'cluster_a_b', 'a_b_c']);
  });
});

describe('zoomedBy', () => {
  it('steps in and out by the same factor', () => {
    expect(zoomedBy(1, 'in')).toBeCloseTo(1.25);
    expect(zoomedBy(zoomedBy(1, 'in'), 'out')).toBeCloseTo(1);
  });

  it('stays within its bounds', () => {
    expect(zoomedBy(ZOOM_MAX, 'in')).toBe(ZOOM_MAX);
    expect(zoomedBy(ZOOM_MIN, 'out')).toBe(ZOOM_MIN);
  });
});
