/**
 * What the daemon keeps in its state directory between runs, in `<stateDir>/daemon-state.json`
 * (mode 0600), written atomically (a temporary file, then a rename) on each change, so that
 * a daemon killed with SIGKILL leaves it whole:
 *
 * - the names of its named sessions (`prompt -s NAME`): the session a name stands for, so a
 *   later daemon resumes it at the name's next prompt;
 * - what it runs (`running`): the agents a caller started and did not stop, and the named
 *   sessions open on them, which the next daemon starts and reopens (docs/cli.md, "Restore").
 *
 * An unreadable file is treated as empty (and rewritten on the next change): names are a
 * convenience and the sessions live in the store. The file of earlier versions,
 * `named-sessions.json` (names only), is read when there is no `daemon-state.json`, and
 * removed once the new file is written.
 */
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

interface NamedSession {
  agent: string;
  name: string;
  sessionId: string;
}

/** A named session that was open, with where it works: reopened by the next daemon. */
export interface OpenNamedSession extends NamedSession {
  cwd: string;
}

/** What a daemon ran: the agents to start again and the named sessions to reopen. */
export interface RunningState {
  agents: string[];
  sessions: OpenNamedSession[];
}

const FILE = 'daemon-state.json';
const LEGACY_FILE = 'named-sessions.json';

export class DaemonStateFile {
  private readonly entries: NamedSession[];
  private running: RunningState;
  private readonly path: string | null;
  private legacy: string | null = null;
  private frozen = false;

  constructor(stateDir: string | null) {
    this.path = stateDir === null ? null : join(stateDir, FILE);
    const read = stateDir === null ? empty() : readState(stateDir);
    this.entries = read.names;
    this.running = read.running;
    this.legacy = read.legacy;
  }

  idOf(agent: string, name: string): string | undefined {
    return this.entries.find((entry) => entry.agent === agent && entry.name === name)?.sessionId;
  }

  nameOf(sessionId: string): string | null {
    return this.entries.find((entry) => entry.sessionId === sessionId)?.name ?? null;
  }

  set(agent: string, name: string, sessionId: string): void {
    const existing = this.entries.find((entry) => entry.agent === agent && entry.name === name);
    if (existing?.sessionId === sessionId) return;
    if (existing) existing.sessionId = sessionId;
    else this.entries.push({ agent, name, sessionId });
    this.write();
  }

  /** Forgets every name of a session that no longer exists (deleted on the agent's side). */
  forget(sessionId: string): void {
    const kept = this.entries.filter((entry) => entry.sessionId !== sessionId);
    if (kept.length === this.entries.length) return;
    this.entries.splice(0, this.entries.length, ...kept);
    this.write();
  }

  /** What the daemon that wrote the file ran (read at start; this daemon's once it has recorded its own). */
  savedRunning(): RunningState {
    return { agents: [...this.running.agents], sessions: this.running.sessions.map((session) => ({ ...session })) };
  }

  /** Records what runs now; written only when it changed. Ignored once frozen. */
  recordRunning(running: RunningState): void {
    if (this.frozen) return;
    const next: RunningState = { agents: [...running.agents].sort(), sessions: [...running.sessions].sort(byAgentAndName).map((session) => ({ ...session })) };
    if (JSON.stringify(next) === JSON.stringify(this.running)) return;
    this.running = next;
    this.write();
  }

  /**
   * Stops recording what runs: the daemon is closing, and the stops of its shutdown are not a
   * caller's (a later daemon restores what ran before it). Names are still written.
   */
  freeze(): void {
    this.frozen = true;
  }

  private write(): void {
    if (!this.path) return;
    try {
      mkdirSync(join(this.path, '..'), { recursive: true, mode: 0o700 });
      const temporary = `${this.path}.${process.pid}.tmp`;
      // No fsync: it would hold the event loop on every status change; a killed process loses
      // nothing written (the kernel has it), and the rename never leaves half a file.
      writeFileSync(temporary, `${JSON.stringify({ version: 2, sessions: this.entries, running: this.running }, null, 2)}\n`, { mode: 0o600 });
      renameSync(temporary, this.path);
      if (this.legacy) {
        rmSync(this.legacy, { force: true });
        this.legacy = null;
      }
    } catch (error) {
      process.stderr.write(`agentvisor daemon: could not save its state to ${this.path} (${(error as Error).message})\n`);
    }
  }
}

function empty(): { names: NamedSession[]; running: RunningState; legacy: string | null } {
  return { names: [], running: { agents: [], sessions: [] }, legacy: null };
}

function readState(stateDir: string): { names: NamedSession[]; running: RunningState; legacy: string | null } {
  const current = readJson(join(stateDir, FILE));
  if (current !== undefined) return { names: namesOf(current), running: runningOf(current), legacy: null };
  const legacyPath = join(stateDir, LEGACY_FILE);
  const legacy = readJson(legacyPath);
  return legacy === undefined ? empty() : { names: namesOf(legacy), running: { agents: [], sessions: [] }, legacy: legacyPath };
}

/** The parsed file; undefined when it is missing or is not JSON. */
function readJson(path: string): unknown {
  try {
    return JSON.parse(readFileSync(path, 'utf8'));
  } catch {
    return undefined;
  }
}

function namesOf(parsed: unknown): NamedSession[] {
  const sessions = (parsed as { sessions?: unknown } | null)?.sessions;
  if (!Array.isArray(sessions)) return [];
  return sessions.filter(isNamedSession).map(({ agent, name, sessionId }) => ({ agent, name, sessionId }));
}

function runningOf(parsed: unknown): RunningState {
  const running = (parsed as { running?: { agents?: unknown; sessions?: unknown } } | null)?.running;
  const agents = Array.isArray(running?.agents) ? running.agents.filter((agent): agent is string => typeof agent === 'string') : [];
  const sessions = Array.isArray(running?.sessions)
    ? running.sessions.filter((entry): entry is OpenNamedSession => isNamedSession(entry) && typeof (entry as { cwd?: unknown }).cwd === 'string').map(({ agent, name, sessionId, cwd }) => ({ agent, name, sessionId, cwd }))
    : [];
  return { agents, sessions };
}

function isNamedSession(entry: unknown): entry is NamedSession {
  const candidate = entry as Partial<NamedSession> | null;
  return typeof candidate?.agent === 'string' && typeof candidate.name === 'string' && typeof candidate.sessionId === 'string';
}

function byAgentAndName(a: NamedSession, b: NamedSession): number {
  return a.agent === b.agent ? (a.name < b.name ? -1 : a.name > b.name ? 1 : 0) : a.agent < b.agent ? -1 : 1;
}
