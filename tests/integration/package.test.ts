/** The package as a consumer imports it: `import { createSupervisor } from 'agentvisor'` → dist/. */
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));

describe('package entry', () => {
  it('resolves "agentvisor" to the built dist/ with types, and it runs', async () => {
    const script = `
      import { createSupervisor, presets, AgentError, agentMachine } from 'agentvisor';
      const supervisor = createSupervisor({ agents: { echo: presets.echo() } });
      const echo = await supervisor.ensureAgent('echo');
      await supervisor.shutdown();
      console.log(JSON.stringify({ name: echo.agentInfo.name, error: typeof AgentError, machine: agentMachine.id, resolved: import.meta.resolve('agentvisor') }));
    `;
    const result = await execa(process.execPath, ['--input-type=module', '-e', script], { reject: false, timeout: 15_000 });
    expect(result.stderr).toBe('');
    const output = JSON.parse(result.stdout);
    expect(output).toMatchObject({ name: 'echo-agent', error: 'function', machine: 'agent' });
    expect(output.resolved).toMatch(/\/dist\/index\.js$/);
  });
});

describe('the CLI in a checkout', () => {
  it('runs as dist/cli/main.js itself after a build: the build leaves it executable (npx agentvisor, the bin link)', async () => {
    const bin = join(root, 'dist', 'cli', 'main.js');
    expect(statSync(bin).mode & 0o111, 'dist/cli/main.js has no execute bit').toBe(0o111);
    const result = await execa(bin, ['--version'], { reject: false, timeout: 15_000 });
    const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string };
    expect({ exitCode: result.exitCode, stdout: result.stdout.trim() }).toEqual({ exitCode: 0, stdout: version });
  });
});

describe('packed files', () => {
  it("npm pack's archive is ignored by git", async () => {
    const result = await execa('git', ['check-ignore', '--quiet', '--no-index', 'agentvisor-0.1.0.tgz'], { cwd: root, reject: false });
    expect(result.exitCode, 'agentvisor-0.1.0.tgz is not in .gitignore').toBe(0);
  });

  it('ship the library, its diagrams, README and LICENSE, and no tests or fixtures', async () => {
    // --ignore-scripts: list the dist/ that `npm test` just built instead of rebuilding it
    // under the other test files' feet (prepack rebuilds it for a real `npm pack`).
    const result = await execa('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: root, timeout: 15_000 });
    const [pack] = JSON.parse(result.stdout) as Array<{ files: Array<{ path: string }> }>;
    const files = pack!.files.map((file) => file.path);

    expect(files).toEqual(expect.arrayContaining(['dist/index.js', 'dist/index.d.ts', 'dist/examples/echo-agent.js', 'LICENSE', 'README.md', 'package.json']));
    expect(files.some((file) => file.startsWith('visualizations/') && file.endsWith('.svg'))).toBe(true);
    expect(files.filter((file) => file.startsWith('dist/tests/') || /fixture/i.test(file))).toEqual([]);
    // The CLI and daemon (dist/cli, dist/daemon) and the dashboard page the daemon serves.
    expect(files).toEqual(expect.arrayContaining(['dist/cli/main.js', 'dist/daemon/daemon.js', 'dashboard/index.html', 'dashboard/app.js', 'dashboard/style.css']));
    expect(files.filter((file) => !/^(dist|visualizations|dashboard|docs)\//.test(file) && !['LICENSE', 'README.md', 'package.json'].includes(file))).toEqual([]);
    // The README's links to files of the package resolve once it is installed: docs/ ships.
    const readmeLinks = [...readFileSync(join(root, 'README.md'), 'utf8').matchAll(/\]\((?!https?:|#|mailto:)([^)#\s]+)/g)].map((match) => match[1]!.replace(/^\.\//, ''));
    expect(readmeLinks.length).toBeGreaterThan(0);
    expect(readmeLinks.filter((link) => !files.includes(link) && !files.some((file) => file.startsWith(`${link.replace(/\/$/, '')}/`)))).toEqual([]);
    // No library sources: the only .ts files are the visualizer's self-contained statecharts.
    expect(files.filter((file) => file.endsWith('.ts') && !file.endsWith('.d.ts') && !/^visualizations\/[\w-]+\.machine\.ts$/.test(file))).toEqual([]);
    expect(files).toEqual(expect.arrayContaining(['visualizations/agent.machine.ts', 'visualizations/supervisor.machine.ts', 'visualizations/session.machine.ts']));

    // Source maps carry their sources (the .ts files are not shipped).
    const maps = files.filter((file) => file.endsWith('.map'));
    expect(maps.length).toBeGreaterThan(0);
    for (const map of maps) {
      const { sources, sourcesContent } = JSON.parse(readFileSync(join(root, map), 'utf8')) as { sources: string[]; sourcesContent?: Array<string | null> };
      expect(sourcesContent?.length, `${map} has no sourcesContent`).toBe(sources.length);
      expect(sourcesContent!.every((content) => typeof content === 'string' && content.length > 0), map).toBe(true);
    }
  });
});
