/**
 * `npm run bench` — every benchmark, or the named ones: `npm run bench -- handshake stream`.
 * `--smoke` runs them at their tiny smoke sizes; `--size=NAME` at a size a benchmark names
 * in its `sizes` (e.g. `npm run bench -- chaos-soak --size=soak3m`). Each benchmark appends
 * one JSON line to bench/results/latest.jsonl ($BENCH_RESULTS overrides); a full run (no
 * names) truncates the file first. Prints a table at the end; exits 1 if a benchmark failed
 * to run (a missed goal is reported, not an error).
 * The agents' environment: see lib/env.ts (NODE_EXTRA_CA_CERTS is dropped; BENCH_KEEP_ENV=1
 * keeps it).
 */
import * as chaosSoak from './chaos-soak.bench.js';
import * as containment from './containment.bench.js';
import * as daemonLs from './daemon-ls.bench.js';
import * as daemonStream from './daemon-stream.bench.js';
import * as daemonWsStatus from './daemon-ws-status.bench.js';
import * as fanOut from './fan-out.bench.js';
import * as fsHostile from './fs-hostile.bench.js';
import * as handshake from './handshake.bench.js';
import { prepareAgentEnvironment } from './lib/env.js';
import { leftoverAgents } from './lib/processes.js';
import { agentScripts } from './lib/agentvisor.js';
import { defaultContext, defaultResultsFile, formatTable, appendResult, truncateResults, type BenchContext, type BenchResult } from './lib/results.js';
import { now } from './lib/stats.js';
import * as memoryScale from './memory-scale.bench.js';
import * as restartStorm from './restart-storm.bench.js';
import * as shutdown from './shutdown.bench.js';
import * as storeSize from './store-size.bench.js';
import * as stream from './stream.bench.js';
import * as streamJson from './stream-json.bench.js';
import * as turns from './turns.bench.js';

interface Entry<S> {
  name: string;
  run: (size: S, ctx: BenchContext) => Promise<BenchResult>;
  defaultSize: S;
  smokeSize: S;
  /** Further sizes by name (`--size=NAME`). */
  sizes: Record<string, S>;
}

const entry = <S>(name: string, run: Entry<S>['run'], module: { defaultSize: S; smokeSize: S; sizes?: Record<string, S> }): Entry<S> => ({
  name,
  run,
  defaultSize: module.defaultSize,
  smokeSize: module.smokeSize,
  sizes: module.sizes ?? {},
});

/** Every benchmark, in the order a full run takes them. */
export const benchmarks = [
  entry('handshake', handshake.handshakeBench, handshake),
  entry('stream', stream.streamBench, stream),
  entry('stream-json', streamJson.streamJsonBench, streamJson),
  entry('turns', turns.turnsBench, turns),
  entry('fan-out', fanOut.fanOutBench, fanOut),
  entry('shutdown', shutdown.shutdownBench, shutdown),
  entry('restart-storm', restartStorm.restartStormBench, restartStorm),
  entry('containment', containment.containmentBench, containment),
  entry('daemon-ws-status', daemonWsStatus.daemonWsStatusBench, daemonWsStatus),
  entry('daemon-ls', daemonLs.daemonLsBench, daemonLs),
  entry('daemon-stream', daemonStream.daemonStreamBench, daemonStream),
  entry('fs-hostile', fsHostile.fsHostileBench, fsHostile),
  entry('store-size', storeSize.storeSizeBench, storeSize),
  entry('memory-scale', memoryScale.memoryScaleBench, memoryScale),
  entry('chaos-soak', chaosSoak.chaosSoakBench, chaosSoak),
] as Array<Entry<unknown>>;

async function main(argv: string[]): Promise<number> {
  const smoke = argv.includes('--smoke');
  const sizeName = argv.find((arg) => arg.startsWith('--size='))?.slice('--size='.length) ?? null;
  const names = argv.filter((arg) => !arg.startsWith('--'));
  const unknown = names.filter((name) => !benchmarks.some((b) => b.name === name));
  if (unknown.length > 0) {
    process.stderr.write(`unknown benchmark(s): ${unknown.join(', ')}; known: ${benchmarks.map((b) => b.name).join(', ')}\n`);
    return 2;
  }
  const selected = names.length === 0 ? benchmarks : benchmarks.filter((b) => names.includes(b.name));
  if (sizeName !== null) {
    const without = selected.filter((b) => !Object.hasOwn(b.sizes, sizeName));
    if (smoke || names.length === 0 || without.length > 0) {
      const offering = benchmarks.filter((b) => Object.hasOwn(b.sizes, sizeName)).map((b) => b.name);
      process.stderr.write(`--size=${sizeName} needs the benchmarks named that have it, without --smoke (${offering.length > 0 ? `it is ${offering.join(', ')}'s` : 'no benchmark has it'})\n`);
      return 2;
    }
  }
  const resultsFile = defaultResultsFile;
  if (names.length === 0) truncateResults(resultsFile);
  const env = prepareAgentEnvironment();
  const ctx = defaultContext({ resultsFile });
  if (env.removed.length > 0) ctx.log(`agents run without ${env.removed.join(', ')} (see bench/lib/env.ts)`);

  const started = now();
  const results: BenchResult[] = [];
  let failed = 0;
  for (const bench of selected) {
    const size = sizeName !== null ? bench.sizes[sizeName] : smoke ? bench.smokeSize : bench.defaultSize;
    ctx.log(`${bench.name} ${JSON.stringify(size)}`);
    const t0 = now();
    try {
      const result = await bench.run(size, ctx);
      results.push(result);
      ctx.log(`${bench.name}: baseline ${result.baseline} ${result.unit}, agentvisor ${result.agentvisor} ${result.unit}, ratio ${result.ratio} — goal ${result.met ? 'met' : 'MISSED'} (${((now() - t0) / 1000).toFixed(1)} s)`);
    } catch (error) {
      failed++;
      const failure: BenchResult = {
        benchmark: bench.name,
        baseline: Number.NaN,
        agentvisor: Number.NaN,
        unit: '',
        ratio: Number.NaN,
        goal: 'the benchmark ran to completion',
        met: false,
        details: { size, error: error instanceof Error ? (error.stack ?? error.message) : String(error) },
      };
      appendResult(resultsFile, failure);
      results.push(failure);
      ctx.log(`${bench.name}: FAILED: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  const totalS = (now() - started) / 1000;
  const strays = leftoverAgents(agentScripts);
  process.stdout.write(`\n${formatTable(results)}\n\n`);
  process.stdout.write(`${selected.length} benchmark(s) in ${totalS.toFixed(1)} s; results: ${resultsFile}\n`);
  process.stdout.write(`agent processes of this run still alive: ${strays.length === 0 ? 'none' : strays.join(' ')}\n`);
  return failed > 0 || strays.length > 0 ? 1 : 0;
}

process.exitCode = await main(process.argv.slice(2));
