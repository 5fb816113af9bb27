/**
 * Watching agentvisor's actors live.
 *
 *   npx tsx examples/inspect.ts            readable transition traces on stderr (inspect: 'console')
 *   npx tsx examples/inspect.ts --stately  the Stately inspector in your browser (@statelyai/inspect;
 *                                          needs internet access to stately.ai)
 *
 * Every actor — the supervisor, each agent, each process actor, each session — reports to
 * the same inspector, because `inspect` is passed to the root actor's system.
 * Run `npm run build` first: the echo agent is the compiled one.
 */
import { createSkyInspector } from '@statelyai/inspect';
import { createSupervisor, presets, type InspectOption } from '../index.js';

const useStately = process.argv.includes('--stately');
let inspect: InspectOption = 'console';
if (useStately) {
  // Prints a URL; open it to watch the statecharts move.
  const inspector = createSkyInspector({ onerror: (error) => console.error('inspector:', error.message) });
  inspect = inspector.inspect;
}

const supervisor = createSupervisor({ agents: { echo: presets.echo() }, inspect });
const session = await supervisor.newSession('echo', { cwd: process.cwd() });
await session.prompt('watch me move through the statechart');
await session.close();
await supervisor.shutdown();
if (useStately) console.log('Done. The inspector keeps the recording.');
