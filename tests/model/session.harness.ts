/**
 * The adapter between the session model and the real runtime: one `SessionRun` per path
 * owns a fresh supervisor (SimulatedClock, `'ask'` permissions, onStall `'none'`) with one
 * real fixture agent and one session opened with `newSession`. It causes each model event
 * for real (executors) and checks each model state on the real `Session` (assertions).
 * See docs/testing.md, "Session model".
 */
import { writeFileSync } from 'node:fs';
import { expect } from 'vitest';
import { SimulatedClock, transition, type StateValue } from 'xstate';
import { createSupervisor, type AgentErrorKind, type AgentStatus, type PermissionRequest, type Session, type SessionStatus, type StopReason, type Supervisor } from '../../index.js';
import { command, isRunning, scratch } from '../support/real-agents.js';
import { type ModelCoverage, type ModelPath, type ModelSnapshot, type ModelStep } from './model-paths.js';
import { ModelRun } from './model-run.js';
import { sessionModel, sessionModelEvents, type SessionModelContext, type SessionModelEvent, type TurnSettlement } from './session.model.js';
import { dispose, ScriptedAgent, settle, within } from './sut.js';

/** The options of the system under test; the model's timers are these numbers. */
export const sutOptions = {
  permissions: 'ask' as const,
  permissionTimeoutMs: 300_000,
  stallTimeoutMs: 60_000,
  onStall: 'none' as const,
  // factor 1: every reconnect waits the same 1 s, however often the agent died before.
  restart: { maxAttempts: 20, initialDelayMs: 1000, factor: 1, maxDelayMs: 1000, jitter: 0, stableAfterMs: 30_000 },
  handshakeTimeoutMs: 30_000,
  shutdownTimeoutMs: 5_000,
  killTimeoutMs: 2_000,
};
const backoffMs = sutOptions.restart.initialDelayMs;

/**
 * What each model state looks like on the real session: `session.status` and the real
 * session machine's state value (`null`: the session actor is gone).
 */
export const stateMapping: Record<string, { status: SessionStatus; machine: StateValue | null }> = {
  ready: { status: 'ready', machine: 'ready' },
  'running.open': { status: 'running', machine: { prompting: 'running' } },
  'running.finishing': { status: 'running', machine: { prompting: 'running' } },
  awaitingPermission: { status: 'awaiting_permission', machine: { prompting: 'awaitingPermission' } },
  stalled: { status: 'stalled', machine: { prompting: 'stalled' } },
  completed: { status: 'completed', machine: 'completed' },
  failed: { status: 'failed', machine: 'failed' },
  stopped: { status: 'stopped', machine: null },
};

/**
 * How the fixture plays one turn (tests/fixtures/README.md, prompt commands). Chosen when
 * the prompt is sent, from the path ahead:
 * - `echo`: a plain prompt, echoed back; the turn ends `end_turn` on its own (END_TURN next).
 * - `permission`: `{"op":"permission"}`; the request is held by the test's listener until
 *   PERMISSION_ANSWERED / PERMISSION_TIMES_OUT / CANCEL, then the agent ends its turn.
 * - `gated`: `{"op":"terminal"}` running a shell that waits for a gate file: no update
 *   until the test creates it (after STALL_TIMEOUT, on the clock); then the terminal's
 *   output is UPDATE_ARRIVES, and its exit code and the end of the turn follow on their own
 *   (END_TURN). Nothing in it depends on real time.
 * - `hang`: `{"op":"hang"}`; no update, no end until cancelled (or the session ends).
 */
type Script = 'echo' | 'permission' | 'gated' | 'hang';
const prompts: Record<Exclude<Script, 'gated'>, string> = {
  echo: 'hello model',
  permission: command({ op: 'permission', title: 'model-based test' }),
  hang: command({ op: 'hang' }),
};
/** The `gated` turn: a terminal whose shell exits once `gate` exists. */
const gatedPrompt = (gate: string) => command({ op: 'terminal', command: '/bin/sh', args: ['-c', 'until [ -e "$0" ]; do sleep 0.01; done', gate] });

type Outcome = { status: 'pending' } | { status: 'resolved'; stopReason: StopReason } | { status: 'rejected'; kind: string };

/** One `prompt()` the test did not await: its script, its outcome so far, and what the model expects. */
interface Turn {
  script: Script;
  outcome: Outcome;
  done: Promise<void>;
  /** Set by the transition that settles the turn; checked (once) by the next state check. */
  expected: Outcome | undefined;
  checked: boolean;
  /** `updates` when the prompt was sent. */
  updatesBefore: number;
  /** The gate file of a `gated` turn. */
  gate: string;
}

/** What one model step says besides the state: the trace, how the turn settles, what a call is refused with. */
function modelEffects(previous: ModelSnapshot, event: SessionModelEvent) {
  const [, actions] = transition(sessionModel, previous as never, event) as unknown as [unknown, Array<{ type: string; params?: unknown }>];
  const params = <T>(type: string) => actions.find((action) => action.type === type)?.params as T | undefined;
  return {
    trace: params<{ trace: string[] }>('emits')?.trace ?? [],
    settles: params<TurnSettlement>('settles'),
    refused: params<{ kind: AgentErrorKind }>('refuses')?.kind,
  };
}

const agentName = 'fixture';
/** How paths show the model context. */
export const showContext = (context: Record<string, unknown>) =>
  [context.agentBack ? 'agent back' : '', (context.stopReason as string | null) ?? ''].filter(Boolean).join(', ');
const leafOf = (state: ModelSnapshot) => Object.keys(stateMapping).find((key) => state.matches(key))!;

export class SessionRun extends ModelRun {
  private readonly files = scratch();
  private readonly clock = new SimulatedClock();
  private readonly agent = new ScriptedAgent(this.files, agentName);
  private readonly supervisor: Supervisor;
  private session!: Session;
  /** The session's `status` (bare) and `stall` events, in order; and the same from the supervisor. */
  private readonly trace: string[] = [];
  private readonly supervisorTrace: string[] = [];
  private readonly expected: string[] = [];
  private readonly requests: PermissionRequest[] = [];
  private requestedAt = 0;
  private updates = 0;
  private turn: Turn | undefined;
  private readonly turns: Turn[] = [];
  /** What the agent must be: the harness follows the deaths, reconnects and stops it causes. */
  private agentStatus: AgentStatus = 'connected';
  private spawns = 0;
  private expectedRequests = 0;
  /** The session failed since its last prompt or resume: `lastError` is agent_exited until then. */
  private failedSinceTurn = false;

  constructor(
    path: ModelPath,
    private readonly coverage: ModelCoverage,
    canLoad: boolean,
  ) {
    super(path, showContext);
    const spec = this.agent.spec();
    const load = ['--load-session', '--state-file', this.files.path('state.json')];
    this.supervisor = createSupervisor({
      clock: this.clock,
      ...sutOptions,
      agents: { [agentName]: canLoad ? { ...spec, args: [...(spec.args ?? []), ...load] } : spec },
    });
  }

  /** Opens the session the path starts from (state `ready`) and starts listening to it. */
  override async start(): Promise<void> {
    this.session = await within(this.supervisor.newSession(agentName, { cwd: this.files.dir }), 'newSession()');
    this.spawns = 1;
    const id = this.session.id;
    this.session.on('status', ({ status }) => this.trace.push(status));
    this.session.on('stall', () => this.trace.push('stall'));
    this.session.on('update', () => this.updates++);
    this.session.on('permission:request', (request) => {
      this.requests.push(request);
      this.requestedAt = this.clock.now();
    });
    this.supervisor.on('session:status', (event) => event.sessionId === id && this.supervisorTrace.push(event.status));
    this.supervisor.on('session:stall', (event) => event.sessionId === id && this.supervisorTrace.push('stall'));
  }

  /** The `{ states, events }` parameter of `testPath`: an assertion per state, an executor per event. */
  params() {
    return this.testParams(Object.keys(stateMapping), sessionModelEvents);
  }

  /** Shuts down, cleans up, and returns the pids of fixture processes that were still running. */
  override async dispose(): Promise<number[]> {
    const leaked = await dispose(this.supervisor, this.clock, [this.agent]);
    await Promise.all(this.turns.map((turn) => within(turn.done, 'the last prompt() to settle after shutdown').catch(() => {})));
    this.files.cleanup();
    return leaked;
  }

  private get summary() {
    return this.supervisor.list()[0]!;
  }

  /** The real session actor (a child of the agent's actor), or undefined once it is gone. */
  private sessionActor(): { getSnapshot(): { matches(value: StateValue): boolean; value: StateValue; context: { lastStopReason: StopReason | null } } } | undefined {
    const agent = this.supervisor.actor.getSnapshot().children[agentName] as { getSnapshot(): { children: Record<string, unknown> } } | undefined;
    // One actor per opening of a session: `session:<id>#<n>`.
    const entry = Object.entries(agent?.getSnapshot().children ?? {}).find(([id]) => id.startsWith(`session:${this.session.id}#`));
    return entry?.[1] as never;
  }

  protected async execute(step: ModelStep): Promise<void> {
    const previous = this.path.steps[this.index - 1]!.state;
    const event = step.event as SessionModelEvent;
    const { trace, settles, refused } = modelEffects(previous, event);
    this.expected.push(...trace);
    if (settles && this.turn) {
      this.turn.expected =
        settles.outcome === 'resolved'
          ? { status: 'resolved', stopReason: (step.state.context as SessionModelContext).stopReason! }
          : { status: 'rejected', kind: settles.kind };
    }

    switch (event.type) {
      case 'PROMPT': {
        if (refused) {
          await this.expectRefusal(this.session.prompt('refused'), refused, 'prompt()');
          break;
        }
        const script = this.scriptTurn();
        const gate = this.files.path(`update-${this.turns.length}.gate`);
        this.turn = { script, outcome: { status: 'pending' }, done: Promise.resolve(), expected: undefined, checked: false, updatesBefore: this.updates, gate };
        const turn = this.turn;
        turn.done = this.session.prompt(script === 'gated' ? gatedPrompt(gate) : prompts[script]).then(
          (stopReason) => void (turn.outcome = { status: 'resolved', stopReason }),
          (error: unknown) => void (turn.outcome = { status: 'rejected', kind: String((error as { kind?: unknown }).kind ?? error) }),
        );
        this.turns.push(turn);
        this.failedSinceTurn = false;
        break;
      }
      case 'RESUME':
        if (refused) await this.expectRefusal(this.session.resume(), refused, 'resume()');
        else {
          await within(this.session.resume(), previous.matches('failed') ? 'resume() with session/load' : 'resume() of a session that did not fail');
          this.failedSinceTurn = false; // a resumed session has no failure to report
        }
        break;
      case 'PERMISSION_REQUESTED':
        this.expectedRequests++;
        break; // the permission turn asks on its own: only wait for the request
      case 'PERMISSION_ANSWERED':
        this.requests.at(-1)!.respond('allow');
        break;
      case 'PERMISSION_TIMES_OUT': {
        const left = sutOptions.permissionTimeoutMs - (this.clock.now() - this.requestedAt);
        this.clock.increment(left - 1);
        expect(this.session.status, 'still awaiting permission 1 ms before permissionTimeoutMs').toBe('awaiting_permission');
        this.clock.increment(1);
        break;
      }
      case 'STALL_TIMEOUT':
        if (previous.matches('awaitingPermission')) {
          this.clock.increment(sutOptions.stallTimeoutMs);
          break;
        }
        if (this.turn!.script === 'gated') expect(this.updates - this.turn!.updatesBefore, 'updates of the gated turn before the stall (none until its gate opens)').toBe(0);
        this.clock.increment(sutOptions.stallTimeoutMs - 1);
        expect(this.session.status, 'still running 1 ms before stallTimeoutMs').toBe('running');
        this.clock.increment(1);
        break;
      case 'UPDATE_ARRIVES':
        await this.openGate();
        break;
      case 'END_TURN':
        break; // scripted when the prompt was sent: only wait for it
      case 'CANCEL':
        this.session.cancel();
        break;
      case 'AGENT_DIES':
        process.kill(this.summary.pid!, 'SIGKILL');
        this.agentStatus = 'reconnecting';
        this.failedSinceTurn = true;
        break;
      case 'AGENT_RECONNECTS':
        this.clock.increment(backoffMs - 1);
        expect(this.summary.status, `still reconnecting 1 ms before the ${backoffMs} ms backoff`).toBe('reconnecting');
        this.clock.increment(1);
        this.agentStatus = 'connected';
        this.spawns++;
        break;
      case 'CLOSE':
        await within(this.session.close(), 'close()');
        break;
      case 'AGENT_STOPPED':
        await within(this.supervisor.stop(agentName), 'supervisor.stop()');
        this.agentStatus = 'idle';
        break;
    }
    if (!this.isTransient(step.state)) {
      await settle(() => this.mismatches(step.state).length === 0, () => `${leafOf(step.state)}: ${this.mismatches(step.state).join('; ')}`);
    }
  }

  /**
   * The fixture reads its prompt once, when the turn starts: so the turn is scripted from
   * the path ahead. prompt() and resume() during the turn are refusals and do not count.
   */
  private scriptTurn(): Script {
    const ahead = this.path.steps
      .slice(this.index + 1)
      .map((step) => step.event.type)
      .filter((type) => type !== 'PROMPT' && type !== 'RESUME');
    const [first, second] = ahead;
    if (first === 'END_TURN') return 'echo';
    if (first === 'PERMISSION_REQUESTED') return 'permission';
    if (first === 'STALL_TIMEOUT' && second === 'UPDATE_ARRIVES') return 'gated';
    return 'hang';
  }

  /**
   * A state the fixture leaves on its own as soon as it reads from its stdin: the turn
   * that is about to ask or to end, and the turn that just got its permission answer.
   * It is checked at once, before any I/O callback can move it on.
   */
  private isTransient(state: ModelSnapshot): boolean {
    const script = this.turn?.script;
    if (state.matches('running.open')) return script === 'echo' || script === 'permission';
    if (state.matches('running.finishing')) return script === 'permission' || script === 'gated';
    return false;
  }

  /**
   * UPDATE_ARRIVES of a `gated` turn: opens the gate, and returns as the stalled session hears
   * the terminal's output (its `running`). The turn then ends on its own, but only after the
   * agent's terminal/release round trip, so the state is checked before any I/O moves it on.
   */
  private async openGate(): Promise<void> {
    const turn = this.turn!;
    let off = () => {};
    const running = new Promise<void>((resolve) => {
      off = this.session.on('status', ({ status }) => status === 'running' && resolve());
    });
    writeFileSync(turn.gate, '');
    try {
      await within(running, 'the terminal output of the gated turn to reach the session');
    } finally {
      off();
    }
  }

  private async expectRefusal(call: Promise<unknown>, kind: AgentErrorKind, what: string): Promise<void> {
    const result = await within(
      call.then(
        () => 'resolved',
        (error: unknown) => error,
      ),
      `${what} to be refused`,
    );
    expect(result, `${what} is refused`).toMatchObject({ kind });
  }

  /** What differs between the real session and the model state (empty once settled). */
  private mismatches(state: ModelSnapshot): string[] {
    const expected = stateMapping[leafOf(state)]!;
    const problems: string[] = [];
    if (this.session.status !== expected.status) problems.push(`session.status is ${this.session.status}`);
    const actor = this.sessionActor();
    if (expected.machine === null ? actor !== undefined : !actor?.getSnapshot().matches(expected.machine)) {
      problems.push(`session machine is ${JSON.stringify(actor?.getSnapshot().value ?? 'gone')}`);
    }
    if (this.trace.length < this.expected.length) problems.push(`trace so far ${JSON.stringify(this.trace)}`);
    const { status, pid } = this.summary;
    if (status !== this.agentStatus) problems.push(`agent is ${status}, not ${this.agentStatus}`);
    const live = this.agentStatus === 'connected';
    if (live && (pid === null || !isRunning(pid))) problems.push(`no live agent process (pid ${pid})`);
    if (!live && pid !== null) problems.push(`agent pid is ${pid}`);
    if (this.agent.running().some((running) => running !== pid)) problems.push(`old processes still run: ${this.agent.running().join(', ')}`);
    if (this.agent.pids().length < this.spawns) problems.push('the agent has not restarted yet');
    if (this.expectedRequests > this.requests.length) problems.push('the permission request has not reached the listener');
    if (this.turn?.expected && this.turn.outcome.status === 'pending') problems.push('prompt() has not settled yet');
    return problems;
  }

  /** The assertion of every model state on the real session. */
  protected async check(state: ModelSnapshot): Promise<void> {
    const leaf = leafOf(state);
    const expected = stateMapping[leaf]!;
    const actor = this.sessionActor();
    expect(this.session.status, 'session.status').toBe(expected.status);
    if (expected.machine === null) expect(actor, 'the session actor is gone').toBeUndefined();
    else expect(actor?.getSnapshot().matches(expected.machine), `session machine ${JSON.stringify(actor?.getSnapshot().value)} for ${leaf}`).toBe(true);
    if (state.matches('completed')) {
      expect(actor?.getSnapshot().context.lastStopReason, 'the session machine\'s lastStopReason').toBe((state.context as SessionModelContext).stopReason);
    }
    const lastError = state.matches('stopped') ? null : this.failedSinceTurn ? 'agent_exited' : null;
    expect(this.session.lastError?.kind ?? null, 'session.lastError').toBe(lastError);
    // Copies: a failure message must show the trace at the check, not after the shutdown that follows.
    expect([...this.trace], 'session status / stall events').toEqual(this.expected);
    expect([...this.supervisorTrace], "supervisor 'session:status' / 'session:stall' events").toEqual(this.expected);
    expect(this.supervisor.openSessions().includes(this.session), 'listed by supervisor.openSessions()').toBe(!state.matches('stopped'));
    expect(this.requests.length, 'permission requests heard').toBe(this.expectedRequests);
    await this.checkTurn();

    const { status, pid } = this.summary;
    expect(status, 'agent status').toBe(this.agentStatus);
    if (this.agentStatus === 'connected') expect(pid !== null && isRunning(pid), 'a live agent process').toBe(true);
    else expect(pid, 'no agent process').toBeNull();
    expect(this.agent.running().filter((running) => running !== pid), 'no other agent process runs').toEqual([]);
    expect(this.agent.pids().length, 'agent processes started').toBe(this.spawns);

    const previous = this.index > 0 ? this.path.steps[this.index - 1]!.state : undefined;
    this.coverage.recordStep(previous, this.path.steps[this.index]!);
  }

  /**
   * The turn's prompt(): still pending while the turn runs; once a transition settled it,
   * resolved with the model's stop reason or rejected with the model's kind.
   */
  private async checkTurn(): Promise<void> {
    const turn = this.turn;
    if (!turn || turn.checked) return;
    if (!turn.expected) {
      expect(turn.outcome, 'prompt() is still pending').toEqual({ status: 'pending' });
      return;
    }
    await within(turn.done, 'prompt() to settle');
    expect(turn.outcome, 'what prompt() settled with').toEqual(turn.expected);
    turn.checked = true;
  }
}
