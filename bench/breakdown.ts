/**
 * What the benchmarks' costs are made of — not a benchmark (it prints no ratio); the
 * numbers behind docs/performance.md. Run: `npm run -s build && npm run -s build:fixtures
 * && npx tsx bench/breakdown.ts` (about a minute). Every figure is a median over a few
 * sequential repetitions.
 *
 * 1. Start-up: spawning bare node, node + the ACP SDK import, the echo agent up to its
 *    `initialize` answer, with and without NODE_EXTRA_CA_CERTS; the same through agentvisor;
 *    the parent's CPU per start/stop cycle on each side.
 * 2. Spawning under load: how long the synchronous spawn call blocks the parent while
 *    earlier children are still booting (libuv waits until the child has exec'd).
 * 3. Streaming: parent CPU per `session/update` for raw, the Session API and the connection
 *    path, and the cost of one zod validation of a `session/update` notification.
 * 4. Supervisor bookkeeping: register and shut down N idle agents (no processes).
 */
import { execa } from 'execa';
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { agentvisor, echoAgentScript, streamAgentScript } from './lib/agentvisor.js';
import { ownCpuMs } from './lib/processes.js';
import { startRawAgent, stopRawAgent } from './lib/raw-agent.js';
import { median, now, round, sleep } from './lib/stats.js';
import { openUpdateSession, type UpdateSession } from './lib/update-session.js';

const reps = Number(process.env['BREAKDOWN_REPS'] ?? 7);
const out: Record<string, unknown> = {};
const log = (line: string) => process.stdout.write(`${line}\n`);

async function timeExit(args: string[], env: NodeJS.ProcessEnv): Promise<number> {
  const start = now();
  await execa(process.execPath, args, { env, extendEnv: false, stdin: 'ignore', stdout: 'ignore', stderr: 'ignore', reject: false });
  return now() - start;
}

async function medianOf(fn: () => Promise<number>, n = reps): Promise<number> {
  const values: number[] = [];
  for (let i = 0; i < n; i++) values.push(await fn());
  return round(median(values), 1);
}

async function startup(): Promise<void> {
  const withCerts = { ...process.env };
  const withoutCerts = { ...process.env };
  delete withoutCerts['NODE_EXTRA_CA_CERTS'];
  const importSdk = ['--input-type=module', '-e', "await import('@agentclientprotocol/sdk')"];
  const section: Record<string, number> = {};
  for (const [label, env] of [['withCerts', withCerts], ['withoutCerts', withoutCerts]] as const) {
    if (label === 'withCerts' && !process.env['NODE_EXTRA_CA_CERTS']) continue;
    section[`nodeBareMs_${label}`] = await medianOf(() => timeExit(['-e', ''], env));
    section[`nodeImportSdkMs_${label}`] = await medianOf(() => timeExit(importSdk, env));
  }
  // The rest runs without the certificate bundle, as npm run bench does.
  delete process.env['NODE_EXTRA_CA_CERTS'];
  const spawnCall: number[] = [];
  const toInit: number[] = [];
  const stop: number[] = [];
  const rawCpu: number[] = [];
  for (let i = 0; i < reps; i++) {
    const cpu = ownCpuMs();
    const agent = await startRawAgent(echoAgentScript);
    spawnCall.push(agent.timings.spawned - agent.timings.start);
    toInit.push(agent.timings.initialized - agent.timings.start);
    const s = now();
    await stopRawAgent(agent);
    stop.push(now() - s);
    rawCpu.push(ownCpuMs() - cpu);
  }
  // One initialize round trip once the agent is up: a second request on a live connection.
  const live = await startRawAgent(echoAgentScript);
  const rtt: number[] = [];
  for (let i = 0; i < 50; i++) {
    const s = now();
    await live.connection.agent.request('session/new', { cwd: process.cwd(), mcpServers: [] });
    rtt.push(now() - s);
  }
  await stopRawAgent(live);
  const supervisor = agentvisor.createSupervisor({ agents: { echo: { command: process.execPath, args: [echoAgentScript] } } });
  const avInit: number[] = [];
  const avStop: number[] = [];
  const avCpu: number[] = [];
  for (let i = 0; i < reps; i++) {
    const cpu = ownCpuMs();
    const s = now();
    await supervisor.ensureAgent('echo');
    avInit.push(now() - s);
    const t = now();
    await supervisor.stop('echo');
    avStop.push(now() - t);
    avCpu.push(ownCpuMs() - cpu);
  }
  await supervisor.shutdown();
  Object.assign(section, {
    rawSpawnCallMs: round(median(spawnCall), 2),
    rawSpawnToInitializedMs: round(median(toInit), 1),
    rawStopMs: round(median(stop), 1),
    requestRoundTripMs: round(median(rtt), 3),
    rawParentCpuMsPerCycle: round(median(rawCpu), 2),
    agentvisorEnsureToConnectedMs: round(median(avInit), 1),
    agentvisorStopMs: round(median(avStop), 1),
    agentvisorParentCpuMsPerCycle: round(median(avCpu), 2),
  });
  out['startup'] = section;
  log(`startup: ${JSON.stringify(section)}`);
}

async function spawnUnderLoad(): Promise<void> {
  const n = 20;
  const each: number[] = [];
  const children = [];
  for (let i = 0; i < n; i++) {
    const s = now();
    children.push(spawn(process.execPath, [echoAgentScript], { detached: true, stdio: ['pipe', 'ignore', 'ignore'] }));
    each.push(now() - s);
  }
  for (const child of children) child.stdin!.end();
  await Promise.all(children.map((child) => new Promise((resolve) => (child.exitCode !== null ? resolve(null) : child.once('exit', resolve)))));
  const section = { spawnCallMs_first5: each.slice(0, 5).map((v) => round(v, 1)), spawnCallMs_last5: each.slice(-5).map((v) => round(v, 1)), totalMs: round(each.reduce((a, b) => a + b, 0), 0) };
  out['spawnUnderLoad'] = section;
  log(`spawn ${n} at once (sync call each): ${JSON.stringify(section)}`);
}

async function streaming(): Promise<void> {
  const count = 50_000;
  const command = JSON.stringify({ op: 'stream', count, text: 'x' });
  const raw = await startRawAgent(streamAgentScript);
  const spec = { command: process.execPath, args: [streamAgentScript] };
  const supervisor = agentvisor.createSupervisor({ agents: { a: spec, b: spec } });
  const handle = await supervisor.ensureAgent('b');
  const sides: Record<string, UpdateSession> = {
    raw: await openUpdateSession(raw.connection),
    sessionApi: await supervisor.newSession('a', { cwd: process.cwd() }),
    connection: await openUpdateSession(handle.connection),
  };
  const cpu: Record<string, number[]> = { raw: [], sessionApi: [], connection: [] };
  for (let round_ = 0; round_ < 4; round_++) {
    for (const [name, session] of Object.entries(sides)) {
      const off = session.on('update', () => {});
      const c = ownCpuMs();
      await session.prompt(command);
      if (round_ > 0) cpu[name]!.push(((ownCpuMs() - c) / count) * 1000);
      off();
    }
  }
  for (const session of Object.values(sides)) await session.close();
  await stopRawAgent(raw);
  await supervisor.shutdown();
  // One zod validation of a session/update notification, as the SDK does it.
  const sdkDir = dirname(createRequire(import.meta.url).resolve('@agentclientprotocol/sdk'));
  const schema = (await import(pathToFileURL(join(sdkDir, '../schema/zod.gen.js')).href)) as { zSessionNotification: { parse(value: unknown): unknown } };
  const notification = { sessionId: 'stream-1', update: { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'x' } } };
  for (let i = 0; i < 20_000; i++) schema.zSessionNotification.parse(notification);
  const c = ownCpuMs();
  for (let i = 0; i < 100_000; i++) schema.zSessionNotification.parse(notification);
  const section = {
    parentCpuUsPerUpdate: Object.fromEntries(Object.entries(cpu).map(([name, values]) => [name, round(median(values), 2)])),
    zodParseUsPerUpdate: round(((ownCpuMs() - c) / 100_000) * 1000, 2),
  };
  out['streaming'] = section;
  log(`streaming: ${JSON.stringify(section)}`);
}

async function bookkeeping(): Promise<void> {
  const section: Record<string, { registerMs: number; shutdownMs: number }> = {};
  for (const n of [100, 200, 400]) {
    const registers: number[] = [];
    const shutdowns: number[] = [];
    for (let i = 0; i < 3; i++) {
      const agents = Object.fromEntries(Array.from({ length: n }, (_, k) => [`agent-${k}`, { command: process.execPath, args: [echoAgentScript] }]));
      const s = now();
      const supervisor = agentvisor.createSupervisor({ agents, maxAgents: n });
      const t = now();
      await supervisor.shutdown();
      registers.push(t - s);
      shutdowns.push(now() - t);
      await sleep(10);
    }
    section[`n${n}`] = { registerMs: round(median(registers), 1), shutdownMs: round(median(shutdowns), 1) };
  }
  out['bookkeeping'] = section;
  log(`idle agents, register / shutdown: ${JSON.stringify(section)}`);
}

await startup();
await spawnUnderLoad();
await streaming();
await bookkeeping();
process.stdout.write(`${JSON.stringify(out)}\n`);
