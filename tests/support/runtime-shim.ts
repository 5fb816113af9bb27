/**
 * The recording shim (tests/fixtures/runtime-shim.mjs) on PATH as `docker` and `kubectl`, for
 * the tests of the container runtimes on a host with no engine and no cluster: made before
 * the tests of the calling `describe`, removed after them, with this process's environment
 * restored. NOT an engine: "the container" is this host.
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll } from 'vitest';
import { shellQuote } from '../../services/runtimes/shell-quote.js';

const shimScript = fileURLToPath(new URL('../fixtures/runtime-shim.mjs', import.meta.url));

/** One call the shim recorded. */
export interface ShimCall {
  tool: string;
  argv: string[];
  envKeys: string[];
  pid: number;
}

/** Call at the top of a `describe`: the shim for its tests. The fields are set once its `beforeAll` ran. */
export function useRuntimeShim(containers = 'dev,agent-image,agent-0') {
  const shim = {
    dir: '',
    /** A directory for the agents' cwd. */
    work: '',
    log: '',
    /** Every call recorded so far, in order. */
    calls(): ShimCall[] {
      return existsSync(shim.log) ? readFileSync(shim.log, 'utf8').trim().split('\n').filter(Boolean).map((line) => JSON.parse(line) as ShimCall) : [];
    },
  };
  const saved: Record<string, string | undefined> = {};
  beforeAll(() => {
    shim.dir = mkdtempSync(join(tmpdir(), 'agentvisor-shim-'));
    shim.work = join(shim.dir, 'work');
    mkdirSync(shim.work);
    shim.log = join(shim.dir, 'log.jsonl');
    for (const tool of ['docker', 'kubectl']) {
      writeFileSync(join(shim.dir, tool), `#!/bin/sh\nexec ${shellQuote(process.execPath)} ${shellQuote(shimScript)} ${tool} "$@"\n`);
      chmodSync(join(shim.dir, tool), 0o755);
    }
    // The clients are found on PATH under their own names, and must reach nothing real if they were not the shim.
    const env: Record<string, string> = {
      PATH: `${shim.dir}:${process.env.PATH ?? ''}`,
      AGENTVISOR_SHIM_LOG: shim.log,
      AGENTVISOR_SHIM_CONTAINERS: containers,
      DOCKER_HOST: `unix://${join(shim.dir, 'no-daemon.sock')}`,
      KUBECONFIG: join(shim.dir, 'no-kubeconfig'),
    };
    for (const [key, value] of Object.entries(env)) {
      saved[key] = process.env[key];
      process.env[key] = value;
    }
  });
  afterAll(() => {
    for (const [key, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
    rmSync(shim.dir, { recursive: true, force: true });
  });
  return shim;
}
