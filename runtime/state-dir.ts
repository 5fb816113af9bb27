/**
 * Where a supervisor keeps its records by default: re-exported here so the facade reaches it
 * through the runtime, never through services directly.
 */
export { defaultStateDir } from '../services/agent-records.service.js';
