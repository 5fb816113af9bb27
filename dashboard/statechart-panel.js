// @ts-check
/**
 * The statechart: the daemon's Graphviz SVG of the agent machine (the only markup the page
 * inserts), the selected agent's state lit, the states it passed through listed above it, and
 * its zoom (`data-zoom` in, out, fit). statechart-model.js decides what to light and the zoom's
 * steps.
 */
import { byTestId, h } from './dom.js';
import { errorText } from './format.js';
import { litTitles, zoomedBy } from './statechart-model.js';

/** @import { ApiClient } from './api.js' */
/** @import { DashboardState } from './store.js' */

/** The machine drawn: every agent runs the same one. */
const MACHINE = 'agent';

/** @typedef {'in' | 'out' | 'fit'} ZoomDirection */

/**
 * @param {ApiClient} api
 * @param {() => DashboardState} currentState The state to draw once the chart has loaded.
 */
export function createStatechartPanel(api, currentState) {
  const chart = byTestId('statechart', HTMLDivElement);
  const heading = byTestId('agent-state', HTMLSpanElement);
  const trail = byTestId('state-trail', HTMLOListElement);
  /** The SVG's node and cluster groups by their <title>. @type {Map<string, SVGGElement>} */
  let groups = new Map();
  /** @type {Promise<void> | null} */
  let loading = null;
  let zoom = 1;
  const fitted = () => chart.classList.contains('fit');

  /** Scrolls the zoomed chart (and nothing else on the page) so `group` is in the middle. */
  function centerOn(/** @type {Element} */ group) {
    const panel = chart.getBoundingClientRect();
    const box = group.getBoundingClientRect();
    chart.scrollLeft += box.left + box.width / 2 - (panel.left + panel.width / 2);
    chart.scrollTop += box.top + box.height / 2 - (panel.top + panel.height / 2);
  }

  const panel = {
    /** Fetches and inserts the drawing, once (again after a failure). */
    load() {
      loading ??= (async () => {
        const parsed = new DOMParser().parseFromString(await api.machineSvg(MACHINE), 'image/svg+xml');
        if (parsed.documentElement.nodeName !== 'svg') throw new Error('the statechart is not an SVG');
        const svg = /** @type {SVGSVGElement} */ (/** @type {unknown} */ (parsed.documentElement));
        // Scaled by CSS (the viewBox keeps its proportions); the natural width is kept for zoom.
        const naturalWidth = svg.viewBox.baseVal?.width || parseFloat(svg.getAttribute('width') ?? '') || 1000;
        svg.removeAttribute('width');
        svg.removeAttribute('height');
        svg.dataset.naturalWidth = String(naturalWidth);
        const node = document.importNode(svg, true);
        // At its natural size by default (its labels readable), scrolled to the current state; `fit` shows it whole.
        if (!fitted()) node.style.width = `${Math.round(naturalWidth * zoom)}px`;
        groups = new Map();
        for (const group of node.querySelectorAll('g.node, g.cluster')) {
          const title = group.querySelector(':scope > title')?.textContent;
          if (title && group instanceof SVGGElement) groups.set(title, group);
        }
        chart.replaceChildren(node);
        panel.render(currentState());
      })().catch((/** @type {unknown} */ error) => {
        loading = null;
        chart.replaceChildren(h('p', { class: 'empty' }, `The statechart could not be loaded: ${errorText(error)}`));
      });
      return loading;
    },

    /** The selected agent's state lit, and its trail. */
    render(/** @type {DashboardState} */ state) {
      const agent = state.selectedAgent ? state.agents.get(state.selectedAgent) : undefined;
      const dotted = agent?.state ?? '';
      heading.textContent = agent && dotted ? `· ${agent.name}: ${dotted}` : '';
      chart.dataset.state = dotted;
      for (const group of chart.querySelectorAll('.lit')) group.classList.remove('lit', 'lit-leaf');
      const lit = litTitles(dotted, (title) => groups.has(title)).map((title) => /** @type {SVGGElement} */ (groups.get(title)));
      for (const group of lit) group.classList.add('lit');
      const leaf = lit.at(-1);
      if (leaf) {
        leaf.classList.add('lit-leaf');
        if (!fitted()) centerOn(leaf);
      }
      const states = (state.selectedAgent && state.trails.get(state.selectedAgent)) || [];
      trail.replaceChildren(...states.map((entry) => h('li', { 'data-testid': 'state-trail-entry' }, entry)));
    },

    /**
     * One step in or out, or `fit` (the whole drawing in the panel). Zooming from `fit` starts
     * at the size the panel shows.
     * @param {ZoomDirection} direction
     */
    zoom(direction) {
      const svg = chart.querySelector('svg');
      if (!svg) return;
      if (direction === 'fit') {
        zoom = 1;
        chart.classList.add('fit');
        svg.style.width = '';
        return;
      }
      const naturalWidth = Number(svg.dataset.naturalWidth);
      if (fitted()) {
        zoom = svg.getBoundingClientRect().width / naturalWidth;
        chart.classList.remove('fit');
      }
      zoom = zoomedBy(zoom, direction);
      // CSSOM, not a style attribute: allowed by the page's CSP.
      svg.style.width = `${Math.round(naturalWidth * zoom)}px`;
      panel.render(currentState());
    },
  };
  return panel;
}
