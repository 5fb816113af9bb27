/**
 * The store a supervisor keeps its sessions, transcripts, logs and event log in (docs/store.md),
 * opened once when it is created: SQLite in the state directory by default, memory, or the
 * application's own `Store`.
 */
import { join } from 'node:path';
import type { Retention, Store } from '../core/store.js';
import { createMemoryStore } from '../services/store/memory.store.js';
import { openSqliteStore } from '../services/store/sqlite.store.js';

export { createMemoryStore, openSqliteStore };

/** What a supervisor asks for: SQLite (in the state directory), memory, or a store of its own. */
export type StorePreference = 'sqlite' | 'memory' | Store;

/** The database file in a state directory. */
export const storeFileName = 'agentvisor.db';

/**
 * Opens the store asked for. SQLite needs a state directory: with `stateDir: false` it is
 * memory. Throws `store_failed` for a corrupt, foreign or newer database file.
 */
export function openStore(preference: StorePreference, stateDir: string | false): Store {
  if (preference === 'memory' || (preference === 'sqlite' && stateDir === false)) return createMemoryStore();
  if (preference === 'sqlite') return openSqliteStore(join(stateDir as string, storeFileName));
  return preference;
}

const day = 24 * 60 * 60 * 1000;

/** What is kept by default: sessions for 90 days, entries for 30 days and within these counts and sizes. */
export const defaultRetention: Required<Retention> = Object.freeze({
  sessions: { maxAgeMs: 90 * day },
  transcript: { maxAgeMs: 30 * day, maxBytes: 512 * 1024 * 1024 },
  stderr: { maxAgeMs: 30 * day, maxCount: 100_000 },
  events: { maxAgeMs: 30 * day, maxCount: 100_000 },
});

/** The methods every store implements, to tell one from a malformed option. */
export const storeMethods = ['write', 'sessions', 'transcript', 'logs', 'events', 'prune', 'stats', 'close'] as const;
