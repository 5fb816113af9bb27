/**
 * Restart policies with real ACP agents, offline — a manual check, not part of `npm test`
 * (docs/failures.md, "Tried with real agents"). For claude-agent-acp, codex-acp and
 * `gemini --acp`: `restart()` (the stop ladder, then a new process: its time and pid),
 * `stop({ force: true })` (its time), and an agent under `restart.when: 'never'` whose
 * process is SIGKILLed (status `exited`, `lastExit`, no restart). For codex-acp also
 * credentials with failover: a first set without an API key (session/new refused for want of
 * a login) and a second with one. Then `shutdown()`, and no agent process may be left.
 *
 * Nothing leaves the machine: dummy keys, base URLs on a fake upstream on 127.0.0.1 that
 * answers 503, a temporary HOME each. No prompt is sent.
 *
 *   npx tsx scripts/real-agents/restart-policies.ts [binDir] [agent ...]
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createSupervisor, presets, type AgentSpec, type Supervisor } from '../../index.js';

const argv = process.argv.slice(2);
const names = ['claude', 'codex', 'gemini'];
const binArg = argv[0] !== undefined && !names.includes(argv[0]) ? argv.shift() : undefined;
const BIN = resolve(binArg ?? process.env.REAL_AGENTS_BIN ?? '.real-agents/node_modules/.bin');
const chosen = argv.length > 0 ? argv : names;

// The caller's own credentials and endpoints never reach an agent.
for (const name of Object.keys(process.env)) {
  if (/(_API_KEY|_AUTH_TOKEN|OAUTH|_TOKEN$|SECRET|CREDENTIALS|_BASE_URL|VERTEX|GOOGLE_CLOUD|GENAI|^CODEX_|^CLAUDE_|^GEMINI_|PROXY$|^IS_SANDBOX$)/i.test(name)) delete process.env[name];
}

function codexHome(home: string, upstream: string): string {
  const dir = join(home, '.codex');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'config.toml'), [`openai_base_url = "${upstream}/v1"`, `chatgpt_base_url = "${upstream}/backend-api/"`, 'check_for_update_on_startup = false', ''].join('\n'));
  return dir;
}

function specOf(name: string, home: string, upstream: string): AgentSpec {
  if (name === 'claude') {
    return presets.claudeCode({
      command: join(BIN, 'claude-agent-acp'),
      env: { HOME: home, ANTHROPIC_API_KEY: 'sk-ant-dummy-offline', ANTHROPIC_BASE_URL: upstream, DISABLE_TELEMETRY: '1', DISABLE_AUTOUPDATER: '1', CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1' },
    });
  }
  if (name === 'codex') return presets.codex({ command: join(BIN, 'codex-acp'), env: { HOME: home, CODEX_HOME: codexHome(home, upstream), OPENAI_API_KEY: 'sk-dummy-offline' } });
  mkdirSync(join(home, '.gemini'), { recursive: true });
  return presets.gemini({ command: join(BIN, 'gemini'), args: ['--acp'], env: { HOME: home, GEMINI_API_KEY: 'dummy-offline', GOOGLE_GEMINI_BASE_URL: upstream } });
}

const timed = async <T>(run: () => Promise<T>): Promise<[T, number]> => {
  const started = performance.now();
  const value = await run();
  return [value, Math.round(performance.now() - started)];
};

async function until(check: () => boolean, what: string, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((done) => setTimeout(done, 20));
  }
}

/** Pids of processes whose command line names the temporary HOME of this run. */
function leftovers(root: string): string[] {
  const out = execFileSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' });
  return out.split('\n').filter((line) => line.includes(root) && !line.includes('ps -eo'));
}

async function checkAgent(name: string, root: string, upstream: string): Promise<string[]> {
  const findings: string[] = [];
  const home = mkdtempSync(join(root, `${name}-`));
  const supervisor: Supervisor = createSupervisor({ stateDir: false, handleSignals: false, agents: { [name]: specOf(name, home, upstream), [`${name}-never`]: { ...specOf(name, mkdtempSync(join(root, `${name}-never-`)), upstream), restart: { when: 'never' } } } });
  try {
    const [first, startMs] = await timed(() => supervisor.ensureAgent(name));
    const [second, restartMs] = await timed(() => supervisor.restart(name, { reason: 'check' }));
    findings.push(`start ${startMs} ms (pid ${first.pid}); restart ${restartMs} ms (pid ${second.pid}, ${second.pid !== first.pid ? 'a new process' : 'THE SAME PROCESS'}); lastExit ${JSON.stringify(supervisor.describe(name).lastExit && { code: supervisor.describe(name).lastExit!.code, signal: supervisor.describe(name).lastExit!.signal })}`);
    const [, forceMs] = await timed(() => supervisor.stop(name, { force: true }));
    findings.push(`stop({ force }) ${forceMs} ms, lastExit ${JSON.stringify({ code: supervisor.describe(name).lastExit?.code, signal: supervisor.describe(name).lastExit?.signal })}`);
    const never = await supervisor.ensureAgent(`${name}-never`);
    process.kill(never.pid!, 'SIGKILL');
    await until(() => supervisor.getStatus(`${name}-never`) === 'exited', `${name}-never to be exited`);
    await new Promise((done) => setTimeout(done, 2000));
    findings.push(`when 'never', SIGKILLed: status ${supervisor.getStatus(`${name}-never`)} after 2 s, lastExit signal ${supervisor.describe(`${name}-never`).lastExit?.signal}`);
  } catch (error) {
    findings.push(`FAILED: ${(error as Error).message}`);
  } finally {
    await supervisor.shutdown();
  }
  return findings;
}

/** codex-acp with two credential sets: the first without a key (refused), the second with one. */
async function checkFailover(root: string, upstream: string): Promise<string[]> {
  const home = mkdtempSync(join(root, 'codex-failover-'));
  const base = specOf('codex', home, upstream);
  const env = { ...base.env };
  delete env.OPENAI_API_KEY;
  const supervisor = createSupervisor({
    stateDir: false,
    handleSignals: false,
    agents: { codex: { ...base, env, credentials: [{ name: 'no-key', env: {} }, { name: 'dummy-key', env: { OPENAI_API_KEY: 'sk-dummy-offline' } }] } },
  });
  const changes: string[] = [];
  supervisor.on('agent:credential', (event) => changes.push(`${event.previous} → ${event.credential} (${event.failure.kind}, class ${event.failure.class})`));
  try {
    await supervisor.ensureAgent('codex');
    const refused = await supervisor.newSession('codex', { cwd: home }).then(
      () => 'opened',
      (error: { kind?: string }) => `refused ${error.kind}`,
    );
    await until(() => supervisor.describe('codex').credential === 'dummy-key' && supervisor.getStatus('codex') === 'connected', 'the failover', 60_000).catch(() => undefined);
    const second = await supervisor.newSession('codex', { cwd: home }).then(
      (session) => `opened ${session.id}`,
      (error: { kind?: string; message?: string }) => `refused ${error.kind}: ${error.message}`,
    );
    return [`first session/new with set no-key: ${refused}; credential events: ${changes.join('; ') || 'none'}; now ${supervisor.describe('codex').credential}, ${supervisor.getStatus('codex')}; session/new: ${second}`];
  } finally {
    await supervisor.shutdown();
  }
}

const upstreamServer = createServer((_request, response) => response.writeHead(503).end('{"error":"offline"}'));
await new Promise<void>((done) => upstreamServer.listen(0, '127.0.0.1', done));
const upstream = `http://127.0.0.1:${(upstreamServer.address() as AddressInfo).port}`;
const root = mkdtempSync(join(tmpdir(), 'agentvisor-real-restart-'));
let failed = false;
try {
  for (const name of chosen) {
    const findings = await checkAgent(name, root, upstream);
    if (findings.some((line) => line.startsWith('FAILED'))) failed = true;
    console.log(`${name}:\n  ${findings.join('\n  ')}`);
  }
  if (chosen.includes('codex')) console.log(`codex failover:\n  ${(await checkFailover(root, upstream)).join('\n  ')}`);
  const left = leftovers(root);
  console.log(left.length === 0 ? 'no agent process left' : `LEFT RUNNING:\n${left.join('\n')}`);
  if (left.length > 0) failed = true;
} finally {
  upstreamServer.close();
  rmSync(root, { recursive: true, force: true });
}
process.exitCode = failed ? 1 : 0;
