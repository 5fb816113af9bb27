/**
 * agentvisor: supervise AI coding-agent processes (any Agent Client Protocol agent) as
 * XState actors.
 *
 * @example
 * import { createSupervisor, presets } from 'agentvisor';
 * const supervisor = createSupervisor({ agents: { codex: presets.codex() } });
 * const codex = await supervisor.ensureAgent('codex');
 * await supervisor.shutdown();
 */

// Every public type, and the event map of `supervisor.on()`: one home, api/public-types.ts.
export type * from './api/public-types.js';

// The values: classes, functions, defaults and machines, each from its own module.
export { createSupervisor, Supervisor } from './api/supervisor.js';
export { Session } from './api/session.js';
export { defaultOptions, defaultOverload, existingDirectory } from './api/options.js';
export { AgentError } from './core/errors.js';
export { createMemoryStore, openSqliteStore, defaultRetention, storeFileName } from './runtime/store-choice.js';
export { defaultStateDir, toolStateDir } from './runtime/state-dir.js';
export { defaultContentFileBytes } from './runtime/prompt-content.js';
export { createConsoleInspector } from './inspection/console-inspector.js';
export { presets, echoAgentScript, installHints } from './services/presets.js';
export { findExecutable } from './services/executable.js';
export { presetFailurePatterns } from './core/failure-patterns.js';
export { agentMachine } from './machines/agent.machine.js';
export { supervisorMachine } from './machines/supervisor.machine.js';
export { sessionMachine } from './machines/session.machine.js';
export { ptyActivityMachine } from './machines/pty-activity.machine.js';
export { backoffDelay, defaultRestartPolicy } from './machines/policies/backoff.policy.js';
export { classifyFailure, parseRetryAt } from './machines/policies/failure-class.policy.js';
export { defaultClassPolicies } from './machines/policies/class-policy.js';
