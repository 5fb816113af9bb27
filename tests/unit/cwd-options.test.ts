/**
 * A working directory that does not exist, or is not a directory, is refused when it is
 * given (api/options.ts): `invalid_options` naming the option and the path — an agent spec's
 * `cwd` when the agent is registered, a session's `cwd` in newSession, loadSession and
 * resumeSession — before any agent is started. A relative path is the host's cwd's, made
 * absolute. An agent on another host or in a container has its paths there: not checked here.
 */
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existingDirectory, resolveAgentSpecPaths, resolveOptions, resolveSessionOptions } from '../../api/options.js';
import { createSupervisor, type AgentSpec, type Supervisor } from '../../index.js';

let dir: string;
const defaults = resolveOptions({ stateDir: false }).sessions;
const supervisors: Supervisor[] = [];
const supervisor = (agents: Record<string, AgentSpec> = {}) => {
  const created = createSupervisor({ agents, stateDir: false, store: 'memory', handleSignals: false, sweepOnStart: false });
  supervisors.push(created);
  return created;
};

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'agentvisor-cwd-options-'));
  mkdirSync(join(dir, 'work'));
  writeFileSync(join(dir, 'file.txt'), 'not a directory');
  symlinkSync(join(dir, 'work'), join(dir, 'link'));
});
afterAll(async () => {
  await Promise.all(supervisors.map((created) => created.shutdown()));
  rmSync(dir, { recursive: true, force: true });
});

describe('a session cwd', () => {
  it('that does not exist, or is a file, is invalid_options naming the option and the path', () => {
    const missing = join(dir, 'does', 'not', 'exist');
    expect(() => resolveSessionOptions({ cwd: missing }, defaults)).toThrow(expect.objectContaining({ kind: 'invalid_options', message: `Option session options.cwd: ${missing} does not exist` }));
    const file = join(dir, 'file.txt');
    expect(() => resolveSessionOptions({ cwd: file }, defaults)).toThrow(expect.objectContaining({ kind: 'invalid_options', message: `Option session options.cwd: ${file} is not a directory` }));
    expect(() => resolveSessionOptions({ cwd: join(file, 'below') }, defaults)).toThrow(expect.objectContaining({ kind: 'invalid_options', message: expect.stringContaining('does not exist') }));
  });

  it('relative is made absolute against the host cwd, and named as given when refused', () => {
    const given = relative(process.cwd(), join(dir, 'work'));
    expect(resolveSessionOptions({ cwd: given }, defaults)).toMatchObject({ cwd: join(dir, 'work'), cwdGiven: true });
    expect(resolveSessionOptions({ cwd: join(dir, 'link') }, defaults).cwd).toBe(join(dir, 'link'));
    expect(() => resolveSessionOptions({ cwd: 'no-such-dir-here' }, defaults)).toThrow(
      expect.objectContaining({ kind: 'invalid_options', message: `Option session options.cwd: "no-such-dir-here" (${join(process.cwd(), 'no-such-dir-here')}) does not exist` }),
    );
  });

  it('of an agent that runs elsewhere is a path there: not checked here', () => {
    expect(resolveSessionOptions({ cwd: '/srv/remote/repo' }, defaults, false).cwd).toBe('/srv/remote/repo');
  });

  it('is refused by newSession, loadSession and resumeSession before the agent is started', async () => {
    const created = supervisor({ local: { command: 'agentvisor-no-such-agent' } });
    const missing = join(dir, 'missing');
    await expect(created.newSession('local', { cwd: missing })).rejects.toMatchObject({ kind: 'invalid_options', message: `Option session options.cwd: ${missing} does not exist` });
    await expect(created.newSession('local', { cwd: join(dir, 'file.txt'), resume: true })).rejects.toMatchObject({ kind: 'invalid_options', message: expect.stringContaining('is not a directory') });
    await expect(created.loadSession('local', 'some-id', { cwd: missing })).rejects.toMatchObject({ kind: 'invalid_options', message: expect.stringContaining(missing) });
    expect(created.getStatus('local')).toBe('idle');
  });
});

describe("an agent spec's cwd", () => {
  it('that does not exist, or is a file, is invalid_options when the agent is registered', () => {
    const missing = join(dir, 'gone');
    expect(() => supervisor({ mine: { command: 'agent', cwd: missing } })).toThrow(
      expect.objectContaining({ kind: 'invalid_options', agent: 'mine', message: `Invalid spec for agent "mine": spec.cwd: ${missing} does not exist` }),
    );
    const created = supervisor();
    expect(() => created.register('filed', { command: 'agent', cwd: join(dir, 'file.txt') })).toThrow(expect.objectContaining({ kind: 'invalid_options', message: expect.stringContaining('spec.cwd') }));
    expect(() => created.register('sandboxed', { command: 'agent', cwd: missing, runtime: { kind: 'sandbox' } })).toThrow(expect.objectContaining({ kind: 'invalid_options' }));
    expect(created.list().map((row) => row.name)).toEqual([]);
  });

  it('is kept absolute when it exists; a remote one is a path there, as given', () => {
    const given = relative(process.cwd(), join(dir, 'work'));
    expect(resolveAgentSpecPaths('a', { command: 'agent', cwd: given }).cwd).toBe(join(dir, 'work'));
    const remote = { command: 'agent', cwd: '/srv/app', runtime: { kind: 'docker' as const, image: 'img' } };
    expect(resolveAgentSpecPaths('a', remote)).toEqual(remote);
    expect(() => supervisor({ remote })).not.toThrow();
  });

  it('existingDirectory names the field given and returns the absolute path', () => {
    expect(existingDirectory(join(dir, 'work'), 'x')).toBe(join(dir, 'work'));
    expect(() => existingDirectory(join(dir, 'nope'), 'Option y')).toThrow(`Option y: ${join(dir, 'nope')} does not exist`);
  });
});
