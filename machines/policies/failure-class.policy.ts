/**
 * Which {@link FailureClass} a failed agent shows, and when its limit resets: the supervisor
 * retries a crash, waits out a usage limit, and stops on bad credentials or a bad setup.
 * Pure functions of plain data, so the machines stay reproducible: no I/O, no clock (time comes
 * in as `now`; a clock time without a date is read in the process's local time zone, so results
 * are deterministic under the TZ environment variable).
 *
 * The texts a failure shows: its detail, its JSON-RPC error data (a string as is, anything else
 * as JSON), its stderr lines newest first (ANSI colours removed). Order of decision, the first
 * that decides wins:
 *  a. `patterns` (the user's, then the agent preset's, as the caller orders them): each pattern
 *     in turn against every text. A pattern whose source or flags do not compile is skipped.
 *  b. structural facts:
 *     - config: kind `not_installed` or `workspace_failed`; `spawn_failed` with ENOENT/EACCES or
 *       a command that "is a directory", "is not executable" or cannot be reached ("permission denied");
 *       exit code 126 or 127; in the spawn and handshake phases only (a CLI rejecting its own
 *       command line; later, such words are a tool's output), "unknown option", "unrecognized
 *       argument", "unexpected argument", "invalid argument", "command not found";
 *     - auth: JSON-RPC code -32000 (ACP auth_required) or kind `auth_required`;
 *     - timeout: kind `handshake_timeout`.
 *  c. the built-in generic text patterns, {@link builtInPatterns}, in their order: auth,
 *     usage_limit, rate_limited (a text that speaks of a quota, a plan or usage is a usage limit
 *     even when it also says 429), then timeout ("timed out", ETIMEDOUT: weaker than any of those,
 *     so a stray "Request timed out." among 529 retries does not hide the overload).
 *  d. crash: a process ended by a signal, a non-zero exit, or kind `agent_exited` /
 *     `handshake_failed` with nothing recognised.
 *  e. unknown.
 *
 * `retryAt` is filled for usage_limit and rate_limited only: {@link parseRetryAt} of the text that
 * decided, else of the first text that gives a believable time.
 */
import type { Classification, FailureClass, FailureEvidence, FailurePattern } from '../../core/failure-class.js';
import { failureClasses } from '../../core/failure-class.js';

/** The generic text patterns of step c, in the order they are tried (data, so docs can list them). */
export const builtInPatterns: readonly FailurePattern[] = Object.freeze([
  {
    class: 'auth',
    source:
      String.raw`unauthori[sz]ed|unauthenticated|api key not valid|` +
      String.raw`invalid[ _-]?(?:x-)?(?:api[ _-]?key|(?:access |auth |bearer )?token|(?:authentication )?credentials)|` +
      String.raw`(?:status|code|error|HTTP)\W{0,3}401\b|\b401\s+(?:Unauthorized|\{)|authentication[ _](?:failed|required|error)|not logged in|` +
      String.raw`please (?:log ?in|login|sign in)|sign in again|token (?:is expired|expired|has expired)`,
    flags: 'i',
  },
  {
    class: 'usage_limit',
    source:
      String.raw`usage[ _]limit|(?:hit|reached) your (?:\w+ )?limit|quota.{0,80}(?:exceeded|exhausted)|(?:exceeded|exhausted) your (?:\w+ )?quota|` +
      String.raw`insufficient_quota|` +
      String.raw`credit balance (?:is )?too low|out of credits|limit reached.{0,40}(?:reset|upgrade)`,
    flags: 'i',
  },
  {
    class: 'rate_limited',
    source:
      String.raw`(?<![a-z])rate[ _-]?limit|too many requests|(?:status|code|error|HTTP)\W{0,3}(?:429|529)\b|\b(?:429|529)\s+(?:Too Many|Overloaded|\{)|` +
      String.raw`overloaded|` +
      String.raw`resource[ _-]?exhausted|slow down`,
    flags: 'i',
  },
  { class: 'timeout', source: String.raw`timed out|\bETIMEDOUT\b`, flags: 'i' },
] satisfies FailurePattern[]);

/** What a failure shows, read by the rules of the file header. */
export function classifyFailure(evidence: FailureEvidence, patterns: readonly FailurePattern[], now: number): Classification {
  const texts = textsOf(evidence);
  const decided = matchPatterns(patterns, texts) ?? structural(evidence, texts) ?? matchPatterns(builtInPatterns, texts) ?? lastResort(evidence);
  const retryAt = decided.class === 'usage_limit' || decided.class === 'rate_limited' ? retryAtOf(decided.text, texts, now) : null;
  return { class: decided.class, evidence: decided.evidence, retryAt };
}

/** A decision: the class, what to show for it, and the whole text that decided (null for a fact). */
interface Decision {
  class: FailureClass;
  evidence: string;
  text: string | null;
}

const knownClasses: ReadonlySet<string> = new Set(failureClasses);

function matchPatterns(patterns: readonly FailurePattern[], texts: readonly string[]): Decision | null {
  for (const pattern of patterns) {
    const regexp = compile(pattern.source, pattern.flags);
    if (regexp === null || !knownClasses.has(pattern.class)) continue;
    for (const text of texts) {
      const match = regexp.exec(text);
      if (match) return { class: pattern.class, evidence: excerpt(text, match.index), text };
    }
  }
  return null;
}

const cliUsageError =
  /\b(?:unknown|unrecogni[sz]ed) (?:option|argument|flag|command)s?\b|\bunexpected argument\b|(?<!EINVAL: )\binvalid (?:option|argument)s?\b|\bcommand not found\b/i;
const spawnSetupError = /\b(?:ENOENT|EACCES)\b|\bis (?:a directory|not executable)\b|\bpermission denied\b/;

/**
 * A runtime's own failures (docs/runtimes.md) by their kind: a refused login, a changed host
 * key or a missing container need a person (config — not `auth`: `authenticate()` is the
 * agent's login, not the host's); an unreachable host may come back (crash: the backoff).
 */
const runtimeKindClasses: Readonly<Record<string, FailureClass>> = {
  runtime_auth_failed: 'config',
  runtime_host_key_changed: 'config',
  runtime_missing: 'config',
  runtime_unreachable: 'crash',
};

function structural(evidence: FailureEvidence, texts: readonly string[]): Decision | null {
  const { kind, exitCode } = evidence;
  const runtimeClass = runtimeKindClasses[kind];
  if (runtimeClass) return fact(runtimeClass, `kind ${kind}`, evidence.detail);
  if (kind === 'not_installed' || kind === 'workspace_failed') return fact('config', `kind ${kind}`, evidence.detail);
  if (kind === 'spawn_failed') {
    const text = texts.find((candidate) => spawnSetupError.test(candidate));
    if (text !== undefined) return { class: 'config', evidence: excerpt(text, 0), text };
  }
  if (exitCode === 126 || exitCode === 127) return fact('config', `exit code ${exitCode}`, texts.find((text) => cliUsageError.test(text)));
  if (evidence.phase === 'spawn' || evidence.phase === 'handshake') {
    for (const text of texts) {
      const match = cliUsageError.exec(text);
      if (match) return { class: 'config', evidence: excerpt(text, match.index), text };
    }
  }
  if (evidence.rpcCode === -32000) return fact('auth', 'JSON-RPC error -32000 (auth_required)', evidence.detail);
  if (kind === 'auth_required') return fact('auth', 'kind auth_required', evidence.detail);
  if (kind === 'handshake_timeout') return fact('timeout', 'kind handshake_timeout', evidence.detail);
  return null;
}

function lastResort(evidence: FailureEvidence): Decision {
  const { signal, exitCode, kind } = evidence;
  if (signal) return fact('crash', `signal ${signal}`);
  if (typeof exitCode === 'number' && exitCode !== 0) return fact('crash', `exit code ${exitCode}`);
  if (kind === 'agent_exited' || kind === 'handshake_failed') return fact('crash', `kind ${kind}`);
  return fact('unknown', `kind ${kind}: nothing recognised`);
}

/** A decision from a fact, not a text: its reason, and the text that goes with it when there is one. */
function fact(cls: FailureClass, reason: string, detail?: string): Decision {
  return { class: cls, evidence: detail ? `${reason}: ${excerpt(detail, 0)}` : reason, text: null };
}

function retryAtOf(decisive: string | null, texts: readonly string[], now: number): number | null {
  for (const text of decisive === null ? texts : [decisive, ...texts]) {
    const at = parseRetryAt(text, now);
    if (at !== null) return at;
  }
  return null;
}

// eslint-disable-next-line no-control-regex -- ANSI escape sequences (Gemini colours its fatal errors)
const ansi = /\u001b\[[0-9;?]*[ -/]*[@-~]/g;

function textsOf(evidence: FailureEvidence): string[] {
  const texts: string[] = [];
  const add = (text: string | undefined) => {
    const clean = text?.replace(ansi, '');
    if (clean?.trim()) texts.push(clean);
  };
  add(evidence.detail);
  if (evidence.rpcData !== undefined && evidence.rpcData !== null) add(typeof evidence.rpcData === 'string' ? evidence.rpcData : json(evidence.rpcData));
  const stderr = evidence.stderr ?? [];
  for (let line = stderr.length - 1; line >= 0; line--) add(stderr[line]);
  return texts;
}

function json(value: unknown): string | undefined {
  try {
    return JSON.stringify(value);
  } catch {
    return undefined;
  }
}

const evidenceLength = 300;

/** At most {@link evidenceLength} characters of `text`, around `index`. */
function excerpt(text: string, index: number): string {
  const trimmed = text.trim();
  if (trimmed.length <= evidenceLength) return trimmed;
  const start = Math.max(0, Math.min(index - (text.length - text.trimStart().length) - 100, trimmed.length - evidenceLength));
  const end = start + evidenceLength;
  return `${start > 0 ? '…' : ''}${trimmed.slice(start, end)}${end < trimmed.length ? '…' : ''}`;
}

/** Compiled patterns by flags and source; null for a source that does not compile. */
const compiled = new Map<string, RegExp | null>();
const compiledLimit = 512;

function compile(source: string, flags = ''): RegExp | null {
  // `g` and `y` would make exec stateful (lastIndex); matching here is a yes/no per text.
  const stateless = flags.replace(/[gy]/g, '');
  const key = `${stateless}/${source}`;
  let regexp = compiled.get(key);
  if (regexp === undefined) {
    try {
      regexp = new RegExp(source, stateless);
    } catch {
      regexp = null;
    }
    if (compiled.size >= compiledLimit) compiled.clear();
    compiled.set(key, regexp);
  }
  return regexp;
}

// ---------------------------------------------------------------------------------------------
// parseRetryAt
// ---------------------------------------------------------------------------------------------

const dayMs = 86_400_000;
/** A reset further away than this is not believable. */
const maxAheadMs = 30 * dayMs;

/** One time a text gives, with where it starts. */
interface Found {
  index: number;
  at: number;
}

/**
 * The reset time `text` gives, as epoch ms, or null: the first (leftmost) believable one of
 * - a duration after retry / try again / reset / wait / in / after: "retry after 30s", "try again
 *   in 5 minutes", "try again in 1h 30m", "in 2 hours", "please retry in 27.5s", "reset after
 *   8h44m7s", "try again in 5 days 22 hours 11 minutes", `"retryDelay": "30s"` (Google RPC RetryInfo);
 * - seconds in a header or field: "Retry-After: 120", `"resets_in_seconds": 1800`, or an HTTP date
 *   in Retry-After;
 * - a clock time after resets / try again / until, with an optional date and IANA zone: "resets at
 *   3pm", "resets at 15:30", "reset at 3:05 PM", "resets 2:10pm (Europe/Moscow)", "resets Jan 18,
 *   11:30am (Asia/Calcutta)", "try again at Sep 26th, 2099 11:20 AM". Without a date it is the
 *   next such time after `now`; without a zone, local time (`new Date(now)`, `setHours`);
 * - an ISO-8601 timestamp ("2026-11-26T15:00:00Z");
 * - a Unix time in seconds (10 digits) or ms (13 digits) after reset / retry / until / limit
 *   reached: `"resets_at": 1795676527`, "Claude AI usage limit reached|1755615600".
 * A time before `now` or more than 30 days after it is not believable.
 *
 * @example parseRetryAt('Please retry in 27.5s.', 1_000_000) // 1_027_500
 */
export function parseRetryAt(text: string, now: number): number | null {
  const found: Found[] = [];
  for (const finder of finders) finder(text, now, found);
  found.sort((a, b) => a.index - b.index);
  for (const { at } of found) if (Number.isFinite(at) && at >= now && at - now <= maxAheadMs) return Math.round(at);
  return null;
}

type Finder = (text: string, now: number, found: Found[]) => void;

const unit = String.raw`(?:ms|milliseconds?|msecs?|seconds?|secs?|s|minutes?|mins?|m|hours?|hrs?|h|days?|d|weeks?|w)(?![a-z])`;
const term = String.raw`\d+(?:\.\d+)?\s*${unit}`;
const terms = new RegExp(String.raw`(\d+(?:\.\d+)?)\s*(${unit})`, 'gi');
const relative = new RegExp(
  String.raw`\b(?:retry[-_ ]?after|retry[-_ ]?delay|retrying|retry|try\s+again|resets?|wait|after|in)\b(?:\s+(?:in|after))?["'\s:=]*` +
    String.raw`(${term}(?:\s*(?:,|and)?\s*${term})*)`,
  'gi',
);
const secondsField =
  /\b(?:retry[-_]after(?:[-_]seconds)?|resets?[-_]in[-_]seconds|reset[-_]after[-_]seconds)\b["']?\s*[:=]\s*["']?(\d+(?:\.\d+)?)(?![\d.]|\s*[a-z])/gi;
const httpDate = /\bretry-after["']?\s*[:=]\s*["']?((?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{1,2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT)/gi;
const unixTime = /\b(?:resets?|retry|until|limit reached|available)[a-z_-]*[^\d\n]{0,24}?(?<!\d)(\d{13}|\d{10})(?!\d)/gi;
const isoTime = /\b(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)(Z|[+-]\d{2}:?\d{2})?(?![\d:])/g;
const months = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
const monthName = 'jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?';
const clockTime = new RegExp(
  String.raw`\b(?:resets?|try again|retry|available(?: again)?|until)(?:\s+(?:at|on))?\s+` +
    String.raw`(?:(${monthName})\.?\s+(\d{1,2})(?:st|nd|rd|th)?(?:,?\s+(\d{4}))?(?:,|\s+at)?\s+)?` +
    String.raw`(\d{1,2})(?::(\d{2}))?(?:\s*([ap])\.?m\b\.?)?(?![\d:])(?:\s*\(([A-Za-z_]+(?:\/[A-Za-z0-9_+-]+)+|UTC|GMT)\))?`,
  'gi',
);

const finders: readonly Finder[] = [
  (text, now, found) => {
    for (const match of text.matchAll(relative)) found.push({ index: match.index, at: now + durationMs(match[1] ?? '') });
  },
  (text, now, found) => {
    for (const match of text.matchAll(secondsField)) found.push({ index: match.index, at: now + Number(match[1]) * 1000 });
  },
  (text, _now, found) => {
    for (const match of text.matchAll(httpDate)) found.push({ index: match.index, at: Date.parse(match[1] ?? '') });
  },
  (text, _now, found) => {
    for (const match of text.matchAll(unixTime)) {
      const digits = match[1] ?? '';
      found.push({ index: match.index, at: Number(digits) * (digits.length === 10 ? 1000 : 1) });
    }
  },
  (text, _now, found) => {
    for (const match of text.matchAll(isoTime)) {
      const [, dateTime = '', zone] = match;
      // Date.parse reads a date-time without an offset as local time, as ISO 8601 does.
      const offset = zone === undefined ? '' : zone === 'Z' || zone.includes(':') ? zone : `${zone.slice(0, 3)}:${zone.slice(3)}`;
      found.push({ index: match.index, at: Date.parse(dateTime.replace(/(\.\d{3})\d+$/, '$1') + offset) });
    }
  },
  (text, now, found) => {
    for (const match of text.matchAll(clockTime)) {
      const at = clockAt(match, now);
      if (at !== null) found.push({ index: match.index, at });
    }
  },
];

function durationMs(sequence: string): number {
  let total = 0;
  for (const [, amount = '0', name = ''] of sequence.matchAll(terms)) total += Number(amount) * unitMs(name.toLowerCase());
  return total;
}

function unitMs(name: string): number {
  if (name === 'ms' || name.startsWith('milli') || name.startsWith('msec')) return 1;
  if (name.startsWith('s')) return 1000;
  if (name.startsWith('m')) return 60_000;
  if (name.startsWith('h')) return 3_600_000;
  if (name.startsWith('d')) return dayMs;
  return 7 * dayMs;
}

/** The epoch ms a clock-time match means, or null when it is no time of day. */
function clockAt(match: RegExpMatchArray, now: number): number | null {
  const [, month, day, year, hourText = '', minuteText, meridiem, zone] = match;
  let hour = Number(hourText);
  const minute = minuteText === undefined ? 0 : Number(minuteText);
  if (minuteText === undefined && meridiem === undefined) return null; // "resets 5" is no time
  if (minute > 59) return null;
  if (meridiem !== undefined) {
    if (hour < 1 || hour > 12) return null;
    hour = (hour % 12) + (meridiem.toLowerCase() === 'p' ? 12 : 0);
  } else if (hour > 23) {
    return null;
  }
  const calendar = zone === undefined ? localCalendar : (zoneCalendar(zone) ?? localCalendar);
  const [thisYear, thisMonth, today] = calendar.date(now);
  if (month === undefined) {
    const at = calendar.at(thisYear, thisMonth, today, hour, minute);
    return at > now ? at : calendar.at(thisYear, thisMonth, today + 1, hour, minute);
  }
  const monthIndex = months.indexOf(month.slice(0, 3).toLowerCase());
  const dayOfMonth = Number(day);
  if (dayOfMonth < 1 || dayOfMonth > 31) return null;
  if (year !== undefined) return calendar.at(Number(year), monthIndex, dayOfMonth, hour, minute);
  const at = calendar.at(thisYear, monthIndex, dayOfMonth, hour, minute);
  return at >= now ? at : calendar.at(thisYear + 1, monthIndex, dayOfMonth, hour, minute);
}

/** Wall-clock dates and times in one time zone; month is 0-based, day and month may overflow. */
interface Calendar {
  date(epoch: number): [year: number, month: number, day: number];
  at(year: number, month: number, day: number, hour: number, minute: number): number;
}

const localCalendar: Calendar = {
  date(epoch) {
    const date = new Date(epoch);
    return [date.getFullYear(), date.getMonth(), date.getDate()];
  },
  at(year, month, day, hour, minute) {
    return new Date(year, month, day, hour, minute, 0, 0).getTime();
  },
};

const zoneFormats = new Map<string, Intl.DateTimeFormat | null>();

/** The calendar of an IANA time zone (via Intl), or null when the zone is unknown. */
function zoneCalendar(zone: string): Calendar | null {
  let format = zoneFormats.get(zone);
  if (format === undefined) {
    try {
      format = new Intl.DateTimeFormat('en-US', {
        timeZone: zone,
        hourCycle: 'h23',
        year: 'numeric',
        month: 'numeric',
        day: 'numeric',
        hour: 'numeric',
        minute: 'numeric',
        second: 'numeric',
      });
    } catch {
      format = null;
    }
    zoneFormats.set(zone, format);
  }
  if (format === null) return null;
  const zoned = format;
  const wallClock = (epoch: number): number[] => {
    const parts: Record<string, number> = {};
    for (const { type, value } of zoned.formatToParts(epoch)) parts[type] = Number(value);
    return [parts.year ?? 0, (parts.month ?? 1) - 1, parts.day ?? 1, (parts.hour ?? 0) % 24, parts.minute ?? 0, parts.second ?? 0];
  };
  const offset = (epoch: number): number => {
    const [year = 0, month = 0, day = 1, hour = 0, minute = 0, second = 0] = wallClock(epoch);
    return Date.UTC(year, month, day, hour, minute, second) - Math.floor(epoch / 1000) * 1000;
  };
  return {
    date(epoch) {
      const [year = 0, month = 0, day = 1] = wallClock(epoch);
      return [year, month, day];
    },
    at(year, month, day, hour, minute) {
      const wall = Date.UTC(year, month, day, hour, minute);
      const first = offset(wall - offset(wall));
      return wall - first;
    },
  };
}
