/**
 * SIGINT and SIGTERM while a command runs: the first asks it to wind down (cancel the turn,
 * shut the supervisor down), a second one forces it. The exit code says which signal ended
 * the command (130 for SIGINT, 143 for SIGTERM).
 */
import { CliError } from './cli-error.js';
import { ExitCode } from './exit-codes.js';

/** The signals a command winds down on. */
export type StopSignal = 'SIGINT' | 'SIGTERM';

/** What to do on the first signal and on any later one. */
export interface InterruptHandlers {
  first(signal: StopSignal): void;
  again?(signal: StopSignal): void;
}

/** Installs the handlers; returns the function that removes them. */
export function onInterrupt(handlers: InterruptHandlers): () => void {
  let count = 0;
  const listener = (signal: StopSignal) => {
    count += 1;
    if (count === 1) handlers.first(signal);
    else handlers.again?.(signal);
  };
  process.on('SIGINT', listener);
  process.on('SIGTERM', listener);
  return () => {
    process.off('SIGINT', listener);
    process.off('SIGTERM', listener);
  };
}

/** The error a command ends with after `signal`: "Interrupted", exit 130 (SIGINT) or 143 (SIGTERM). */
export function interrupted(signal: StopSignal): CliError {
  return signal === 'SIGINT' ? new CliError('Interrupted', ExitCode.interrupted) : new CliError('Terminated', ExitCode.terminated);
}
