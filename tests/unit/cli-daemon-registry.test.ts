/**
 * The registry of running daemons (daemon/daemon-files.ts) and how the CLI picks a daemon by it
 * (cli/daemon-discovery.ts): an entry per daemon under `<toolStateDir>/daemons`, written with
 * `daemon.json` and removed with it; an entry whose process is gone is ignored and removed; the
 * registry is asked only when nothing names a state directory.
 */
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { toolStateDir } from '../../index.js';
import { daemonRegistryDir, noteDaemonConfig, removeDaemonFiles, runningDaemons, writeDaemonFiles, type DaemonInfo } from '../../daemon/daemon-files.js';
import { namesStateDir } from '../../cli/daemon-discovery.js';

let dir: string;
let savedStateHome: string | undefined;
const info = (pid: number): DaemonInfo => ({ pid, host: '127.0.0.1', port: 1, url: 'http://127.0.0.1:1', startedAt: Date.now(), version: '0.0.0' });

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'agentvisor-registry-'));
  savedStateHome = process.env.XDG_STATE_HOME;
  process.env.XDG_STATE_HOME = join(dir, 'xdg-state');
});

afterEach(() => {
  process.env.XDG_STATE_HOME = savedStateHome;
  noteDaemonConfig(null);
  rmSync(dir, { recursive: true, force: true });
});

describe('the registry of running daemons', () => {
  it("lives in the library's toolStateDir()", () => {
    expect(daemonRegistryDir()).toBe(join(toolStateDir(), 'daemons'));
  });

  it('has an entry per daemon while its files are there: state dir, files, config; none once they are removed', () => {
    const stateDir = join(dir, 'custom-state');
    noteDaemonConfig(join(dir, 'a', 'agentvisor.config.json'));
    writeDaemonFiles(stateDir, info(process.pid), 'token');
    expect(runningDaemons()).toEqual([
      expect.objectContaining({
        pid: process.pid,
        stateDir,
        infoFile: join(stateDir, 'daemon.json'),
        tokenFile: join(stateDir, 'daemon.token'),
        configPath: join(dir, 'a', 'agentvisor.config.json'),
        cwd: process.cwd(),
      }),
    ]);
    removeDaemonFiles(stateDir);
    expect(runningDaemons()).toEqual([]);
    expect(readdirSync(daemonRegistryDir())).toEqual([]);
  });

  it('ignores, and removes, an entry whose daemon is dead or whose daemon.json names another process', () => {
    const dead = join(dir, 'dead');
    writeDaemonFiles(dead, info(999_999_9), 'token'); // a pid no process has (above pid_max)
    const replaced = join(dir, 'replaced');
    writeDaemonFiles(replaced, info(process.pid), 'token');
    writeFileSync(join(replaced, 'daemon.json'), JSON.stringify(info(process.ppid))); // a newer daemon's files, no entry of it
    expect(runningDaemons()).toEqual([]);
    expect(readdirSync(daemonRegistryDir())).toEqual([]);
  });

  it('is no folder at all until a daemon runs', () => {
    expect(existsSync(daemonRegistryDir())).toBe(false);
    expect(runningDaemons()).toEqual([]);
  });
});

describe('when the CLI asks the registry', () => {
  const noConfig = { path: null, file: {} };
  it('only when neither a flag, the environment nor the config file names the state directory', () => {
    expect(namesStateDir({}, noConfig, {})).toBe(false);
    expect(namesStateDir({}, { path: '/a/agentvisor.config.json', file: {} }, {})).toBe(false); // a config found, naming no stateDir
    expect(namesStateDir({ stateDir: '/x' }, noConfig, {})).toBe(true);
    expect(namesStateDir({ config: '/a/c.json' }, noConfig, {})).toBe(true);
    expect(namesStateDir({}, noConfig, { AGENTVISOR_STATE_DIR: '/x' })).toBe(true);
    expect(namesStateDir({}, noConfig, { AGENTVISOR_CONFIG: '/a/c.json' })).toBe(true);
    expect(namesStateDir({}, { path: '/a/c.json', file: { stateDir: '/a/state' } }, {})).toBe(true);
  });
});
