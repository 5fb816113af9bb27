/**
 * The race tests' adversary: `swapper.py` as a child process, exchanging two paths with
 * renameat2(RENAME_EXCHANGE) in a tight loop while a test reads and writes through them.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const swapperScript = fileURLToPath(new URL('./swapper.py', import.meta.url));

/**
 * What is missing for the swapper on this machine (python3, renameat2, RENAME_EXCHANGE on
 * the temporary directory's file system), or undefined when it runs.
 */
export function swapperUnavailable(): string | undefined {
  const dir = mkdtempSync(join(tmpdir(), 'agentvisor-swap-probe-'));
  try {
    const probe = spawnSync('python3', [swapperScript, '--probe', dir], { encoding: 'utf8', timeout: 10_000 });
    if (probe.error) return `python3 could not be run (${probe.error.message})`;
    if (probe.status !== 0) return probe.stderr.trim() || `python3 ${swapperScript} --probe exited with ${probe.status}`;
    return undefined;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export interface Swapper {
  /** Stops the loop; resolves with how many exchanges it made. */
  stop(): Promise<number>;
}

/**
 * Starts exchanging each pair of paths, all pairs in one process (one core); resolves once
 * every pair was exchanged once.
 */
export async function startSwapper(...pairs: Array<[string, string]>): Promise<Swapper> {
  const child = spawn('python3', [swapperScript, ...pairs.flat()], { stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (text: string) => (stdout += text));
  child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    const check = () => {
      if (stdout.includes('ready\n')) resolve();
    };
    child.stdout.on('data', check);
    void exited.then((code) => reject(new Error(`swapper exited with ${code} before it was ready: ${stderr.trim()}`)));
  });
  return {
    async stop() {
      child.stdin.end();
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      const code = await exited;
      clearTimeout(timer);
      if (code !== 0) throw new Error(`swapper exited with ${code}: ${stderr.trim()}`);
      const swaps = /swaps (\d+)/.exec(stdout);
      if (!swaps) throw new Error(`swapper did not report its swaps: ${stdout.trim()}`);
      return Number(swaps[1]);
    },
  };
}
