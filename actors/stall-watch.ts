/**
 * The stall watch of a session's turns: while watched, a turn that sends no update for
 * `timeoutMs` is reported once (`onStall`). The prompt-turn actor runs it; the session
 * machine decides what a stall means (its `stalled` state and the onStall policy).
 *
 * One timer per session, not one per turn: a turn's start and its updates only note the
 * time, and the timer, when it fires, compares the idle time with the timeout and re-arms
 * itself for the rest when an update moved the deadline. Scheduling and cancelling a timer
 * on every turn (XState's `after`) cost about a third of a tiny turn's machine work
 * (docs/performance.md, *turns*). A stall is seen exactly `timeoutMs` after the last update,
 * as with a timer restarted on each one.
 *
 * That needs the clock's time. A clock given without `now()` (the supervisor's `clock` option
 * asks only for setTimeout and clearTimeout) has time only in its timers, so on such a clock
 * the watch restarts its timer on every watch and update instead — exact, at a timer a turn.
 */
import { realClock, type Clock } from '../core/clock.js';

export class StallWatch {
  private watching = false;
  /** When the watch last started or saw an update (the watch's time, ms). */
  private lastActivity = 0;
  /** The armed timer's handle (undefined: none armed). */
  private timer: unknown = undefined;
  /**
   * The watch's time: the clock's own (a SimulatedClock's in tests), or — on the real
   * clock — a monotonic one, so a wall-clock step never fakes or hides a stall. Undefined for
   * a clock without `now()`: its timer is restarted instead of read against the time.
   */
  private readonly now: (() => number) | undefined;

  constructor(
    private readonly clock: Clock,
    private readonly timeoutMs: number,
    private readonly onStall: () => void,
  ) {
    this.now = clock === realClock ? () => performance.now() : clock.now?.bind(clock);
  }

  /** Watch from now (a turn starts, or resumes after a person answered or after a stall). */
  watch(): void {
    this.watching = true;
    if (!this.now) return this.restart();
    this.lastActivity = this.now();
    if (this.timer === undefined) this.arm(this.timeoutMs);
  }

  /** An update arrived: the deadline moves to `timeoutMs` from now. */
  activity(): void {
    if (!this.watching) return;
    if (this.now) this.lastActivity = this.now();
    else this.restart();
  }

  /** Not watched (the turn ended, or waits for a person): an armed timer lapses when it fires. */
  pause(): void {
    this.watching = false;
  }

  /** The session ended: nothing is armed any more. */
  stop(): void {
    this.watching = false;
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** A clock without time: the deadline is a fresh timer of the whole timeout. */
  private restart(): void {
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.arm(this.timeoutMs);
  }

  private arm(delayMs: number): void {
    const handle: unknown = this.clock.setTimeout(this.fire, delayMs);
    // An idle session's lapsing timer must not hold the process open (a live turn's pipes do).
    (handle as { unref?: () => void } | null)?.unref?.();
    this.timer = handle;
  }

  private readonly fire = (): void => {
    this.timer = undefined;
    if (!this.watching) return;
    const idle = this.now ? this.now() - this.lastActivity : this.timeoutMs;
    if (idle < this.timeoutMs) return this.arm(this.timeoutMs - idle);
    this.watching = false;
    this.onStall();
  };
}
