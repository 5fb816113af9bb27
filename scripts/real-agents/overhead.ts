/**
 * agentvisor's overhead against the raw ACP SDK on three real agents — a manual benchmark,
 * not part of `npm test` or bench/run.ts.
 *
 * For claude-agent-acp, codex-acp and `gemini --acp`, offline against a fake model server
 * on 127.0.0.1 (fake-model-server.ts): N interleaved rounds (the order alternates: raw then
 * agentvisor, then agentvisor then raw, …) after one unmeasured warm-up round. Each side of
 * a round, with a fresh HOME, cwd and state directory of its own, times:
 *
 * 1. handshake: spawn and `initialize` — agentvisor: `ensureAgent(name)` on a supervisor made
 *    just before (`createSupervisor({ agents, stateDir, containment })`, containment 'auto'
 *    unless --containment says otherwise, the SQLite store on; its creation is timed apart and
 *    printed under the table: a program makes it once, not per agent); raw: execa (detached,
 *    stdin/stdout piped, stderr ignored) + the SDK's `client().connect(ndJsonStream(…))` +
 *    `initialize`, as bench/lib/raw-agent.ts does;
 * 2. session/new — `supervisor.newSession(name, { cwd })` / `connection.agent.buildSession(cwd).start()`;
 * 3. prompt — one turn, "Say hello", to its stop reason; both sides must have received the
 *    fake model's "Hello from the fake model" as agent text;
 * 4. stop — `supervisor.stop(name)` (resolves once the agent's whole containment is gone) /
 *    bench's `stopRawAgent` ladder (close stdin, SIGTERM the group, SIGKILL it; resolves on
 *    the child's exit), with the preset's ladder timeouts on both sides. Then agentvisor's
 *    `shutdown()` (the store's last writes and its close), timed apart and printed under the
 *    table: a program does it once, not per agent.
 *
 * Then, 500 ms after the stop, the processes the agent left behind: every live process whose
 * environment carries this side's AGENTVISOR_BENCH_MARK (set in the agent's env only) — they
 * are counted, then SIGKILLed so that rounds do not pile up.
 *
 *   npm run build && npm run build:fixtures   # the script runs the built package, dist/
 *   npx tsx scripts/real-agents/overhead.ts [claude|codex|gemini ...] [--rounds N] [--bin DIR] [--containment KIND] [--raw-capabilities same|none] [--raw-stop same|close] [--verbose]
 *
 * --containment: the agentvisor side's containment ('auto' by default; 'none' shows what
 * containment itself costs). --raw-capabilities: what the raw side's initialize advertises
 * ('same' as agentvisor by default, or 'none'). --raw-stop: how the raw side's stop begins —
 * 'close' (default): the SDK's `connection.close()` first, which also stops reading the
 * agent's stdout; 'same': as agentvisor's, stdin closed and the agent's stdout read on until
 * its exit (docs/performance.md, *Real agents*). --rounds: measured rounds per agent (default 7). --bin: the installed agents'
 * node_modules/.bin (default env REAL_AGENTS_BIN or .real-agents/node_modules/.bin).
 * --verbose: the model requests each side made, the agent text, and the last 20 lines of
 * the agents' stderr (agentvisor's `agent:stderr` events; the raw side's stderr is then
 * piped rather than ignored). Prints a line per round, a table per agent and a JSON
 * summary line (also written to bench/results/real-agents.json). Exit code 1 when a phase
 * failed, 2 for bad arguments.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import type { ClientCapabilities, SessionUpdate } from '@agentclientprotocol/sdk';
import { descendantsOf, isRunning, waitUntilGone } from '../../bench/lib/processes.js';
import { killGroup, startRawCommand, stopRawAgent, type RawAgent } from '../../bench/lib/raw-agent.js';
import { median, round, spread, type Spread } from '../../bench/lib/stats.js';
// agentvisor as a program that installed it runs it: the built package (dist/), as every benchmark does.
import { agentvisor, type AgentSpec, type Supervisor } from '../../bench/lib/agentvisor.js';
import { startFakeModelServer, type FakeModelServer } from './fake-model-server.js';

// ---------------------------------------------------------------------------------------
// Arguments

const { AgentError, createSupervisor, presets } = agentvisor;

const AGENTS = ['claude', 'codex', 'gemini'] as const;
type AgentName = (typeof AGENTS)[number];
const PHASES = ['handshake', 'session/new', 'prompt', 'stop'] as const;
type PhaseName = (typeof PHASES)[number];
type Side = 'raw' | 'agentvisor';
const CONTAINMENTS = ['auto', 'none', 'pid-namespace', 'cgroup', 'proc-tracking'] as const;
type Containment = (typeof CONTAINMENTS)[number];

const STEP_TIMEOUT_MS = 120_000;
const SURVIVOR_WAIT_MS = 500;
const PROMPT = 'Say hello';
const EXPECTED = 'Hello from the fake model';
const MARK_VAR = 'AGENTVISOR_BENCH_MARK';

function usage(message: string): never {
  console.error(`${message}\nusage: npx tsx scripts/real-agents/overhead.ts [${AGENTS.join('|')} ...] [--rounds N] [--bin DIR] [--containment auto|none|pid-namespace|cgroup|proc-tracking] [--raw-capabilities same|none] [--raw-stop same|close] [--verbose]`);
  process.exit(2);
}

function parseArgs(argv: string[]) {
  const agents: AgentName[] = [];
  let rounds = 7;
  let bin = process.env.REAL_AGENTS_BIN ?? '.real-agents/node_modules/.bin';
  let verbose = false;
  let containment: Containment = 'auto';
  let rawCapabilities: 'same' | 'none' = 'same';
  let rawStop: 'same' | 'close' = 'close';
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--rounds') {
      rounds = Number(argv[++i]);
      if (!Number.isInteger(rounds) || rounds < 1) usage('--rounds takes a whole number ≥ 1');
    } else if (arg.startsWith('--rounds=')) {
      rounds = Number(arg.slice('--rounds='.length));
      if (!Number.isInteger(rounds) || rounds < 1) usage('--rounds takes a whole number ≥ 1');
    } else if (arg === '--bin') {
      const value = argv[++i];
      if (value === undefined) usage('--bin takes a directory');
      bin = value;
    } else if (arg.startsWith('--bin=')) bin = arg.slice('--bin='.length);
    else if (arg === '--containment' || arg.startsWith('--containment=')) {
      const value = arg === '--containment' ? argv[++i] : arg.slice('--containment='.length);
      if (!(CONTAINMENTS as readonly string[]).includes(value ?? '')) usage(`--containment takes one of ${CONTAINMENTS.join(', ')}`);
      containment = value as Containment;
    } else if (arg === '--raw-capabilities' || arg.startsWith('--raw-capabilities=')) {
      const value = arg === '--raw-capabilities' ? argv[++i] : arg.slice('--raw-capabilities='.length);
      if (value !== 'same' && value !== 'none') usage('--raw-capabilities takes same or none');
      rawCapabilities = value;
    } else if (arg === '--raw-stop' || arg.startsWith('--raw-stop=')) {
      const value = arg === '--raw-stop' ? argv[++i] : arg.slice('--raw-stop='.length);
      if (value !== 'same' && value !== 'close') usage('--raw-stop takes same or close');
      rawStop = value;
    } else if (arg === '--verbose' || arg === '-v') verbose = true;
    else if ((AGENTS as readonly string[]).includes(arg)) agents.push(arg as AgentName);
    else usage(`unknown argument ${arg}`);
  }
  return { agents: agents.length > 0 ? [...new Set(agents)] : [...AGENTS], rounds, bin: resolve(bin), verbose, containment, rawCapabilities, rawStop };
}

const args = parseArgs(process.argv.slice(2));
const BIN = args.bin;
const VERBOSE = args.verbose;
const CONTAINMENT = args.containment;
/**
 * How the raw side's stop begins. `close` (the default, the SDK's own way): `connection.close()`
 * first, which stops reading the agent's stdout as stdin closes — the minimal consumer, so
 * that reading an agent's output until it exits, as agentvisor does, shows as its overhead.
 * `same`: stdin closed while the connection reads on until the exit (then closed), as
 * agentvisor's stop does; the difference between the two runs is what reading on costs (for
 * gemini 45.4 against 49.6 ms in one 13-round scratch run, within its spread).
 */
const RAW_STOP = args.rawStop;
/**
 * What the raw side's `initialize` advertises. `same` (the default): what agentvisor advertises
 * for a local agent (files, terminals, boolean config options), so that both sides ask the
 * agent for the same work — an agent offered the client's files and terminals sets up more
 * tools in session/new (gemini, codex: +5-9 ms measured when the raw side offered nothing).
 * `none`: an empty object, as the SDK's examples do.
 */
const RAW_CAPABILITIES: ClientCapabilities =
  args.rawCapabilities === 'same' ? { fs: { readTextFile: true, writeTextFile: true }, terminal: true, session: { configOptions: { boolean: {} } } } : {};

/**
 * Credentials and endpoints of the caller's own environment never reach an agent (a spec's
 * env is merged over process.env, and the raw side is given the same): keys, base URLs,
 * proxies, and IS_SANDBOX (as root, claude-agent-acp takes any value of it as leave to offer
 * bypassPermissions, and Claude Code, accepting only 1, then refuses session/new).
 */
for (const name of Object.keys(process.env)) {
  if (/(_API_KEY|_AUTH_TOKEN|OAUTH|_TOKEN$|SECRET|CREDENTIALS|_BASE_URL|VERTEX|GOOGLE_CLOUD|GENAI|^CODEX_|^CLAUDE_|^GEMINI_|PROXY$|^IS_SANDBOX$|^AGENTVISOR_BENCH_MARK$)/i.test(name)) delete process.env[name];
}

// ---------------------------------------------------------------------------------------
// The agents, offline

/**
 * What every agent gets besides its own settings: the fake server as its HTTP(S) proxy too,
 * so that a request for anywhere but 127.0.0.1 is refused there (and recorded) instead of
 * leaving the machine, and this side's marker.
 */
function commonEnv(upstream: string, home: string, mark: string): Record<string, string> {
  return {
    HOME: home,
    XDG_CONFIG_HOME: join(home, '.config'),
    XDG_CACHE_HOME: join(home, '.cache'),
    XDG_DATA_HOME: join(home, '.local', 'share'),
    XDG_STATE_HOME: join(home, '.local', 'state'),
    HTTPS_PROXY: upstream,
    HTTP_PROXY: upstream,
    https_proxy: upstream,
    http_proxy: upstream,
    NO_PROXY: '127.0.0.1,localhost,::1',
    no_proxy: '127.0.0.1,localhost,::1',
    [MARK_VAR]: mark,
  };
}

const SPECS: Record<AgentName, (home: string, cwd: string, upstream: string, mark: string) => AgentSpec> = {
  claude: (home, cwd, upstream, mark) =>
    presets.claudeCode({
      command: join(BIN, 'claude-agent-acp'),
      cwd,
      env: {
        ...commonEnv(upstream, home, mark),
        ANTHROPIC_API_KEY: 'sk-ant-dummy-offline',
        ANTHROPIC_BASE_URL: upstream,
        DISABLE_TELEMETRY: '1',
        DISABLE_AUTOUPDATER: '1',
        DISABLE_ERROR_REPORTING: '1',
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      },
    }),
  codex: (home, cwd, upstream, mark) => {
    // codex-acp reads no OPENAI_BASE_URL; a model provider of our own in CODEX_HOME's
    // config.toml needs no login (docs/real-agents.md, "What we tried").
    const codexHome = join(home, '.codex');
    mkdirSync(codexHome, { recursive: true });
    writeFileSync(
      join(codexHome, 'config.toml'),
      [
        'model = "gpt-5.5"',
        'model_provider = "fake"',
        `openai_base_url = "${upstream}/v1"`,
        `chatgpt_base_url = "${upstream}/backend-api/"`,
        'check_for_update_on_startup = false',
        '',
        '[model_providers.fake]',
        'name = "Fake model on 127.0.0.1"',
        `base_url = "${upstream}/v1"`,
        'env_key = "FAKE_MODEL_API_KEY"',
        'wire_api = "responses"',
        '',
        '[analytics]',
        'enabled = false',
        '',
        '[feedback]',
        'enabled = false',
        '',
      ].join('\n'),
    );
    return presets.codex({
      command: join(BIN, 'codex-acp'),
      cwd,
      env: { ...commonEnv(upstream, home, mark), CODEX_HOME: codexHome, FAKE_MODEL_API_KEY: 'sk-dummy-offline', OPENAI_API_KEY: 'sk-dummy-offline' },
    });
  },
  gemini: (home, cwd, upstream, mark) => {
    mkdirSync(join(home, '.gemini'), { recursive: true });
    writeFileSync(
      join(home, '.gemini', 'settings.json'),
      JSON.stringify({
        privacy: { usageStatisticsEnabled: false },
        telemetry: { enabled: false },
        general: { disableAutoUpdate: true, disableUpdateNag: true },
        security: { auth: { selectedType: 'gemini-api-key' } },
      }),
    );
    // gemini-cli trusts no folder by default.
    writeFileSync(join(home, '.gemini', 'trustedFolders.json'), JSON.stringify({ [cwd]: 'TRUST_FOLDER' }));
    return presets.gemini({
      command: join(BIN, 'gemini'),
      args: ['--acp'],
      cwd,
      env: { ...commonEnv(upstream, home, mark), GEMINI_API_KEY: 'dummy-offline', GOOGLE_GEMINI_BASE_URL: upstream },
    });
  },
};

// ---------------------------------------------------------------------------------------
// Helpers

const now = () => performance.now();
const delay = (ms: number) => new Promise<void>((done) => setTimeout(done, ms));

function withTimeout<T>(promise: Promise<T>, what: string, ms = STEP_TIMEOUT_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([promise, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms)))]).finally(() =>
    clearTimeout(timer),
  );
}

function describe(error: unknown): string {
  if (error instanceof AgentError) {
    const stderr = error.stderr?.length ? `\n      stderr: ${error.stderr.slice(-8).join('\n              ')}` : '';
    return `${error.kind}: ${error.message}${stderr}`;
  }
  return error instanceof Error ? error.message : String(error);
}

function procState(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
  } catch {
    return undefined;
  }
}

/** Live processes (zombies are dead) whose environment has `AGENTVISOR_BENCH_MARK=<mark…>`. */
function markedProcesses(markPrefix: string): Array<{ pid: number; cmd: string }> {
  const needle = Buffer.from(`${MARK_VAR}=${markPrefix}`);
  const found: Array<{ pid: number; cmd: string }> = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    if (pid === process.pid) continue;
    let environ: Buffer;
    try {
      environ = readFileSync(`/proc/${pid}/environ`);
    } catch {
      continue;
    }
    const at = environ.indexOf(needle);
    if (at < 0 || (at > 0 && environ[at - 1] !== 0)) continue;
    const state = procState(pid);
    if (state === undefined || state === 'Z' || state === 'X') continue;
    let cmd = '?';
    try {
      cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ');
    } catch {
      // gone meanwhile
    }
    found.push({ pid, cmd: cmd.length > 140 ? `${cmd.slice(0, 140)}…` : cmd });
  }
  return found;
}

/** SIGKILLs every process carrying the mark (and its group), until none is left (or 5 s). */
async function killMarked(markPrefix: string): Promise<void> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const left = markedProcesses(markPrefix);
    if (left.length === 0) return;
    for (const { pid } of left) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
    await delay(100);
  }
}

/** The agent text of a turn's updates. */
function agentText(updates: SessionUpdate[]): string {
  return updates
    .filter((update) => update.sessionUpdate === 'agent_message_chunk' && update.content.type === 'text')
    .map((update) => (update.sessionUpdate === 'agent_message_chunk' && update.content.type === 'text' ? update.content.text : ''))
    .join('');
}

function checkTurn(stopReason: string, updates: SessionUpdate[]): void {
  const text = agentText(updates);
  if (stopReason !== 'end_turn' || !text.includes(EXPECTED)) {
    const kinds = [...new Set(updates.map((update) => update.sessionUpdate))].join(', ');
    throw new Error(`the turn did not bring the fake model's answer: stopReason ${stopReason}, agent text ${JSON.stringify(text.slice(0, 600))}; update kinds: ${kinds || 'none'}`);
  }
}

// ---------------------------------------------------------------------------------------
// One side of one round

interface SideResult {
  side: Side;
  ok: boolean;
  error?: string;
  /** ms per phase (the phases that completed). */
  ms: Partial<Record<PhaseName | 'total', number>>;
  survivors: Array<{ pid: number; cmd: string }>;
  /** Processes of this side still running the moment its stop resolved (they may end by themselves just after). */
  aliveAtStop: number;
  /**
   * Raw side: how long after its stop resolved (on the adapter's exit) the processes the
   * adapter had started were all gone — agentvisor's stop resolves once its agent's whole
   * containment is gone, so this is what the raw side's stop leaves running for a moment.
   */
  treeGoneAfterStopMs?: number;
  /** What the agent said (the start of it). */
  text: string;
  /** The model requests made during this side. */
  requests: string[];
  stderr: string[];
  /** agentvisor: createSupervisor() until its store answered a first read (ms), before the handshake. */
  supervisorMs?: number;
  /** agentvisor: shutdown() after the agent's stop: the store's last writes and its close (ms). */
  shutdownMs?: number;
  /** agentvisor: the containment its agent ran in (and what was refused). */
  containment?: string;
}

interface SideContext {
  agent: AgentName;
  upstream: FakeModelServer;
  mark: string;
}

/** A fresh HOME, cwd and state directory. */
function freshDirs(agent: AgentName, side: Side) {
  const root = realpathSync(mkdtempSync(join(tmpdir(), `agentvisor-overhead-${agent}-${side}-`)));
  const home = join(root, 'home');
  const cwd = join(root, 'work');
  const stateDir = join(root, 'state');
  for (const dir of [home, cwd, stateDir]) mkdirSync(dir, { recursive: true });
  writeFileSync(join(cwd, 'README.md'), '# scratch workspace\n');
  return { root, home, cwd, stateDir };
}

/** The phases from their marks: handshake t0→t1, session/new t1→t2, prompt t2→t3, stop t3b→t4 (the turn's check between is not timed). */
function phaseTimes(t0: number, t1: number, t2: number, t3: number, t3b: number, t4: number): SideResult['ms'] {
  const ms = { handshake: t1 - t0, 'session/new': t2 - t1, prompt: t3 - t2, stop: t4 - t3b };
  return { ...ms, total: ms.handshake + ms['session/new'] + ms.prompt + ms.stop };
}

async function runAgentvisor({ agent, upstream, mark }: SideContext): Promise<SideResult> {
  const dirs = freshDirs(agent, 'agentvisor');
  const spec = SPECS[agent](dirs.home, dirs.cwd, upstream.url, mark);
  const result: SideResult = { side: 'agentvisor', ok: false, ms: {}, survivors: [], aliveAtStop: 0, text: '', requests: [], stderr: [] };
  const firstRequest = upstream.requests.length;
  let supervisor: Supervisor | undefined;
  let stopped = false;
  try {
    // The supervisor is made once by an embedding program, before its agents start: timed on
    // its own (no raw counterpart), not as part of the agent's handshake.
    const tOpen = now();
    supervisor = createSupervisor({ agents: { [agent]: spec }, stateDir: dirs.stateDir, containment: CONTAINMENT });
    const sup = supervisor;
    await sup.storeStats(); // the store is open and its first read answered
    result.supervisorMs = now() - tOpen;
    if (VERBOSE) sup.on('agent:stderr', ({ line }) => void (result.stderr = [...result.stderr, line].slice(-20)));
    const t0 = now();
    const { pid: agentPid } = await withTimeout(sup.ensureAgent(agent), 'ensureAgent');
    const t1 = now();
    const { kind, refused } = sup.containment;
    result.containment = `${kind ?? 'process group only'}${refused.length > 0 ? ` (refused: ${refused.map((entry) => `${entry.kind}: ${entry.reason}`).join('; ')})` : ''}`;
    const session = await withTimeout(sup.newSession(agent, { cwd: dirs.cwd }), 'newSession');
    const t2 = now();
    const updates: SessionUpdate[] = [];
    session.on('update', (update) => updates.push(update));
    const stopReason = await withTimeout(session.prompt(PROMPT), 'prompt');
    const t3 = now();
    result.text = agentText(updates);
    checkTurn(stopReason, updates);
    // The raw side reads the adapter's process tree here, before its stop's clock starts; the
    // same read here gives the agent the same pause between its turn and its stop, so that
    // whatever it still does after its turn falls inside both stops or neither.
    descendantsOf(agentPid);
    const t3b = now();
    // The agent's stop, as the raw side's; then the supervisor's own end (the store's last
    // writes and its close), timed apart like its creation.
    await withTimeout(sup.stop(agent), 'stop', 30_000);
    const t4 = now();
    result.aliveAtStop = markedProcesses(mark).length;
    await withTimeout(sup.shutdown(), 'shutdown', 30_000);
    stopped = true;
    result.shutdownMs = now() - t4;
    result.ms = phaseTimes(t0, t1, t2, t3, t3b, t4);
    result.ok = true;
  } catch (error) {
    result.error = describe(error);
  } finally {
    if (supervisor && !stopped) {
      await withTimeout(supervisor.shutdown({ force: true }), 'forced shutdown', 15_000).catch((error: unknown) => {
        result.error = `${result.error ?? ''}; forced shutdown: ${describe(error)}`;
      });
    }
    await endSide(result, { mark, upstream, firstRequest, root: dirs.root });
  }
  return result;
}

async function runRaw({ agent, upstream, mark }: SideContext): Promise<SideResult> {
  const dirs = freshDirs(agent, 'raw');
  const spec = SPECS[agent](dirs.home, dirs.cwd, upstream.url, mark);
  const result: SideResult = { side: 'raw', ok: false, ms: {}, survivors: [], aliveAtStop: 0, text: '', requests: [], stderr: [] };
  const firstRequest = upstream.requests.length;
  let raw: RawAgent | undefined;
  let stopped = false;
  try {
    const t0 = now();
    let tail = '';
    // A start that times out leaves its process to the marker sweep below (killMarked).
    raw = await withTimeout(
      startRawCommand(spec.command, spec.args ?? [], {
        clientCapabilities: RAW_CAPABILITIES,
        ...(spec.cwd !== undefined ? { cwd: spec.cwd } : {}),
        ...(spec.env ? { env: spec.env } : {}),
        ...(VERBOSE
          ? {
              onStderr: (chunk: Buffer) => {
                tail = (tail + chunk.toString('utf8')).slice(-8000);
                result.stderr = tail.split('\n').filter(Boolean).slice(-20);
              },
            }
          : {}),
      }),
      'initialize',
    );
    const t1 = now();
    const { connection } = raw;
    const session = await withTimeout(connection.agent.buildSession(dirs.cwd).start(), 'session/new');
    const t2 = now();
    const updates: SessionUpdate[] = [];
    const turn = (async () => {
      const response = session.prompt(PROMPT);
      response.catch(() => {}); // awaited below; a failure must not be unhandled meanwhile
      for (;;) {
        const message = await session.nextUpdate();
        if (message.kind === 'stop') break;
        updates.push(message.update);
      }
      return (await response).stopReason;
    })();
    const stopReason = await withTimeout(turn, 'prompt');
    const t3 = now();
    session.dispose();
    result.text = agentText(updates);
    checkTurn(stopReason, updates);
    const tree = descendantsOf(raw.pid);
    const t3b = now();
    await withTimeout(
      stopRawAgent(raw, { shutdownTimeoutMs: spec.shutdownTimeoutMs ?? 5000, killTimeoutMs: spec.killTimeoutMs ?? 2000, closeConnection: RAW_STOP === 'close' }),
      'stop',
      30_000,
    );
    stopped = true;
    const t4 = now();
    // At once, not by the environment scan the agentvisor side uses (it reads every process
    // and takes milliseconds, long enough for a straggler to finish): what the adapter started
    // that still runs as its stop resolves, and how long after that it is all gone. Anything
    // it started outside that tree is counted with the survivors, 500 ms later.
    result.aliveAtStop = tree.filter(isRunning).length;
    await waitUntilGone(tree, 5000, 1);
    result.treeGoneAfterStopMs = now() - t4;
    result.ms = phaseTimes(t0, t1, t2, t3, t3b, t4);
    result.ok = true;
  } catch (error) {
    result.error = describe(error);
  } finally {
    if (raw && !stopped) {
      raw.connection.close();
      killGroup(raw.pid, 'SIGKILL');
      await raw.exited;
    }
    await endSide(result, { mark, upstream, firstRequest, root: dirs.root });
  }
  return result;
}

/** After a side, stopped or failed: what its agent left behind (counted, then killed), the model requests it made, its directories removed. */
async function endSide(result: SideResult, side: { mark: string; upstream: FakeModelServer; firstRequest: number; root: string }): Promise<void> {
  await delay(SURVIVOR_WAIT_MS);
  result.survivors = markedProcesses(side.mark);
  await killMarked(side.mark);
  result.requests = side.upstream.requests.slice(side.firstRequest);
  rmSync(side.root, { recursive: true, force: true, maxRetries: 3 });
}

// ---------------------------------------------------------------------------------------
// Rounds, tables

interface AgentOutcome {
  agent: AgentName;
  rounds: Array<{ round: number; order: Side[]; raw: SideResult; agentvisor: SideResult }>;
  failures: string[];
  skipped?: string;
}

const fmt = (ms: number | undefined) => (ms === undefined || Number.isNaN(ms) ? '-' : ms >= 100 ? ms.toFixed(0) : ms.toFixed(1));

function sideLine(result: SideResult): string {
  if (!result.ok) return `${result.side} FAILED (${result.error?.split('\n')[0] ?? '?'})`;
  const { ms } = result;
  return `${result.side} ${PHASES.map((phase) => `${phase} ${fmt(ms[phase])}`).join(', ')}, total ${fmt(ms.total)} ms, survivors ${result.survivors.length}`;
}

function printDetails(result: SideResult): void {
  if (!result.ok) {
    console.log(`    ${result.side} error: ${result.error ?? '?'}`);
    if (result.text) console.log(`    ${result.side} agent text: ${JSON.stringify(result.text.slice(0, 400))}`);
  }
  if (result.survivors.length > 0) console.log(`    ${result.side} left (killed): ${result.survivors.map((entry) => `${entry.pid} ${entry.cmd}`).join(' | ')}`);
  if (VERBOSE || !result.ok) {
    console.log(`    ${result.side} model requests (${result.requests.length}): ${result.requests.join(', ') || 'none'}`);
  }
  if (VERBOSE) {
    if (result.ok && result.text) console.log(`    ${result.side} agent text: ${JSON.stringify(result.text.slice(0, 300))}`);
    if (result.stderr.length > 0) console.log(`    ${result.side} stderr:\n      ${result.stderr.join('\n      ')}`);
  }
}

let runId = '';
const activeMarks = new Set<string>();

async function oneRound(agent: AgentName, upstream: FakeModelServer, label: string, order: Side[]): Promise<{ raw: SideResult; agentvisor: SideResult }> {
  const results: Partial<Record<Side, SideResult>> = {};
  for (const side of order) {
    const mark = `${runId}-${agent}-${label}-${side}`;
    activeMarks.add(mark);
    results[side] = side === 'raw' ? await runRaw({ agent, upstream, mark }) : await runAgentvisor({ agent, upstream, mark });
    activeMarks.delete(mark);
  }
  return { raw: results.raw!, agentvisor: results.agentvisor! };
}

async function benchAgent(agent: AgentName, upstream: FakeModelServer, rounds: number): Promise<AgentOutcome> {
  const outcome: AgentOutcome = { agent, rounds: [], failures: [] };
  console.log(`\n== ${agent}: 1 warm-up round + ${rounds} measured round(s)`);
  const warm = await oneRound(agent, upstream, 'warmup', ['raw', 'agentvisor']);
  console.log(`  warm-up  ${sideLine(warm.raw)}\n           ${sideLine(warm.agentvisor)}`);
  printDetails(warm.raw);
  printDetails(warm.agentvisor);
  if (warm.agentvisor.containment) console.log(`    agentvisor containment: ${warm.agentvisor.containment}`);
  if (!warm.raw.ok && !warm.agentvisor.ok) {
    outcome.skipped = `warm-up failed on both sides (raw: ${warm.raw.error?.split('\n')[0]}; agentvisor: ${warm.agentvisor.error?.split('\n')[0]})`;
    outcome.failures.push(`${agent} warm-up: ${outcome.skipped}`);
    return outcome;
  }
  for (const [side, result] of [['raw', warm.raw], ['agentvisor', warm.agentvisor]] as const) {
    if (!result.ok) outcome.failures.push(`${agent} warm-up ${side}: ${result.error?.split('\n')[0] ?? '?'}`);
  }
  for (let round = 1; round <= rounds; round++) {
    const order: Side[] = round % 2 === 1 ? ['raw', 'agentvisor'] : ['agentvisor', 'raw'];
    const result = await oneRound(agent, upstream, String(round), order);
    outcome.rounds.push({ round, order, ...result });
    const first = result[order[0]!];
    const second = result[order[1]!];
    console.log(`  round ${String(round).padStart(2)}  ${sideLine(first)}\n            ${sideLine(second)}`);
    printDetails(first);
    printDetails(second);
    for (const side of order) {
      if (!result[side].ok) outcome.failures.push(`${agent} round ${round} ${side}: ${result[side].error?.split('\n')[0] ?? '?'}`);
    }
  }
  return outcome;
}

interface PhaseSummary {
  raw: Spread | null;
  agentvisor: Spread | null;
  ratio: number | null;
}

function summarize(outcome: AgentOutcome) {
  const phases: Record<string, PhaseSummary> = {};
  for (const phase of [...PHASES, 'total'] as const) {
    const values = (side: Side) => outcome.rounds.map((round) => round[side]).filter((result) => result.ok).map((result) => result.ms[phase]!);
    const raw = values('raw');
    const av = values('agentvisor');
    phases[phase] = {
      raw: raw.length > 0 ? spread(raw) : null,
      agentvisor: av.length > 0 ? spread(av) : null,
      ratio: raw.length > 0 && av.length > 0 ? round(median(av) / median(raw), 2) : null,
    };
  }
  const agentvisorOnly = (key: 'supervisorMs' | 'shutdownMs') => {
    const values = outcome.rounds.map((round) => round.agentvisor).filter((result) => result.ok && result[key] !== undefined).map((result) => result[key]!);
    return values.length > 0 ? spread(values) : null;
  };
  const survivors = (side: Side) => outcome.rounds.map((round) => round[side].survivors.length);
  const leftCommands = (side: Side) => [...new Set(outcome.rounds.flatMap((round) => round[side].survivors.map((entry) => entry.cmd.replace(BIN, '<bin>').replace(/\/tmp\/agentvisor-overhead-\S+/g, '<tmp>'))))];
  const requests = (side: Side) => {
    const counts = new Map<string, number>();
    for (const round of outcome.rounds) for (const request of round[side].requests) counts.set(request.replace(/\?.*$/, '?…'), (counts.get(request.replace(/\?.*$/, '?…')) ?? 0) + 1);
    return Object.fromEntries(counts);
  };
  return {
    phases,
    /** createSupervisor() to its store's first answer, agentvisor only (not in any phase: made once by a program). */
    supervisorOpen: agentvisorOnly('supervisorMs'),
    /** shutdown() once the agent is stopped, agentvisor only (the store's close). */
    supervisorShutdown: agentvisorOnly('shutdownMs'),
    containment: CONTAINMENT,
    /** How the raw side's stop began (--raw-stop). */
    rawStop: RAW_STOP,
    survivors: { raw: survivors('raw'), agentvisor: survivors('agentvisor') },
    aliveAtStop: { raw: outcome.rounds.map((round) => round.raw.aliveAtStop), agentvisor: outcome.rounds.map((round) => round.agentvisor.aliveAtStop) },
    /** Raw side: ms after its stop resolved until what the adapter had started was gone too (per round). */
    rawTreeGoneAfterStopMs: outcome.rounds.filter((entry) => entry.raw.ok && entry.raw.treeGoneAfterStopMs !== undefined).map((entry) => round(entry.raw.treeGoneAfterStopMs!)),
    leftBehind: { raw: leftCommands('raw'), agentvisor: leftCommands('agentvisor') },
    modelRequests: { raw: requests('raw'), agentvisor: requests('agentvisor') },
    okRounds: { raw: outcome.rounds.filter((r) => r.raw.ok).length, agentvisor: outcome.rounds.filter((r) => r.agentvisor.ok).length },
  };
}

function printTable(outcome: AgentOutcome, summary: ReturnType<typeof summarize>): void {
  console.log(`\n${outcome.agent}: medians of ${summary.okRounds.raw} raw / ${summary.okRounds.agentvisor} agentvisor round(s) (iqr% = (p75 − p25) / median)`);
  if (outcome.skipped) {
    console.log(`  skipped: ${outcome.skipped}`);
    return;
  }
  const header = ['phase', 'raw ms', 'agentvisor ms', 'ratio', 'raw iqr%', 'av iqr%'];
  const rows = [...PHASES, 'total' as const].map((phase) => {
    const entry = summary.phases[phase]!;
    return [phase, fmt(entry.raw?.median), fmt(entry.agentvisor?.median), entry.ratio === null ? '-' : entry.ratio.toFixed(2), entry.raw ? String(entry.raw.iqrPct) : '-', entry.agentvisor ? String(entry.agentvisor.iqrPct) : '-'];
  });
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column]!.length)));
  const line = (cells: string[]) => `  ${cells.map((cell, column) => (column === 0 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!))).join('  ')}`;
  console.log(line(header));
  console.log(`  ${widths.map((width) => '-'.repeat(width)).join('  ')}`);
  for (const row of rows) console.log(line(row));
  if (summary.supervisorOpen) console.log(`  createSupervisor (once per program, before the handshake; containment '${CONTAINMENT}'): ${fmt(summary.supervisorOpen.median)} ms`);
  if (summary.supervisorShutdown) console.log(`  shutdown() after the stop (once per program: the store's last writes and close): ${fmt(summary.supervisorShutdown.median)} ms`);
  const total = (values: number[]) => values.reduce((sum, value) => sum + value, 0);
  console.log(`  still running when the stop resolved (per round): raw [${summary.aliveAtStop.raw.join(', ')}], agentvisor [${summary.aliveAtStop.agentvisor.join(', ')}]`);
  if (summary.rawTreeGoneAfterStopMs.length > 0) {
    const stop = summary.phases.stop;
    const treeGone = median(summary.rawTreeGoneAfterStopMs);
    const whole = stop?.raw ? stop.raw.median + treeGone : null;
    console.log(
      `  raw: what the adapter had started was gone ${fmt(treeGone)} ms (median) after its stop resolved; raw stop until the whole tree is gone ≈ ${fmt(whole ?? undefined)} ms` +
        (whole !== null && stop?.agentvisor ? ` (agentvisor's stop, which waits for it: ratio ${(stop.agentvisor.median / whole).toFixed(2)})` : ''),
    );
  }
  console.log(`  survivors ${SURVIVOR_WAIT_MS} ms after stop (per round): raw [${summary.survivors.raw.join(', ')}] = ${total(summary.survivors.raw)}, agentvisor [${summary.survivors.agentvisor.join(', ')}] = ${total(summary.survivors.agentvisor)}`);
  if (summary.leftBehind.raw.length > 0) console.log(`  note: the raw side left processes behind (killed by the benchmark): ${summary.leftBehind.raw.join(' | ')}`);
  if (summary.leftBehind.agentvisor.length > 0) console.log(`  note: agentvisor left processes behind (killed by the benchmark): ${summary.leftBehind.agentvisor.join(' | ')}`);
  if (summary.leftBehind.raw.length === 0 && summary.leftBehind.agentvisor.length === 0) console.log('  note: neither side left a process behind');
}

// ---------------------------------------------------------------------------------------

async function main(): Promise<number> {
  const commands: Record<AgentName, string> = { claude: 'claude-agent-acp', codex: 'codex-acp', gemini: 'gemini' };
  const missing = args.agents.map((agent) => join(BIN, commands[agent])).filter((command) => !existsSync(command));
  if (missing.length > 0) {
    console.error(`not installed: ${missing.join(', ')} (install the agents into .real-agents, or give their bin directory with --bin or REAL_AGENTS_BIN)`);
    return 2;
  }
  runId = `ov${process.pid}${Date.now().toString(36)}`;
  const upstream = await startFakeModelServer();
  const started = new Date();
  const load = loadavg().map((value) => value.toFixed(2)).join(' ');
  console.log(`real-agent overhead, ${started.toISOString()}; load average ${load}; node ${process.version}`);
  console.log(`agents from ${BIN}; fake model server ${upstream.url}; ${args.rounds} round(s) per agent after 1 warm-up; step timeout ${STEP_TIMEOUT_MS / 1000} s`);

  let interrupted = false;
  const onSignal = () => {
    if (interrupted) return;
    interrupted = true;
    console.error('\ninterrupted: killing the agents of this run');
    for (const mark of activeMarks) void killMarked(mark);
    void killMarked(runId).finally(() => upstream.close().finally(() => process.exit(130)));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);

  const outcomes: AgentOutcome[] = [];
  try {
    for (const agent of args.agents) outcomes.push(await benchAgent(agent, upstream, args.rounds));
  } finally {
    await killMarked(runId);
    await upstream.close();
  }

  const summaries = outcomes.map((outcome) => ({ outcome, summary: summarize(outcome) }));
  console.log('\n========== results ==========');
  console.log(`${started.toISOString()}, load average at start ${load}; raw stop '${RAW_STOP}'; ratio = agentvisor median / raw median`);
  for (const { outcome, summary } of summaries) printTable(outcome, summary);
  const escaped = upstream.requests.filter((request) => /^(CONNECT|PROXY) /.test(request));
  console.log(`\nrequests for hosts other than 127.0.0.1 (refused by the fake server as a proxy): ${escaped.length === 0 ? 'none' : [...new Set(escaped)].join(', ')}`);
  const failures = outcomes.flatMap((outcome) => outcome.failures);
  if (failures.length > 0) console.log(`\nFAILED:\n  ${failures.join('\n  ')}`);

  const json = {
    benchmark: 'real-agents-overhead',
    date: started.toISOString(),
    loadAverageAtStart: load,
    node: process.version,
    rounds: args.rounds,
    phases: [...PHASES, 'total'],
    agents: Object.fromEntries(summaries.map(({ outcome, summary }) => [outcome.agent, { ...summary, ...(outcome.skipped ? { skipped: outcome.skipped } : {}), failures: outcome.failures }])),
    outsideRequests: [...new Set(escaped)],
    ok: failures.length === 0,
  };
  const file = fileURLToPath(new URL('../../bench/results/real-agents.json', import.meta.url));
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, `${JSON.stringify(json, null, 2)}\n`);
  console.log(`\n${JSON.stringify(json)}`);
  console.log(`(written to ${file})`);
  return failures.length === 0 ? 0 : 1;
}

process.exitCode = await main();
