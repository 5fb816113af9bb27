/**
 * The `'allow-reads'` permission policy in the broker: a read-only tool call (kinds read,
 * search, fetch, think) gets the option `'allow'` would pick at once; every other kind, a tool
 * call without a kind, or one offering no allow option is asked as under `'ask'`.
 */
import { describe, expect, it } from 'vitest';
import { SimulatedClock } from 'xstate';
import type { ToolKind } from '@agentclientprotocol/sdk';
import type { RequestPermissionRequest } from '../../core/acp-types.js';
import { createSupervisor } from '../../index.js';
import { isReadOnlyToolCall, READ_ONLY_TOOL_KINDS, type PermissionRequest } from '../../core/permission-policy.js';
import { PermissionBroker } from '../../runtime/permission-broker.js';

const options: RequestPermissionRequest['options'] = [
  { optionId: 'always', name: 'Always', kind: 'allow_always' },
  { optionId: 'once', name: 'Once', kind: 'allow_once' },
  { optionId: 'no', name: 'No', kind: 'reject_once' },
];

function requestOf(kind: ToolKind | undefined, offered = options): RequestPermissionRequest {
  return { sessionId: 's1', toolCall: { toolCallId: 't1', title: 'tool', ...(kind === undefined ? {} : { kind }) }, options: offered };
}

function broker() {
  const asked: PermissionRequest[] = [];
  const instance = new PermissionBroker({ clock: new SimulatedClock(), timeoutMs: 1000, ask: (request) => (asked.push(request), true), pending: () => false, settled: () => {} });
  return { asked, instance };
}

describe("the 'allow-reads' policy", () => {
  it('allows the read-only kinds at once, with the option allow would pick', async () => {
    expect([...READ_ONLY_TOOL_KINDS].sort()).toEqual(['fetch', 'read', 'search', 'think']);
    for (const kind of READ_ONLY_TOOL_KINDS) {
      const { asked, instance } = broker();
      expect(await instance.request('a', requestOf(kind as ToolKind), 'allow-reads', new AbortController().signal)).toEqual({ outcome: { outcome: 'selected', optionId: 'once' } });
      expect(asked).toEqual([]);
    }
  });

  it('asks for every other kind, a tool call without a kind, and a read that offers no allow option', async () => {
    const cases: Array<[ToolKind | undefined, RequestPermissionRequest['options']]> = [
      ['edit', options],
      ['delete', options],
      ['move', options],
      ['execute', options],
      ['switch_mode', options],
      ['other', options],
      [undefined, options],
      ['read', options.slice(2)],
    ];
    for (const [kind, offered] of cases) {
      const { asked, instance } = broker();
      const answer = instance.request('a', requestOf(kind, offered), 'allow-reads', new AbortController().signal);
      expect(asked, `${kind ?? 'no kind'} is asked`).toHaveLength(1);
      asked[0]!.respond('no');
      expect(await answer).toEqual({ outcome: { outcome: 'selected', optionId: 'no' } });
    }
    expect(isReadOnlyToolCall({ kind: null })).toBe(false);
  });

  it('is a policy the supervisor accepts; an unknown one is invalid_options naming it', async () => {
    const supervisor = createSupervisor({ stateDir: false, handleSignals: false, permissions: 'allow-reads' });
    await supervisor.shutdown();
    expect(() => createSupervisor({ stateDir: false, handleSignals: false, permissions: 'allow-writes' as never })).toThrow(/permissions: must be 'ask', 'allow', 'deny', 'allow-reads' or a function/);
  });
});
