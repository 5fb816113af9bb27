/**
 * The containment a supervisor runs its agents in, chosen once when it is created (the
 * probes run once per process): re-exported here so the facade reaches it through the
 * runtime, never through services directly.
 */
export { chooseContainment, containmentKinds, type ContainmentChoice, type ContainmentPreference } from '../services/containment/select.js';
