/**
 * Whose state (docs/store.md): two programs that embed the library and give no `stateDir` each
 * get a directory of their own under the tools' one, named after their package (or script),
 * and never see each other's sessions; the CLI and daemon keep `toolStateDir()`. Real node
 * processes running the built package.
 */
import { mkdirSync, existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { fixtureAgentScript, useRealAgentEnvironment } from '../support/real-agents.js';

const env = useRealAgentEnvironment();
const distIndex = fileURLToPath(new URL('../../dist/index.js', import.meta.url));

/** A program in its own folder: opens a session on the fixture agent (no stateDir), then lists the stored sessions. */
function program(folder: string, packageName: string | null): string {
  const dir = env.files.path(folder);
  mkdirSync(dir);
  if (packageName) writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: packageName, type: 'module' }));
  const script = join(dir, 'main.mjs');
  writeFileSync(
    script,
    `import { createSupervisor, defaultStateDir, toolStateDir } from ${JSON.stringify(distIndex)};
const supervisor = createSupervisor({ handleSignals: false, agents: { fixture: { command: process.execPath, args: [${JSON.stringify(fixtureAgentScript)}] } } });
const session = await supervisor.newSession('fixture', { cwd: ${JSON.stringify(dir)} });
await session.prompt('hello');
const stored = (await supervisor.sessions()).map((entry) => entry.sessionId);
await supervisor.shutdown();
console.log(JSON.stringify({ dir: defaultStateDir(), tools: toolStateDir(), session: session.id, stored }));
`,
  );
  return script;
}

async function run(script: string): Promise<{ dir: string; tools: string; session: string; stored: string[] }> {
  const result = await execa(process.execPath, [script], { env: { XDG_STATE_HOME: env.files.path('xdg') }, reject: false });
  expect(result.exitCode, result.stderr).toBe(0);
  return JSON.parse(result.stdout) as { dir: string; tools: string; session: string; stored: string[] };
}

describe('whose state', () => {
  it('two embedding programs without stateDir: each its own directory under toolStateDir()/programs, neither sees the other\'s sessions', async () => {
    const first = await run(program('first', '@acme/tool'));
    const second = await run(program('second', null));
    const tools = join(env.files.path('xdg'), 'agentvisor');
    expect(first.tools).toBe(tools);
    expect(first.dir).toMatch(new RegExp(`^${tools}/programs/acme-tool-[0-9a-f]{8}$`));
    expect(second.dir).toMatch(new RegExp(`^${tools}/programs/main-[0-9a-f]{8}$`));
    expect(existsSync(join(first.dir, 'agentvisor.db'))).toBe(true);
    expect(existsSync(join(second.dir, 'agentvisor.db'))).toBe(true);
    expect(first.stored).toEqual([first.session]);
    expect(second.stored).toEqual([second.session]);
    // The same program again: its own directory, its earlier session still there.
    const again = await run(join(env.files.path('first'), 'main.mjs'));
    expect(again.dir).toBe(first.dir);
    expect(again.stored).toEqual(expect.arrayContaining([first.session, again.session]));
    expect(existsSync(join(tools, 'agentvisor.db')), 'nothing in the tools\' own directory').toBe(false);
  });
});
