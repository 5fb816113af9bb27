/** The CLI's config file: where it is found, what a bad one says, the agents and options it gives, the state directory. */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createSupervisor, toolStateDir as libraryToolStateDir, presets } from '../../index.js';
import { CliError } from '../../cli/cli-error.js';
import { agentNames, agentSpec, agentSpecs, asConfigError, toolStateDir, findConfigFile, loadConfig, parseConfig, resolveStateDir, supervisorOptions, type Config } from '../../cli/config.js';
import { ExitCode } from '../../cli/exit-codes.js';

let dir: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'agentvisor-cli-config-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const write = (relative: string, content: unknown) => {
  const path = join(dir, relative);
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
  return path;
};

/** The CliError `action` throws (the test fails when it throws none, or another error). */
function cliErrorOf(action: () => unknown): CliError {
  try {
    action();
  } catch (error) {
    if (error instanceof CliError) return error;
    throw error;
  }
  throw new Error('expected a CliError');
}

describe('finding the config file', () => {
  it('takes --config, then $AGENTVISOR_CONFIG, then ./agentvisor.config.json, then $XDG_CONFIG_HOME/agentvisor/config.json', () => {
    const cwd = join(dir, 'project');
    const user = write('xdg/agentvisor/config.json', {});
    const env = { XDG_CONFIG_HOME: join(dir, 'xdg') };
    expect(findConfigFile({ env, cwd })).toBe(user);
    const local = write('project/agentvisor.config.json', {});
    expect(findConfigFile({ env, cwd })).toBe(local);
    const fromEnv = write('env.json', {});
    expect(findConfigFile({ env: { ...env, AGENTVISOR_CONFIG: fromEnv }, cwd })).toBe(fromEnv);
    const fromFlag = write('flag.json', {});
    expect(findConfigFile({ flag: '../flag.json', env: { ...env, AGENTVISOR_CONFIG: fromEnv }, cwd })).toBe(fromFlag);
  });

  it('finds none without failing, and then has only the presets', () => {
    const env = { XDG_CONFIG_HOME: join(dir, 'nothing-here') };
    expect(findConfigFile({ env, cwd: dir })).toBeNull();
    const config = loadConfig({ env, cwd: dir });
    expect(config).toEqual({ path: null, file: {} });
    expect(agentNames(config)).toEqual(['claude', 'claude-stream-json', 'codex', 'gemini', 'echo']);
  });

  it('a file named by --config or $AGENTVISOR_CONFIG must exist', () => {
    const missing = join(dir, 'missing.json');
    const byFlag = cliErrorOf(() => findConfigFile({ flag: missing, env: {}, cwd: dir }));
    expect(byFlag.exitCode).toBe(ExitCode.usage);
    expect(byFlag.message).toBe(`Config file ${missing} (from --config) does not exist`);
    expect(cliErrorOf(() => findConfigFile({ env: { AGENTVISOR_CONFIG: missing }, cwd: dir })).message).toContain('$AGENTVISOR_CONFIG');
  });
});

describe('a bad config file', () => {
  const problems = (content: string) => {
    const error = cliErrorOf(() => parseConfig(content, '/etc/agentvisor.json'));
    expect(error.exitCode).toBe(ExitCode.usage);
    return error.message;
  };

  it('names the file when it is not JSON', () => {
    expect(problems('{ "agents": ')).toMatch(/^Config file \/etc\/agentvisor\.json is not valid JSON: /);
  });

  it('names the file and every field that is wrong', () => {
    const message = problems(JSON.stringify({ agents: { mine: { preset: 'cladue' }, other: {} }, maxAgents: 'four', store: 'redis', colour: true }));
    expect(message.split('\n')).toEqual([
      'Invalid config file /etc/agentvisor.json:',
      '  agents.mine.preset: must be one of "claude", "claude-stream-json", "codex", "gemini", "echo"',
      '  agents.other: needs "preset" (one of claude, claude-stream-json, codex, gemini, echo) or "command"',
      '  maxAgents: must be a number',
      '  store: must be one of "sqlite", "memory"',
      '  colour: is not a known field',
    ]);
  });

  it('checks numbers and nested objects', () => {
    expect(problems(JSON.stringify({ maxAgents: 0 }))).toContain('maxAgents: Too small');
    expect(problems(JSON.stringify({ retention: { stderr: { maxCount: -1 } } }))).toContain('retention.stderr.maxCount');
    expect(problems(JSON.stringify({ agents: [] }))).toContain('agents: must be a record');
  });

  it("a spec the library refuses becomes a usage error naming the file and the field", () => {
    const config: Config = { path: '/etc/agentvisor.json', file: {} };
    let refusal: unknown;
    try {
      createSupervisor({ agents: { mine: { command: 'node', args: [42 as unknown as string] } }, stateDir: false });
    } catch (error) {
      refusal = error;
    }
    const error = asConfigError(config, refusal) as CliError;
    expect(error).toBeInstanceOf(CliError);
    expect(error.exitCode).toBe(ExitCode.usage);
    expect(error.message).toMatch(/^Invalid config file \/etc\/agentvisor\.json: agents\.mine\.args\.0: /);
    const other = new Error('not a config problem');
    expect(asConfigError(config, other)).toBe(other);
  });
});

describe('agents', () => {
  it('are the presets, also with no config, and the config adds its own', async () => {
    const config: Config = { path: null, file: parseConfig(JSON.stringify({ agents: { mine: { command: 'my-agent', args: ['--acp'] } } }), join(dir, 'c.json')) };
    expect(agentNames(config)).toEqual(['claude', 'claude-stream-json', 'codex', 'gemini', 'echo', 'mine']);
    expect(await agentSpec(config, 'echo')).toEqual(presets.echo());
    expect(await agentSpec(config, 'codex')).toEqual(presets.codex());
    expect(await agentSpec(config, 'mine')).toEqual({ command: 'my-agent', args: ['--acp'] });
    expect(await agentSpec(config, 'nobody')).toBeUndefined();
  });

  it('a preset entry is the preset with overrides; one named like a preset replaces it', async () => {
    const file = parseConfig(JSON.stringify({ agents: { codex: { preset: 'codex', env: { RUST_LOG: 'warn' } }, echo: { command: 'other-echo' }, fast: { preset: 'echo', displayName: 'Fast' } } }), join(dir, 'c.json'));
    const config: Config = { path: join(dir, 'c.json'), file };
    expect(await agentSpec(config, 'codex')).toEqual(presets.codex({ env: { RUST_LOG: 'warn' } }));
    expect(await agentSpec(config, 'echo')).toEqual({ command: 'other-echo' });
    expect(await agentSpec(config, 'fast')).toEqual(presets.echo({ displayName: 'Fast' }));
  });

  it("relative paths (stateDir, an agent's cwd, a command with a slash) are the config file's", () => {
    const file = parseConfig(JSON.stringify({ stateDir: 'state', agents: { mine: { command: './bin/agent', cwd: 'work' }, onPath: { command: 'agent' } } }), join(dir, 'conf', 'c.json'));
    expect(file.stateDir).toBe(join(dir, 'conf', 'state'));
    expect(file.agents?.mine).toEqual({ command: join(dir, 'conf', 'bin', 'agent'), cwd: join(dir, 'conf', 'work') });
    expect(file.agents?.onPath).toEqual({ command: 'agent' });
  });
});

describe('supervisor options and the state directory', () => {
  it('passes on only the options the config sets', () => {
    const file = parseConfig(JSON.stringify({ maxAgents: 3, handshakeTimeoutMs: 5000, store: 'memory', restart: { maxAttempts: 2 }, agents: {} }), join(dir, 'c.json'));
    expect(supervisorOptions({ path: null, file })).toEqual({ maxAgents: 3, handshakeTimeoutMs: 5000, store: 'memory', restart: { maxAttempts: 2 } });
  });

  it('is --state-dir, else the config, else $AGENTVISOR_STATE_DIR, else the default', () => {
    const withDir: Config = { path: null, file: { stateDir: '/from/config' } };
    const without: Config = { path: null, file: {} };
    const env = { AGENTVISOR_STATE_DIR: '/from/env', XDG_STATE_HOME: '/xdg' };
    expect(resolveStateDir('/from/flag', withDir, env)).toBe('/from/flag');
    expect(resolveStateDir(undefined, withDir, env)).toBe('/from/config');
    expect(resolveStateDir(undefined, without, env)).toBe('/from/env');
    expect(resolveStateDir(undefined, without, { XDG_STATE_HOME: '/xdg' })).toBe('/xdg/agentvisor');
  });

  it("the default is the library's toolStateDir() (the CLI's and the daemon's own)", () => {
    const saved = process.env.XDG_STATE_HOME;
    try {
      for (const value of ['/somewhere/else', '']) {
        process.env.XDG_STATE_HOME = value;
        expect(toolStateDir()).toBe(libraryToolStateDir());
      }
    } finally {
      if (saved === undefined) delete process.env.XDG_STATE_HOME;
      else process.env.XDG_STATE_HOME = saved;
    }
  });
});

describe('examples/agentvisor.config.json', () => {
  it('is a config the CLI and the library accept', async () => {
    const path = fileURLToPath(new URL('../../examples/agentvisor.config.json', import.meta.url));
    const config: Config = { path, file: parseConfig(readFileSync(path, 'utf8'), path) };
    expect(agentNames(config)).toEqual(expect.arrayContaining(['echo', 'codex', 'my-agent']));
    const supervisor = createSupervisor({ ...supervisorOptions(config), agents: await agentSpecs(config), stateDir: false, handleSignals: false });
    try {
      expect(supervisor.list().find((row) => row.name === 'my-agent')).toMatchObject({ displayName: 'My agent', status: 'idle' });
    } finally {
      await supervisor.shutdown();
    }
  });
});
