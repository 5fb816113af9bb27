/**
 * The agent lifecycle contract (docs/lifecycle.md) as a *model* machine for
 * `createTestModel` from `xstate/graph`. It is not the runtime machine: it has no `invoke`
 * and no `after` (createTestModel refuses both), so every outside stimulus — a process
 * that answers, crashes or stays silent, a timer that elapses, a caller's command — is an
 * event here. tests/model/agent-lifecycle.model.test.ts causes each event for real on a
 * real supervisor and checks every state against it.
 *
 * Each transition names the `agent:status` / `error` trace it must produce with the
 * `emits` action (statuses as `status`, errors as `error:<kind>`, and the parked
 * notifications as `agent:needs_auth` / `agent:rate_limited`), in the order the supervisor
 * emits them. Context is kept tiny so the state space stays finite: `attempt`
 * (0..maxAttempts, what `list()[0].attempt` shows), `retriesAllowed` (the runtime's
 * `autoRetry`: a failure now may be retried in the background) and, only while an
 * authenticate() start is in flight, `wrongMethod` (the caller named a method the agent
 * does not offer).
 *
 * The parked states (docs/failures.md) are entered from `connected` only, by a process that
 * dies having printed an auth failure or a rate limit with its reset time ("retry after
 * 30s"); a parked state counts no attempt and keeps the counter it was entered with.
 */
import { assign, setup } from 'xstate';

/** The model's bound on automatic attempts; the system under test runs with the same. */
export const modelMaxAttempts = 2;

export interface LifecycleModelContext {
  maxAttempts: number;
  /** Automatic attempts in the current streak of failures (reset by ensure, reconnect, stable uptime). */
  attempt: number;
  /** Whether a failure now is retried in the background (set by a loss, cleared by a caller's start). */
  retriesAllowed: boolean;
  /** In `authStarting` only: the authenticate() caller named a method the agent does not offer. */
  wrongMethod: boolean;
}

export type LifecycleModelEvent =
  | { type: 'ENSURE' }
  | { type: 'MANUAL_RECONNECT' }
  | { type: 'HANDSHAKE_SUCCEEDS' }
  | { type: 'HANDSHAKE_FAILS' }
  | { type: 'HANDSHAKE_TIMES_OUT' }
  | { type: 'SPAWN_FAILS_ENOENT' }
  | { type: 'PROCESS_CRASHES' }
  | { type: 'BACKOFF_ELAPSES' }
  | { type: 'STAYS_UP' }
  | { type: 'CRASHES_NEEDING_AUTH' }
  | { type: 'CRASHES_RATE_LIMITED' }
  | { type: 'LIMIT_RESETS' }
  | { type: 'AUTHENTICATE' }
  | { type: 'AUTHENTICATE_WRONG_METHOD' }
  | { type: 'STOP' }
  | { type: 'SHUTDOWN' };

/** The rate limit's reset, as the dying process prints it ("retry after 30s"): the parked wait. */
export const modelLimitWaitMs = 30_000;

/** One entry of the observable trace: a status (`connected`) or an error (`error:agent_exited`). */
export type TraceEntry = string;

/** `emits` action params: what the supervisor reports during this transition, in order. */
const emits = (...trace: TraceEntry[]) => ({ type: 'emits' as const, params: { trace } });

/** The same failure leaves a handshake in three ways, depending on who started it. */
function handshakeFailure(kind: 'handshake_failed' | 'handshake_timeout', description: string) {
  return [
    {
      guard: 'canRetry' as const,
      target: '#lifecycle.reconnecting.waiting',
      actions: ['countAttempt' as const, emits('disconnected', `error:${kind}`, 'reconnecting')],
      description: `${description} An automatic attempt with attempts left: wait the next backoff delay.`,
    },
    {
      guard: 'retriesAllowed' as const,
      target: '#lifecycle.disconnected.gaveUp',
      actions: emits('disconnected', `error:${kind}`),
      description: `${description} The last automatic attempt: give up.`,
    },
    {
      target: '#lifecycle.disconnected.startFailed',
      actions: emits('disconnected', `error:${kind}`),
      description: `${description} A start a caller asked for: reported to the caller, not retried.`,
    },
  ];
}

const stop = {
  target: '#lifecycle.idle',
  actions: ['resetAttempts' as const, emits('stopping', 'idle')],
  description: 'stop(): the stop ladder ends the process (if any); timers are cancelled.',
};
const stopWithoutProcess = { ...stop, description: 'stop(): no process to stop; goes idle through stopping.' };
const shutdown = {
  target: '#lifecycle.shutDown',
  actions: ['resetAttempts' as const, emits('stopping', 'idle')],
  description: 'shutdown(): the agent is stopped like stop(), and the supervisor ends.',
};

export const agentLifecycleModel = setup({
  types: {
    context: {} as LifecycleModelContext,
    events: {} as LifecycleModelEvent,
  },
  guards: {
    /** An automatic attempt failed and attempts remain. */
    canRetry: ({ context }) => context.retriesAllowed && context.attempt < context.maxAttempts,
    /** An automatic attempt failed (attempts spent, or the error is not retryable). */
    retriesAllowed: ({ context }) => context.retriesAllowed,
    /** A connected agent was lost and attempts remain. */
    hasAttemptsLeft: ({ context }) => context.attempt < context.maxAttempts,
    /** The authenticate() in flight names a method the agent does not offer. */
    wrongMethod: ({ context }) => context.wrongMethod,
  },
  actions: {
    /** Documents the expected trace; the test reads it with `transition()`. */
    emits: (_, _params: { trace: TraceEntry[] }) => {},
    countAttempt: assign({ attempt: ({ context }) => context.attempt + 1 }),
    resetAttempts: assign({ attempt: 0 }),
    allowRetries: assign({ retriesAllowed: true }),
    forbidRetries: assign({ retriesAllowed: false }),
    chooseWrongMethod: assign({ wrongMethod: true }),
    forgetMethod: assign({ wrongMethod: false }),
  },
}).createMachine({
  id: 'lifecycle',
  description: 'The lifecycle contract of one supervised agent, with every outside stimulus as an event.',
  context: { maxAttempts: modelMaxAttempts, attempt: 0, retriesAllowed: false, wrongMethod: false },
  initial: 'idle',
  states: {
    idle: {
      description: 'No process. The attempt counter keeps its value until the next start.',
      on: {
        ENSURE: {
          target: 'starting',
          actions: ['resetAttempts', 'forbidRetries', emits('starting')],
          description: 'ensureAgent(): spawn, open ACP, send initialize.',
        },
        MANUAL_RECONNECT: {
          target: 'starting',
          actions: ['resetAttempts', 'forbidRetries', emits('starting')],
          description: 'reconnect() on an idle agent starts it like ensureAgent().',
        },
        SHUTDOWN: { target: 'shutDown', actions: emits(), description: 'shutdown(): nothing to stop.' },
      },
    },
    starting: {
      description: 'First start asked for by a caller: the process runs, initialize is pending.',
      on: {
        ENSURE: { actions: emits(), description: 'ensureAgent() again: shares the in-flight start, no second process.' },
        HANDSHAKE_SUCCEEDS: { target: 'connected', actions: emits('connected'), description: 'initialize answered.' },
        HANDSHAKE_FAILS: {
          target: 'disconnected.startFailed',
          actions: emits('disconnected', 'error:handshake_failed'),
          description: 'initialize rejected: kill the group, report handshake_failed to the caller.',
        },
        PROCESS_CRASHES: {
          target: 'disconnected.startFailed',
          actions: emits('disconnected', 'error:handshake_failed'),
          description: 'The process exited before answering initialize: handshake_failed.',
        },
        HANDSHAKE_TIMES_OUT: {
          target: 'disconnected.startFailed',
          actions: emits('disconnected', 'error:handshake_timeout'),
          description: 'handshakeTimeoutMs elapsed: kill the group, report handshake_timeout.',
        },
        SPAWN_FAILS_ENOENT: {
          target: 'disconnected.startFailed',
          actions: emits('disconnected', 'error:not_installed'),
          description: 'The command is not installed: not_installed.',
        },
        STOP: stop,
        SHUTDOWN: shutdown,
      },
    },
    connected: {
      description: 'initialize answered; the connection is in use.',
      initial: 'settling',
      states: {
        settling: {
          description: 'Connected for less than stableAfterMs: earlier failures still count.',
          on: {
            STAYS_UP: {
              target: 'stable',
              actions: ['resetAttempts', emits()],
              description: 'Up for stableAfterMs: the attempt counter goes back to 0.',
            },
          },
        },
        stable: { description: 'Up for stableAfterMs; the attempt counter is 0.' },
      },
      on: {
        ENSURE: { actions: emits(), description: 'ensureAgent(): the same connection, at once.' },
        MANUAL_RECONNECT: { actions: emits(), description: 'reconnect() on a connected agent: the current connection.' },
        PROCESS_CRASHES: [
          {
            guard: 'hasAttemptsLeft',
            target: 'reconnecting',
            actions: ['allowRetries', 'countAttempt', emits('disconnected', 'error:agent_exited', 'reconnecting')],
            description: 'Lost with attempts left: count the attempt, wait the backoff delay.',
          },
          {
            target: 'disconnected.gaveUp',
            actions: ['allowRetries', emits('disconnected', 'error:agent_exited')],
            description: 'Lost again before stableAfterMs with every attempt spent: give up.',
          },
        ],
        CRASHES_NEEDING_AUTH: {
          target: 'needsAuth.waiting',
          actions: ['allowRetries', emits('disconnected', 'error:agent_exited', 'needsAuth', 'agent:needs_auth')],
          description: 'The process died having printed "401 Unauthorized — invalid API key": class auth, parked; no attempt counted, none retried.',
        },
        CRASHES_RATE_LIMITED: {
          target: 'rateLimited',
          actions: ['allowRetries', emits('disconnected', 'error:agent_exited', 'rateLimited', 'agent:rate_limited')],
          description: 'The process died having printed "429 Too Many Requests … retry after 30s": class rate_limited, parked for 30 s; no attempt counted.',
        },
        STOP: stop,
        SHUTDOWN: shutdown,
      },
    },
    disconnected: {
      description: 'No process; waits for a caller.',
      initial: 'startFailed',
      states: {
        startFailed: {
          description: 'A start a caller asked for (ensureAgent or reconnect) failed: reported to that caller, not retried.',
        },
        gaveUp: {
          description: 'Automatic retries ended: attempts spent, or a failure a restart cannot fix.',
        },
      },
      on: {
        ENSURE: {
          target: 'starting',
          actions: ['resetAttempts', 'forbidRetries', emits('starting')],
          description: 'ensureAgent(): a fresh start, reported to the caller.',
        },
        MANUAL_RECONNECT: {
          target: 'reconnecting.spawning',
          actions: ['resetAttempts', 'forbidRetries', emits('reconnecting')],
          description: 'reconnect(): reset the attempt counter and spawn now.',
        },
        STOP: stopWithoutProcess,
        SHUTDOWN: shutdown,
      },
    },
    reconnecting: {
      description: 'Automatic recovery: wait the backoff delay, then spawn again.',
      initial: 'waiting',
      states: {
        waiting: {
          description: 'Backoff timer pending (1 s, then 2 s); no process.',
          on: {
            BACKOFF_ELAPSES: { target: 'spawning', actions: emits(), description: 'The backoff delay elapsed: spawn.' },
            MANUAL_RECONNECT: {
              target: 'spawning',
              actions: ['resetAttempts', 'forbidRetries', emits()],
              description: 'reconnect(): cancel the timer, reset the counter, spawn now (a caller now owns the outcome).',
            },
            ENSURE: {
              target: 'spawning',
              actions: ['resetAttempts', 'forbidRetries', emits()],
              description: 'ensureAgent(): a caller does not wait out the backoff: spawn now, as reconnect() does (a caller now owns the outcome).',
            },
          },
        },
        spawning: {
          description: 'Spawned again; initialize pending.',
          on: {
            HANDSHAKE_SUCCEEDS: { target: '#lifecycle.connected', actions: emits('connected'), description: 'Reconnected.' },
            HANDSHAKE_FAILS: handshakeFailure('handshake_failed', 'initialize rejected.'),
            PROCESS_CRASHES: handshakeFailure('handshake_failed', 'The process exited before answering.'),
            HANDSHAKE_TIMES_OUT: handshakeFailure('handshake_timeout', 'handshakeTimeoutMs elapsed.'),
            SPAWN_FAILS_ENOENT: [
              {
                guard: 'retriesAllowed',
                target: '#lifecycle.disconnected.gaveUp',
                actions: emits('disconnected', 'error:not_installed'),
                description: 'not_installed is never retried, even with attempts left.',
              },
              {
                target: '#lifecycle.disconnected.startFailed',
                actions: emits('disconnected', 'error:not_installed'),
                description: 'A manual reconnect found the command missing: reported to the caller.',
              },
            ],
          },
        },
      },
      on: {
        ENSURE: { actions: emits(), description: 'ensureAgent() while spawning: joins the start in flight, no second process.' },
        STOP: { ...stop, description: 'stop(): cancels the backoff timer / ends the process.' },
        SHUTDOWN: shutdown,
      },
    },
    needsAuth: {
      description: 'Parked: the agent needs a login. No automatic retry; ensureAgent() is refused at once with the auth failure.',
      initial: 'waiting',
      states: {
        waiting: {
          description: 'No process. Waits for authenticate() or reconnect() (a login made outside).',
          on: {
            AUTHENTICATE: {
              target: '#lifecycle.authStarting',
              actions: ['resetAttempts', 'forbidRetries', emits('starting')],
              description: 'authenticate(fixture-token): no process, so a fresh start; authenticate once initialize is answered.',
            },
            AUTHENTICATE_WRONG_METHOD: {
              target: '#lifecycle.authStarting',
              actions: ['resetAttempts', 'forbidRetries', 'chooseWrongMethod', emits('starting')],
              description: 'authenticate() with a method the agent does not offer: a fresh start all the same; the agent refuses it once initialized.',
            },
            MANUAL_RECONNECT: {
              target: '#lifecycle.reconnecting.spawning',
              actions: ['resetAttempts', 'forbidRetries', emits('reconnecting')],
              description: 'reconnect() after logging in outside: a fresh process now, the counter reset.',
            },
            STOP: stopWithoutProcess,
          },
        },
        refused: {
          description: 'authenticate() was refused (auth_required): still parked, and the process it started still runs, its connection open.',
          on: {
            AUTHENTICATE: {
              target: '#lifecycle.connected',
              actions: emits('connected'),
              description: 'authenticate(fixture-token) over the open connection: the same process, connected.',
            },
            AUTHENTICATE_WRONG_METHOD: {
              actions: emits('error:auth_required', 'agent:needs_auth'),
              description: 'Refused again over the open connection: still parked, the same process.',
            },
            MANUAL_RECONNECT: {
              target: '#lifecycle.reconnecting.spawning',
              actions: ['resetAttempts', 'forbidRetries', emits('reconnecting')],
              description: 'reconnect(): its process is killed first (real reconnecting.replacing), then a fresh one spawns.',
            },
            PROCESS_CRASHES: {
              target: 'waiting',
              actions: emits(),
              description: 'The process ended while parked: released; the agent stays parked with its auth failure.',
            },
            STOP: stop,
          },
        },
      },
      on: {
        ENSURE: { actions: emits(), description: 'ensureAgent(): refused at once with the auth failure; nothing spawns.' },
        SHUTDOWN: shutdown,
      },
    },
    authStarting: {
      description: 'authenticate() of a parked agent with no process: a fresh process, initialize pending, then ACP authenticate.',
      exit: 'forgetMethod',
      on: {
        ENSURE: { actions: emits(), description: 'ensureAgent(): joins the start in flight, no second process.' },
        HANDSHAKE_SUCCEEDS: [
          {
            guard: 'wrongMethod',
            target: 'needsAuth.refused',
            actions: emits('needsAuth', 'error:auth_required', 'agent:needs_auth'),
            description: 'initialize answered, authenticate refused: parked again, the process kept; the callers get auth_required.',
          },
          {
            target: 'connected',
            actions: emits('needsAuth', 'connected'),
            description: 'initialize answered, then authenticated (reported as needsAuth while it runs): connected.',
          },
        ],
        HANDSHAKE_FAILS: {
          target: 'disconnected.startFailed',
          actions: emits('disconnected', 'error:handshake_failed'),
          description: 'initialize rejected: reported to the authenticate() caller, not retried.',
        },
        PROCESS_CRASHES: {
          target: 'disconnected.startFailed',
          actions: emits('disconnected', 'error:handshake_failed'),
          description: 'The process exited before answering initialize.',
        },
        HANDSHAKE_TIMES_OUT: {
          target: 'disconnected.startFailed',
          actions: emits('disconnected', 'error:handshake_timeout'),
          description: 'handshakeTimeoutMs elapsed.',
        },
        SPAWN_FAILS_ENOENT: {
          target: 'disconnected.startFailed',
          actions: emits('disconnected', 'error:not_installed'),
          description: 'The command is not installed.',
        },
        STOP: stop,
        SHUTDOWN: shutdown,
      },
    },
    rateLimited: {
      description: 'Parked until the rate limit resets (30 s, from "retry after 30s"); no process. ensureAgent() is refused at once with the limit.',
      on: {
        LIMIT_RESETS: {
          target: 'reconnecting.spawning',
          actions: emits('reconnecting'),
          description: 'The wait elapsed: an automatic restart (retried if it fails, with the counter as it was).',
        },
        ENSURE: { actions: emits(), description: 'ensureAgent(): refused at once with the limit and its retryAt; nothing spawns.' },
        MANUAL_RECONNECT: {
          target: 'reconnecting.spawning',
          actions: ['resetAttempts', 'forbidRetries', emits('reconnecting')],
          description: 'reconnect(): stop waiting, spawn now, the counter reset.',
        },
        AUTHENTICATE: {
          target: 'authStarting',
          actions: ['resetAttempts', 'forbidRetries', emits('starting')],
          description: 'authenticate() (another account, say): stop waiting; no process, so a fresh start that authenticates once initialized.',
        },
        STOP: stopWithoutProcess,
        SHUTDOWN: shutdown,
      },
    },
    shutDown: {
      type: 'final',
      description: 'The supervisor has shut down: the agent is idle, no process runs.',
    },
  },
});
