/**
 * The names of the daemon's named sessions (`prompt -s NAME`), kept in
 * `<stateDir>/named-sessions.json` (mode 0600) so a later daemon finds the session a name
 * stands for. Written atomically on each change; an unreadable file is treated as empty
 * (and rewritten on the next change) — names are a convenience, the sessions live in the store.
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

interface NamedSession {
  agent: string;
  name: string;
  sessionId: string;
}

export class NamedSessionFile {
  private readonly entries: NamedSession[];
  private readonly path: string | null;

  constructor(stateDir: string | null) {
    this.path = stateDir === null ? null : join(stateDir, 'named-sessions.json');
    this.entries = this.path ? read(this.path) : [];
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

  private write(): void {
    if (!this.path) return;
    try {
      mkdirSync(join(this.path, '..'), { recursive: true, mode: 0o700 });
      const temporary = `${this.path}.${process.pid}.tmp`;
      writeFileSync(temporary, `${JSON.stringify({ version: 1, sessions: this.entries }, null, 2)}\n`, { mode: 0o600 });
      renameSync(temporary, this.path);
    } catch (error) {
      process.stderr.write(`agentvisor daemon: could not save the session names (${(error as Error).message})\n`);
    }
  }
}

function read(path: string): NamedSession[] {
  try {
    const parsed = JSON.parse(readFileSync(path, 'utf8')) as { sessions?: unknown };
    if (!Array.isArray(parsed.sessions)) return [];
    return parsed.sessions.filter(
      (entry): entry is NamedSession => typeof entry?.agent === 'string' && typeof entry?.name === 'string' && typeof entry?.sessionId === 'string',
    );
  } catch {
    return [];
  }
}
