/** The CLI's exit codes: one per thing a script tells apart, from an AgentError's or an API error's kind and class. */
import { describe, expect, it } from 'vitest';
import { AgentError } from '../../index.js';
import { ExitCode, exitCodeFor } from '../../cli/exit-codes.js';
import { ApiError } from '../../cli/daemon-client.js';

describe('exit codes', () => {
  it('are the documented numbers, each once', () => {
    expect(ExitCode).toEqual({ ok: 0, internal: 1, usage: 2, notInstalled: 3, auth: 4, agentFailed: 5, noDaemon: 6, interrupted: 130, terminated: 143 });
    expect(new Set(Object.values(ExitCode)).size).toBe(Object.keys(ExitCode).length);
  });

  it.each([
    ['not_installed', undefined, 3],
    ['auth_required', undefined, 4],
    ['auth_required', 'auth', 4],
    ['protocol_error', 'auth', 4],
    ['agent_exited', 'auth', 4],
    ['handshake_failed', undefined, 5],
    ['handshake_timeout', 'timeout', 5],
    ['agent_exited', 'crash', 5],
    ['protocol_error', undefined, 5],
    ['protocol_error', 'rate_limited', 5],
    ['protocol_error', 'usage_limit', 5],
    ['restart_intensity', undefined, 5],
    ['spawn_failed', 'config', 5],
    ['workspace_failed', 'config', 5],
    ['runtime_unreachable', 'crash', 5],
    ['runtime_auth_failed', 'config', 5],
    ['session_closed', undefined, 5],
    ['limit_reached', undefined, 5],
    ['invalid_options', undefined, 2],
    ['unknown_agent', undefined, 2],
    ['session_not_found', undefined, 2],
    ['orphan_not_found', undefined, 2],
    ['not_supported', undefined, 2],
    ['aborted', undefined, 130],
    ['shutting_down', undefined, 6],
    ['daemon_running', undefined, 2],
    ['address_unavailable', undefined, 2],
  ] as const)('an agent error %s (class %s) exits %i', (kind, failureClass, code) => {
    const error = new AgentError(kind, 'message', failureClass ? { classInfo: { class: failureClass, retryable: false, retryAt: null } } : {});
    expect(exitCodeFor(error)).toBe(code);
  });

  it.each([
    ['invalid_request', undefined, 2],
    ['invalid_json', undefined, 2],
    ['payload_too_large', undefined, 2],
    ['permission_not_found', undefined, 2],
    ['elicitation_not_found', undefined, 2],
    ['terminal_not_found', undefined, 2],
    ['unsupported', undefined, 2],
    ['too_large', undefined, 2],
    ['unauthorized', undefined, 6],
    ['forbidden_host', undefined, 6],
    ['internal', undefined, 1],
    ['not_found', undefined, 1],
    ['method_not_allowed', undefined, 1],
    ['store_failed', undefined, 1],
    ['not_installed', 'config', 3],
    ['handshake_failed', 'crash', 5],
    ['something_new', 'crash', 5],
    ['something_new', undefined, 1],
  ] as const)("an API error body's kind %s (class %s) exits %i", (kind, failureClass, code) => {
    expect(exitCodeFor(new ApiError(424, { kind, message: 'message', ...(failureClass ? { class: failureClass } : {}) }))).toBe(code);
  });
});
