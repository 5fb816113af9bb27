/** Why a terminal request was refused or failed: the errors the ACP handlers answer the agent with. */

/** A terminal asked for after its session closed. */
export class TerminalsClosed extends Error {
  constructor() {
    super('The session is closed: no new terminals');
  }
}

/** A terminal id the session does not hold (never created, or released). */
export class UnknownTerminal extends Error {
  constructor(readonly terminalId: string) {
    super(`Unknown terminal ${terminalId}`);
  }
}

/** A terminal request refused or failed for a reason the agent should hear as it is. */
export class TerminalFailure extends Error {
  constructor(
    readonly reason: 'terminal_limit' | 'spawn_failed' | 'timeout',
    message: string,
  ) {
    super(message);
  }
}

/** `terminal/create` when the session already has `limit` live terminals. */
export class TerminalLimitReached extends TerminalFailure {
  constructor(readonly limit: number) {
    super('terminal_limit', `Too many terminals: this session already has ${limit} (the limit); release one first`);
  }
}

/** The command could not be started (EMFILE, EAGAIN, ENOMEM...); nothing runs. */
export class TerminalSpawnFailed extends TerminalFailure {
  readonly code: string | undefined;
  constructor(command: string, cause: unknown) {
    const code = (cause as NodeJS.ErrnoException | null)?.code;
    const detail = code ? `${code}${spawnErrorText[code] ? ` (${spawnErrorText[code]})` : ''}` : cause instanceof Error ? cause.message : String(cause);
    super('spawn_failed', `Could not start ${command}: ${detail}`);
    this.code = code;
  }
}

const spawnErrorText: Record<string, string> = {
  EMFILE: 'too many open files in the supervisor',
  ENFILE: 'too many open files on this host',
  EAGAIN: 'no more processes can be created now',
  ENOMEM: 'out of memory',
  EACCES: 'permission denied',
  ENOENT: 'no such file or directory',
};

/** A terminal request that did not complete within the request timeout. */
export class TerminalTimeout extends TerminalFailure {
  constructor(what: string, ms: number) {
    super('timeout', `${what} did not complete within ${ms} ms`);
  }
}
