/**
 * The SQLite store on real files: the Store contract (tests/support/store-contract.ts), then
 * what only a file has — reopening, a full disk, two connections, and the files it must refuse
 * (not SQLite, another application's, a newer schema) and leave untouched.
 */
import Database from 'better-sqlite3';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Page } from '../../core/store.js';
import { openSqliteStore, STORE_APPLICATION_ID, STORE_SCHEMA_VERSION } from '../../services/store/sqlite.store.js';
import { describeStoreContract, writes } from '../support/store-contract.js';

const all: Page = { after: 0, limit: 1_000_000 };

let dir: string;
let file: string;
const opened: { close(): unknown }[] = [];

/** Opens a store (or a raw connection) that the test's cleanup closes. */
function track<T extends { close(): unknown }>(handle: T): T {
  opened.push(handle);
  return handle;
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'agentvisor-store-'));
  file = join(dir, 'state', 'store.db');
});

afterEach(() => {
  for (const handle of opened.splice(0)) handle.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A file's bytes and its directory's listing, to show a refused file was not touched. */
function snapshot(path: string) {
  return { bytes: readFileSync(path), files: readdirSync(join(path, '..')).sort() };
}

function expectRefused(path: string, message: RegExp) {
  let error: unknown;
  try {
    track(openSqliteStore(path));
  } catch (caught) {
    error = caught;
  }
  expect(error).toMatchObject({ name: 'AgentError', kind: 'store_failed' });
  expect((error as Error).message).toContain(path);
  expect((error as Error).message).toMatch(message);
}

describe('sqlite store', () => {
  describeStoreContract(() => openSqliteStore(join(mkdtempSync(join(dir, 'contract-')), 'store.db')));

  describe('on disk', () => {
    it('creates its directory (0700) and a WAL database marked as ours, at the newest schema version', () => {
      const store = track(openSqliteStore(file));
      expect(store.file).toBe(file);
      expect(statSync(join(dir, 'state')).mode & 0o777).toBe(0o700);
      const raw = track(new Database(file, { readonly: true }));
      expect(raw.pragma('journal_mode', { simple: true })).toBe('wal');
      expect(raw.pragma('application_id', { simple: true })).toBe(STORE_APPLICATION_ID);
      expect(raw.pragma('user_version', { simple: true })).toBe(STORE_SCHEMA_VERSION);
    });

    it('finds everything again after a reopen, and seq goes on from where it was', () => {
      let store = openSqliteStore(file);
      store.write([writes.session(1, { cwd: '/w', title: 'T' }), writes.transcript(2, { n: 1 }), writes.stderr(3, 'line'), writes.event(4, { e: 1 })]);
      const seq = store.transcript('a', 's', all)[0]!.seq;
      store.close();
      store = track(openSqliteStore(file));
      expect(store.sessions({})).toEqual([{ agent: 'a', sessionId: 's', cwd: '/w', title: 'T', state: 'idle', stopReason: null, createdAt: 1, updatedAt: 1 }]);
      expect(store.logs('a', all)).toEqual([{ seq: expect.any(Number), at: 3, agent: 'a', line: 'line' }]);
      expect(store.events({}, all)).toEqual([{ seq: expect.any(Number), at: 4, agent: 'a', event: 'status', data: { e: 1 } }]);
      store.write([writes.transcript(5, { n: 2 })]);
      const transcript = store.transcript('a', 's', all);
      expect(transcript.map((entry) => entry.data)).toEqual([{ n: 1 }, { n: 2 }]);
      expect(transcript[1]!.seq).toBeGreaterThan(seq);
      expect(store.stats().fileBytes).toBeGreaterThan(0);
    });

    it('rolls a batch back whole when the disk is full mid-way, and applies later batches', () => {
      const store = track(openSqliteStore(file, { maxPageCount: 1 }));
      const batch = [writes.session(1), writes.stderr(2, 'small'), writes.transcript(3, 'x'.repeat(200_000)), writes.event(4, 'lost')];
      expect(() => store.write(batch)).toThrow(expect.objectContaining({ kind: 'store_failed', message: expect.stringContaining(`Could not write to the store ${file}`) }));
      expect(() => store.write(batch)).toThrow(/database or disk is full/);
      expect(store.stats()).toMatchObject({ sessions: 0, transcript: { count: 0 }, stderr: { count: 0 }, events: { count: 0 } });
      store.write([writes.session(5), writes.stderr(6, 'fits')]);
      expect(store.logs('a', all).map((entry) => entry.line)).toEqual(['fits']);
      expect(store.sessions({}).map((session) => session.createdAt)).toEqual([5]);
    });

    it('waits out another connection’s write lock up to busyTimeoutMs, then fails and goes on', () => {
      const store = track(openSqliteStore(file, { busyTimeoutMs: 50 }));
      const other = track(new Database(file));
      other.exec('BEGIN IMMEDIATE');
      const started = Date.now();
      expect(() => store.write([writes.stderr(1, 'blocked')])).toThrow(expect.objectContaining({ kind: 'store_failed', message: expect.stringMatching(/locked|busy/) }));
      expect(Date.now() - started).toBeGreaterThanOrEqual(40);
      other.exec('COMMIT');
      store.write([writes.stderr(2, 'free')]);
      expect(store.logs('a', all).map((entry) => entry.line)).toEqual(['free']);
    });

    it('shares one file between two connections: each reads what the other wrote', () => {
      const first = track(openSqliteStore(file));
      const second = track(openSqliteStore(file));
      for (let i = 0; i < 50; i++) {
        (i % 2 ? first : second).write([writes.session(i, { state: `s${i}` }), writes.transcript(i, i)]);
      }
      for (const store of [first, second]) {
        expect(store.transcript('a', 's', all).map((entry) => entry.data)).toEqual(Array.from({ length: 50 }, (_, i) => i));
        expect(store.sessions({})).toMatchObject([{ state: 's49', createdAt: 0, updatedAt: 49 }]);
      }
    });

    it('adopts an empty existing file', () => {
      writeFileSync(join(dir, 'empty.db'), '');
      const store = track(openSqliteStore(join(dir, 'empty.db')));
      store.write([writes.stderr(1, 'ok')]);
      expect(store.stats().stderr.count).toBe(1);
    });
  });

  describe('refuses, untouched', () => {
    it('a file that is not SQLite', () => {
      const path = join(dir, 'random.db');
      writeFileSync(path, randomBytes(16_384));
      const before = snapshot(path);
      expectRefused(path, /not a SQLite database, or it is corrupt/);
      expect(snapshot(path)).toEqual(before);
    });

    it('another application’s SQLite database, with tables and no application_id', () => {
      const path = join(dir, 'notes.db');
      const foreign = new Database(path);
      foreign.exec("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT); INSERT INTO notes (text) VALUES ('mine')");
      foreign.close();
      const before = snapshot(path);
      expectRefused(path, /a SQLite database that agentvisor did not create/);
      expect(snapshot(path)).toEqual(before);
    });

    it('another application’s SQLite database, by its application_id', () => {
      const path = join(dir, 'other.db');
      const foreign = new Database(path);
      foreign.pragma('application_id = 1234');
      foreign.close();
      const before = snapshot(path);
      expectRefused(path, /another application's SQLite database \(application_id 0x000004d2\)/);
      expect(snapshot(path)).toEqual(before);
    });

    it('a store with a newer schema version, naming both versions', () => {
      openSqliteStore(file).close();
      const newer = new Database(file);
      newer.pragma(`user_version = ${STORE_SCHEMA_VERSION + 7}`);
      newer.close();
      const before = snapshot(file);
      expectRefused(file, new RegExp(`schema version is ${STORE_SCHEMA_VERSION + 7}, newer than version ${STORE_SCHEMA_VERSION}`));
      expect(snapshot(file)).toEqual(before);
      expect(existsSync(`${file}-wal`)).toBe(false);
    });

    it('a path it cannot create', () => {
      writeFileSync(join(dir, 'plain'), 'a file, not a directory');
      expectRefused(join(dir, 'plain', 'store.db'), /Could not open the store/);
    });
  });
});
