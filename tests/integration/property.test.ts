/**
 * Property-based (fast-check): whatever a caller passes to the public API and whatever an
 * agent sends after a valid handshake, the host survives, every failure is a typed
 * `AgentError`, no rejection goes unhandled, no process is left, and a normal prompt still
 * works afterwards. The agent is tests/fixtures/raw-agent.mjs, scripted per turn with
 * generated garbage.
 */
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentError, createSupervisor, type AgentSpec, type Supervisor } from '../../index.js';
import { isRunning } from '../support/real-agents.js';

const rawAgentScript = fileURLToPath(new URL('../fixtures/raw-agent.mjs', import.meta.url));
const rawAgent: AgentSpec = { command: process.execPath, args: [rawAgentScript], displayName: 'Raw' };

/** Unhandled rejections during the suite: none may happen. */
const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => unhandled.push(reason);
beforeAll(() => void process.on('unhandledRejection', onUnhandled));
afterAll(() => void process.off('unhandledRejection', onUnhandled));

/** Runs `work`; it may succeed, or fail with an AgentError — any other failure is a defect. */
async function typedOrFine(work: () => unknown): Promise<AgentError | undefined> {
  try {
    await work();
    return undefined;
  } catch (error) {
    expect(error, String(error)).toBeInstanceOf(AgentError);
    return error as AgentError;
  }
}

/** Anything JSON can carry, a few levels deep. */
const json = fc.jsonValue({ maxDepth: 3 });
/** Values that are not JSON too: functions, symbols, NaN, -0, big ints, dates, sparse arrays. */
const anything = fc.anything({ maxDepth: 2, withBigInt: true, withDate: true, withMap: true, withSet: true, withTypedArray: true, withSparseArray: true, withNullPrototype: true });

describe('the public API under generated input', () => {
  it('createSupervisor(options): a supervisor, or invalid_options; never another error', async () => {
    await fc.assert(
      fc.asyncProperty(fc.dictionary(fc.constantFrom('maxAgents', 'restart', 'handshakeTimeoutMs', 'containment', 'permissions', 'onStall', 'capabilities', 'retention', 'store', 'agents', 'inspect', 'clock', 'stderrLines', 'x'), anything), async (generated) => {
        let supervisor: Supervisor | undefined;
        // Never a state directory of the generator's choosing, nor the host's signals.
        const error = await typedOrFine(() => (supervisor = createSupervisor({ ...(generated as object), stateDir: false, handleSignals: false })));
        if (error) expect(error.kind).toBe('invalid_options');
        await supervisor?.shutdown();
      }),
      { numRuns: 150 },
    );
  });

  it('register(name, spec) and newSession(agent, options): accepted, or a typed error before anything starts', async () => {
    const supervisor = createSupervisor({ stateDir: false, handleSignals: false, agents: { raw: rawAgent } });
    try {
      await fc.assert(
        fc.asyncProperty(anything, anything, anything, async (name, spec, options) => {
          await typedOrFine(() => supervisor.register(name as string, spec as AgentSpec));
          await typedOrFine(() => supervisor.newSession(name as string, options as object));
          await typedOrFine(() => supervisor.stop(name as string));
        }),
        { numRuns: 150 },
      );
      const session = await supervisor.newSession('raw', { cwd: process.cwd() });
      expect(await session.prompt('still fine')).toBe('end_turn');
    } finally {
      await supervisor.shutdown();
    }
    for (const agent of supervisor.list()) expect(agent.pid).toBeNull();
  });
});

describe('an agent that sends generated garbage after a valid handshake', () => {
  it('every turn ends (end_turn or a typed error); no unhandled rejection; a normal prompt works after each; nothing is left running', async () => {
    const supervisor = createSupervisor({ stateDir: false, handleSignals: false, agents: { raw: rawAgent } });
    const pids = new Set<number>();
    try {
      const turn = fc.record(
        {
          raw: fc.array(fc.oneof(fc.string(), json.map((value) => JSON.stringify(value))), { maxLength: 5 }),
          updates: fc.array(fc.oneof(json, fc.record({ sessionUpdate: fc.constantFrom('agent_message_chunk', 'tool_call', 'tool_call_update', 'plan', 'session_info_update', 'usage_update', 'nope'), content: json, entries: json, toolCallId: json, title: json })), { maxLength: 6 }),
          notifications: fc.array(json, { maxLength: 3 }),
          strayResponses: fc.nat({ max: 3 }),
          result: json,
        },
        { requiredKeys: [] },
      );
      await fc.assert(
        fc.asyncProperty(turn, async (script) => {
          pids.add((await supervisor.ensureAgent('raw')).pid);
          const session = await supervisor.newSession('raw', { cwd: process.cwd() });
          await typedOrFine(() => session.prompt(JSON.stringify(script)));
          const healthy = await supervisor.newSession('raw', { cwd: process.cwd() });
          expect(await healthy.prompt('a normal turn')).toBe('end_turn');
          await session.close();
          await healthy.close();
        }),
        { numRuns: 60 },
      );
    } finally {
      await supervisor.shutdown();
    }
    expect([...pids].filter(isRunning)).toEqual([]);
    expect(unhandled).toEqual([]);
  });
});
