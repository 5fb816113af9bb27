/**
 * Host signals: SIGINT, SIGTERM and SIGHUP shut down every supervisor that handles signals,
 * then let the host end as it would have. One set of process listeners serves all of them
 * (several supervisors in one process cooperate), installed while at least one is
 * registered and removed with the last, so nothing is left after shutdown.
 *
 * - First signal: `shutdown()` of each supervisor (the graceful ladder), then the signal is
 *   raised again with our listeners removed, so the host dies of it as it would have — unless
 *   the embedding app listens to that signal itself: then the app decides.
 * - Second signal while shutting down: `shutdown({ force: true })`, every agent to SIGKILL now.
 */
export interface SignalHandlingSupervisor {
  shutdown(options?: { force?: boolean }): Promise<void>;
}

export const handledSignals: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

const supervisors = new Set<SignalHandlingSupervisor>();
let shuttingDown = false;

/** Starts handling host signals for `supervisor`; returns the function that stops it. */
export function handleSignalsFor(supervisor: SignalHandlingSupervisor): () => void {
  supervisors.add(supervisor);
  if (supervisors.size === 1) for (const signal of handledSignals) process.on(signal, onSignal);
  return () => release(supervisor);
}

function release(supervisor: SignalHandlingSupervisor): void {
  if (!supervisors.delete(supervisor) || supervisors.size > 0) return;
  for (const signal of handledSignals) process.off(signal, onSignal);
  shuttingDown = false;
}

function onSignal(signal: NodeJS.Signals): void {
  const all = [...supervisors];
  if (shuttingDown) {
    for (const supervisor of all) void supervisor.shutdown({ force: true }).catch(() => {});
    return;
  }
  shuttingDown = true;
  void Promise.allSettled(all.map((supervisor) => supervisor.shutdown())).then(() => {
    for (const supervisor of all) release(supervisor);
    // Our listeners are gone; if nobody else listens, the signal now does what it would have.
    if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
  });
}
