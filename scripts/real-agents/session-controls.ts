/**
 * Session controls of three real ACP agents through agentvisor, offline — a manual check,
 * not part of `npm test` (docs/real-agents-acp.md says what the agents answer).
 *
 * For claude-agent-acp, codex-acp and `gemini --acp` (and gemini once more in a folder it
 * does not trust): `newSession`, print modes / configOptions / models / commands, `setMode`
 * to a mode other than the current one and check `session.modes` (and the `mode` config
 * option, where there is one) show it, `setModel` to another model and check
 * `configOptions` / `models` show it, then `shutdown()` and check that no agent process is
 * left. One verdict line per agent; the exit code is 1 when a check failed.
 *
 * Nothing leaves the machine: every agent gets a dummy key, its base URL points at a fake
 * upstream on 127.0.0.1 that answers every request with a 503, and its own temporary HOME
 * and working directory. No prompt is sent: choosing a mode or a model needs no model call.
 *
 *   npm install --prefix .real-agents @agentclientprotocol/claude-agent-acp @zed-industries/codex-acp @google/gemini-cli
 *   npx tsx scripts/real-agents/session-controls.ts [binDir] [agent ...]
 *
 * binDir: the installed agents' `node_modules/.bin` (or env REAL_AGENTS_BIN; default
 * .real-agents/node_modules/.bin). agent: claude, codex, gemini, gemini-untrusted (default all).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { AgentError, createSupervisor, presets, type AgentSpec, type Session, type SessionConfigOption } from '../../index.js';

const argv = process.argv.slice(2);
const agentNames = ['claude', 'codex', 'gemini', 'gemini-untrusted'];
const binArg = argv[0] !== undefined && !agentNames.includes(argv[0]) && (argv[0].includes('/') || existsSync(argv[0])) ? argv.shift() : undefined;
const BIN = resolve(binArg ?? process.env.REAL_AGENTS_BIN ?? '.real-agents/node_modules/.bin');
const STEP_TIMEOUT_MS = 120_000;

/**
 * Credentials and endpoints of the caller's own environment never reach an agent: the specs'
 * env is merged over it. IS_SANDBOX goes too: as root, claude-agent-acp takes any value of it
 * as leave to offer bypassPermissions, and Claude Code itself (accepting only 1) then refuses
 * session/new ("--dangerously-skip-permissions cannot be used with root/sudo privileges").
 */
for (const name of Object.keys(process.env)) {
  if (/(_API_KEY|_AUTH_TOKEN|OAUTH|_TOKEN$|SECRET|CREDENTIALS|_BASE_URL|VERTEX|GOOGLE_CLOUD|GENAI|^CODEX_|^CLAUDE_|^GEMINI_|PROXY$|^IS_SANDBOX$)/i.test(name)) delete process.env[name];
}

interface Plan {
  /** The agent's name in the supervisor, and in the verdict. */
  name: string;
  spec: (home: string, cwd: string, upstream: string) => AgentSpec;
  /** Modes to try first, in order (the first one offered other than the current is used). */
  modes: string[];
  /** A mode the agent advertises but must refuse here: setMode rejects and the state stays. */
  refusedMode?: string;
}

const PLANS: Plan[] = [
  {
    name: 'claude',
    spec: (home, _cwd, upstream) =>
      presets.claudeCode({
        command: join(BIN, 'claude-agent-acp'),
        env: {
          HOME: home,
          ANTHROPIC_API_KEY: 'sk-ant-dummy-offline',
          ANTHROPIC_BASE_URL: upstream,
          DISABLE_TELEMETRY: '1',
          DISABLE_AUTOUPDATER: '1',
          DISABLE_ERROR_REPORTING: '1',
          CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
        },
      }),
    modes: ['acceptEdits', 'plan', 'default'],
  },
  {
    name: 'codex',
    spec: (home, _cwd, upstream) => {
      // codex-acp reads no OPENAI_BASE_URL: the base URLs are config.toml keys in CODEX_HOME.
      const codexHome = join(home, '.codex');
      mkdirSync(codexHome, { recursive: true });
      writeFileSync(
        join(codexHome, 'config.toml'),
        [`openai_base_url = "${upstream}/v1"`, `chatgpt_base_url = "${upstream}/backend-api/"`, 'check_for_update_on_startup = false', '', '[analytics]', 'enabled = false', '', '[feedback]', 'enabled = false', ''].join('\n'),
      );
      return presets.codex({ command: join(BIN, 'codex-acp'), env: { HOME: home, CODEX_HOME: codexHome, OPENAI_API_KEY: 'sk-dummy-offline' } });
    },
    modes: ['auto', 'full-access', 'read-only'],
  },
  {
    name: 'gemini',
    spec: (home, cwd, upstream) => {
      geminiHome(home);
      // gemini-cli trusts no folder by default; an untrusted one refuses autoEdit and yolo.
      writeFileSync(join(home, '.gemini', 'trustedFolders.json'), JSON.stringify({ [cwd]: 'TRUST_FOLDER' }));
      return presets.gemini({ command: join(BIN, 'gemini'), args: ['--acp'], env: { HOME: home, GEMINI_API_KEY: 'dummy-offline', GOOGLE_GEMINI_BASE_URL: upstream } });
    },
    modes: ['autoEdit', 'plan', 'yolo'],
  },
  {
    name: 'gemini-untrusted',
    spec: (home, _cwd, upstream) => {
      geminiHome(home);
      return presets.gemini({ command: join(BIN, 'gemini'), args: ['--acp'], displayName: 'Gemini CLI (untrusted folder)', env: { HOME: home, GEMINI_API_KEY: 'dummy-offline', GOOGLE_GEMINI_BASE_URL: upstream } });
    },
    modes: ['plan'],
    refusedMode: 'autoEdit',
  },
];

function geminiHome(home: string): void {
  mkdirSync(join(home, '.gemini'), { recursive: true });
  writeFileSync(
    join(home, '.gemini', 'settings.json'),
    JSON.stringify({ privacy: { usageStatisticsEnabled: false }, telemetry: { enabled: false }, general: { disableAutoUpdate: true, disableUpdateNag: true } }),
  );
}

// ---------------------------------------------------------------------------------------

/** The fake upstream: every request is answered 503 and counted. */
async function startUpstream(): Promise<{ url: string; requests: string[]; close: () => void }> {
  const requests: string[] = [];
  const server = createServer((req, res) => {
    requests.push(`${req.method ?? '?'} ${req.url ?? '?'}`);
    req.resume();
    res.writeHead(503, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { type: 'overloaded_error', code: 503, status: 'UNAVAILABLE', message: 'offline check: no upstream here' } }));
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests, close: () => server.close() };
}

function withTimeout<T>(promise: Promise<T>, what: string, ms = STEP_TIMEOUT_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([promise, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms)))]).finally(() => clearTimeout(timer));
}

const delay = (ms: number) => new Promise<void>((done) => setTimeout(done, ms));

function describe(error: unknown): string {
  if (error instanceof AgentError) return `${error.kind}: ${error.message}`;
  return error instanceof Error ? error.message : String(error);
}

function selectValues(option: SessionConfigOption): string[] {
  if (option.type !== 'select') return [];
  return option.options.flatMap((entry) => ('options' in entry ? entry.options.map((value) => value.value) : [entry.value]));
}

/** Processes still running whose command line names the bin directory. */
function agentProcesses(): string[] {
  const out = execFileSync('ps', ['-eo', 'pid=,stat=,args='], { encoding: 'utf8' });
  return out
    .split('\n')
    .filter((line) => line.includes(BIN) || /\b(claude-agent-acp|codex-acp|gemini --acp)\b/.test(line))
    .filter((line) => !/^\s*\d+\s+Z/.test(line) && !line.includes('session-controls.ts'));
}

async function check(plan: Plan, upstream: string): Promise<{ ok: boolean; line: string }> {
  const failures: string[] = [];
  const notes: string[] = [];
  const fail = (message: string) => {
    failures.push(message);
    console.log(`  FAIL ${message}`);
  };
  const pass = (message: string) => console.log(`  ok   ${message}`);
  const root = realpathSync(mkdtempSync(join(tmpdir(), `agentvisor-real-${plan.name}-`)));
  const home = join(root, 'home');
  const cwd = join(root, 'work');
  const stateDir = join(root, 'state');
  for (const dir of [home, cwd, stateDir]) mkdirSync(dir, { recursive: true });
  writeFileSync(join(cwd, 'README.md'), '# scratch workspace\n');
  const spec = plan.spec(home, cwd, upstream);
  const supervisor = createSupervisor({ agents: { [plan.name]: spec }, stateDir, handleSignals: false });
  console.log(`\n== ${plan.name} (${spec.command} ${(spec.args ?? []).join(' ')})`);
  try {
    let session: Session;
    try {
      session = await withTimeout(supervisor.newSession(plan.name, { cwd }), 'newSession');
    } catch (error) {
      // codex-acp wants `authenticate` first: with the method whose variable the spec sets.
      if (!(error instanceof AgentError) || error.kind !== 'auth_required') throw error;
      const methods = error.authMethods ?? [];
      const method = methods.find((candidate) => candidate.id === 'openai-api-key') ?? methods.find((candidate) => /api-key/.test(candidate.id));
      if (!method) throw error;
      console.log(`  (newSession: auth_required; authenticate ${method.id}, then again)`);
      notes.push(`authenticate ${method.id}`);
      await withTimeout(supervisor.authenticate(plan.name, method.id), 'authenticate');
      session = await withTimeout(supervisor.newSession(plan.name, { cwd }), 'newSession after authenticate');
    }
    const seen = { modes: 0, configOptions: 0, commands: 0, models: 0 };
    session.on('modes', () => seen.modes++);
    session.on('configOptions', () => seen.configOptions++);
    session.on('commands', () => seen.commands++);
    session.on('models', () => seen.models++);
    // The commands come in a session/update after the answer to session/new.
    for (let waited = 0; session.commands.length === 0 && waited < 5000; waited += 100) await delay(100);

    const modes = session.modes;
    const modeOption = session.configOptions.find((option) => option.category === 'mode');
    const modelOption = session.configOptions.find((option) => option.category === 'model' && option.type === 'select');
    console.log(`  session ${session.id}`);
    console.log(`  modes:         ${modes ? `${modes.currentModeId} of ${modes.availableModes.map((mode) => mode.id).join(', ')}` : 'null'}`);
    console.log(`  configOptions: ${session.configOptions.length === 0 ? 'none' : session.configOptions.map((option) => `${option.id}[${option.category ?? '-'}]=${String(option.currentValue)}`).join(', ')}`);
    console.log(`  models:        ${session.models ? `${session.models.currentModelId} of ${session.models.availableModels.map((model) => model.modelId).join(', ')}` : 'null'}`);
    console.log(`  commands:      ${session.commands.length}${session.commands.length > 0 ? ` (${session.commands.slice(0, 6).map((command) => command.name).join(', ')}${session.commands.length > 6 ? ', …' : ''})` : ''}`);
    if (session.commands.length === 0) fail('no available commands within 5 s of newSession');
    if (!modes && !modeOption) fail('neither modes nor a mode config option');

    // ----- mode -----
    const currentMode = modes?.currentModeId ?? (typeof modeOption?.currentValue === 'string' ? modeOption.currentValue : undefined);
    const offered = modes ? modes.availableModes.map((mode) => mode.id) : modeOption ? selectValues(modeOption) : [];
    const targetMode = plan.modes.find((mode) => mode !== currentMode && offered.includes(mode)) ?? offered.find((mode) => mode !== currentMode);
    if (targetMode !== undefined) {
      const before = seen.modes;
      const texts: string[] = [];
      const offText = session.on('update', (update) => {
        if (update.sessionUpdate === 'agent_message_chunk' && update.content.type === 'text') texts.push(update.content.text);
      });
      try {
        await withTimeout(session.setMode(targetMode), `setMode ${targetMode}`);
        const shownByModes = session.modes?.currentModeId;
        const optionAtOnce = session.configOptions.find((candidate) => candidate.category === 'mode')?.currentValue;
        if (session.modes && shownByModes !== targetMode) fail(`setMode(${targetMode}) resolved, but session.modes.currentModeId is ${String(shownByModes)}`);
        else pass(`setMode(${targetMode}): session.modes.currentModeId = ${String(shownByModes)}`);
        if (session.modes && seen.modes === before) fail(`setMode(${targetMode}): no 'modes' event`);
        else if (session.modes) pass(`'modes' event(s): ${seen.modes - before}`);
        // The mode config option is the agent's to move (config_option_update), before or after its answer.
        const modeOptionNow = () => session.configOptions.find((candidate) => candidate.category === 'mode');
        if (modeOptionNow()) {
          for (let waited = 0; modeOptionNow()?.currentValue !== targetMode && waited < 2000; waited += 50) await delay(50);
          const option = modeOptionNow()!;
          if (option.currentValue !== targetMode) fail(`setMode(${targetMode}) resolved, but the mode config option "${option.id}" still says ${String(option.currentValue)} 2 s later`);
          else if (optionAtOnce !== targetMode) {
            pass(`mode config option "${option.id}" = ${String(option.currentValue)} (when setMode resolved it still said ${String(optionAtOnce)}: the agent's config_option_update came after its answer)`);
            notes.push(`mode option caught up after setMode resolved`);
          } else pass(`mode config option "${option.id}" = ${String(option.currentValue)} when setMode resolved`);
        }
        await delay(200);
        if (texts.length > 0) {
          console.log(`  note the agent announced the mode as agent text: ${JSON.stringify(texts)}`);
          notes.push(`mode announced as text ${JSON.stringify(texts.join(''))}`);
        }
      } catch (error) {
        fail(`setMode(${targetMode}) rejected: ${describe(error)}`);
      } finally {
        offText();
      }
    } else {
      fail(`no mode other than ${String(currentMode)} to switch to`);
    }
    if (plan.refusedMode !== undefined) {
      const stateBefore = JSON.stringify(session.modes);
      try {
        await withTimeout(session.setMode(plan.refusedMode), `setMode ${plan.refusedMode}`);
        fail(`setMode(${plan.refusedMode}) resolved; the agent was expected to refuse it here`);
      } catch (error) {
        const kind = error instanceof AgentError ? error.kind : 'not an AgentError';
        if (kind !== 'protocol_error') fail(`setMode(${plan.refusedMode}) rejected with ${kind}, not protocol_error: ${describe(error)}`);
        else pass(`setMode(${plan.refusedMode}) refused by the agent: ${describe(error)}`);
        if (JSON.stringify(session.modes) !== stateBefore) fail(`the refused setMode(${plan.refusedMode}) changed session.modes to ${JSON.stringify(session.modes)}`);
        else pass(`session.modes unchanged after the refusal (${String(session.modes?.currentModeId)})`);
      }
    }
    try {
      await withTimeout(session.setMode('no-such-mode'), 'setMode no-such-mode');
      fail('setMode(no-such-mode) resolved');
    } catch (error) {
      if (error instanceof AgentError && error.kind === 'invalid_options') pass('setMode(no-such-mode): invalid_options');
      else fail(`setMode(no-such-mode) rejected with ${describe(error)}, not invalid_options`);
    }

    // ----- model -----
    let targetModel: string | undefined;
    if (modelOption) {
      targetModel = selectValues(modelOption).find((value) => value !== modelOption.currentValue);
    } else if (session.models) {
      const current = session.models.currentModelId;
      targetModel = session.models.availableModels.map((model) => model.modelId).find((id) => id !== current);
    }
    if (targetModel === undefined) {
      fail('no model other than the current one to switch to (neither a model config option nor models)');
    } else {
      const before = { configOptions: seen.configOptions, models: seen.models };
      try {
        await withTimeout(session.setModel(targetModel), `setModel ${targetModel}`);
        if (modelOption) {
          const now = session.configOptions.find((option) => option.id === modelOption.id)?.currentValue;
          if (now !== targetModel) fail(`setModel(${targetModel}) resolved, but config option "${modelOption.id}" is ${String(now)}`);
          else pass(`setModel(${targetModel}): config option "${modelOption.id}" = ${String(now)}`);
          if (seen.configOptions === before.configOptions) fail(`setModel(${targetModel}): no 'configOptions' event`);
          else pass(`'configOptions' event(s): ${seen.configOptions - before.configOptions}`);
        } else {
          const now = session.models?.currentModelId;
          if (now !== targetModel) fail(`setModel(${targetModel}) resolved, but session.models.currentModelId is ${String(now)}`);
          else pass(`setModel(${targetModel}): session.models.currentModelId = ${String(now)}`);
          if (seen.models === before.models) fail(`setModel(${targetModel}): no 'models' event`);
          else pass(`'models' event(s): ${seen.models - before.models}`);
        }
      } catch (error) {
        fail(`setModel(${targetModel}) rejected: ${describe(error)}`);
      }
    }
    try {
      await withTimeout(session.setModel('no-such-model'), 'setModel no-such-model');
      fail('setModel(no-such-model) resolved');
    } catch (error) {
      if (error instanceof AgentError && error.kind === 'invalid_options') pass('setModel(no-such-model): invalid_options');
      else fail(`setModel(no-such-model) rejected with ${describe(error)}, not invalid_options`);
    }
    notes.push(`mode ${String(currentMode)}→${String(targetMode)}`, `model →${String(targetModel)}`, `${session.commands.length} commands`);
  } catch (error) {
    fail(`aborted: ${describe(error)}`);
  } finally {
    try {
      await withTimeout(supervisor.shutdown(), 'shutdown', 30_000);
    } catch (error) {
      fail(`shutdown: ${describe(error)}`);
    }
    const left = agentProcesses();
    if (left.length > 0) fail(`processes left after shutdown:\n      ${left.join('\n      ')}`);
    else pass('shutdown: no agent process left');
    rmSync(root, { recursive: true, force: true });
  }
  const ok = failures.length === 0;
  return { ok, line: `${plan.name}: ${ok ? 'PASS' : 'FAIL'} (${ok ? notes.join(', ') : failures.map((message) => message.split('\n')[0]).join('; ')})` };
}

async function main(): Promise<number> {
  const wanted = argv.length > 0 ? argv : PLANS.map((plan) => plan.name);
  const unknown = wanted.filter((name) => !PLANS.some((plan) => plan.name === name));
  if (unknown.length > 0) {
    console.error(`unknown agent(s): ${unknown.join(', ')}; known: ${PLANS.map((plan) => plan.name).join(', ')}`);
    return 2;
  }
  const missing = ['claude-agent-acp', 'codex-acp', 'gemini'].filter((command) => !existsSync(join(BIN, command)));
  if (missing.length > 0) {
    console.error(`not in ${BIN}: ${missing.join(', ')} (install the agents there, or give their bin directory as the first argument or REAL_AGENTS_BIN)`);
    return 2;
  }
  const upstream = await startUpstream();
  console.log(`agents from ${BIN}; fake upstream ${upstream.url} (answers 503)`);
  const verdicts: Array<{ ok: boolean; line: string }> = [];
  try {
    for (const plan of PLANS.filter((candidate) => wanted.includes(candidate.name))) verdicts.push(await check(plan, upstream.url));
  } finally {
    upstream.close();
  }
  console.log(`\nfake upstream saw ${upstream.requests.length} request(s)${upstream.requests.length > 0 ? `: ${[...new Set(upstream.requests)].join(', ')}` : ''}`);
  console.log('\n' + verdicts.map((verdict) => verdict.line).join('\n'));
  return verdicts.every((verdict) => verdict.ok) ? 0 : 1;
}

process.exitCode = await main();
