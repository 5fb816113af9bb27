// @ts-check
/**
 * The statechart's arithmetic: which of the drawing's groups a dotted state lights, and the
 * zoom's steps. Pure (tests/unit/dashboard-statechart.test.ts); the statechart panel applies
 * them to the SVG.
 */

/** The zoom's bounds, as a factor of the drawing's natural size, and its step. */
export const ZOOM_MIN = 0.1;
export const ZOOM_MAX = 3;
export const ZOOM_STEP = 1.25;

/**
 * The titles of the groups to light for a dotted state, outermost first: the cluster of every
 * state enclosing it (`cluster_connected`), then the leaf's node (`connected_stable`), or its
 * cluster when the state given is compound. Graphviz titles a state's node by its path with
 * `_` between levels, a compound state's cluster `cluster_<path>`; `exists` says which
 * titles the drawing has (a title it lacks is left out).
 * @param {string} dotted
 * @param {(title: string) => boolean} exists
 * @returns {string[]}
 */
export function litTitles(dotted, exists) {
  if (!dotted) return [];
  const parts = dotted.split('.');
  /** @type {string[]} */
  const titles = [];
  for (let depth = 1; depth <= parts.length; depth += 1) {
    const path = parts.slice(0, depth).join('_');
    const candidates = depth === parts.length ? [path, `cluster_${path}`] : [`cluster_${path}`];
    const found = candidates.find(exists);
    if (found !== undefined) titles.push(found);
  }
  return titles;
}

/**
 * The zoom after one step `in` or `out`, within its bounds.
 * @param {number} zoom
 * @param {'in' | 'out'} direction
 */
export function zoomedBy(zoom, direction) {
  return Math.min(ZOOM_MAX, Math.max(ZOOM_MIN, direction === 'in' ? zoom * ZOOM_STEP : zoom / ZOOM_STEP));
}
