/**
 * Defect 12 (check-then-use races), 13 (the root swapped) and 5 (a FIFO swapped in), raced
 * for real: a python
 * child (tests/support/swapper.py) exchanges a path and a symlink pointing outside with
 * renameat2(RENAME_EXCHANGE) in a tight loop, while the sandbox — directly, then through a
 * real fixture agent over ACP — reads and writes through that path thousands of times.
 * Nothing outside may ever be read, written or created.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createSupervisor, type Session, type Supervisor } from '../../index.js';
import { FsSandbox, SandboxViolation } from '../../services/fs-sandbox.service.js';
import { TerminalSet } from '../../services/terminals/terminal-set.js';
import { collectChunks, command, fixtureSpec } from '../support/real-agents.js';
import { startSwapper as startSwapperProcess, swapperUnavailable, type Swapper } from '../support/swapper.js';

const SECRET = 'top secret outside content';
/**
 * Reads and writes per race: directly on the sandbox (about 2 s on 2 idle cores), through
 * the agent (about 4 s). A race stops after RACE_MAX_MS even short of its count, and must
 * then still have run its minimum (a machine busy with other tests is slower).
 */
const RACE_OPS = 3_000;
const RACE_MIN_OPS = 2_000;
const AGENT_RACE_OPS = 1_500;
const AGENT_RACE_MIN_OPS = 1_000;
const RACE_MAX_MS = 8_000;
/** Spawns are slower than fs calls: thousands of terminals still fit in the time. */
const TERMINAL_RACE_OPS = 2_000;
const TERMINAL_RACE_MIN_OPS = 500;
// 500 terminals take ~4 s on an idle machine; a busy CI run once needed a little over 12 s.
const TERMINAL_RACE_MAX_MS = 20_000;

const unavailable = swapperUnavailable();
if (unavailable) console.warn(`sandbox race tests SKIPPED: ${unavailable}`);

let base: string;
let root: string;
let outside: string;

beforeEach(() => {
  base = mkdtempSync(join(tmpdir(), 'agentvisor-races-'));
  root = join(base, 'root');
  outside = join(base, 'outside');
  mkdirSync(root);
  mkdirSync(outside);
  writeFileSync(join(outside, 'secret.txt'), SECRET);
  writeFileSync(join(outside, 'x.txt'), SECRET);
});

/** Swappers still running when a test ends early (a failed assertion) are stopped. */
const running = new Set<Swapper>();

async function startSwapper(...pairs: Array<[string, string]>): Promise<Swapper> {
  const swapper = await startSwapperProcess(...pairs);
  running.add(swapper);
  return {
    stop: () => {
      running.delete(swapper);
      return swapper.stop();
    },
  };
}

afterEach(async () => {
  await Promise.all([...running].map((swapper) => swapper.stop().catch(() => 0)));
  running.clear();
  rmSync(base, { recursive: true, force: true });
});

/** Every path below `dir`, relative, sorted: what the outside directory holds. */
function tree(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' }).sort();
}

/** Outcomes of a race: answers, refusals, leaks (outside content read), anything unexpected. */
function tally() {
  return { ok: 0, refused: 0, leaks: [] as string[], unexpected: [] as string[] };
}

type Tally = ReturnType<typeof tally>;

/**
 * What every race must end with: enough operations and swaps ran, both sides of the race
 * were met (the swap happened under the requests), nothing outside was read, written or
 * created, and nothing unexpected was thrown.
 */
function expectContained(seen: Tally, ops: number, minOps: number, swaps: number): void {
  expect(ops).toBeGreaterThanOrEqual(minOps);
  expect(swaps).toBeGreaterThan(1_000);
  expect(seen.leaks).toEqual([]);
  expect(seen.unexpected).toEqual([]);
  expect(readFileSync(join(outside, 'secret.txt'), 'utf8')).toBe(SECRET);
  expect(tree(outside)).toEqual(['secret.txt', 'x.txt']);
  expect(seen.ok).toBeGreaterThan(0);
  expect(seen.refused).toBeGreaterThan(0);
}

/**
 * One raced operation into `seen`: served (a read's content checked for the outside secret),
 * refused by the sandbox (`refusedIf` narrows which refusals count), or unexpected.
 */
async function attempt(seen: Tally, work: () => Promise<string | void>, refusedIf: (error: SandboxViolation) => boolean = () => true): Promise<void> {
  try {
    const content = await work();
    if (typeof content === 'string' && content.includes('secret')) seen.leaks.push(content);
    seen.ok++;
  } catch (error) {
    if (error instanceof SandboxViolation && refusedIf(error)) seen.refused++;
    else seen.unexpected.push(String(error));
  }
}

/**
 * Runs `op(i)` from `workers` loops until `target` ops ran, or `RACE_MAX_MS` passed on a
 * slow (loaded) machine; returns how many ran.
 */
async function hammer(target: number, workers: number, op: (i: number) => Promise<void>, maxMs = RACE_MAX_MS): Promise<number> {
  const until = Date.now() + maxMs;
  let count = 0;
  await Promise.all(
    Array.from({ length: workers }, async () => {
      while (count < target && Date.now() < until) await op(count++);
    }),
  );
  return count;
}

describe.skipIf(unavailable !== undefined)('defect 12: check-then-use races, raced with renameat2(RENAME_EXCHANGE)', () => {
  it('defect 12: a file swapped with a symlink to an outside file — no read leaks, no write lands outside (sandbox directly)', async () => {
    writeFileSync(join(root, 'f.txt'), 'inside');
    symlinkSync(join(outside, 'secret.txt'), join(root, 'flink'));
    const sandbox = await FsSandbox.open([root]);
    const seen = tally();
    const swapper = await startSwapper([join(root, 'f.txt'), join(root, 'flink')]);
    const ops = await hammer(RACE_OPS, 4, (i) =>
      attempt(seen, () => (i % 2 === 0 ? sandbox.readTextFile(join(root, 'f.txt')) : sandbox.writeTextFile(join(root, 'f.txt'), `written ${i}`))),
    );
    const swaps = await swapper.stop();
    expectContained(seen, ops, RACE_MIN_OPS, swaps);
  });

  it('defect 12: a directory swapped with a symlink to an outside directory — no read leaks, nothing created outside (sandbox directly)', async () => {
    mkdirSync(join(root, 'd'));
    writeFileSync(join(root, 'd', 'x.txt'), 'inside');
    symlinkSync(outside, join(root, 'dlink'));
    const sandbox = await FsSandbox.open([root]);
    const seen = tally();
    const swapper = await startSwapper([join(root, 'd'), join(root, 'dlink')]);
    const ops = await hammer(RACE_OPS, 4, (i) =>
      attempt(seen, () => {
        if (i % 3 === 0) return sandbox.readTextFile(join(root, 'd', 'x.txt'));
        if (i % 3 === 1) return sandbox.writeTextFile(join(root, 'd', `new-${i}.txt`), 'x'); // the file itself created
        return sandbox.writeTextFile(join(root, 'd', `dir-${i}`, 'deeper', 'file.txt'), 'x'); // parents created
      }),
    );
    const swaps = await swapper.stop();
    expectContained(seen, ops, RACE_MIN_OPS, swaps);
    expect(readFileSync(join(outside, 'x.txt'), 'utf8')).toBe(SECRET);
  });

  it('defect 5: a file swapped with a FIFO — every read and write settles at once, the FIFO is never read or written', async () => {
    writeFileSync(join(root, 'f.txt'), 'inside');
    execFileSync('mkfifo', [join(root, 'fifo')]);
    const sandbox = await FsSandbox.open([root]);
    const seen = tally();
    const swapper = await startSwapper([join(root, 'f.txt'), join(root, 'fifo')]);
    // A request that blocked on the FIFO would hold a threadpool thread: four of them stop every read.
    const ops = await hammer(RACE_OPS, 4, (i) =>
      attempt(
        seen,
        () => (i % 2 === 0 ? sandbox.readTextFile(join(root, 'f.txt')) : sandbox.writeTextFile(join(root, 'f.txt'), `written ${i}`)),
        (error) => error.reason === 'not_regular',
      ),
    );
    await swapper.stop();
    expect(ops).toBeGreaterThanOrEqual(RACE_MIN_OPS);
    expect(seen.unexpected).toEqual([]);
    expect(seen.ok).toBeGreaterThan(0);
    expect(seen.refused).toBeGreaterThan(0);
  });

  it('defect 13: the root itself swapped with a symlink to outside — refused or served from the real root, never outside (sandbox directly)', async () => {
    writeFileSync(join(root, 'x.txt'), 'inside');
    symlinkSync(outside, join(base, 'rootlink'));
    const sandbox = await FsSandbox.open([root]); // the session opens while root is the real directory
    const seen = tally();
    const swapper = await startSwapper([root, join(base, 'rootlink')]);
    const ops = await hammer(RACE_OPS, 4, (i) =>
      attempt(seen, () => (i % 2 === 0 ? sandbox.readTextFile(join(root, 'x.txt')) : sandbox.writeTextFile(join(root, `new-${i}.txt`), 'x'))),
    );
    const swaps = await swapper.stop();
    expect(ops).toBeGreaterThanOrEqual(RACE_MIN_OPS);
    expect(swaps).toBeGreaterThan(1_000);
    expect(seen.leaks).toEqual([]);
    expect(seen.unexpected).toEqual([]);
    expect(tree(outside)).toEqual(['secret.txt', 'x.txt']);
    expect(seen.refused).toBeGreaterThan(0);
  });
});

describe.skipIf(unavailable !== undefined)("a terminal's cwd, raced with renameat2(RENAME_EXCHANGE)", () => {
  it('a cwd swapped with a symlink to outside between its check and the spawn: the command runs in the directory that was checked, never outside', async () => {
    mkdirSync(join(root, 'd'));
    symlinkSync(outside, join(root, 'dlink'));
    const sandbox = await FsSandbox.open([root]);
    const terminals = new TerminalSet(64 * 1024, { maxTerminals: 16 });
    const seen = tally();
    const swapper = await startSwapper([join(root, 'd'), join(root, 'dlink')]);
    const outsideReal = realpathSync(outside);
    const ops = await hammer(TERMINAL_RACE_OPS, 4, (i) =>
      attempt(seen, async () => {
        // The agent's terminal/create, as the ACP handler makes it: the cwd opened and checked in create.
        const id = await terminals.create({ command: '/bin/pwd', args: ['-P'], cwd: () => sandbox.openWorkingDirectory('read', join(root, i % 2 === 0 ? 'd' : 'dlink')) });
        await terminals.waitForExit(id);
        const { output } = terminals.output(id);
        await terminals.release(id);
        if (output.startsWith(outsideReal)) return `secret: ran in ${output.trim()}`;
        if (!output.startsWith(realpathSync(root))) throw new Error(`ran in ${output.trim()}`);
      }),
      TERMINAL_RACE_MAX_MS,
    );
    const swaps = await swapper.stop();
    await terminals.releaseAll();
    expectContained(seen, ops, TERMINAL_RACE_MIN_OPS, swaps);
  }, 40_000);
});

describe.skipIf(unavailable !== undefined)('defect 12 through a real agent over ACP', () => {
  let supervisor: Supervisor | undefined;

  afterEach(async () => {
    await supervisor?.shutdown();
    supervisor = undefined;
  });

  async function ask(session: Session, op: Record<string, unknown>): Promise<string> {
    const received = collectChunks(session);
    await session.prompt(command(op));
    received.off();
    return received.text();
  }

  it('defect 12: fs/read_text_file and fs/write_text_file while a file and a directory swap with symlinks to outside', async () => {
    writeFileSync(join(root, 'f.txt'), 'inside');
    symlinkSync(join(outside, 'secret.txt'), join(root, 'flink'));
    mkdirSync(join(root, 'd'));
    writeFileSync(join(root, 'd', 'x.txt'), 'inside');
    symlinkSync(outside, join(root, 'dlink'));
    supervisor = createSupervisor({ agents: { fixture: fixtureSpec() }, store: 'memory' });
    const violations: string[] = [];
    supervisor.on('sandbox:violation', ({ operation }) => violations.push(operation));
    // Several sessions: each runs one turn at a time, together they keep requests in flight.
    const sessions = await Promise.all(Array.from({ length: 8 }, () => supervisor!.newSession('fixture', { cwd: root })));
    const seen = tally();
    // Both pairs in one swapper process: one core swaps, the other serves the agent.
    const swapper = await startSwapper([join(root, 'f.txt'), join(root, 'flink')], [join(root, 'd'), join(root, 'dlink')]);
    const ops = [
      () => ({ op: 'read', path: join(root, 'f.txt') }),
      (i: number) => ({ op: 'write', path: join(root, 'f.txt'), content: `written ${i}` }),
      () => ({ op: 'read', path: join(root, 'd', 'x.txt') }),
      (i: number) => ({ op: 'write', path: join(root, 'd', `new-${i}.txt`), content: 'x' }),
      (i: number) => ({ op: 'write', path: join(root, 'd', `dir-${i}`, 'file.txt'), content: 'x' }),
    ];
    let next = 0;
    const until = Date.now() + RACE_MAX_MS;
    await Promise.all(
      sessions.map(async (session) => {
        while (next < AGENT_RACE_OPS && Date.now() < until) {
          const i = next++;
          const answer = await ask(session, ops[i % ops.length]!(i));
          if (answer.includes('secret')) seen.leaks.push(answer);
          else if (/^(read|write):/.test(answer)) seen.ok++;
          else if (/^error:.*Access denied/.test(answer)) seen.refused++;
          else seen.unexpected.push(answer);
        }
      }),
    );
    const swaps = await swapper.stop();
    expectContained(seen, next, AGENT_RACE_MIN_OPS, swaps);
    expect(violations.length).toBe(seen.refused);
  });
});
