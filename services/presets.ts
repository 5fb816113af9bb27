/**
 * Agent specs for well-known ACP agents. Each preset takes overrides, merged over it.
 *
 * @example
 * createSupervisor({ agents: { codex: presets.codex({ env: { RUST_LOG: 'warn' } }) } });
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { AgentSpec } from '../core/agent-spec.js';
import { isOnPath } from './executable.js';

/** How to install each preset's command; a `not_installed` error carries it as `installHint`. */
export const installHints = {
  claudeCode: 'npm install -g @agentclientprotocol/claude-agent-acp (provides claude-agent-acp; log in with `claude` first)',
  codex: 'npm install -g @zed-industries/codex-acp (provides codex-acp; log in with `codex login` or set OPENAI_API_KEY)',
  gemini: 'npm install -g @google/gemini-cli (provides gemini; log in with `gemini` once, or set GEMINI_API_KEY)',
} as const;

function withOverrides(base: AgentSpec, overrides: Partial<AgentSpec>): AgentSpec {
  return { ...base, ...overrides, env: { ...base.env, ...overrides.env } };
}

/**
 * Claude Code through its ACP adapter: `claude-agent-acp`, or the older `claude-code-acp`
 * when only that one is on PATH. With neither installed it names the current adapter, so
 * the start fails with kind `not_installed`.
 */
function claudeCode(overrides: Partial<AgentSpec> = {}): AgentSpec {
  const command = !isOnPath('claude-agent-acp') && isOnPath('claude-code-acp') ? 'claude-code-acp' : 'claude-agent-acp';
  return withOverrides({ command, args: [], displayName: 'Claude Code', installHint: installHints.claudeCode }, overrides);
}

/** OpenAI Codex through its ACP adapter, `codex-acp`. */
function codex(overrides: Partial<AgentSpec> = {}): AgentSpec {
  return withOverrides({ command: 'codex-acp', args: [], displayName: 'Codex', installHint: installHints.codex }, overrides);
}

/** Gemini CLI in ACP mode, `gemini --acp`. */
function gemini(overrides: Partial<AgentSpec> = {}): AgentSpec {
  return withOverrides({ command: 'gemini', args: ['--acp'], displayName: 'Gemini CLI', installHint: installHints.gemini }, overrides);
}

/** The bundled echo agent (examples/echo-agent.ts, built into dist/): no credentials needed. */
function echo(overrides: Partial<AgentSpec> = {}): AgentSpec {
  return withOverrides({ command: process.execPath, args: [echoAgentScript()], displayName: 'Echo' }, overrides);
}

/** Path of the compiled echo agent, whether this module runs from dist/ or from source. */
export function echoAgentScript(): string {
  const candidates = ['../examples/echo-agent.js', '../dist/examples/echo-agent.js'].map((relative) => fileURLToPath(new URL(relative, import.meta.url)));
  return candidates.find((candidate) => existsSync(candidate)) ?? candidates[candidates.length - 1]!;
}

export const presets = { claudeCode, codex, gemini, echo } as const;
