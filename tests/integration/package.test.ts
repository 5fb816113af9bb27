/** The package as a consumer imports it: `import { createSupervisor } from 'agentvisor'` → dist/. */
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';

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
