/**
 * Where a supervisor keeps its records by default: re-exported here so the facade reaches it
 * through the runtime, never through services directly.
 */
export { defaultStateDir, toolStateDir } from '../services/state-dirs.js';
