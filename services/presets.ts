/**
 * Agent specs for well-known ACP agents. Each preset takes overrides, merged over it.
 *
 * @example
 * createSupervisor({ agents: { codex: presets.codex({ env: { RUST_LOG: 'warn' } }) } });
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { AgentSpec } from '../core/agent-spec.js';
import { presetFailurePatterns } from '../core/failure-patterns.js';
import type { FailurePattern } from '../core/failure-class.js';
import { isOnPath } from './executable.js';

/** How to install each preset's command; a `not_installed` error carries it as `installHint`. */
export const installHints = {
  claudeCode: 'npm install -g @agentclientprotocol/claude-agent-acp (provides claude-agent-acp; log in with `claude-agent-acp --cli auth login`, or set ANTHROPIC_API_KEY)',
  claudeCodeCli: 'npm install -g @anthropic-ai/claude-code (provides claude; log in with `claude` first)',
  codex: 'npm install -g @zed-industries/codex-acp (provides codex-acp; log in with `codex login`, or set OPENAI_API_KEY and choose it with `agentvisor auth codex openai-api-key`)',
  gemini: 'npm install -g @google/gemini-cli (provides gemini; log in with `gemini` once, or set GEMINI_API_KEY)',
} as const;

function withOverrides(base: AgentSpec, overrides: Partial<AgentSpec>): AgentSpec {
  // The caller's failure patterns come first: they are tried before the preset's.
  const failurePatterns = [...(overrides.failurePatterns ?? []), ...(base.failurePatterns ?? [])];
  return { ...base, ...overrides, env: { ...base.env, ...overrides.env }, ...(failurePatterns.length > 0 ? { failurePatterns } : {}) };
}

/** A preset's patterns as a spec takes them (the RegExp of each). */
function patterns(list: readonly FailurePattern[]): NonNullable<AgentSpec['failurePatterns']> {
  return list.map((pattern) => ({ class: pattern.class, pattern: new RegExp(pattern.source, pattern.flags ?? '') }));
}

/**
 * Claude Code through its ACP adapter: `claude-agent-acp`, or the older `claude-code-acp`
 * when only that one is on PATH. With neither installed it names the current adapter, so
 * the start fails with kind `not_installed`.
 */
function claudeCode(overrides: Partial<AgentSpec> = {}): AgentSpec {
  const command = !isOnPath('claude-agent-acp') && isOnPath('claude-code-acp') ? 'claude-code-acp' : 'claude-agent-acp';
  return withOverrides({ command, args: [], displayName: 'Claude Code', installHint: installHints.claudeCode, failurePatterns: patterns(presetFailurePatterns.claudeCode) }, overrides);
}

/**
 * OpenAI Codex through its ACP adapter, `codex-acp`. It does not exit when its stdin closes
 * (measured: every run waited out the whole 5 s shutdownTimeoutMs; SIGTERM then ended it in
 * ~5 ms), so its stop ladder goes to SIGTERM after 250 ms: a stop takes well under a second.
 */
function codex(overrides: Partial<AgentSpec> = {}): AgentSpec {
  return withOverrides(
    { command: 'codex-acp', args: [], displayName: 'Codex', installHint: installHints.codex, shutdownTimeoutMs: codexShutdownTimeoutMs, failurePatterns: patterns(presetFailurePatterns.codex) },
    overrides,
  );
}

/** How long Codex gets to exit after its stdin closes before SIGTERM (it never does: see `codex`). */
export const codexShutdownTimeoutMs = 250;

/**
 * Claude Code itself in headless streaming mode (`claude -p --input-format stream-json
 * --output-format stream-json --verbose`), behind agentvisor's ACP bridge
 * (docs/stream-json.md): no adapter to install, one session per process, the context kept
 * across restarts with `--resume`. Permission prompts are the CLI's own settings (add e.g.
 * `--permission-mode acceptEdits` or `--allowedTools` to `args`).
 */
function claudeCodeStreamJson(overrides: Partial<AgentSpec> = {}): AgentSpec {
  return withOverrides(
    {
      command: 'claude',
      args: ['-p', '--input-format', 'stream-json', '--output-format', 'stream-json', '--verbose'],
      protocol: 'stream-json',
      displayName: 'Claude Code',
      installHint: installHints.claudeCodeCli,
      failurePatterns: patterns(presetFailurePatterns.claudeCode),
    },
    overrides,
  );
}

/** Gemini CLI in ACP mode, `gemini --acp`. */
function gemini(overrides: Partial<AgentSpec> = {}): AgentSpec {
  return withOverrides({ command: 'gemini', args: ['--acp'], displayName: 'Gemini CLI', installHint: installHints.gemini, failurePatterns: patterns(presetFailurePatterns.gemini) }, overrides);
}

/**
 * Any interactive CLI in a pseudo-terminal (docs/pty.md): `presets.pty('aider', ['--no-git'])`.
 * A prompt is typed into it; the turn ends when it waits for input again.
 */
function pty(command: string, args: string[] = [], overrides: Partial<AgentSpec> = {}): AgentSpec {
  return withOverrides({ command, args, protocol: 'pty', displayName: command }, overrides);
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

export const presets = { claudeCode, claudeCodeStreamJson, codex, gemini, pty, echo } as const;
