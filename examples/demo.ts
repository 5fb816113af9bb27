/**
 * `npm start`: agentvisor supervising the bundled echo agent, narrated.
 * Connect → a prompt streamed back → the agent is killed from outside → backoff →
 * reconnect → graceful shutdown.
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

const session = await supervisor.newSession('echo', { cwd: process.cwd() });
say(`session ${session.id} open; prompting "Hello from agentvisor, streamed word by word"`);
let answer = '';
session.on('update', (update) => {
  if (update.sessionUpdate === 'agent_message_chunk' && update.content.type === 'text') {
    answer += update.content.text;
    say(`  chunk: ${JSON.stringify(update.content.text)}`);
  }
});
const stopReason = await session.prompt('Hello from agentvisor, streamed word by word');
say(`turn ended (${stopReason}); the agent answered: "${answer}"`);

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
