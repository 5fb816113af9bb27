/**
 * An agent's runtime (docs/runtimes.md), as the command this host spawns: null for `local`
 * (the agent's own command, under the supervisor's containment); bubblewrap for `sandbox`;
 * ssh for `ssh`; docker or kubectl for containers. The process actor spawns what this returns
 * and drives the stop ladder through it: no machine knows where an agent runs.
 */
import type { AgentSpec } from '../../core/agent-spec.js';
import { runsOnThisHost, type RuntimeKind } from '../../core/runtime-spec.js';
import { supervisorInstance } from '../agent-records.service.js';
import { dockerCommand, kubernetesCommand } from './container.runtime.js';
import type { RuntimeCommand } from './runtime.js';
import { sandboxCommand } from './sandbox.runtime.js';
import { sshCommand } from './ssh.runtime.js';

export type { RuntimeCommand };

/**
 * The client capabilities this host serves an agent of `runtime` kind: an agent on another
 * host or in a container has its own files and shell there, so none; a sandboxed agent no
 * terminals (`terminal/create` would run the command here, outside its sandbox).
 */
export function servedCapabilities(runtime: RuntimeKind | undefined, capabilities: { fs: boolean; terminal: boolean }): { fs: boolean; terminal: boolean } {
  const remote = !runsOnThisHost(runtime);
  return { fs: capabilities.fs && !remote, terminal: capabilities.terminal && !remote && runtime !== 'sandbox' };
}

/**
 * What to spawn for `spec` (its `cwd` already resolved: the workspace, or the host's); null:
 * run it here as it is. `agent` names it where the runtime labels what it starts.
 */
export function runtimeCommandFor(spec: AgentSpec, cwd: string, agent?: string): RuntimeCommand | null {
  const runtime = spec.runtime;
  switch (runtime?.kind) {
    case undefined:
    case 'local':
      return null;
    case 'sandbox':
      return sandboxCommand(spec, runtime, { cwd });
    case 'ssh':
      return sshCommand(spec, runtime);
    case 'docker':
      return dockerCommand(spec, runtime, { ...(agent !== undefined ? { agent } : {}), supervisor: supervisorInstance() });
    case 'kubernetes':
      return kubernetesCommand(spec, runtime);
  }
}
