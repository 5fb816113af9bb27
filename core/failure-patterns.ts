/**
 * What Claude Code, Codex and Gemini CLI are known to print when they fail for a reason a
 * restart cannot fix (auth, a used-up quota) or a short wait can (a rate limit): the preset
 * {@link FailurePattern}s the classifier (machines/policies/failure-class.policy.ts) tries
 * before its generic rules. Data only: plain JSON, one list per agent.
 *
 * Order matters: the classifier tries the patterns in turn and the first that matches any text
 * decides, so each list goes auth, usage_limit, rate_limited, config, crash: a usage-limit
 * message that comes with an HTTP 429 line is a usage limit, not a rate limit.
 *
 * Every alternative is a message string taken from the agent's source or from its issue
 * tracker (real output pasted by users); tests/fixtures/failure-samples/ holds those texts as
 * samples. Where a line below says "issue #N", it is an issue of the agent's own repository.
 */
import type { FailurePattern } from './failure-class.js';

/** The preset patterns per agent, tried before the generic rules. */
export const presetFailurePatterns: { claudeCode: FailurePattern[]; codex: FailurePattern[]; gemini: FailurePattern[] } = {
  /*
   * Claude Code (anthropics/claude-code) and its ACP adapter (agentclientprotocol/claude-agent-acp,
   * on @anthropic-ai/claude-agent-sdk). Error bodies follow https://docs.anthropic.com/en/api/errors
   * (authentication_error 401, rate_limit_error 429, overloaded_error 529).
   */
  claudeCode: [
    // auth: "Invalid API key · Please run /login" (issues #6270, #6331); "API Error: 401 {…"authentication_error","message":"OAuth
    // token has expired. Please obtain a new token…"} · Please run /login" (issues #18225, #33811); "Missing API key · Run /login"
    // and "Could not resolve authentication method…" (issue #6893); claude-agent-acp src/acp-agent.ts turns a result containing
    // "Please run /login" into ACP auth_required; "Failed to authenticate. API Error: 401" (paperclipai/paperclip issue #139).
    {
      class: 'auth',
      source:
        'Invalid API key|Please run /login|Missing API key|OAuth token has expired|authentication_error|Could not resolve authentication method' +
        '|Failed to authenticate',
      flags: 'i',
    },
    // usage_limit: "Claude AI usage limit reached|<unix seconds>" (issues #6119, #9046, #1328 titles); "Claude usage limit reached. Your
    // limit will reset at 5pm (Europe/Warsaw)." (issue #6119); "You've hit your limit · resets 2:10pm (Europe/Moscow)" (issue #59637),
    // "… · resets Jan 18, 11:30am (Asia/Calcutta)" (issue #18078), "You've hit your session limit · resets 12:50am (…)" (issue #74079);
    // "5-hour limit reached ∙ resets 5am" (issue #6392); "Your credit balance is too low to access the Anthropic API…" (issue #85675),
    // "Credit balance too low · Add funds" (issue #46277).
    {
      class: 'usage_limit',
      source: 'Claude (?:AI )?usage limit reached|(?:hit|reached) your (?:\\w+ )?limit|limit reached\\s*[·∙•|]\\s*resets|credit balance (?:is )?too low',
      flags: 'i',
    },
    // rate_limited: "Error: 429 {…"rate_limit_error","message":"This request would exceed your account's rate limit. Please try again
    // later."}" (issues #6119, #59637); "API Error (529 {…"overloaded_error","message":"Overloaded"}}) · Retrying in 4 seconds… (attempt
    // 4/10)" (issues #2919, #7218); "API Error: 529 Overloaded. This is a server-side issue, usually temporary…" (issue #87317).
    { class: 'rate_limited', source: "rate_limit_error|overloaded_error|would exceed your account's rate limit|\\b529 Overloaded", flags: 'i' },
    // config: the agent SDK's "Claude native binary not found for win32-x64. Reinstall @anthropic-ai/claude-agent-sdk without
    // --omit=optional, or set CLAUDE_CODE_EXECUTABLE." (xintaofei/codeg issue #220) and "Claude Code executable not found at …/cli.js.
    // Is options.pathToClaudeCodeExecutable set?" (Xuanwo/acp-claude-code issue #47).
    { class: 'config', source: 'native binary not found|Claude Code executable not found|pathToClaudeCodeExecutable', flags: 'i' },
    // crash: claude-agent-acp src/acp-agent.ts "The Claude Agent process exited unexpectedly. Please start a new session."; the SDK's
    // "Claude Code process exited with code 1" (claude-agent-acp issue #570); "process terminated by signal" (acp-agent.ts checks it).
    {
      class: 'crash',
      source: 'Claude Agent process exited unexpectedly|Claude Code process exited with code|Claude Code process terminated by signal',
      flags: 'i',
    },
  ],

  /*
   * Codex (openai/codex: codex-rs) and its ACP adapter (zed-industries/codex-acp). codex-acp answers a failed turn with JSON-RPC
   * -32603 and data {"message": <the CodexErr text>, "codex_error_info": <snake_case kind>} (src/thread.rs), and a missing login
   * with ACP auth_required -32000 (src/codex_agent.rs check_auth).
   */
  codex: [
    // auth: codex-rs/login/src/auth/manager.rs REFRESH_TOKEN_*_MESSAGE ("Your access token could not be refreshed because your refresh
    // token was already used. Please log out and sign in again.", issue #6498); "unexpected status 401 Unauthorized: …" (issue #26497,
    // codex-rs/protocol/src/error.rs UnexpectedResponseError); "exceeded retry limit, last status: 401 Unauthorized" (issues #5678,
    // #4554); CodexErrorInfo::Unauthorized; EnvVarError "Missing environment variable: `OPENAI_API_KEY`." (error.rs); codex-acp
    // src/codex_agent.rs "OPENAI_API_KEY is not set" / "CODEX_API_KEY is not set"; OpenAI's "Incorrect API key provided".
    {
      class: 'auth',
      source:
        'Your access token could not be refreshed|Please log out and sign in again|\\b401 Unauthorized\\b|Incorrect API key provided' +
        '|codex_error_info"?\\s*:\\s*"?unauthorized|Missing environment variable: `(?:OPENAI|CODEX)_API_KEY`|(?:OPENAI|CODEX)_API_KEY is not set',
      flags: 'i',
    },
    // usage_limit: codex-rs/protocol/src/error.rs UsageLimitReachedError ("You've hit your usage limit. … try again at 3:05 PM." /
    // older releases "… or try again in 5 days 22 hours 11 minutes.", issues #3899, #3031, #26668), "Your workspace is out of credits."
    // and the spend-cap messages, QuotaExceeded "Quota exceeded. Check your plan and billing details.", UsageNotIncluded "To use Codex
    // with your ChatGPT plan, upgrade to Plus…", CodexErrorInfo::UsageLimitExceeded ("usage_limit_exceeded"); the backend's 429 body
    // type "usage_limit_reached" (codex-rs tests mock it); OpenAI's "insufficient_quota".
    {
      class: 'usage_limit',
      source:
        'hit your usage limit|usage_limit_exceeded|usage_limit_reached|Quota exceeded\\. Check your plan|insufficient_quota|out of credits|spend cap' +
        '|To use Codex with your ChatGPT plan',
      flags: 'i',
    },
    // rate_limited: OpenAI's "Rate limit reached for gpt-4.1-mini in organization … Please try again in 1.276s." (issues #70, #10061);
    // "exceeded retry limit, last status: 429 Too Many Requests, request id: …" (issues #10550, #12675; a maintainer: "This isn't a
    // usage limit error. It's a rate limit error", issue #22122); error.rs ServerOverloaded "Selected model is at capacity. Please try a
    // different model." (CodexErrorInfo "server_overloaded") and InternalServerError "We're currently experiencing high demand…".
    {
      class: 'rate_limited',
      source: 'Rate limit reached for|rate_limit_exceeded|\\b429 Too Many Requests|server_overloaded|Selected model is at capacity|experiencing high demand',
      flags: 'i',
    },
    // config: clap's "error: unexpected argument '--foo' found" (codex and codex-acp parse their command line with clap); codex-acp
    // src/lib.rs "error loading config: …" and "error parsing -c overrides: …".
    { class: 'config', source: "unexpected argument '|error loading config|error parsing -c overrides", flags: 'i' },
    // crash: error.rs InternalAgentDied "internal error; agent loop died unexpectedly".
    { class: 'crash', source: 'agent loop died unexpectedly', flags: 'i' },
  ],

  /*
   * Gemini CLI (google-gemini/gemini-cli). Quotas: packages/core/src/utils/googleQuotaErrors.ts (classifyGoogleError: a daily
   * quota, "limit: 0", QUOTA_EXHAUSTED, capacity exhaustion are terminal; "Please retry in Xs", RetryInfo, per-minute quotas,
   * RATE_LIMIT_EXCEEDED are retryable). RESOURCE_EXHAUSTED is the status of every 429, so it decides nothing alone.
   */
  gemini: [
    // auth: packages/cli/src/validateNonInterActiveAuth.ts "Please set an Auth method in your … settings.json or specify one of the
    // following environment variables before running: GEMINI_API_KEY, …" (exit 41); packages/cli/src/config/auth.ts "When using Gemini
    // API, you must specify the GEMINI_API_KEY environment variable." and "When using Vertex AI, you must specify either: …"; ACP
    // packages/cli/src/acp/acpSessionManager.ts "Gemini API key is missing or not configured." (-32000); the Gemini API's "API key not
    // valid. Please pass a valid API key." / API_KEY_INVALID (issue #4690) and "API Key not found" (issue #25198); the enforced-auth
    // "Please re-authenticate with the correct type."; Google's UNAUTHENTICATED status.
    {
      class: 'auth',
      source:
        'API key not valid|API_KEY_INVALID|API Key not found|must specify the GEMINI_API_KEY|Please set an Auth method|Gemini API key is missing' +
        '|When using Vertex AI, you must specify|Please re-authenticate|\\bUNAUTHENTICATED\\b',
      flags: 'i',
    },
    // usage_limit (terminal in googleQuotaErrors.ts): "You have exhausted your daily quota on this model." (googleQuotaErrors.ts, issue
    // #15576); "Quota exceeded for quota metric 'Gemini 2.5 Pro Requests' and limit 'Gemini 2.5 Pro Requests per day per user per tier'
    // …" (issues #2047, #10513); quotaId "…PerDay…" (issue #4656); "limit: 0"; "You have exhausted your capacity on this model. Your
    // quota will reset after 8h44m7s." (issues #13004, #22107); "You have reached your daily quota limit." (issue #3796), "You've hit
    // your daily limit of requests" (issue #7709); "Usage limit reached for gemini-3-flash-preview." (issues #15743, #25741);
    // ErrorInfo reasons QUOTA_EXHAUSTED and INSUFFICIENT_G1_CREDITS_BALANCE.
    {
      class: 'usage_limit',
      source:
        'limit:\\s*0(?![\\d.])|PerDay|per day|daily (?:quota|limit)|exhausted your (?:daily quota|capacity)|Usage limit reached for|QUOTA_EXHAUSTED' +
        '|INSUFFICIENT_G1_CREDITS_BALANCE',
      flags: 'i',
    },
    // rate_limited (retryable in googleQuotaErrors.ts): "Please retry in 54.887755558s." (googleErrors.test.ts, issue #8883);
    // quotaId "…PerMinute…"; ErrorInfo RATE_LIMIT_EXCEEDED / reason rateLimitExceeded; MODEL_CAPACITY_EXHAUSTED with "No capacity
    // available for model gemini-3-flash-preview on the server" (server capacity, not the user's quota); the ACP prompt answer
    // "Rate limit exceeded. Try again later." (packages/cli/src/acp/acpSession.ts, JSON-RPC code 429).
    {
      class: 'rate_limited',
      source:
        'Please retry in [\\d.]+m?s|PerMinute|per minute|RATE_LIMIT_EXCEEDED|rateLimitExceeded|MODEL_CAPACITY_EXHAUSTED|No capacity available for model' +
        '|Rate limit exceeded',
      flags: 'i',
    },
    // usage_limit, after the retryable hints: "You exceeded your current quota, please check your plan and billing details. … * Quota
    // exceeded for metric: …" (issues #8414, #8883) with no per-minute or retry hint.
    { class: 'usage_limit', source: 'Quota exceeded for (?:quota )?metric|exceeded your current quota', flags: 'i' },
    // config: yargs (strict) "Unknown argument: …" / "Unknown arguments: …" and "Invalid values:" (yargs/yargs locales/en.json;
    // packages/cli/src/config/config.ts parses with .strict() and exits 1).
    { class: 'config', source: 'Unknown arguments?: |Invalid values:' },
    // crash: packages/cli/index.ts "An unexpected critical error occurred:" then the stack, exit 1.
    { class: 'crash', source: 'An unexpected critical error occurred' },
  ],
};
