/**
 * The failure classifier against real-world samples (tests/fixtures/failure-samples/, each
 * file naming where its texts come from), its order of decision, and parseRetryAt on every
 * wording it reads. Expected times never depend on the machine's time zone: fixtures pin only
 * zone-explicit or relative times, and local clock times are computed here with the same
 * local-time arithmetic (new Date(now), setHours).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { FailureClass, FailureEvidence, FailurePattern } from '../../core/failure-class.js';
import { failureClasses } from '../../core/failure-class.js';
import { presetFailurePatterns } from '../../core/failure-patterns.js';
import { builtInPatterns, classifyFailure, parseRetryAt } from '../../machines/policies/failure-class.policy.js';

interface Sample {
  note: string;
  evidence: FailureEvidence;
  expected: { class: FailureClass; retryAt?: { now: number; at: number } };
}

interface SampleFile {
  source: string;
  samples: Sample[];
}

const fixtures = new URL('../fixtures/failure-samples/', import.meta.url);
const presetOf: Record<string, readonly FailurePattern[]> = {
  'claude-code.json': presetFailurePatterns.claudeCode,
  'codex.json': presetFailurePatterns.codex,
  'gemini-cli.json': presetFailurePatterns.gemini,
  'generic.json': [],
};
const files = readdirSync(fixtures)
  .filter((name) => name.endsWith('.json'))
  .sort();
const load = (name: string): SampleFile => JSON.parse(readFileSync(new URL(name, fixtures), 'utf8')) as SampleFile;
/** `now` for samples that pin no reset time. */
const someNow = Date.UTC(2026, 0, 15, 12, 0, 0);
const hour = 3_600_000;

describe('failure samples', () => {
  it('has the four sample files, each with a preset', () => {
    expect(files).toEqual(['claude-code.json', 'codex.json', 'gemini-cli.json', 'generic.json']);
  });

  for (const file of files) {
    describe(file, () => {
      const { source, samples } = load(file);
      const patterns = presetOf[file] ?? [];

      it('names its source', () => {
        expect(source.length).toBeGreaterThan(20);
        for (const sample of samples) expect(sample.note.length).toBeGreaterThan(5);
      });

      if (file !== 'generic.json') {
        it('covers auth, usage_limit, rate_limited and config or crash, in 8 samples or more', () => {
          const classes = new Set(samples.map((sample) => sample.expected.class));
          expect(samples.length).toBeGreaterThanOrEqual(8);
          for (const needed of ['auth', 'usage_limit', 'rate_limited'] as const) expect(classes).toContain(needed);
          expect(classes.has('config') || classes.has('crash')).toBe(true);
          expect(samples.some((sample) => sample.expected.class === 'usage_limit' && sample.expected.retryAt)).toBe(true);
        });
      }

      for (const sample of samples) {
        it(sample.note, () => {
          const now = sample.expected.retryAt?.now ?? someNow;
          const result = classifyFailure(sample.evidence, patterns, now);
          expect(result.class).toBe(sample.expected.class);
          expect(result.evidence.length).toBeGreaterThan(0);
          if (sample.expected.retryAt) expect(result.retryAt).toBe(sample.expected.retryAt.at);
          if (result.class !== 'usage_limit' && result.class !== 'rate_limited') expect(result.retryAt).toBeNull();
        });
      }
    });
  }
});

describe('patterns as data', () => {
  const all = [...builtInPatterns, ...presetFailurePatterns.claudeCode, ...presetFailurePatterns.codex, ...presetFailurePatterns.gemini];

  it('all compile and name a known class', () => {
    for (const pattern of all) {
      expect(() => new RegExp(pattern.source, pattern.flags)).not.toThrow();
      expect(failureClasses).toContain(pattern.class);
    }
  });

  it('are plain JSON', () => {
    expect(JSON.parse(JSON.stringify(presetFailurePatterns))).toEqual(presetFailurePatterns);
    expect(JSON.parse(JSON.stringify(builtInPatterns))).toEqual(builtInPatterns);
  });

  it('built-ins go auth, usage_limit, rate_limited, timeout', () => {
    expect(builtInPatterns.map((pattern) => pattern.class)).toEqual(['auth', 'usage_limit', 'rate_limited', 'timeout']);
  });
});

describe('order of decision', () => {
  const turn = (stderr: string[], more: Partial<FailureEvidence> = {}): FailureEvidence => ({ kind: 'turn_failed', phase: 'turn', stderr, ...more });

  it('a user pattern beats a built-in', () => {
    const evidence = turn(['HTTP/1.1 429 Too Many Requests']);
    expect(classifyFailure(evidence, [], someNow).class).toBe('rate_limited');
    expect(classifyFailure(evidence, [{ class: 'usage_limit', source: 'too many', flags: 'i' }], someNow)).toEqual({
      class: 'usage_limit',
      evidence: 'HTTP/1.1 429 Too Many Requests',
      retryAt: null,
    });
  });

  it('a user pattern beats the structural facts too (step a before b)', () => {
    const evidence: FailureEvidence = { kind: 'handshake_failed', phase: 'handshake', exitCode: 127, stderr: ['wrapper: agent: command not found'] };
    expect(classifyFailure(evidence, [], someNow).class).toBe('config');
    expect(classifyFailure(evidence, [{ class: 'auth', source: 'wrapper:' }], someNow).class).toBe('auth');
  });

  it('patterns are tried in turn: the first that matches any text decides, not the newest line', () => {
    const evidence = turn(['Quota exhausted for today', 'Too many requests']);
    const patterns: FailurePattern[] = [
      { class: 'usage_limit', source: 'quota exhausted', flags: 'i' },
      { class: 'rate_limited', source: 'too many requests', flags: 'i' },
    ];
    expect(classifyFailure(evidence, patterns, someNow).class).toBe('usage_limit');
    expect(classifyFailure(evidence, [...patterns].reverse(), someNow).class).toBe('rate_limited');
  });

  it('structural config beats text', () => {
    expect(classifyFailure({ kind: 'agent_exited', phase: 'connected', exitCode: 127, stderr: ['401 Unauthorized'] }, [], someNow).class).toBe('config');
    expect(classifyFailure({ kind: 'not_installed', phase: 'spawn', detail: 'spawn codex ENOENT', stderr: ['rate limit exceeded'] }, [], someNow)).toEqual({
      class: 'config',
      evidence: 'kind not_installed: spawn codex ENOENT',
      retryAt: null,
    });
    expect(classifyFailure({ kind: 'spawn_failed', phase: 'spawn', detail: 'spawn /bin/sh ENOENT' }, [], someNow).class).toBe('config');
    expect(classifyFailure({ kind: 'spawn_failed', phase: 'spawn', detail: 'spawn EMFILE' }, [], someNow).class).toBe('unknown');
    // A command that cannot be run, as the process service words it (services/executable.ts).
    for (const detail of ['/opt/agent is a directory', '/opt/agent is not executable', '/opt/bin/agent cannot be reached: permission denied']) {
      expect(classifyFailure({ kind: 'spawn_failed', phase: 'spawn', detail }, [], someNow).class, detail).toBe('config');
    }
  });

  it('reads a CLI complaining about its command line only before the handshake is done', () => {
    const stderr = ["error: unknown option '--foo'"];
    expect(classifyFailure({ kind: 'handshake_failed', phase: 'handshake', exitCode: 1, stderr }, [], someNow).class).toBe('config');
    expect(classifyFailure({ kind: 'agent_exited', phase: 'turn', exitCode: 1, stderr }, [], someNow).class).toBe('crash');
    const einval = ["Error: EINVAL: invalid argument, open '/tmp/x'"];
    expect(classifyFailure({ kind: 'handshake_failed', phase: 'handshake', exitCode: 1, stderr: einval }, [], someNow).class).toBe('crash');
  });

  it('JSON-RPC -32000 and kind auth_required are auth, before any text', () => {
    expect(classifyFailure(turn(['usage limit reached'], { rpcCode: -32000, detail: 'Authentication required' }), [], someNow)).toEqual({
      class: 'auth',
      evidence: 'JSON-RPC error -32000 (auth_required): Authentication required',
      retryAt: null,
    });
    expect(classifyFailure({ kind: 'auth_required', phase: 'session' }, [], someNow).class).toBe('auth');
  });

  it('handshake_timeout is a timeout; a "timed out" text is weaker than auth, quota and rate wording', () => {
    expect(classifyFailure({ kind: 'handshake_timeout', phase: 'handshake', stderr: ['overloaded'] }, [], someNow).class).toBe('timeout');
    expect(classifyFailure(turn(['Overloaded', 'Request timed out.']), [], someNow).class).toBe('rate_limited');
    expect(classifyFailure(turn(['Request timed out.']), [], someNow).class).toBe('timeout');
  });

  it('built-ins: auth before usage_limit before rate_limited; quota wording beats a 429', () => {
    expect(classifyFailure(turn(['status 429: rate limit', 'not logged in']), [], someNow).class).toBe('auth');
    expect(classifyFailure(turn(['Error: 429 Too Many Requests: usage limit reached for your plan']), [], someNow).class).toBe('usage_limit');
    expect(classifyFailure(turn(['Error: 429 Too Many Requests']), [], someNow).class).toBe('rate_limited');
  });

  it('a stack frame at line 401 or 429 is no HTTP status', () => {
    const stderr = ['Error: boom', '    at run (file:///app/cli.js:401:7)', '    at main (file:///app/cli.js:429:3)'];
    expect(classifyFailure({ kind: 'agent_exited', phase: 'connected', exitCode: 1, stderr }, [], someNow).class).toBe('crash');
  });

  it('then crash for a signal, a non-zero exit or a dead process, else unknown', () => {
    const aborted: FailureEvidence = { kind: 'agent_exited', phase: 'connected', signal: 'SIGABRT', exitCode: null };
    expect(classifyFailure(aborted, [], someNow)).toEqual({ class: 'crash', evidence: 'signal SIGABRT', retryAt: null });
    expect(classifyFailure({ kind: 'protocol_error', phase: 'turn', exitCode: 3 }, [], someNow).class).toBe('crash');
    expect(classifyFailure({ kind: 'agent_exited', phase: 'connected', exitCode: 0 }, [], someNow).class).toBe('crash');
    expect(classifyFailure({ kind: 'protocol_error', phase: 'turn', rpcCode: -32603, detail: 'Internal error' }, [], someNow).class).toBe('unknown');
  });

  it('fills retryAt for usage_limit and rate_limited only, from the deciding text first', () => {
    expect(classifyFailure(turn(['Not logged in, try again in 5 minutes']), [], someNow).retryAt).toBeNull();
    expect(classifyFailure(turn(['rate limit hit; retry in 10s']), [], someNow).retryAt).toBe(someNow + 10_000);
    const twoTimes = turn(['Retrying in 4 seconds… (attempt 4/10)', 'usage limit reached, resets in 2 hours']);
    expect(classifyFailure(twoTimes, [], someNow).retryAt).toBe(someNow + 2 * hour);
  });

  it('reads the detail, string or JSON data and ANSI-coloured stderr', () => {
    const limited = turn([], { detail: 'Internal error', rpcData: 'Claude AI usage limit reached|1768482000' });
    expect(classifyFailure(limited, presetFailurePatterns.claudeCode, someNow)).toEqual({
      class: 'usage_limit',
      evidence: 'Claude AI usage limit reached|1768482000',
      retryAt: 1768482000000,
    });
    expect(classifyFailure(turn([], { rpcData: { nested: { reason: 'insufficient_quota' } } }), [], someNow).class).toBe('usage_limit');
    const coloured = turn(['\u001b[31mAPI key not valid. Please pass a valid API key.\u001b[0m']);
    expect(classifyFailure(coloured, [], someNow).evidence).toBe('API key not valid. Please pass a valid API key.');
  });

  it('shows at most 300 characters of a long text, around the match', () => {
    const long = `${'x'.repeat(1000)} rate limit exceeded ${'y'.repeat(1000)}`;
    const { evidence } = classifyFailure(turn([long]), [], someNow);
    expect(evidence.length).toBeLessThanOrEqual(302);
    expect(evidence).toContain('rate limit exceeded');
    expect(evidence.startsWith('…') && evidence.endsWith('…')).toBe(true);
  });
});

describe("a runtime's own failures", () => {
  it('are classed by their kind, whatever their text says: config, or crash for an unreachable host', () => {
    const classOf = (kind: string) => classifyFailure({ kind, phase: 'handshake', detail: 'HTTP 401 Unauthorized; 429 Too Many Requests', stderr: [] }, [], 0).class;
    expect(['runtime_auth_failed', 'runtime_host_key_changed', 'runtime_missing', 'runtime_unreachable'].map(classOf)).toEqual(['config', 'config', 'config', 'crash']);
  });
});

describe('patterns that do not compile', () => {
  const evidence: FailureEvidence = { kind: 'turn_failed', phase: 'turn', stderr: ['monthly quota exhausted'] };

  it('are skipped, never thrown', () => {
    const patterns = [
      { class: 'auth', source: '(unclosed' },
      { class: 'auth', source: 'quota', flags: 'zz' },
      { class: 'rate_limited', source: '[z-a]' },
      { class: 'nonsense', source: 'quota' } as unknown as FailurePattern,
      { class: 'crash', source: 'monthly' },
    ] satisfies FailurePattern[];
    expect(() => classifyFailure(evidence, patterns, someNow)).not.toThrow();
    expect(classifyFailure(evidence, patterns, someNow).class).toBe('crash');
    expect(classifyFailure(evidence, patterns.slice(0, 4), someNow).class).toBe('usage_limit');
  });

  it('g and y flags do not make matching stateful', () => {
    const patterns: FailurePattern[] = [{ class: 'usage_limit', source: 'quota', flags: 'gy' }];
    for (let round = 0; round < 3; round++) expect(classifyFailure(evidence, patterns, someNow).class).toBe('usage_limit');
  });
});

describe('parseRetryAt', () => {
  const now = Date.UTC(2026, 4, 16, 7, 15, 36);
  const s = 1000;
  const minute = 60_000;
  const day = 24 * hour;
  /** `now`'s local date at h:m, `days` later. */
  const localAt = (base: number, h: number, m: number, days = 0): number => {
    const date = new Date(base);
    date.setDate(date.getDate() + days);
    date.setHours(h, m, 0, 0);
    return date.getTime();
  };

  it.each([
    ['retry after 30s', 30 * s],
    ['Retry-After: 120', 120 * s],
    ['"retry-after": "3600"', hour],
    ['"resets_in_seconds": 1800', 30 * minute],
    ['try again in 5 minutes', 5 * minute],
    ['Try again in 1h 30m.', 90 * minute],
    ['in 2 hours', 2 * hour],
    ['please retry in 27.5s', 27_500],
    ['Please retry in 900.2ms', 900],
    ['"retryDelay": "30s"', 30 * s],
    ['Your quota will reset after 8h44m7s.', (8 * 3600 + 44 * 60 + 7) * s],
    ['or try again in 5 days 22 hours 11 minutes.', 5 * day + 22 * hour + 11 * minute],
    ['try again in 2 days, 3 hours and 4 minutes', 2 * day + 3 * hour + 4 * minute],
    ['API Error (529 …) · Retrying in 4 seconds… (attempt 4/10)', 4 * s],
    ['Your quota will reset after 0s.', 0],
  ])('%s', (text, after) => {
    expect(parseRetryAt(text, now)).toBe(now + after);
  });

  it('reads clock times as the next such local time', () => {
    const morning = localAt(now, 10, 0);
    expect(parseRetryAt('resets at 3pm', morning)).toBe(localAt(morning, 15, 0));
    expect(parseRetryAt('resets at 15:30', morning)).toBe(localAt(morning, 15, 30));
    expect(parseRetryAt('Limit reached. reset at 3:05 PM', morning)).toBe(localAt(morning, 15, 5));
    expect(parseRetryAt('5-hour limit reached ∙ resets 5am', morning)).toBe(localAt(morning, 5, 0, 1));
    expect(parseRetryAt('resets 12am', morning)).toBe(localAt(morning, 0, 0, 1));
    expect(parseRetryAt('resets 12pm', morning)).toBe(localAt(morning, 12, 0));
  });

  it('"3pm" when it is 4pm now is tomorrow 3pm', () => {
    const afternoon = localAt(now, 16, 0);
    expect(parseRetryAt('resets 3pm', afternoon)).toBe(localAt(afternoon, 15, 0, 1));
    expect(parseRetryAt('resets 3pm', localAt(now, 15, 0))).toBe(localAt(now, 15, 0, 1));
  });

  it('reads dates with clock times (Codex, Claude), local without a zone', () => {
    const base = localAt(Date.UTC(2026, 8, 20, 12), 9, 0);
    const expected = new Date(base);
    expected.setMonth(8, 26);
    expected.setHours(11, 20, 0, 0);
    expect(parseRetryAt("You've hit your usage limit. … or try again at Sep 26th, 2026 11:20 AM.", base)).toBe(expected.getTime());
    expected.setMonth(9, 1);
    expected.setHours(20, 19, 0, 0);
    expect(parseRetryAt('try again at Oct 1st 8:19 PM', base)).toBe(expected.getTime());
  });

  it('reads a clock time in the IANA zone it names, whatever the local zone', () => {
    expect(parseRetryAt("You've hit your limit · resets 2:10pm (Europe/Moscow)", now)).toBe(Date.UTC(2026, 4, 16, 11, 10));
    expect(parseRetryAt('resets Jan 18, 11:30am (Asia/Calcutta)', Date.UTC(2026, 0, 14, 17))).toBe(Date.UTC(2026, 0, 18, 6, 0));
    expect(parseRetryAt("You've hit your limit · resets May 23 at 4pm (America/Recife)", now)).toBe(Date.UTC(2026, 4, 23, 19, 0));
    expect(parseRetryAt('Your limit will reset at 5pm (Europe/Warsaw).', Date.UTC(2025, 7, 19, 14, 8))).toBe(Date.UTC(2025, 7, 19, 15, 0));
    expect(parseRetryAt('resets 1:30am (UTC)', Date.UTC(2026, 4, 16, 3))).toBe(Date.UTC(2026, 4, 17, 1, 30));
    // The day New York moves to daylight time: 09:00 EDT is 13:00 UTC.
    expect(parseRetryAt('resets 9am (America/New_York)', Date.UTC(2026, 2, 8, 6))).toBe(Date.UTC(2026, 2, 8, 13));
  });

  it('falls back to local time for a zone Intl does not know', () => {
    const morning = localAt(now, 10, 0);
    expect(parseRetryAt('resets 3pm (Mars/Olympus_Mons)', morning)).toBe(localAt(morning, 15, 0));
  });

  it('reads ISO-8601 timestamps', () => {
    const before = Date.UTC(2026, 10, 20);
    expect(parseRetryAt('usage limit reached; resets at 2026-11-26T15:00:00Z', before)).toBe(Date.UTC(2026, 10, 26, 15));
    expect(parseRetryAt('{"resetsAt":"2026-11-26T15:00:00.123456Z"}', before)).toBe(Date.UTC(2026, 10, 26, 15, 0, 0, 123));
    expect(parseRetryAt('until 2026-11-26T20:30:00+05:30', before)).toBe(Date.UTC(2026, 10, 26, 15));
    expect(parseRetryAt('until 2026-11-26T20:30+0530', before)).toBe(Date.UTC(2026, 10, 26, 15));
    expect(parseRetryAt('until 2026-11-26T15:00:00', before)).toBe(new Date(2026, 10, 26, 15).getTime());
  });

  it('reads Unix times in seconds and ms next to reset / retry words', () => {
    const before = 1_795_600_000_000;
    expect(parseRetryAt('{"resets_at": 1795676527}', before)).toBe(1_795_676_527_000);
    expect(parseRetryAt('retry_at_ms=1795676527123', before)).toBe(1_795_676_527_123);
    expect(parseRetryAt('Claude AI usage limit reached|1795676527', before)).toBe(1_795_676_527_000);
    expect(parseRetryAt('request 1795676527 failed', before)).toBeNull();
  });

  it('reads an HTTP date in Retry-After', () => {
    expect(parseRetryAt('Retry-After: Sat, 16 May 2026 08:00:00 GMT', now)).toBe(Date.UTC(2026, 4, 16, 8));
  });

  it('takes the leftmost believable time', () => {
    expect(parseRetryAt('try again in 5 minutes (or in 2 hours)', now)).toBe(now + 5 * minute);
    expect(parseRetryAt('[2026-05-16T07:15:30Z] limit hit, retry in 10s', now)).toBe(now + 10 * s);
    expect(parseRetryAt('Attempt 1 failed: … Your quota will reset after 5s.. Retrying after 6173ms...', now)).toBe(now + 5 * s);
  });

  it('is null for a past time, a time over 30 days away, or nonsense', () => {
    expect(parseRetryAt('{"resets_at": 1778900000}', now)).toBeNull(); // an hour and more ago
    expect(parseRetryAt('resets at 2026-05-16T06:00:00Z', now)).toBeNull();
    expect(parseRetryAt('resets Jan 18, 11:30am (Asia/Calcutta)', now)).toBeNull(); // next January: too far
    expect(parseRetryAt('try again in 31 days', now)).toBeNull();
    expect(parseRetryAt('try again in 30 days', now)).toBe(now + 30 * day);
    expect(parseRetryAt('resets at 2026-07-01T00:00:00Z', now)).toBeNull();
    const nonsense = ['', 'nonsense', 'retry 3 times', 'resets 5', 'resets at 25:00', 'resets 13pm', 'resets at 3:75', 'in a moment', 'try again later'];
    nonsense.push('exit 1795676527');
    for (const text of nonsense) {
      expect(parseRetryAt(text, now)).toBeNull();
    }
  });
});

describe('the clock', () => {
  afterEach(() => {
    vi.restoreAllMocks();
    vi.useRealTimers();
  });

  const allSamples = files.flatMap((file) => load(file).samples.map((sample) => ({ sample, patterns: presetOf[file] ?? [] })));
  const texts = ['resets 3pm', 'try again at Sep 26th, 2026 11:20 AM', 'resets 9am (America/New_York)', 'in 2 hours', 'until 2026-11-26T15:00:00'];
  const run = () => [
    ...allSamples.map(({ sample, patterns }) => classifyFailure(sample.evidence, patterns, sample.expected.retryAt?.now ?? someNow)),
    ...texts.map((text) => parseRetryAt(text, someNow)),
  ];

  it('is never read: time comes in as `now`', () => {
    const source = readFileSync(new URL('../../machines/policies/failure-class.policy.ts', import.meta.url), 'utf8');
    expect(source).not.toMatch(/Date\.now\(|new Date\(\)|performance\.now|process\.hrtime/);
    const spy = vi.spyOn(Date, 'now').mockImplementation(() => {
      throw new Error('the clock was read');
    });
    const results = run();
    expect(spy).not.toHaveBeenCalled();
    spy.mockRestore(); // fake timers read the real clock to start
    vi.useFakeTimers({ now: Date.UTC(1999, 0, 1) });
    const in1999 = run();
    vi.setSystemTime(Date.UTC(2042, 6, 1));
    expect(run()).toEqual(in1999);
    expect(in1999).toEqual(results);
  });
});
