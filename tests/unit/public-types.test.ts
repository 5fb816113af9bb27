/**
 * Type-level checks of the public API. `npm test` typechecks this file: each
 * `@ts-expect-error` fails the typecheck the day the misuse below starts to compile.
 */
import { describe, expect, expectTypeOf, it } from 'vitest';
import type { AgentError, Session, SessionEvents, SessionUpdate, Supervisor } from '../../index.js';

describe('public types', () => {
  it('a misspelt event name does not compile, on a session or a supervisor', () => {
    const listen = (session: Session, supervisor: Supervisor) => {
      // @ts-expect-error 'udpate' is not a session event
      session.on('udpate', () => {});
      // @ts-expect-error 'agent:stauts' is not a supervisor event
      supervisor.on('agent:stauts', () => {});
      session.on('update', (update) => expectTypeOf(update).toEqualTypeOf<SessionUpdate>());
      supervisor.on('agent:status', ({ status }) => expectTypeOf(status).toBeString());
    };
    expect(listen).toBeTypeOf('function');
    expectTypeOf<keyof SessionEvents>().toEqualTypeOf<
      'update' | 'status' | 'stall' | 'permission:request' | 'elicitation:request' | 'modes' | 'configOptions' | 'commands' | 'plan' | 'usage' | 'title' | 'models'
    >();
  });

  it('AgentError carries the not_installed fields as typed properties', () => {
    expectTypeOf<AgentError['command']>().toEqualTypeOf<string | undefined>();
    expectTypeOf<AgentError['installHint']>().toEqualTypeOf<string | undefined>();
  });
});
