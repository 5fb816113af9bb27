/**
 * stream-json: what reading Claude Code's headless NDJSON as ACP costs over merely parsing
 * it. One corpus of `lines` stdout lines shaped like Claude Code's (most of them assistant
 * text messages, every tenth line a tool_use and the next its tool_result, a thinking
 * message and a result in every 50), read in one process, no I/O, three ways:
 * - baseline: `for (const line of lines) JSON.parse(line)`;
 * - parser (headline): `parseStreamJsonLine(line)` — the same JSON.parse plus the mapping;
 * - decoder (details): `new StreamJsonDecoder().decode(line)`, what a supervisor would run.
 * Throughput = lines / time of one pass over the corpus; each pass starts from a collected
 * heap. `warmup` unmeasured passes per side, then `rounds` measured ones, the sides rotated
 * (A B C, C B A, …). The corpus is built once, before any timing; the parser is imported
 * from the sources (it is pure: no dist/, no agent, no process is spawned).
 *
 * Goal (`met`): parser throughput ≥ 0.90 × baseline (ratio = parser / baseline, medians of
 * the rounds), and one untimed pass maps the corpus to the expected events (no malformed
 * or unknown line, one result per 50 lines).
 */
import { parseStreamJsonLine, StreamJsonDecoder, type StreamJsonEvent } from '../services/stream-json/stream-json.parser.js';
import { finish, headline, sampleDetails } from './lib/report.js';
import { defaultContext, type BenchContext, type BenchResult } from './lib/results.js';
import { collectGarbage, median, now, rotate, round, spread, type Phase, type Sample } from './lib/stats.js';

export interface StreamJsonSize {
  /** Lines in the corpus (a multiple of 50 keeps the mix exact). */
  lines: number;
  rounds: number;
  warmup: number;
}

export const defaultSize: StreamJsonSize = { lines: 200_000, rounds: 7, warmup: 2 };
export const smokeSize: StreamJsonSize = { lines: 2_000, rounds: 1, warmup: 0 };
export const goalRatio = 0.9;

/** What each pass keeps, so that no side's work can be optimised away. */
let sink: unknown;

export async function streamJsonBench(size: StreamJsonSize = defaultSize, ctx: BenchContext = defaultContext()): Promise<BenchResult> {
  const corpus = buildCorpus(size.lines);
  const bytes = corpus.lines.reduce((sum, line) => sum + Buffer.byteLength(line), 0);

  // One untimed pass: the corpus means what it should.
  const counts = countEvents(corpus.lines);
  const mapped =
    counts['malformed'] === undefined &&
    counts['unknown'] === undefined &&
    counts['result'] === corpus.mix.result &&
    counts['updates'] === size.lines - corpus.mix.result &&
    counts['updateItems'] === corpus.mix.text + corpus.mix.thinking + corpus.mix.toolUse + corpus.mix.toolResult;

  // Each side is its own loop (not one loop calling a function per side), so every call
  // site sees one callee: the baseline is exactly `for (const line of lines) JSON.parse(line)`.
  const lines = corpus.lines;
  const timed = async (loop: () => void): Promise<Sample> => {
    await collectGarbage();
    const start = now();
    loop();
    const ms = now() - start;
    return { value: (lines.length / ms) * 1000, extra: { ms, mbPerS: bytes / ms / 1000, nsPerLine: (ms * 1e6) / lines.length } };
  };
  const sides = {
    baseline: (_phase: Phase) =>
      timed(() => {
        for (const line of lines) sink = JSON.parse(line);
      }),
    parser: (_phase: Phase) =>
      timed(() => {
        for (const line of lines) sink = parseStreamJsonLine(line);
      }),
    decoder: (_phase: Phase) =>
      timed(() => {
        const decoder = new StreamJsonDecoder();
        for (const line of lines) sink = decoder.decode(line);
      }),
  };
  const samples = await rotate({
    warmup: size.warmup,
    rounds: size.rounds,
    sides,
    onRound: (i, round) =>
      ctx.log(
        `  stream-json round ${i}/${size.rounds} (${size.lines} lines): ` +
          Object.entries(round).map(([name, sample]) => `${name} ${(sample.value / 1000).toFixed(0)}k lines/s`).join(', '),
      ),
  });
  void sink;

  const pair = { baseline: samples['baseline']!, agentvisor: samples['parser']! };
  const { baseline, agentvisor: parser, ratio } = headline(pair);
  const values = (name: string) => samples[name]!.map((s) => s.value);
  const decoderRatio = round(median(values('decoder')) / baseline, 4);
  const checks = { ratio: ratio >= goalRatio, mapped };
  return finish(ctx, {
    benchmark: 'stream-json',
    baseline,
    agentvisor: parser,
    unit: 'lines/s',
    ratio,
    goal: `parseStreamJsonLine ≥ ${goalRatio} × bare JSON.parse throughput; the corpus maps as expected`,
    met: checks.ratio && checks.mapped,
    details: {
      size,
      checks,
      corpus: { lines: size.lines, bytes, avgLineBytes: Math.round(bytes / size.lines), mix: corpus.mix, events: counts },
      ...sampleDetails(pair),
      decoder: {
        note: 'StreamJsonDecoder (partialMessages: false).decode',
        linesPerS: round(median(values('decoder')), 1),
        ratio: decoderRatio,
        spread: spread(values('decoder')),
        pairedRatio: spread(values('decoder').map((value, i) => value / values('baseline')[i]!)),
      },
      processes: { spawned: 0, leftover: 0 },
    },
  });
}

/** Events by type over the corpus, and the session updates they carry (`updateItems`). */
function countEvents(lines: readonly string[]): Record<string, number> {
  const counts: Record<string, number> = { updateItems: 0 };
  for (const line of lines) {
    const event: StreamJsonEvent = parseStreamJsonLine(line);
    counts[event.type] = (counts[event.type] ?? 0) + 1;
    if (event.type === 'updates') counts['updateItems']! += event.updates.length;
  }
  return counts;
}

interface Corpus {
  lines: string[];
  mix: { text: number; thinking: number; toolUse: number; toolResult: number; result: number };
}

const words = (
  'the a to of and in is that for it with as on this be file test function we should will can now let me check ' +
  'update run error type value return import export const interface change line module build fix read write ' +
  'session agent process result output input stream parser event handler config path src index'
).split(' ');

/**
 * A deterministic corpus shaped like Claude Code's stdout (see the samples file for the real
 * lines): each assistant line holds one content block and the message's usage, as the CLI
 * prints them.
 */
export function buildCorpus(count: number): Corpus {
  let seed = 0x2f6b_1a3d;
  const random = () => {
    seed = (Math.imul(seed, 1_664_525) + 1_013_904_223) >>> 0;
    return seed / 2 ** 32;
  };
  const prose = (min: number, max: number) => {
    const target = min + Math.floor(random() * (max - min));
    let text = '';
    while (text.length < target) text += (text === '' ? '' : random() < 0.08 ? '.\n' : ' ') + words[Math.floor(random() * words.length)];
    return text;
  };
  const sessionId = '5f0c6e2a-8d1b-4c3e-9a7f-2b1d0c9e8f7a';
  const hex = (n: number) => n.toString(16).padStart(12, '0');
  const tools = [
    ['Bash', () => ({ command: `npm test -- ${prose(5, 30)}`, description: 'Run the tests' })],
    ['Read', () => ({ file_path: `/work/project/src/${words[Math.floor(random() * words.length)]}.ts` })],
    ['Edit', () => ({ file_path: '/work/project/src/index.ts', old_string: prose(20, 200), new_string: prose(20, 200) })],
    ['Grep', () => ({ pattern: 'export function', path: '/work/project/src', output_mode: 'content' })],
  ] as const;
  const mix = { text: 0, thinking: 0, toolUse: 0, toolResult: 0, result: 0 };
  const lines: string[] = [];
  let toolId = '';
  for (let i = 0; i < count; i++) {
    const position = i % 50;
    const id = `msg_01${hex(i)}`;
    const usage = { input_tokens: 4, cache_creation_input_tokens: 512, cache_read_input_tokens: 20_480 + i, output_tokens: 12, service_tier: 'standard' };
    const model = 'claude-sonnet-4-5-20250929';
    const message = (block: unknown) =>
      JSON.stringify({
        type: 'assistant',
        message: { id, type: 'message', role: 'assistant', model, content: [block], stop_reason: null, stop_sequence: null, usage },
        parent_tool_use_id: null,
        session_id: sessionId,
        uuid: `0a1b2c3d-4e5f-4a6b-8c7d-${hex(i)}`,
      });
    if (position === 49) {
      mix.result++;
      lines.push(
        JSON.stringify({
          type: 'result',
          subtype: 'success',
          is_error: false,
          duration_ms: 14_478 + i,
          duration_api_ms: 7617,
          num_turns: 12,
          result: prose(40, 300),
          stop_reason: 'end_turn',
          session_id: sessionId,
          total_cost_usd: 0.269648 + i / 1e6,
          usage: { ...usage, server_tool_use: { web_search_requests: 0 } },
          modelUsage: {},
          permission_denials: [],
          uuid: `1b2c3d4e-5f60-4a7b-8c9d-${hex(i)}`,
        }),
      );
    } else if (position % 10 === 3) {
      mix.toolUse++;
      const [name, input] = tools[Math.floor(random() * tools.length)]!;
      toolId = `toolu_01${hex(i)}`;
      lines.push(message({ type: 'tool_use', id: toolId, name, input: input() }));
    } else if (position % 10 === 4) {
      mix.toolResult++;
      const output = prose(100, 1500);
      lines.push(
        JSON.stringify({
          type: 'user',
          message: { role: 'user', content: [{ tool_use_id: toolId, type: 'tool_result', content: output, is_error: false }] },
          parent_tool_use_id: null,
          session_id: sessionId,
          uuid: `2c3d4e5f-6071-4b8c-9d0e-${hex(i)}`,
          tool_use_result: { stdout: output, stderr: '', interrupted: false, isImage: false },
        }),
      );
    } else if (position === 0) {
      mix.thinking++;
      lines.push(message({ type: 'thinking', thinking: prose(50, 600), signature: 'EqQBCkYIBxgCKkD'.repeat(8) }));
    } else {
      mix.text++;
      lines.push(message({ type: 'text', text: prose(10, 800) }));
    }
  }
  return { lines, mix };
}
