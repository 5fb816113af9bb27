/**
 * `npm start`: agentvisor supervising the bundled echo agent, narrated.
 * Connect → the agent is killed from outside → backoff → reconnect → graceful shutdown.
 * Needs no credentials; finishes by itself in a few seconds.
 */
import { createSupervisor, presets } from '../index.js';

const started = Date.now();
const say = (line: string) => console.log(`${((Date.now() - started) / 1000).toFixed(2).padStart(6)}s  ${line}`);

const supervisor = createSupervisor({
  agents: { echo: presets.echo() },
  restart: { initialDelayMs: 1000 },
});

supervisor.on('agent:status', ({ agent, status, previous }) => say(`${agent}: ${previous} → ${status}`));
supervisor.on('error', ({ agent, kind, message }) => say(`${agent}: error ${kind} — ${message}`));

say('ensureAgent("echo") — spawning the echo agent and sending initialize');
const echo = await supervisor.ensureAgent('echo');
say(`connected to ${echo.agentInfo?.name} ${echo.agentInfo?.version} (pid ${echo.pid}, ACP v${echo.protocolVersion})`);

say(`killing pid ${echo.pid} from outside with SIGKILL — the supervisor should notice and reconnect`);
process.kill(echo.pid, 'SIGKILL');

const reconnected = await new Promise<number>((resolve) => {
  const off = supervisor.on('agent:status', ({ agent, status }) => {
    if (agent === 'echo' && status === 'connected') {
      off();
      resolve(supervisor.list()[0]!.pid!);
    }
  });
});
say(`reconnected after the 1 s backoff: new pid ${reconnected}`);

say('shutdown() — closing ACP and stdin, waiting for every process to exit');
await supervisor.shutdown();
say(`done: ${supervisor.list().map((agent) => `${agent.name} is ${agent.status}`).join(', ')}`);
