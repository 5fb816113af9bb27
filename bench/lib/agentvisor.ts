/**
 * agentvisor as a consumer sees it: the built package (dist/index.js), not the sources.
 * The import is dynamic so that `tsc --noEmit` on a clean checkout (no dist/ yet) still
 * type-checks the benchmarks; the types come from the sources, which dist/ is built from.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type * as Agentvisor from '../../index.js';

const distEntry = new URL('../../dist/index.js', import.meta.url);
const distDir = new URL('../../dist/', import.meta.url);

/** The compiled echo agent and fixture agent (spawned with process.execPath). */
export const echoAgentScript = fileURLToPath(new URL('examples/echo-agent.js', distDir));
export const fixtureAgentScript = fileURLToPath(new URL('../../build/test-fixtures/tests/fixtures/fixture-agent.js', import.meta.url));
/** The bench's own agent for the stream benchmark (plain JS; needs dist/ for its helpers). */
export const streamAgentScript = fileURLToPath(new URL('../agents/stream-agent.mjs', import.meta.url));
/** Every agent script the benchmarks spawn (for leak scans). */
export const agentScripts = [echoAgentScript, fixtureAgentScript, streamAgentScript];

for (const file of [fileURLToPath(distEntry), echoAgentScript, fixtureAgentScript]) {
  if (!existsSync(file)) throw new Error(`${file} is missing: run npm run build first (npm run bench does)`);
}

export const agentvisor: typeof Agentvisor = (await import(distEntry.href)) as typeof Agentvisor;
export type { AgentSpec, Supervisor, SupervisorOptions, AgentHandle } from '../../index.js';
